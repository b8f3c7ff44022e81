package pointio

import (
	"encoding/binary"
	"math"
	"strconv"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/aerie-db/aerie/internal/jsonenc"
)

// appendFloat appends v in the shortest form that parses back to the same
// float64, fixed-point or exponent as encoding/json chooses (exponent
// below 1e-6 and from 1e21), except that values from 2^53 to 1e21, all
// integers, are written with all their digits: the shortest form of 2^60
// is 1152921504606847000, which an integer type would read as a
// different integer. So every integral value comes out as the exact
// integer. NaN and ±Inf are NaN, +Inf and -Inf.
func appendFloat(dst []byte, v float64) []byte {
	switch {
	case math.IsNaN(v):
		return append(dst, "NaN"...)
	case math.IsInf(v, 1):
		return append(dst, "+Inf"...)
	case math.IsInf(v, -1):
		return append(dst, "-Inf"...)
	}
	if a := math.Abs(v); a >= maxExactInt && a < 1e21 {
		return strconv.AppendFloat(dst, v, 'f', 0, 64)
	}
	return jsonenc.AppendFloat(dst, v)
}

// appendJSONValue appends v as a JSON number, or as the string "NaN",
// "+Inf" or "-Inf", which are not JSON numbers.
func appendJSONValue(dst []byte, v float64) []byte {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		dst = append(dst, '"')
		dst = appendFloat(dst, v)
		return append(dst, '"')
	}
	return appendFloat(dst, v)
}

// appendCSVField appends s as a CSV field, in double quotes (a quote
// doubled) if it holds a separator, a quote, a line end or blanks at
// either end, which the Reader would trim.
func appendCSVField(dst []byte, s string) []byte {
	quote := len(s) > 0 && (isBlank(s[0]) || isBlank(s[len(s)-1]))
	for i := 0; i < len(s) && !quote; i++ {
		switch s[i] {
		case ',', '"', '\r', '\n':
			quote = true
		}
	}
	if !quote {
		return append(dst, s...)
	}
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		if s[i] == '"' {
			dst = append(dst, '"')
		}
		dst = append(dst, s[i])
	}
	return append(dst, '"')
}

// appendLabelsText appends ls in Prometheus' text form,
// {__name__="s1",site="a"}: names as they are if they are legacy label
// names, else quoted; values quoted with \\, \" and \n escaped.
func appendLabelsText(dst []byte, ls labels.Labels) []byte {
	dst = append(dst, '{')
	first := true
	ls.Range(func(l labels.Label) {
		if !first {
			dst = append(dst, ',')
		}
		first = false
		if isLegacyName(l.Name) {
			dst = append(dst, l.Name...)
		} else {
			dst = appendTextQuoted(dst, l.Name)
		}
		dst = append(dst, '=')
		dst = appendTextQuoted(dst, l.Value)
	})
	return append(dst, '}')
}

func appendTextQuoted(dst []byte, s string) []byte {
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\', '"':
			dst = append(dst, '\\', c)
		case '\n':
			dst = append(dst, '\\', 'n')
		default:
			dst = append(dst, c)
		}
	}
	return append(dst, '"')
}

// isLegacyName reports whether s matches [a-zA-Z_][a-zA-Z0-9_]*.
func isLegacyName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// MessagePack encoders, in the smallest form of each type (the msgpack
// specification's recommendation; what msgpack.Encoder writes).

func appendMsgpMapLen(dst []byte, n int) []byte {
	switch {
	case n < 16:
		return append(dst, 0x80|byte(n))
	case n <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(dst, 0xde), uint16(n))
	}
	return binary.BigEndian.AppendUint32(append(dst, 0xdf), uint32(n))
}

func appendMsgpString(dst []byte, s string) []byte {
	switch n := len(s); {
	case n < 32:
		dst = append(dst, 0xa0|byte(n))
	case n <= math.MaxUint8:
		dst = append(dst, 0xd9, byte(n))
	case n <= math.MaxUint16:
		dst = binary.BigEndian.AppendUint16(append(dst, 0xda), uint16(n))
	default:
		dst = binary.BigEndian.AppendUint32(append(dst, 0xdb), uint32(n))
	}
	return append(dst, s...)
}

func appendMsgpInt(dst []byte, i int64) []byte {
	switch {
	case i >= 0 && i <= math.MaxInt8, i < 0 && i >= -32:
		return append(dst, byte(i))
	case i >= 0 && i <= math.MaxUint8:
		return append(dst, 0xcc, byte(i))
	case i >= 0 && i <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(dst, 0xcd), uint16(i))
	case i >= 0 && i <= math.MaxUint32:
		return binary.BigEndian.AppendUint32(append(dst, 0xce), uint32(i))
	case i >= 0:
		return binary.BigEndian.AppendUint64(append(dst, 0xcf), uint64(i))
	case i >= math.MinInt8:
		return append(dst, 0xd0, byte(i))
	case i >= math.MinInt16:
		return binary.BigEndian.AppendUint16(append(dst, 0xd1), uint16(i))
	case i >= math.MinInt32:
		return binary.BigEndian.AppendUint32(append(dst, 0xd2), uint32(i))
	}
	return binary.BigEndian.AppendUint64(append(dst, 0xd3), uint64(i))
}

// appendMsgpFloat appends v as a float64, bit for bit (NaN payloads too).
func appendMsgpFloat(dst []byte, v float64) []byte {
	return binary.BigEndian.AppendUint64(append(dst, 0xcb), math.Float64bits(v))
}
