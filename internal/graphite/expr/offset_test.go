package expr

import (
	"errors"
	"testing"
)

func TestParseOffset(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		err  int // byte offset of the error, -1 for none
	}{
		{"", 0, -1},
		{"-1h", -3600, -1},
		{"1d", 86400, -1},
		{"5min", 300, -1},
		{"+2w", 14 * 86400, -1},
		{"1mon", 30 * 86400, -1},
		{"2months", 60 * 86400, -1},
		{"1y", 365 * 86400, -1},
		{"10s", 10, -1},
		{"30seconds", 30, -1},
		{"1hour", 3600, -1},
		{"-1d12h", -(86400 + 12*3600), -1},
		{"1minute", 60, -1},
		{"1m", 0, 1},
		{"5", 0, 1},
		{"h", 0, 0},
		{"-h", 0, 1},
		{"1h-", 0, 2},
		{"1ms", 0, 1},
		{"1x", 0, 1},
		{" 1h", 0, 0},
		{"99999999999999999999s", 0, 0},
		{"999999999y", 0, 0},
	} {
		got, err := ParseOffset(tc.in)
		if tc.err < 0 {
			if err != nil || got != tc.want {
				t.Errorf("ParseOffset(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
			}
			continue
		}
		var oe *OffsetError
		if !errors.As(err, &oe) {
			t.Errorf("ParseOffset(%q) = %d, %v; want an OffsetError", tc.in, got, err)
			continue
		}
		if oe.Offset != tc.err {
			t.Errorf("ParseOffset(%q) error at %d (%v); want at %d", tc.in, oe.Offset, err, tc.err)
		}
	}
}
