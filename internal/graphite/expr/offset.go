package expr

import (
	"fmt"

	"github.com/aerie-db/aerie/internal/graphite/attime"
)

// MaxOffsetLen bounds the length of an offset or interval string.
const MaxOffsetLen = 64

// maxOffsetSeconds bounds |ParseOffset| at Python's timedelta range
// (999999999 days), past which graphite-web fails too.
const maxOffsetSeconds = 999999999 * 86400

// OffsetError is a malformed time offset or interval string.
type OffsetError struct {
	Input  string
	Offset int    // byte offset in Input where the problem is
	Msg    string // what was wrong or expected there
}

func (e *OffsetError) Error() string {
	return fmt.Sprintf("invalid time offset %q at byte %d: %s", e.Input, e.Offset, e.Msg)
}

// ParseOffset parses a time offset or interval as graphite-web's
// parseTimeOffset does: an optional sign that applies to the whole string,
// then one or more <digits><unit> terms ("-1h", "1d12h", "+2w", "5min").
// Units go by prefix: s… seconds, min… minutes, h… hours, d… days,
// w… weeks, mon… months (30 days), y… years (365 days); a bare "m" is
// rejected as graphite-web rejects it. The empty string is 0.
func ParseOffset(s string) (seconds int64, err error) {
	if len(s) > MaxOffsetLen {
		return 0, &OffsetError{Input: s, Offset: MaxOffsetLen, Msg: fmt.Sprintf("longer than %d bytes", MaxOffsetLen)}
	}
	if s == "" {
		return 0, nil
	}
	sign := int64(1)
	i := 0
	switch s[0] {
	case '+':
		i = 1
	case '-':
		sign, i = -1, 1
	default:
		if !isDigit(s[0]) {
			return 0, &OffsetError{Input: s, Offset: 0, Msg: "expected a sign or a digit"}
		}
	}
	var total int64
	for i < len(s) {
		start := i
		var num int64
		for i < len(s) && isDigit(s[i]) {
			num = num*10 + int64(s[i]-'0')
			if num > maxOffsetSeconds {
				return 0, &OffsetError{Input: s, Offset: start, Msg: "number too large"}
			}
			i++
		}
		if i == start {
			return 0, &OffsetError{Input: s, Offset: i, Msg: "expected a number"}
		}
		ustart := i
		for i < len(s) && isAlpha(s[i]) {
			i++
		}
		unit, ok := attime.UnitSeconds(s[ustart:i])
		if !ok {
			return 0, &OffsetError{Input: s, Offset: ustart, Msg: fmt.Sprintf("invalid unit %q (want s, min, h, d, w, mon or y)", s[ustart:i])}
		}
		if num > maxOffsetSeconds/unit {
			return 0, &OffsetError{Input: s, Offset: start, Msg: "offset too large"}
		}
		total += num * unit
		if total > maxOffsetSeconds {
			return 0, &OffsetError{Input: s, Offset: start, Msg: "offset too large"}
		}
	}
	return sign * total, nil
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
func isAlpha(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
