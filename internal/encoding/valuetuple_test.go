package encoding

import (
	"math"
	"math/bits"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestValueTuple(t *testing.T) {
	r := newRand(3)
	f := func(base float64, vals []float64) {
		t.Helper()
		b := AppendValueTuple([]byte{9}, base, vals)
		require.Equal(t, byte(9), b[0])
		tuple := b[1:]
		require.Len(t, tuple, (ValueTupleBits(base, vals)+7)/8)
		require.Equal(t, tuple, AppendValueTuple(nil, base, vals), "deterministic")
		got, n, err := DecodeValueTuple([]float64{5}, append(tuple, 0xff), base, len(vals))
		require.NoError(t, err)
		require.Equal(t, len(tuple), n)
		requireSameBits(t, append([]float64{5}, vals...), got)
	}
	f(0, []float64{0})
	f(1, []float64{1, 1, 1, 1, 1, 1, 1, 1}) // all case 1: 8 bits
	require.Equal(t, 8, ValueTupleBits(1, constVals(8, 1)))
	f(0, specialFloats)
	for _, s := range specialFloats {
		f(s, []float64{s, 0, s, math.Float64frombits(staleNaN), s})
		f(1.5, []float64{s})
	}
	f(100, counter(8, 100, 1))
	f(1e9, counter(255, 1e9+0.5, 4096))
	f(0.3, randomUnit(r, 8))
	f(0.3, randomUnit(r, 255))
	f(1.5, gauge(r, 16))
	for range 200 {
		vals := make([]float64, 1+r.IntN(MaxTupleSize))
		for i := range vals {
			switch r.IntN(4) {
			case 0:
				vals[i] = specialFloats[r.IntN(len(specialFloats))]
			case 1:
				vals[i] = math.Float64frombits(r.Uint64())
			case 2:
				if i > 0 {
					vals[i] = vals[i-1]
				}
			default:
				vals[i] = float64(r.IntN(1000)) / 10
			}
		}
		f(math.Float64frombits(r.Uint64()), vals)
	}
}

func TestAppendValueTupleBadLength(t *testing.T) {
	require.Equal(t, []byte{1}, AppendValueTuple([]byte{1}, 0, nil))
	require.Equal(t, []byte{1}, AppendValueTuple([]byte{1}, 0, make([]float64, MaxTupleSize+1)))
	require.Zero(t, ValueTupleBits(0, nil))
}

func TestDecodeValueTupleErrors(t *testing.T) {
	f := func(src []byte, n int, want error) {
		t.Helper()
		got, k, err := DecodeValueTuple([]float64{3}, src, 0, n)
		require.ErrorIs(t, err, want)
		require.Zero(t, k)
		require.Equal(t, []float64{3}, got, "dst must be unchanged on error")
	}
	f([]byte{0}, 0, ErrArgument)
	f([]byte{0}, MaxTupleSize+1, ErrArgument)
	f(nil, 1, ErrCorrupt)
	f([]byte{0}, 9, ErrCorrupt)                                              // 8 bits for 9 values
	f([]byte{0b10000000}, 1, ErrCorrupt)                                     // case 2 before any window
	f([]byte{0b11000001, 0b10000000}, 1, ErrCorrupt)                         // LZ 0, L 48: truncated
	f([]byte{0xff, 0b00010000, 0xff, 0xff, 0xff, 0xff, 0xff}, 1, ErrCorrupt) // LZ 31 + L 34 > 64
	f([]byte{0xff, 0xff, 0xff}, 1, ErrCorrupt)
}

// TestValueTupleReCheck is the example of Heracles Fig. 8: greedy coding
// keeps the wide window [1, 24) of the second XOR for the last three, while
// the tuple-end re-check opens the narrow window [10, 16) at the third. The
// paper prints some constants with a hex digit missing; these are the
// 16-digit values matching its significant-bit ranges.
func TestValueTupleReCheck(t *testing.T) {
	xors := []uint64{0x20000f0000000000, 0x402fff0000000000, 0x002f000000000000, 0x001f000000000000, 0x002f000000000000}
	base := 0.0
	vals := make([]float64, len(xors))
	prev := math.Float64bits(base)
	for i, x := range xors {
		prev ^= x
		vals[i] = math.Float64frombits(prev)
	}
	var p xorPlan
	require.Equal(t, xors, valueXORs(make([]uint64, len(vals)), math.Float64bits(base), vals))
	greedy := planGreedy(xors, &p)
	// Greedy: case 3 (13+22), case 3 (13+23), then case 2 with L = 23 three times.
	require.Equal(t, 35+36+3*25, greedy)
	optimal := ValueTupleBits(base, vals)
	// Re-check: case 3 (13+6) at the third value, then case 2 with L = 6 twice.
	require.Equal(t, 35+36+19+2*8, optimal)
	require.Less(t, len(AppendValueTuple(nil, base, vals)), (greedy+7)/8)
	got, _, err := DecodeValueTuple(nil, AppendValueTuple(nil, base, vals), base, len(vals))
	require.NoError(t, err)
	requireSameBits(t, vals, got)
}

// TestPlanXORExact checks the dynamic program against brute force over every
// choice of case 2 / case 3 on small tuples, and that it never loses to
// greedy coding.
func TestPlanXORExact(t *testing.T) {
	r := newRand(4)
	bruteForce := func(xs []uint64) int {
		best := math.MaxInt
		for mask := 0; mask < 1<<len(xs); mask++ {
			cost, ok := 0, true
			var lz, l uint
			for i, x := range xs {
				switch {
				case x == 0:
					cost++
				case mask&(1<<i) != 0:
					lz, l = xorWindow(x)
					cost += case3Overhead + int(l)
				case l != 0 && fitsWindow(x, lz, l):
					cost += 2 + int(l)
				default:
					ok = false
				}
			}
			if ok {
				best = min(best, cost)
			}
		}
		return best
	}
	// XORs drawn from a few nested windows make case 2 vs 3 a real choice.
	genXOR := func() uint64 {
		if r.IntN(5) == 0 {
			return 0
		}
		lz := uint(r.IntN(40))
		l := 1 + uint(r.IntN(int(64-lz)))
		x := (r.Uint64() | 1) << (64 - l) >> lz
		return x | 1<<(63-lz)
	}
	for range 3000 {
		xs := make([]uint64, 1+r.IntN(10))
		for i := range xs {
			xs[i] = genXOR()
		}
		var p, g xorPlan
		got := planXOR(xs, &p)
		require.Equal(t, bruteForce(xs), got, "xors %#x", xs)
		require.LessOrEqual(t, got, planGreedy(xs, &g))
		// The plan's bits are what writeXOR writes.
		w := bitWriter{}
		writeXOR(&w, xs, &p)
		require.Len(t, w.finish(), (got+7)/8)
	}
	// Largest tuple, widest windows: cost fits the int16 table.
	xs := make([]uint64, MaxTupleSize)
	for i := range xs {
		xs[i] = math.MaxUint64
	}
	var p xorPlan
	require.Equal(t, case3Overhead+64+(MaxTupleSize-1)*66, planXOR(xs, &p))
	require.Equal(t, 1, bits.OnesCount64(p.case3[0]))
}

// BenchmarkAppendValueTuple closes head value tuples of 8 (the head's
// tuple size) of every series of the benchmark data sets (the node capture
// and uniform random values), reporting ns and bits per value.
func BenchmarkAppendValueTuple(b *testing.B) {
	for _, ds := range benchDataSets(b) {
		b.Run(ds.name, func(b *testing.B) {
			var tuples [][]float64
			for _, r := range ds.d.refs() {
				v := r.s.vals
				for i := 0; i+8 <= len(v); i += 8 {
					tuples = append(tuples, v[i:i+8])
				}
			}
			var buf []byte
			bytes, n := 0, 0
			for b.Loop() {
				for _, t := range tuples {
					buf = AppendValueTuple(buf[:0], t[0], t)
					bytes += len(buf)
					n += len(t)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/value")
			b.ReportMetric(8*float64(bytes)/float64(n), "bits/value")
		})
	}
}
