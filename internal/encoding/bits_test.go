package encoding

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestBitWriterReader(t *testing.T) {
	r := newRand(1)
	f := func(widths []uint) {
		t.Helper()
		var vals []uint64
		w := bitWriter{b: []byte{0xAA}} // appends after existing bytes
		total := 0
		for _, n := range widths {
			v := r.Uint64()
			w.writeBits(v, n)
			if n < 64 {
				v &= 1<<n - 1
			}
			vals = append(vals, v)
			total += int(n)
		}
		b := w.finish()
		require.Equal(t, byte(0xAA), b[0])
		require.Len(t, b, 1+(total+7)/8)
		br := newBitReader(b[1:])
		for i, n := range widths {
			require.Equalf(t, vals[i], br.readBits(n), "field %d width %d", i, n)
		}
		require.False(t, br.fail)
		require.Equal(t, (total+7)/8, br.consumed())
		br.readBits(8)
		require.True(t, br.fail, "reading past the end must fail")
	}
	f([]uint{1})
	f([]uint{64})
	f([]uint{64, 64, 1, 63})
	f([]uint{0, 3, 0, 5})
	f([]uint{7, 57, 13, 51, 2, 62, 33, 31, 32, 1})
	var many []uint
	for range 500 {
		many = append(many, uint(r.IntN(65)))
	}
	f(many)
}
