package encoding

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestScaledTimestamps(t *testing.T) {
	r := newRand(5)
	f := func(ts []int64, wantWidth int) {
		t.Helper()
		b := AppendScaledTimestamps([]byte{7}, ts)
		require.Equal(t, byte(7), b[0])
		col := b[1:]
		require.Equal(t, col, AppendScaledTimestamps(nil, ts), "deterministic")
		s, n, err := ParseScaledTimestamps(append(col, 0xee))
		require.NoError(t, err)
		require.Equal(t, len(col), n)
		require.NoError(t, s.Validate())
		require.Equal(t, len(ts), s.Len())
		require.Equal(t, wantWidth, s.Width())
		require.Equal(t, ts[0], s.Start())
		for i := range ts {
			require.Equal(t, ts[i], s.At(i))
		}
		require.Equal(t, append([]int64{-1}, ts...), s.AppendAll([]int64{-1}))
		for _, r := range [][2]int{{0, 0}, {0, 1}, {len(ts) / 3, len(ts) / 2}, {len(ts) - 1, len(ts)}} {
			require.Equal(t, append([]int64{-1}, ts[r[0]:r[1]]...), s.AppendRange([]int64{-1}, r[0], r[1]), "rows [%d, %d)", r[0], r[1])
		}
		// Search: every timestamp, between timestamps, and both ends.
		require.Equal(t, 0, s.Search(math.MinInt64))
		if ts[len(ts)-1] < math.MaxInt64 {
			require.Equal(t, len(ts), s.Search(ts[len(ts)-1]+1))
		}
		for i, x := range ts {
			require.Equal(t, i, s.Search(x))
			if i > 0 && ts[i-1]+1 < x {
				require.Equal(t, i, s.Search(x-1))
			}
		}
	}
	f([]int64{1795297874652}, 0)
	f([]int64{0, 1000, 2000, 3000}, 0)
	f(regularTimestamps(r, 7200, 1795297874652, 1000, 0), 0)
	f(regularTimestamps(r, 7200, 1795297874652, 1000, 3), 1)
	f(regularTimestamps(r, 480, -1795297874652, 15000, 200), 2)
	f([]int64{0, 1, 2, 3, 1 << 40}, 8)
	f([]int64{0, 10, 20, 1 << 20, 1<<20 + 1}, 4)
	f([]int64{math.MinInt64, math.MaxInt64}, 0) // interval wraps, diffs are zero
	f([]int64{math.MinInt64, 0, math.MaxInt64}, 1)
	f([]int64{math.MinInt64, math.MinInt64 + 1, math.MaxInt64}, 8)
	// Irregular: a gap in the middle makes At non-linear; Search still works.
	ts := regularTimestamps(r, 100, 0, 1000, 0)
	for i := 50; i < 100; i++ {
		ts[i] += 30000
	}
	f(ts, 2)
}

func TestScaledTimestampsErrors(t *testing.T) {
	hdr := func(n uint64, start, interval int64, w byte, rest ...byte) []byte {
		b := binary.AppendUvarint(nil, n)
		b = binary.AppendVarint(b, start)
		b = binary.AppendVarint(b, interval)
		return append(append(b, w), rest...)
	}
	parseErr := func(src []byte) {
		t.Helper()
		_, n, err := ParseScaledTimestamps(src)
		require.ErrorIs(t, err, ErrCorrupt)
		require.Zero(t, n)
	}
	parseErr(nil)
	parseErr([]byte{0x80})
	parseErr(hdr(0, 0, 0, 0))
	parseErr(hdr(MaxRows+1, 0, 1, 0))
	parseErr(hdr(2, 0, 1, 3, 0, 0, 0, 0, 0, 0))
	parseErr(hdr(3, 0, 1, 2, 0, 0, 0, 0, 0)) // 5 of 6 diff bytes
	parseErr(hdr(1, 0, 1, 0)[:3])            // no width byte
	parseErr(hdr(1<<62, 0, 1, 8, 1, 2, 3))   // n·w overflows
	parseErr(binary.AppendUvarint(nil, 2))   // no start

	invalid := func(src []byte) {
		t.Helper()
		s, _, err := ParseScaledTimestamps(src)
		require.NoError(t, err)
		require.ErrorIs(t, s.Validate(), ErrCorrupt)
	}
	invalid(hdr(2, 5, 0, 0))                                  // equal timestamps
	invalid(hdr(2, 5, -1, 0))                                 // decreasing
	invalid(hdr(3, math.MaxInt64-1, 1, 0))                    // runs past MaxInt64
	invalid(hdr(MaxRows, 0, math.MaxInt64/(MaxRows-2), 0))    // overflows late, O(1) check
	invalid(hdr(3, 0, 10, 1, 0, 0xf6, 0))                     // second diff −10: equal
	invalid(hdr(3, math.MaxInt64-30, 10, 1, 0, 0, 0x7f))      // wraps at the end
	s, _, err := ParseScaledTimestamps(hdr(MaxRows, 0, 1, 0)) // large but valid, no diff bytes
	require.NoError(t, err)
	require.NoError(t, s.Validate())
	require.Equal(t, int64(MaxRows-1), s.At(MaxRows-1))
	require.Equal(t, 1000, s.Search(1000))
}
