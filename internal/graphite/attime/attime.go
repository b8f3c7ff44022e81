package attime

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// maxTimeLen bounds a from/until/now value; graphite-web's longest forms
// ("12:00pm_tomorrow+1y2mon3w4d5h6min7s") are far shorter.
const maxTimeLen = 256

// Bounds of a parsed time (Unix seconds): Python's datetime years 1..9999,
// the range graphite-web can represent.
const (
	minUnix = -62135596800 // 0001-01-01T00:00:00Z
	maxUnix = 253402300799 // 9999-12-31T23:59:59Z
)

var (
	attimeMonths   = []string{"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"}
	attimeWeekdays = []string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}
)

// Parse parses a from/until/now value, or a time argument of a render
// function, the way graphite-web's parseATTime does (render/attime.py) and returns Unix seconds: epoch
// seconds, "now", relative offsets ("-1h", "now-5min", "+2d3h"), times of
// day ("noon", "midnight", "teatime", "HH:MM", "9am", "12:30pm"), day
// references ("today", "yesterday", "tomorrow", "YYYYMMDD", "MM/DD/YY[YY]",
// "jan15", "monday") and their combinations ("04:00_20240101",
// "midnight_yesterday-1h"). Underscores, commas and spaces are ignored and
// case does not matter. now is the reference of relative forms; day and
// time-of-day references are wall-clock times in loc.
//
// Offset units are graphite-web's: s…, min…, h…, d…, w…, mon… (30 days),
// y… (365 days); "m" alone is an error, as there.
func Parse(s string, now time.Time, loc *time.Location) (int64, error) {
	if len(s) > maxTimeLen {
		return 0, fmt.Errorf("time %.32q…: longer than %d bytes", s, maxTimeLen)
	}
	if loc == nil {
		loc = time.UTC
	}
	orig := s
	s = strings.ToLower(strings.TrimSpace(s))
	s = strings.NewReplacer("_", "", ",", "", " ", "").Replace(s)
	if isDigits(s) && !looksLikeYYYYMMDD(s) {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n > maxUnix {
			return 0, fmt.Errorf("time %q: epoch seconds out of range", orig)
		}
		return n, nil
	}
	ref, offset := s, ""
	if i := strings.IndexByte(s, '+'); i >= 0 {
		ref, offset = s[:i], s[i:]
	} else if i := strings.IndexByte(s, '-'); i >= 0 {
		ref, offset = s[:i], s[i:]
	}
	t, err := parseTimeReference(ref, now.In(loc), loc)
	if err != nil {
		return 0, fmt.Errorf("time %q: %w", orig, err)
	}
	off, err := parseTimeOffset(offset)
	if err != nil {
		return 0, fmt.Errorf("time %q: %w", orig, err)
	}
	u := t.Unix()
	if (off > 0 && u > maxUnix-off) || (off < 0 && u < minUnix-off) {
		return 0, fmt.Errorf("time %q: out of range", orig)
	}
	u += off
	if u < minUnix || u > maxUnix {
		return 0, fmt.Errorf("time %q: out of range", orig)
	}
	return u, nil
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// looksLikeYYYYMMDD is attime.py's test that keeps an 8-digit string from
// being read as epoch seconds.
func looksLikeYYYYMMDD(s string) bool {
	if len(s) != 8 {
		return false
	}
	y, _ := strconv.Atoi(s[:4])
	m, _ := strconv.Atoi(s[4:6])
	d, _ := strconv.Atoi(s[6:])
	return y > 1900 && m < 13 && d < 32
}

// parseTimeReference is attime.py's parseTimeReference: now is already in
// loc.
func parseTimeReference(ref string, now time.Time, loc *time.Location) (time.Time, error) {
	if ref == "" || ref == "now" {
		return now, nil
	}
	raw := ref
	hour, minute := 0, 0
	// HH:MM[am|pm]
	if i := strings.IndexByte(ref, ':'); i > 0 && i < 3 {
		h, err := strconv.Atoi(ref[:i])
		if err != nil {
			return time.Time{}, fmt.Errorf("hour %q in %q is not a number", ref[:i], raw)
		}
		end := min(i+3, len(ref))
		m, err := strconv.Atoi(ref[i+1 : end])
		if err != nil {
			return time.Time{}, fmt.Errorf("minute %q in %q is not a number", ref[i+1:end], raw)
		}
		hour, minute = h, m
		ref = ref[end:]
		if strings.HasPrefix(ref, "am") {
			ref = ref[2:]
		} else if strings.HasPrefix(ref, "pm") {
			hour = (hour + 12) % 24
			ref = ref[2:]
		}
	}
	// Xam, XXam, Xpm, XXpm (graphite-web: 12pm is hour 0)
	for _, suf := range []string{"am", "pm"} {
		if i := strings.Index(ref, suf); i > 0 && i < 3 {
			h, err := strconv.Atoi(ref[:i])
			if err != nil {
				return time.Time{}, fmt.Errorf("hour %q in %q is not a number", ref[:i], raw)
			}
			if suf == "pm" {
				h = (h + 12) % 24
			}
			hour = h
			ref = ref[i+2:]
		}
	}
	switch {
	case strings.HasPrefix(ref, "noon"):
		hour, minute, ref = 12, 0, ref[4:]
	case strings.HasPrefix(ref, "midnight"):
		hour, minute, ref = 0, 0, ref[8:]
	case strings.HasPrefix(ref, "teatime"):
		hour, minute, ref = 16, 0, ref[7:]
	}
	if hour < 0 || hour > 23 {
		return time.Time{}, fmt.Errorf("hour %d in %q must be in 0..23", hour, raw)
	}
	if minute < 0 || minute > 59 {
		return time.Time{}, fmt.Errorf("minute %d in %q must be in 0..59", minute, raw)
	}
	y, mo, d := now.Date()

	switch {
	case ref == "yesterday" || ref == "today" || ref == "tomorrow":
		if ref == "yesterday" {
			d--
		} else if ref == "tomorrow" {
			d++
		}
	case strings.Count(ref, "/") == 2: // MM/DD/YY[YY]
		parts := strings.Split(ref, "/")
		var n [3]int
		for i, p := range parts {
			v, err := strconv.Atoi(p)
			if err != nil {
				return time.Time{}, fmt.Errorf("date %q: %q is not a number", raw, p)
			}
			n[i] = v
		}
		if n[2] < 1900 {
			n[2] += 1900
		}
		if n[2] < 1970 {
			n[2] += 100
		}
		if err := checkDate(n[2], n[0], n[1]); err != nil {
			return time.Time{}, fmt.Errorf("date %q: %w", raw, err)
		}
		y, mo, d = n[2], time.Month(n[0]), n[1]
	case len(ref) == 8 && isDigits(ref): // YYYYMMDD
		yy, _ := strconv.Atoi(ref[:4])
		mm, _ := strconv.Atoi(ref[4:6])
		dd, _ := strconv.Atoi(ref[6:])
		if err := checkDate(yy, mm, dd); err != nil {
			return time.Time{}, fmt.Errorf("date %q: %w", raw, err)
		}
		y, mo, d = yy, time.Month(mm), dd
	case len(ref) >= 3 && indexOf(attimeMonths, ref[:3]) >= 0: // MonthName DayOfMonth
		var dd int
		switch {
		case len(ref) >= 2 && isDigits(ref[len(ref)-2:]):
			dd, _ = strconv.Atoi(ref[len(ref)-2:])
		case isDigits(ref[len(ref)-1:]):
			dd, _ = strconv.Atoi(ref[len(ref)-1:])
		default:
			return time.Time{}, fmt.Errorf("day of month required after month name in %q", raw)
		}
		mm := indexOf(attimeMonths, ref[:3]) + 1
		if err := checkDate(y, mm, dd); err != nil {
			return time.Time{}, fmt.Errorf("date %q: %w", raw, err)
		}
		mo, d = time.Month(mm), dd
	case len(ref) >= 3 && indexOf(attimeWeekdays, ref[:3]) >= 0: // DayOfWeek
		today := int(time.Date(y, mo, d, 0, 0, 0, 0, time.UTC).Weekday())
		off := today - indexOf(attimeWeekdays, ref[:3])
		if off < 0 {
			off += 7
		}
		d -= off
	case ref != "":
		return time.Time{}, fmt.Errorf("unknown day reference %q", raw)
	}
	return time.Date(y, mo, d, hour, minute, 0, 0, loc), nil
}

func indexOf(list []string, s string) int {
	for i, v := range list {
		if v == s {
			return i
		}
	}
	return -1
}

// checkDate rejects what Python's datetime constructor rejects.
func checkDate(y, m, d int) error {
	if y < 1 || y > 9999 {
		return fmt.Errorf("year %d must be in 1..9999", y)
	}
	if m < 1 || m > 12 {
		return fmt.Errorf("month %d must be in 1..12", m)
	}
	if d < 1 || d > time.Date(y, time.Month(m)+1, 0, 0, 0, 0, 0, time.UTC).Day() {
		return fmt.Errorf("day %d is not in month %d of %d", d, m, y)
	}
	return nil
}

// parseTimeOffset is attime.py's parseTimeOffset: an optional sign and one
// or more number-unit terms, in seconds.
func parseTimeOffset(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	orig := s
	sign := int64(1)
	switch s[0] {
	case '+':
		s = s[1:]
	case '-':
		sign, s = -1, s[1:]
	default:
		if s[0] < '0' || s[0] > '9' {
			return 0, fmt.Errorf("invalid offset %q", orig)
		}
	}
	var total int64
	for s != "" {
		i := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == 0 {
			return 0, fmt.Errorf("invalid offset %q: want a number at %q", orig, s)
		}
		num, err := strconv.ParseInt(s[:i], 10, 64)
		if err != nil || num > maxUnix-minUnix {
			return 0, fmt.Errorf("invalid offset %q: %q is out of range", orig, s[:i])
		}
		s = s[i:]
		j := 0
		for j < len(s) && s[j] >= 'a' && s[j] <= 'z' {
			j++
		}
		unit := s[:j]
		s = s[j:]
		sec, err := offsetUnit(unit)
		if err != nil {
			return 0, fmt.Errorf("invalid offset %q: %w", orig, err)
		}
		if num > (maxUnix-minUnix)/sec {
			return 0, fmt.Errorf("invalid offset %q: out of range", orig)
		}
		total += num * sec
		if total > maxUnix-minUnix {
			return 0, fmt.Errorf("invalid offset %q: out of range", orig)
		}
	}
	return sign * total, nil
}

// offsetUnit is attime.py's getUnitString, in seconds.
func offsetUnit(u string) (int64, error) {
	if sec, ok := UnitSeconds(u); ok {
		return sec, nil
	}
	return 0, fmt.Errorf("invalid offset unit %q (want s, min, h, d, w, mon or y)", u)
}

// UnitSeconds is the length in seconds of an offset unit by attime.py's
// prefix rules, checked in its order (so "m" and "mo" are not units but
// "mon" is a month): s… seconds, min… minutes, h… hours, d… days, w…
// weeks, mon… months (30 days), y… years (365 days).
func UnitSeconds(u string) (int64, bool) {
	switch {
	case strings.HasPrefix(u, "s"):
		return 1, true
	case strings.HasPrefix(u, "min"):
		return 60, true
	case strings.HasPrefix(u, "h"):
		return 3600, true
	case strings.HasPrefix(u, "d"):
		return 86400, true
	case strings.HasPrefix(u, "w"):
		return 7 * 86400, true
	case strings.HasPrefix(u, "mon"):
		return 30 * 86400, true
	case strings.HasPrefix(u, "y"):
		return 365 * 86400, true
	}
	return 0, false
}
