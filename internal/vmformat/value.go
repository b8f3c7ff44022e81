package vmformat

import (
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/aerie-db/aerie/internal/jsonenc"
)

// Bit patterns of the NaNs with names of their own (doc.go).
const (
	// NormalNaNBits is math.NaN() and Prometheus' value.NormalNaN.
	NormalNaNBits uint64 = 0x7ff8000000000001
	// StaleNaNBits is Prometheus' stale marker, value.StaleNaN.
	StaleNaNBits uint64 = 0x7ff0000000000002
)

// AppendJSONValue appends v as an element of a JSON lines values array.
func AppendJSONValue(dst []byte, v float64) []byte {
	switch {
	case math.IsInf(v, 1):
		return append(dst, `"Infinity"`...)
	case math.IsInf(v, -1):
		return append(dst, `"-Infinity"`...)
	case !math.IsNaN(v):
		return jsonenc.AppendFloat(dst, v)
	}
	switch bits := math.Float64bits(v); bits {
	case NormalNaNBits:
		return append(dst, "null"...)
	case StaleNaNBits:
		return append(dst, `"StaleNaN"`...)
	default:
		dst = append(dst, '"')
		dst = appendNaNPayload(dst, bits)
		return append(dst, '"')
	}
}

// AppendCSVValue appends v as a CSV field (never one that needs quotes).
func AppendCSVValue(dst []byte, v float64) []byte {
	switch {
	case math.IsInf(v, 1):
		return append(dst, "+Inf"...)
	case math.IsInf(v, -1):
		return append(dst, "-Inf"...)
	case !math.IsNaN(v):
		return jsonenc.AppendFloat(dst, v)
	}
	switch bits := math.Float64bits(v); bits {
	case NormalNaNBits:
		return append(dst, "NaN"...)
	case StaleNaNBits:
		return append(dst, "StaleNaN"...)
	default:
		return appendNaNPayload(dst, bits)
	}
}

func appendNaNPayload(dst []byte, bits uint64) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, "NaN:0x"...)
	for i := 60; i >= 0; i -= 4 {
		dst = append(dst, hex[bits>>uint(i)&0xf])
	}
	return dst
}

// errNotSpecial says a token is none of the special forms.
var errNotSpecial = errors.New("not a special value")

// parseSpecial reads the special forms of doc.go, case-insensitively: an
// optional sign and inf, infinity, nan or null; StaleNaN; NaN:0x and up to
// 16 hex digits of a NaN bit pattern. It returns errNotSpecial for other
// tokens.
func parseSpecial(s []byte) (float64, error) {
	if len(s) > 24 {
		return 0, errNotSpecial
	}
	var buf [24]byte
	low := buf[:len(s)]
	for i, c := range s {
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		low[i] = c
	}
	switch string(low) {
	case "stalenan":
		return math.Float64frombits(StaleNaNBits), nil
	}
	if len(low) > 6 && string(low[:6]) == "nan:0x" {
		hex := low[6:]
		if len(hex) > 16 {
			return 0, fmt.Errorf("NaN payload %q: more than 16 hex digits", s)
		}
		bits, err := strconv.ParseUint(string(hex), 16, 64)
		if err != nil {
			return 0, fmt.Errorf("NaN payload %q: not hexadecimal", s)
		}
		v := math.Float64frombits(bits)
		if !math.IsNaN(v) {
			return 0, fmt.Errorf("NaN payload %q: not a NaN bit pattern", s)
		}
		return v, nil
	}
	neg := false
	if len(low) > 0 && (low[0] == '+' || low[0] == '-') {
		neg = low[0] == '-'
		low = low[1:]
	}
	switch string(low) {
	case "inf", "infinity":
		if neg {
			return math.Inf(-1), nil
		}
		return math.Inf(1), nil
	case "nan", "null":
		return math.Float64frombits(NormalNaNBits), nil
	}
	return 0, errNotSpecial
}

// parseCSVValue reads a CSV value field: a special form, or a number as
// strconv.ParseFloat reads it (out of float64 range is an error).
func parseCSVValue(s []byte) (float64, error) {
	v, err := parseSpecial(s)
	if err != errNotSpecial {
		return v, err
	}
	v, err = strconv.ParseFloat(string(s), 64)
	if err != nil {
		var ne *strconv.NumError
		if errors.As(err, &ne) && ne.Err == strconv.ErrRange {
			return 0, fmt.Errorf("value %q is out of float64 range", s)
		}
		return 0, fmt.Errorf("invalid value %q: want a number, NaN, +Inf, -Inf, StaleNaN or NaN:0x<hex>", s)
	}
	return v, nil
}
