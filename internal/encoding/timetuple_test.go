package encoding

import (
	"encoding/binary"
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestTimeTuple(t *testing.T) {
	f := func(ts []int64, wantLen int) {
		t.Helper()
		prefix := []byte{1, 2, 3}
		b := AppendTimeTuple(append([]byte(nil), prefix...), ts)
		require.Equal(t, prefix, b[:3])
		tuple := b[3:]
		if wantLen > 0 {
			require.Len(t, tuple, wantLen)
		}
		first, err := TimeTupleFirst(tuple)
		require.NoError(t, err)
		require.Equal(t, ts[0], first)
		// Trailing bytes of the next tuple must not be consumed.
		got, n, err := DecodeTimeTuple([]int64{42}, append(tuple, 0xff, 0x01), len(ts))
		require.NoError(t, err)
		require.Equal(t, len(tuple), n)
		require.Equal(t, append([]int64{42}, ts...), got)
	}
	f([]int64{1795297874652}, 8)
	f([]int64{0, 1000, 2000, 3000, 4000, 5000, 6000, 7000}, 8+7*2)
	f([]int64{-5, -4, 0, 127, 128, 16511}, 8+1+1+1+1+2)
	f([]int64{math.MinInt64, math.MaxInt64}, 8+10)
	f([]int64{math.MinInt64, -1, 0, math.MaxInt64 - 1, math.MaxInt64}, 0)
	f(regularTimestamps(newRand(2), 255, 1795297874652, 15000, 20), 0)
}

func TestDecodeTimeTupleErrors(t *testing.T) {
	le := func(v int64, rest ...byte) []byte {
		return append(binary.LittleEndian.AppendUint64(nil, uint64(v)), rest...)
	}
	f := func(src []byte, n int, want error) {
		t.Helper()
		dst := []int64{7}
		got, k, err := DecodeTimeTuple(dst, src, n)
		require.ErrorIs(t, err, want)
		require.Zero(t, k)
		require.Equal(t, []int64{7}, got, "dst must be unchanged on error")
		var de *DecodeError
		if errors.Is(want, ErrCorrupt) {
			require.ErrorAs(t, err, &de)
		}
	}
	f(nil, 1, ErrCorrupt)
	f([]byte{1, 2, 3}, 1, ErrCorrupt)
	f(le(0), 0, ErrArgument)
	f(le(0), -1, ErrArgument)
	f(le(0), 2, ErrCorrupt)                                                              // missing delta
	f(le(0, 0x80), 2, ErrCorrupt)                                                        // truncated uvarint
	f(le(0, 0), 2, ErrCorrupt)                                                           // zero delta
	f(le(math.MaxInt64-1, 2), 2, ErrCorrupt)                                             // overflow
	f(le(0, 1, 1), 1<<40, ErrCorrupt)                                                    // count far beyond the input
	f(le(-1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01), 2, ErrCorrupt) // 2^64-1 from -1
}
