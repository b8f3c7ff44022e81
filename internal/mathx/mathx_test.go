package mathx

import (
	"math"
	"math/big"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestFloorDiv(t *testing.T) {
	for _, tc := range []struct{ a, b, q, m int64 }{
		{7, 2, 3, 1},
		{-7, 2, -4, 1},
		{7, -2, -4, -1},
		{-7, -2, 3, -1},
		{6, 3, 2, 0},
		{-6, 3, -2, 0},
		{0, 5, 0, 0},
		{-1, 60_000, -1, 59_999},
		{math.MinInt64, 1, math.MinInt64, 0},
		{math.MinInt64, math.MaxInt64, -2, math.MaxInt64 - 1},
		{math.MaxInt64, math.MinInt64, -1, -1},
	} {
		require.Equal(t, tc.q, FloorDiv(tc.a, tc.b), "FloorDiv(%d, %d)", tc.a, tc.b)
		require.Equal(t, tc.m, FloorMod(tc.a, tc.b), "FloorMod(%d, %d)", tc.a, tc.b)
	}
}

// FuzzFloorDiv checks both against math/big's Euclidean division turned
// into floor division, and a = q·b + m.
func FuzzFloorDiv(f *testing.F) {
	f.Add(int64(-7), int64(2))
	f.Add(int64(7), int64(-2))
	f.Add(int64(math.MinInt64), int64(3))
	f.Fuzz(func(t *testing.T, a, b int64) {
		if b == 0 || a == math.MinInt64 && b == -1 {
			return // division by zero; the quotient overflows
		}
		q, m := FloorDiv(a, b), FloorMod(a, b)
		var bq, bm big.Int
		bq.DivMod(big.NewInt(a), big.NewInt(b), &bm) // Euclidean: 0 ≤ bm < |b|
		if b < 0 && bm.Sign() != 0 {
			bq.Add(&bq, big.NewInt(-1))
			bm.Add(&bm, big.NewInt(b))
		}
		require.Equal(t, bq.Int64(), q, "FloorDiv(%d, %d)", a, b)
		require.Equal(t, bm.Int64(), m, "FloorMod(%d, %d)", a, b)
	})
}
