package vmformat

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// timeFormat is how a CSV column holds a timestamp.
type timeFormat struct {
	exp    int    // unix_*: one unit is 10^exp ms (3: s, 0: ms, -6: ns)
	layout string // rfc3339 and custom: a time.Parse layout
	name   string // as in the spec
}

// parseTimeFormat reads unix_s, unix_ms, unix_ns, rfc3339 or
// custom:<layout>.
func parseTimeFormat(s string) (timeFormat, error) {
	switch s {
	case "unix_s":
		return timeFormat{exp: 3, name: s}, nil
	case "unix_ms":
		return timeFormat{exp: 0, name: s}, nil
	case "unix_ns":
		return timeFormat{exp: -6, name: s}, nil
	case "rfc3339":
		return timeFormat{layout: time.RFC3339Nano, name: s}, nil
	}
	if layout, ok := strings.CutPrefix(s, "custom:"); ok {
		if layout == "" {
			return timeFormat{}, fmt.Errorf("empty layout in time format %q", s)
		}
		return timeFormat{layout: layout, name: s}, nil
	}
	return timeFormat{}, fmt.Errorf("unknown time format %q: want unix_s, unix_ms, unix_ns, rfc3339 or custom:<Go layout>", s)
}

// parse reads a timestamp in ms, rounded down.
func (f timeFormat) parse(b []byte) (int64, error) {
	if f.layout != "" {
		t, err := time.Parse(f.layout, string(b))
		if err != nil {
			return 0, fmt.Errorf("invalid time %q for format %s", b, f.name)
		}
		return t.Unix()*1000 + int64(t.Nanosecond()/1e6), nil
	}
	ms, err := parseUnix(b, f.exp)
	if err != nil {
		return 0, fmt.Errorf("invalid time %q for format %s: %v", b, f.name, err)
	}
	return ms, nil
}

// append writes t (ms) in the format: unix_s rounds down to the second;
// the others are exact (rfc3339 shows milliseconds when there are any).
func (f timeFormat) append(dst []byte, t int64) []byte {
	switch {
	case f.layout != "":
		return time.UnixMilli(t).UTC().AppendFormat(dst, f.layout)
	case f.exp == 3:
		s := t / 1000
		if t%1000 < 0 {
			s--
		}
		return strconv.AppendInt(dst, s, 10)
	case f.exp == -6 && t != 0:
		// Digits, not a product: t·10^6 overflows int64 past 2262.
		dst = strconv.AppendInt(dst, t, 10)
		return append(dst, "000000"...)
	}
	return strconv.AppendInt(dst, t, 10)
}

// parseUnix reads [+-]digits[.digits] in units of 10^exp ms and returns
// ms, rounded down, exactly (no float arithmetic).
func parseUnix(b []byte, exp int) (int64, error) {
	s := b
	neg := false
	if len(s) > 0 && (s[0] == '-' || s[0] == '+') {
		neg = s[0] == '-'
		s = s[1:]
	}
	intPart, frac, dot := strings.Cut(string(s), ".")
	if intPart == "" && (!dot || frac == "") {
		return 0, fmt.Errorf("not a number")
	}
	for _, part := range []string{intPart, frac} {
		for i := 0; i < len(part); i++ {
			if part[i] < '0' || part[i] > '9' {
				return 0, fmt.Errorf("not a decimal number")
			}
		}
	}
	if dot && frac == "" {
		return 0, fmt.Errorf("not a decimal number")
	}
	digits := intPart + frac
	e := exp - len(frac) // value = digits · 10^e ms
	var keep string
	rest := false // a non-zero digit is dropped: round down
	if e >= 0 {
		keep = digits + strings.Repeat("0", min(e, 40))
	} else {
		cut := len(digits) + e
		if cut < 0 {
			cut = 0
		}
		keep = digits[:cut]
		rest = strings.TrimLeft(digits[cut:], "0") != ""
	}
	var u uint64
	for i := 0; i < len(keep); i++ {
		if u > (1<<63)/10 {
			return 0, fmt.Errorf("out of range")
		}
		u = u*10 + uint64(keep[i]-'0')
		if u > 1<<63 {
			return 0, fmt.Errorf("out of range")
		}
	}
	if neg {
		if rest {
			u++
		}
		if u > 1<<63 {
			return 0, fmt.Errorf("out of range")
		}
		return int64(-u), nil // -(1<<63) wraps to MinInt64
	}
	if u > math.MaxInt64 {
		return 0, fmt.Errorf("out of range")
	}
	return int64(u), nil
}
