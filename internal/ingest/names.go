package ingest

import (
	"unicode/utf8"
)

// appendMetricName appends s to dst as a classic Prometheus metric name
// fragment ([a-zA-Z0-9_:]); every other character (rune, or byte of
// invalid UTF-8) becomes '_'. first says s starts the name, where a digit
// gets a '_' in front.
func appendMetricName(dst []byte, s []byte, first bool) []byte {
	return appendName(dst, s, first, true)
}

// appendLabelName is appendMetricName for label names ([a-zA-Z0-9_]).
func appendLabelName(dst []byte, s []byte) []byte {
	return appendName(dst, s, true, false)
}

func appendName(dst, s []byte, first, colon bool) []byte {
	if first && len(s) > 0 && s[0] >= '0' && s[0] <= '9' {
		dst = append(dst, '_')
	}
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || colon && c == ':' {
				dst = append(dst, c)
			} else {
				dst = append(dst, '_')
			}
			i++
			continue
		}
		_, n := utf8.DecodeRune(s[i:])
		dst = append(dst, '_')
		i += n
	}
	return dst
}
