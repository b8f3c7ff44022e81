package graphite

import (
	"math"
	"strconv"
	"unicode/utf8"
)

// AppendPyFloat appends v as Python's repr(float) writes it, which is
// what graphite-web's json, csv and raw answers hold: the shortest
// round-tripping digits, positional with ".0" for exponents in [-4, 16),
// else "1e+16", "1.5e-05"; "nan", "inf", "-inf".
func AppendPyFloat(dst []byte, v float64) []byte {
	switch {
	case math.IsNaN(v):
		return append(dst, "nan"...)
	case math.IsInf(v, 1):
		return append(dst, "inf"...)
	case math.IsInf(v, -1):
		return append(dst, "-inf"...)
	}
	if v == 0 {
		if math.Signbit(v) {
			return append(dst, "-0.0"...)
		}
		return append(dst, "0.0"...)
	}
	// away from the bounds of positional notation, the shortest digits
	// cannot round across them: no need to look at the exponent
	if a := math.Abs(v); a >= 1.001e-4 && a < 9.99e15 {
		return appendPositional(dst, v)
	}
	var buf [32]byte
	e := strconv.AppendFloat(buf[:0], v, 'e', -1, 64)
	// exponent is after the 'e'
	i := len(e) - 1
	for e[i] != 'e' {
		i--
	}
	exp, _ := strconv.Atoi(string(e[i+1:]))
	if exp >= -4 && exp < 16 {
		return appendPositional(dst, v)
	}
	return append(dst, e...)
}

// appendPositional appends the shortest digits of v without exponent,
// with ".0" if they are an integer.
func appendPositional(dst []byte, v float64) []byte {
	start := len(dst)
	dst = strconv.AppendFloat(dst, v, 'f', -1, 64)
	for _, c := range dst[start:] {
		if c == '.' {
			return dst
		}
	}
	return append(dst, ".0"...)
}

// appendJSONValue appends a value as graphite-web's render JSON: null for
// None/NaN, 1e9999 and -1e9999 for infinities (its replace of Infinity).
func appendJSONValue(dst []byte, v float64) []byte {
	switch {
	case math.IsNaN(v):
		return append(dst, "null"...)
	case math.IsInf(v, 1):
		return append(dst, "1e9999"...)
	case math.IsInf(v, -1):
		return append(dst, "-1e9999"...)
	}
	return AppendPyFloat(dst, v)
}

// appendPyJSONString appends s as Python's json.dumps with ensure_ascii:
// non-ASCII as \uXXXX (surrogate pairs past the BMP), invalid UTF-8 as
// U+FFFD.
func appendPyJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			i++
			switch c {
			case '"':
				dst = append(dst, `\"`...)
			case '\\':
				dst = append(dst, `\\`...)
			case '\n':
				dst = append(dst, `\n`...)
			case '\r':
				dst = append(dst, `\r`...)
			case '\t':
				dst = append(dst, `\t`...)
			case '\b':
				dst = append(dst, `\b`...)
			case '\f':
				dst = append(dst, `\f`...)
			default:
				if c < 0x20 || c == 0x7f {
					dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
				} else {
					dst = append(dst, c)
				}
			}
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		i += n
		u := func(x rune) {
			dst = append(dst, '\\', 'u', hex[x>>12&15], hex[x>>8&15], hex[x>>4&15], hex[x&15])
		}
		if r > 0xFFFF {
			r -= 0x10000
			u(0xD800 + r>>10)
			u(0xDC00 + r&0x3FF)
		} else {
			u(r)
		}
	}
	return append(dst, '"')
}
