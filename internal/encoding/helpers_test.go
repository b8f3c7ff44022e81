package encoding

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// staleNaN is Prometheus' stale marker (value.StaleNaN).
const staleNaN = 0x7ff0000000000002

// specialFloats are the values every value codec must keep bit-exact.
var specialFloats = []float64{
	math.Float64frombits(staleNaN),
	math.NaN(),
	math.Float64frombits(0x7ff8000000000001), // quiet NaN with payload
	math.Float64frombits(0xfff0000000000001), // negative signalling NaN
	math.Float64frombits(0xffffffffffffffff),
	math.Inf(1), math.Inf(-1),
	math.Copysign(0, -1), 0,
	math.SmallestNonzeroFloat64, -math.SmallestNonzeroFloat64,
	math.Float64frombits(0x000fffffffffffff), // largest subnormal
	math.MaxFloat64, -math.MaxFloat64,
	1, -1, 0.1, 1e300, -1e-300,
}

func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)) }

// requireSameBits fails unless want and got are bit-identical.
func requireSameBits(t *testing.T, want, got []float64) {
	t.Helper()
	require.Len(t, got, len(want))
	for i := range want {
		require.Equalf(t, math.Float64bits(want[i]), math.Float64bits(got[i]),
			"value %d: want %v (%#x) got %v (%#x)", i, want[i], math.Float64bits(want[i]), got[i], math.Float64bits(got[i]))
	}
}

func counter(n int, start, step float64) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = start + float64(i)*step
	}
	return v
}

func randomUnit(r *rand.Rand, n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = r.Float64()
	}
	return v
}

func constVals(n int, c float64) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = c
	}
	return v
}

// gauge is a slowly moving gauge with 2 decimal digits, like node_exporter's
// load averages.
func gauge(r *rand.Rand, n int) []float64 {
	v := make([]float64, n)
	x := 1.5
	for i := range v {
		x += float64(r.IntN(21)-10) / 100
		v[i] = math.Round(x*100) / 100
	}
	return v
}

// regularTimestamps returns n timestamps step ms apart, each shifted by up
// to ±jitter ms.
func regularTimestamps(r *rand.Rand, n int, start, step, jitter int64) []int64 {
	ts := make([]int64, n)
	for i := range ts {
		ts[i] = start + int64(i)*step
		if jitter > 0 {
			ts[i] += r.Int64N(2*jitter+1) - jitter
		}
	}
	return ts
}
