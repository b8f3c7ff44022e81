package attime

import (
	"strings"
	"testing"
	"time"
)

// attimeNow is Friday 2024-03-15 10:30:45 UTC.
var attimeNow = time.Date(2024, 3, 15, 10, 30, 45, 0, time.UTC)

func TestParse(t *testing.T) {
	utc := func(y int, mo time.Month, d, h, mi int) int64 {
		return time.Date(y, mo, d, h, mi, 0, 0, time.UTC).Unix()
	}
	now := attimeNow.Unix()
	today := utc(2024, 3, 15, 0, 0)
	for _, tc := range []struct {
		in   string
		want int64
	}{
		{"now", now},
		{"", now}, // as attime.py: an empty reference is now
		{"_", now},
		{"now-", now},
		{"+", now},
		{"NOW", now},
		{" now ", now},
		{"-1h", now - 3600},
		{"-1hour", now - 3600},
		{"-2hours", now - 7200},
		{"now-5min", now - 300},
		{"now-5minutes", now - 300},
		{"now+1d", now + 86400},
		{"+1d", now + 86400},
		{"-10s", now - 10},
		{"-10sec", now - 10},
		{"-2w", now - 14*86400},
		{"-1mon", now - 30*86400},
		{"-1months", now - 30*86400},
		{"-1y", now - 365*86400},
		{"now-1h30min", now - 5400},
		{"now-1d_2h", now - 86400 - 7200},
		{"1700000000", 1700000000},
		{"0", 0},
		{"20241301", 20241301}, // month 13: not YYYYMMDD, so epoch seconds (attime.py)
		{"20240101", utc(2024, 1, 1, 0, 0)},
		{"04:00_20240101", utc(2024, 1, 1, 4, 0)},
		{"23:59_20231231", utc(2023, 12, 31, 23, 59)},
		{"4:05_20240101", utc(2024, 1, 1, 4, 5)},
		{"04:00am_20240101", utc(2024, 1, 1, 4, 0)},
		{"04:00pm_20240101", utc(2024, 1, 1, 16, 0)},
		{"12:30pm_20240101", utc(2024, 1, 1, 0, 30)}, // graphite-web: (12+12)%24
		{"9am", utc(2024, 3, 15, 9, 0)},
		{"9pm", utc(2024, 3, 15, 21, 0)},
		{"11am_yesterday", utc(2024, 3, 14, 11, 0)},
		{"noon", utc(2024, 3, 15, 12, 0)},
		{"midnight", today},
		{"teatime", utc(2024, 3, 15, 16, 0)},
		{"today", today},
		{"yesterday", today - 86400},
		{"tomorrow", today + 86400},
		{"noon_yesterday", utc(2024, 3, 14, 12, 0)},
		{"noon yesterday", utc(2024, 3, 14, 12, 0)},
		{"midnight-1h", today - 3600},
		{"yesterday+2h", today - 86400 + 7200},
		{"01/02/2024", utc(2024, 1, 2, 0, 0)},
		{"01/02/24", utc(2024, 1, 2, 0, 0)},
		{"12/31/99", utc(1999, 12, 31, 0, 0)},
		{"06:00_01/02/2024", utc(2024, 1, 2, 6, 0)},
		{"jan15", utc(2024, 1, 15, 0, 0)},
		{"january 5", utc(2024, 1, 5, 0, 0)},
		{"noon_feb29", utc(2024, 2, 29, 12, 0)},
		{"friday", today},
		{"monday", utc(2024, 3, 11, 0, 0)},
		{"sat", utc(2024, 3, 9, 0, 0)},
		{"thursday", utc(2024, 3, 14, 0, 0)},
	} {
		got, err := Parse(tc.in, attimeNow, time.UTC)
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.in, err)
			continue
		}
		if got != tc.want {
			t.Errorf("Parse(%q) = %d (%s), want %d (%s)", tc.in, got, time.Unix(got, 0).UTC(), tc.want, time.Unix(tc.want, 0).UTC())
		}
	}
}

func TestParseLocation(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Skip("no tzdata:", err)
	}
	// 10:30 UTC is 06:30 EDT on 2024-03-15: midnight is 04:00 UTC.
	for _, tc := range []struct {
		in   string
		want time.Time
	}{
		{"midnight", time.Date(2024, 3, 15, 4, 0, 0, 0, time.UTC)},
		{"20240101", time.Date(2024, 1, 1, 5, 0, 0, 0, time.UTC)}, // EST
		{"-1h", attimeNow.Add(-time.Hour)},
	} {
		got, err := Parse(tc.in, attimeNow, ny)
		if err != nil || got != tc.want.Unix() {
			t.Errorf("Parse(%q, New York) = %d, %v; want %d", tc.in, got, err, tc.want.Unix())
		}
	}
}

// TestParseNilLocation parses against another now (a Tuesday), with a
// nil location, which is UTC.
func TestParseNilLocation(t *testing.T) {
	now := time.Unix(1700000000, 0) // 2023-11-14 22:13:20 UTC
	for _, tc := range []struct {
		in   string
		want int64
	}{
		{"now", now.Unix()},
		{"", now.Unix()},
		{"-1h", now.Unix() - 3600},
		{"now-1d", now.Unix() - 86400},
		{"1600000000", 1600000000},
		{"midnight", 1699920000},
		{"midnight+2h", 1699920000 + 7200},
		{"yesterday", 1699920000 - 86400},
		{"20231101", 1698796800},
		{"12:30_20231101", 1698796800 + 12*3600 + 1800},
		{"noon tomorrow", 1699920000 + 86400 + 12*3600},
		{"11/01/2023", 1698796800},
		{"nov1", 1698796800},
		{"monday", 1699920000 - 86400},
		{"3pm", 1699920000 + 15*3600},
	} {
		got, err := Parse(tc.in, now, nil)
		if err != nil || got != tc.want {
			t.Errorf("Parse(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"blah", "13/45/2023", "-1x", "25:00"} {
		if _, err := Parse(bad, now, nil); err == nil {
			t.Errorf("Parse(%q) succeeded", bad)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"bogus", `unknown day reference "bogus"`},
		{"-1m", `invalid offset unit "m"`},
		{"-5", `invalid offset unit ""`},
		{"-h", "want a number"},
		{"25:00_20240101", "hour 25"},
		{"10:75_20240101", "minute 75"},
		{"20240231", "day 31 is not in month 2"},
		{"march", "day of month required"},
		{"feb30", "day 30 is not in month 2"},
		{"13/01/2024", "month 13"},
		{"1h30min", "unknown day reference"},
		{"99999999999999999999", "out of range"},
		{"-99999999999999y", "out of range"},
		{"now+9000y", "out of range"},
		{"x:00", "hour"},
		{strings.Repeat("1", 300), "longer than"},
	} {
		_, err := Parse(tc.in, attimeNow, time.UTC)
		if err == nil {
			t.Errorf("Parse(%q): no error, want %q", tc.in, tc.want)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) = %v, want it to say %q", tc.in, err, tc.want)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"now", "-1h", "now-5min", "04:00_20240101", "12:30pm_tomorrow+1y2mon3w4d5h6min7s",
		"01/02/24", "jan15", "monday", "noon", "1700000000", "20240101", "-99999999999y", "9am", "x:", "1:", "::", "am", "0am"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := Parse(s, attimeNow, time.UTC)
		if err != nil {
			return
		}
		if a < minUnix || a > maxUnix {
			t.Fatalf("Parse(%q) = %d: outside the representable range", s, a)
		}
		b, err := Parse(s, attimeNow, time.UTC)
		if err != nil || a != b {
			t.Fatalf("Parse(%q) not deterministic: %d then %d, %v", s, a, b, err)
		}
	})
}
