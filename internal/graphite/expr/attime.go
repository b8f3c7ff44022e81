package expr

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ParseATTime parses a Graphite time as graphite-web's parseATTime does:
// Unix seconds ("1700000000"), "now", a reference with an optional offset
// ("now-1h", "-1d", "midnight+2h", "yesterday", "noon tomorrow" …),
// "HH:MM_YYYYMMDD", "YYYYMMDD", "MM/DD/YY[YY]", a month name and day
// ("jan12"), a weekday ("monday"), "3pm", in loc (nil = UTC). now is the
// request's now in Unix seconds. Underscores, commas and spaces are
// ignored and case does not matter.
func ParseATTime(s string, now int64, loc *time.Location) (int64, error) {
	if loc == nil {
		loc = time.UTC
	}
	if len(s) > MaxOffsetLen {
		return 0, fmt.Errorf("invalid time %q: longer than %d bytes", s, MaxOffsetLen)
	}
	orig := s
	s = strings.ToLower(strings.TrimSpace(s))
	s = strings.NewReplacer("_", "", ",", "", " ", "").Replace(s)
	if s != "" && allDigits(s) {
		if !(len(s) == 8 && atoi(s[:4]) > 1900 && atoi(s[4:6]) < 13 && atoi(s[6:]) < 32) {
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				return 0, fmt.Errorf("invalid time %q: %v", orig, err)
			}
			return n, nil
		}
	}
	ref, off := s, ""
	if i := strings.IndexAny(s, "+-"); i >= 0 {
		// graphite-web splits at the first '+' if there is one, else at
		// the first '-'.
		if j := strings.IndexByte(s, '+'); j >= 0 {
			i = j
		}
		ref, off = s[:i], s[i:]
	}
	base, err := parseTimeReference(ref, now, loc)
	if err != nil {
		return 0, fmt.Errorf("invalid time %q: %v", orig, err)
	}
	d, err := ParseOffset(off)
	if err != nil {
		return 0, fmt.Errorf("invalid time %q: %v", orig, err)
	}
	return base + d, nil
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return true
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

var monthNames = []string{"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"}
var weekdayNames = []string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}

func parseTimeReference(ref string, now int64, loc *time.Location) (int64, error) {
	if ref == "" || ref == "now" {
		return now, nil
	}
	raw := ref
	hour, minute := 0, 0
	num := func(s string) (int, error) {
		n, err := strconv.Atoi(s)
		if err != nil {
			return 0, fmt.Errorf("invalid number %q in %q", s, raw)
		}
		return n, nil
	}
	var err error
	if i := strings.IndexByte(ref, ':'); i > 0 && i < 3 {
		if hour, err = num(ref[:i]); err != nil {
			return 0, err
		}
		j := min(i+3, len(ref))
		if minute, err = num(ref[i+1 : j]); err != nil {
			return 0, err
		}
		ref = ref[j:]
		if strings.HasPrefix(ref, "am") {
			ref = ref[2:]
		} else if strings.HasPrefix(ref, "pm") {
			hour = (hour + 12) % 24
			ref = ref[2:]
		}
	}
	if i := strings.Index(ref, "am"); i > 0 && i < 3 {
		if hour, err = num(ref[:i]); err != nil {
			return 0, err
		}
		ref = ref[i+2:]
	}
	if i := strings.Index(ref, "pm"); i > 0 && i < 3 {
		h, err := num(ref[:i])
		if err != nil {
			return 0, err
		}
		hour = (h + 12) % 24
		ref = ref[i+2:]
	}
	switch {
	case strings.HasPrefix(ref, "noon"):
		hour, minute, ref = 12, 0, ref[4:]
	case strings.HasPrefix(ref, "midnight"):
		hour, minute, ref = 0, 0, ref[8:]
	case strings.HasPrefix(ref, "teatime"):
		hour, minute, ref = 16, 0, ref[7:]
	}
	if hour > 23 || minute > 59 || hour < 0 || minute < 0 {
		return 0, fmt.Errorf("invalid time of day in %q", raw)
	}
	n := time.Unix(now, 0).In(loc)
	date := func(y int, m time.Month, d int) (int64, error) {
		t := time.Date(y, m, d, hour, minute, 0, 0, loc)
		if t.Day() != d || t.Month() != m {
			return 0, fmt.Errorf("invalid date in %q", raw)
		}
		return t.Unix(), nil
	}
	refDate := time.Date(n.Year(), n.Month(), n.Day(), hour, minute, 0, 0, loc)
	switch {
	case ref == "yesterday":
		return refDate.AddDate(0, 0, -1).Unix(), nil
	case ref == "today":
		return refDate.Unix(), nil
	case ref == "tomorrow":
		return refDate.AddDate(0, 0, 1).Unix(), nil
	case strings.Count(ref, "/") == 2:
		p := strings.Split(ref, "/")
		m, err1 := num(p[0])
		d, err2 := num(p[1])
		y, err3 := num(p[2])
		if err1 != nil || err2 != nil || err3 != nil || m < 1 || m > 12 {
			return 0, fmt.Errorf("invalid date in %q", raw)
		}
		if y < 1900 {
			y += 1900
		}
		if y < 1970 {
			y += 100
		}
		return date(y, time.Month(m), d)
	case len(ref) == 8 && allDigits(ref):
		m := atoi(ref[4:6])
		if m < 1 || m > 12 {
			return 0, fmt.Errorf("invalid date in %q", raw)
		}
		return date(atoi(ref[:4]), time.Month(m), atoi(ref[6:8]))
	case len(ref) >= 3 && indexOf(monthNames, ref[:3]) >= 0:
		var d int
		switch {
		case len(ref) >= 2 && allDigits(ref[len(ref)-2:]):
			d = atoi(ref[len(ref)-2:])
		case isDigit(ref[len(ref)-1]):
			d = atoi(ref[len(ref)-1:])
		default:
			return 0, fmt.Errorf("day of month required after month name in %q", raw)
		}
		return date(n.Year(), time.Month(indexOf(monthNames, ref[:3])+1), d)
	case len(ref) >= 3 && indexOf(weekdayNames, ref[:3]) >= 0:
		back := int(refDate.Weekday()) - indexOf(weekdayNames, ref[:3])
		if back < 0 {
			back += 7
		}
		return refDate.AddDate(0, 0, -back).Unix(), nil
	case ref == "":
		return refDate.Unix(), nil
	}
	return 0, fmt.Errorf("unknown day reference %q", raw)
}

func indexOf(list []string, s string) int {
	for i, x := range list {
		if x == s {
			return i
		}
	}
	return -1
}
