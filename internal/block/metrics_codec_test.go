package block

import (
	"encoding/binary"
	"errors"
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestMantissaAt(t *testing.T) {
	negZero := math.Copysign(0, -1)
	tenth := 0.1 // a variable: constant 0.1 + 0.2 is exactly 0.3
	for _, tc := range []struct {
		v      float64
		k      int
		m      int64
		ok     bool
		digits int
	}{
		{0, 0, 0, true, 0},
		{negZero, 0, 0, false, -1}, // no mantissa gives −0 back
		{negZero, 2, 0, false, -1},
		{1, 0, 1, true, 0},
		{1, 3, 1000, true, 0},
		{0.1, 0, 0, false, 1},
		{0.1, 1, 1, true, 1},
		{0.3, 1, 3, true, 1},
		{tenth + 0.2, 1, 0, false, -1}, // 0.30000000000000004 needs m > 2^53
		{-21.37, 2, -2137, true, 2},
		{12345.678901, 6, 12345678901, true, 6},
		{1.0 / 3, 16, 3333333333333333, true, 16}, // its shortest repr
		{1 << 53, 0, 1 << 53, true, 0},
		{1 << 53, 1, 0, false, 0}, // 10 × 2^53 is beyond 2^53
		{1<<53 + 2, 0, 1<<53 + 2, true, 0},
		{1 << 62, 0, 1 << 62, true, 0},
		{-(1 << 63), 0, math.MinInt64, true, 0},
		{1 << 63, 0, 0, false, -1}, // beyond int64
		{1e22, 0, 0, false, -1},
		{1e-22, 22, 1, true, 22},
		{1.5e-22, 22, 0, false, -1},
		{math.Inf(1), 0, 0, false, -1},
		{math.Inf(-1), 5, 0, false, -1},
		{math.NaN(), 0, 0, false, -1},
		{math.SmallestNonzeroFloat64, 22, 0, false, -1},
		{math.MaxFloat64, 0, 0, false, -1},
	} {
		m, ok := mantissaAt(tc.v, tc.k)
		require.Equal(t, tc.ok, ok, "mantissaAt(%v, %d)", tc.v, tc.k)
		if ok {
			require.Equal(t, tc.m, m, "mantissaAt(%v, %d)", tc.v, tc.k)
			require.Equal(t, math.Float64bits(tc.v), math.Float64bits(toDecimal(m, tc.k)))
		}
		require.Equal(t, tc.digits, digitsOf(tc.v), "digitsOf(%v)", tc.v)
	}
}

// TestToDecimal checks toDecimal(m, k) against strconv's parse of the
// decimal m·10^−k, the float64 nearest to it, for mantissas of every size.
func TestToDecimal(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	n := 1_000_000
	if testing.Short() {
		n = 100_000
	}
	for i := range n {
		k := i % (maxDigits + 1)
		m := rng.Int64N(1<<uint(1+rng.IntN(53))) * (1 - 2*int64(i&1))
		want, err := strconv.ParseFloat(strconv.FormatInt(m, 10)+"e-"+strconv.Itoa(k), 64)
		require.NoError(t, err)
		if got := toDecimal(m, k); math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("toDecimal(%d, %d) = %v, the decimal parses to %v", m, k, got, want)
		}
	}
}

func TestOrdered(t *testing.T) {
	vals := []float64{math.Inf(-1), -math.MaxFloat64, -1, -math.SmallestNonzeroFloat64, math.Copysign(0, -1),
		0, math.SmallestNonzeroFloat64, 1, math.MaxFloat64, math.Inf(1)}
	var prev int64 = math.MinInt64
	for _, v := range vals {
		o := ordered(v)
		require.Greater(t, o, prev, "ordered(%v)", v)
		prev = o
		require.Equal(t, math.Float64bits(v), math.Float64bits(fromOrdered(o)))
	}
	require.Equal(t, int64(-1), ordered(math.Copysign(0, -1)))
	for _, b := range []uint64{0, 1 << 63, math.MaxUint64, 0x7ff8000000000001, 0xfff8000000000000, 0x8000000000000001} {
		require.Equal(t, b, math.Float64bits(fromOrdered(ordered(math.Float64frombits(b)))), "%#x", b)
	}
	for _, x := range []int64{0, -1, 1, math.MinInt64, math.MaxInt64} {
		require.Equal(t, x, unzigzag(zigzag(x)))
	}
}

// TestIntColumns round-trips integer columns in every mode, across block
// boundaries and bit widths up to 64, and checks the chosen mode is the
// smallest.
func TestIntColumns(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	gen := map[string]func(i int) int64{
		"zero":     func(int) int64 { return 0 },
		"constant": func(int) int64 { return 3600 },
		"ramp":     func(i int) int64 { return int64(i) * 1000 },
		"small":    func(int) int64 { return rng.Int64N(9) - 4 },
		"w56":      func(int) int64 { return rng.Int64N(1 << 56) },
		"w57":      func(int) int64 { return rng.Int64N(1 << 57) },
		"w58":      func(int) int64 { return rng.Int64N(1 << 58) },
		"w63":      func(int) int64 { return rng.Int64() },
		"w64":      func(int) int64 { return int64(rng.Uint64()) },
		"extremes": func(i int) int64 { return []int64{math.MinInt64, math.MaxInt64, 0, -1}[i%4] },
		"outlier": func(i int) int64 {
			if i == 77 {
				return 1 << 40
			}
			return int64(i % 3)
		},
	}
	for name, g := range gen {
		for _, n := range []int{0, 1, 2, 7, 127, 128, 129, 256, 300} {
			xs := make([]int64, n)
			for i := range xs {
				xs[i] = g(i)
			}
			best, bestSize := bestColMode(xs)
			for mode := colFOR; mode <= colDeltaVarint; mode++ {
				enc := appendCol(nil, xs, mode)
				if mode == best {
					require.Len(t, enc, bestSize, "%s n=%d mode %d", name, n, mode)
				}
				require.GreaterOrEqual(t, len(enc), bestSize, "%s n=%d: mode %d is smaller than the best", name, n, mode)
				// Decode from a buffer that ends with the column, so that
				// unpack must not read past it, and from one with slack.
				for _, tail := range []int{0, 16} {
					buf := append(slices.Clip(enc), make([]byte, tail)...)
					d := &decbuf{b: buf, what: "metrics"}
					r := d.locateCol(n, mode)
					require.NoError(t, d.err)
					require.Equal(t, len(enc), d.pos)
					got := make([]int64, n)
					for i := 0; i < n; i += forBlock {
						r.next(got[i:min(i+forBlock, n)])
					}
					require.Equal(t, xs, got, "%s n=%d mode %d", name, n, mode)
				}
			}
		}
	}
}

// TestExactSums checks invariant 7 on sequences of values: Sum and SumSq
// are the exact sums of the decimals, rounded once, while they can be.
func TestExactSums(t *testing.T) {
	for _, tc := range []struct {
		name       string
		vs         []float64
		sum, sumSq float64
		exact      uint8 // flags left after the values
	}{
		{"tenths", []float64{0.1, 0.2, 0.3}, 0.6, 0.14, exactSum | exactSq}, // naive: 0.6000000000000001
		{"more digits later", []float64{1, 0.5, 0.25, 0.125}, 1.875, 1.328125, exactSum | exactSq},
		{"cancelling", []float64{0.1, 0.2, -0.3}, 0, 0.14, exactSum | exactSq},
		{"negative zero", []float64{math.Copysign(0, -1), math.Copysign(0, -1)}, 0, 0, exactSum | exactSq},
		{"counter: squares beyond 2^53", []float64{1e12, 1e12 + 1, 1e12 + 2}, 3e12 + 3, naiveSq(1e12, 1e12+1, 1e12+2), exactSum},
		{"sum beyond 2^53", []float64{1 << 52, 1 << 52, 1 << 52}, 3 * (1 << 52), 3 * (1 << 104), 0},
		{"not decimal", []float64{0.5, 1.0 / 3, 0.5}, 0.5 + 1.0/3 + 0.5, 0.25 + 1.0/9 + 0.25, 0},
		{"infinity", []float64{1, math.Inf(1)}, math.Inf(1), math.Inf(1), 0},
		{"12 digits: squares not decimal", []float64{0.000000000001, 0.000000000002}, 0.000000000003, naiveSq(0.000000000001, 0.000000000002), exactSum},
	} {
		var m IntervalMetrics
		for i, v := range tc.vs {
			m.add(int64(i), v)
			checkSum(t, m.Sum, tc.vs[:i+1], false)
			checkSum(t, m.SumSq, tc.vs[:i+1], true)
		}
		require.Equal(t, math.Float64bits(tc.sum), math.Float64bits(m.Sum), "%s: Sum %v", tc.name, m.Sum)
		require.Equal(t, math.Float64bits(tc.sumSq), math.Float64bits(m.SumSq), "%s: SumSq %v", tc.name, m.SumSq)
		require.Equal(t, tc.exact, m.exact, tc.name)
	}
}

// naiveSq is the sum of squares as version 1 summed.
func naiveSq(xs ...float64) float64 {
	var s float64
	for _, x := range xs {
		s += x * x
	}
	return s
}

// TestSensorSumsExact checks invariant 7 on a day of the 0.01-resolution
// sensor: every hour's Sum and SumSq is its exact decimal sum rounded once,
// and within 1e-12 (relative) of the exact sum of the float64 values.
func TestSensorSumsExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	ten := new(big.Rat).SetInt64(100)
	for h := range 24 {
		var m IntervalMetrics
		sum, sq := new(big.Rat), new(big.Rat)
		xs := make([]float64, 3600)
		for s := range xs {
			v := quantize(20+5*math.Sin(float64(h*3600+s)/13751)+rng.NormFloat64(), 0.01)
			xs[s] = v
			m.add(int64(s), v)
			mant := new(big.Rat).SetInt64(int64(math.Round(v * 100)))
			sum.Add(sum, mant)
			sq.Add(sq, new(big.Rat).Mul(mant, mant))
		}
		wantSum, _ := new(big.Rat).Quo(sum, ten).Float64()
		wantSq, _ := new(big.Rat).Quo(sq, new(big.Rat).Mul(ten, ten)).Float64()
		require.Equal(t, wantSum, m.Sum, "hour %d", h)
		require.Equal(t, wantSq, m.SumSq, "hour %d", h)
		for _, sq := range []bool{false, true} {
			got := m.Sum
			if sq {
				got = m.SumSq
			}
			exact := bigSum(xs, sq)
			rel, _ := new(big.Float).Quo(new(big.Float).Sub(big.NewFloat(got), exact), exact).Float64()
			require.LessOrEqual(t, math.Abs(rel), 1e-12, "hour %d sq %v", h, sq)
		}
	}
}

func bigSum(xs []float64, sq bool) *big.Float {
	s := new(big.Float).SetPrec(2200)
	for _, x := range xs {
		v := new(big.Float).SetPrec(2200).SetFloat64(x)
		if sq {
			v.Mul(v, v)
		}
		s.Add(s, v)
	}
	return s
}

// TestMetricsCodecCases round-trips edge cases and checks the encoding
// chose what it should.
func TestMetricsCodecCases(t *testing.T) {
	regular := func(n int, f func(i int, m *IntervalMetrics)) []IntervalMetrics {
		ms := make([]IntervalMetrics, n)
		for i := range ms {
			m := &ms[i]
			m.Interval = 1000 + int64(i)
			for s := range 60 {
				m.add(int64(s), float64(2000+i*7+s%5)/100)
			}
			m.firstT, m.lastT, m.sumM, m.sqM, m.digits, m.exact = 0, 0, 0, 0, 0, 0
			if f != nil {
				f(i, m)
			}
		}
		return ms
	}
	negZero := math.Copysign(0, -1)
	for _, tc := range []struct {
		name       string
		ms         []IntervalMetrics
		domain     int
		contiguous bool
		flags      byte // b1
	}{
		{"one interval", regular(1, nil), 2, true, 1 | 2 | 4}, // 2000…2004: a unit of 4 but not for SumSq
		{"a unit", regular(40, func(i int, m *IntervalMetrics) {
			m.First, m.Last, m.Min, m.Max, m.Sum, m.SumSq = 8*m.First, 8*m.Last, 8*m.Min, 8*m.Max, 8*m.Sum, 64*m.SumSq
		}), 2, true, 1 | 2 | 4 | 16},
		{"two intervals", regular(2, nil), 2, true, 1 | 2 | 4},
		{"regular", regular(300, nil), 2, true, 1 | 2 | 4},
		{"gaps", regular(300, func(i int, m *IntervalMetrics) { m.Interval += int64(i * i) }), 2, false, 1 | 2 | 4},
		{"unsorted", regular(20, func(i int, m *IntervalMetrics) { m.Interval = int64(i*7919%20 - 5) }), 2, false, 1 | 2 | 4},
		{"a negative zero", regular(50, func(i int, m *IntervalMetrics) {
			if i == 17 {
				m.Max = negZero
			}
		}), 2, true, 1 | 2 | 4 | 8},
		{"a non-decimal sum", regular(50, func(i int, m *IntervalMetrics) {
			if i == 3 {
				m.Sum += 1.0 / 3
			}
		}), 2, true, 1 | 2 | 4 | 8},
		{"an odd sum of squares", regular(50, func(i int, m *IntervalMetrics) {
			if i == 3 {
				q, _ := mantissaAt(m.SumSq, 4)
				m.SumSq = toDecimal(q+1, 4)
			}
		}), 2, true, 1 | 2},
		{"an odd sum of squares in many", regular(300, func(i int, m *IntervalMetrics) {
			if i == 3 {
				q, _ := mantissaAt(m.SumSq, 4)
				m.SumSq = toDecimal(q+1, 4)
			}
		}), 2, true, 1 | 2 | 4 | 8}, // parity kept, that SumSq an exception
		{"not decimal", regular(50, func(i int, m *IntervalMetrics) {
			m.First, m.Last, m.Min, m.Max = m.First/3, m.Last/3, m.Min/3, m.Max/3
			m.Sum /= 3
		}), domainOrdered, true, 0},
		{"zero counts", regular(10, func(i int, m *IntervalMetrics) { m.Count = 0 }), 2, true, 1 | 2 | 4},
		{"huge counts", regular(10, func(i int, m *IntervalMetrics) { m.Count = math.MaxUint64 - uint64(i) }), 2, true, 1 | 2 | 4},
		{"infinities", regular(10, func(i int, m *IntervalMetrics) { m.Max, m.Sum, m.SumSq = math.Inf(1), math.Inf(1), math.Inf(1) }), 2, true, 8},
		{"integers", regular(10, func(i int, m *IntervalMetrics) {
			m.First, m.Last, m.Min, m.Max, m.Sum, m.SumSq = 1e15, 1e15+2, 1e15-3, 1e15+9, 6e16, 6e31
		}), 0, true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			enc := roundTrip(t, tc.ms, 1000)
			d := &decbuf{b: enc, what: "metrics"}
			d.uvarint() // length
			require.Equal(t, uint64(len(tc.ms)), d.uvarint())
			d.uvarint() // first interval
			b0, b1 := d.byte(), d.byte()
			require.Equal(t, tc.domain, int(b0&31), "domain")
			require.Equal(t, tc.contiguous, b0&(1<<5) != 0, "contiguous")
			require.Equal(t, tc.flags, b1, "flags %#b", b1)
			t.Logf("%d intervals: %d bytes (%.2f B/interval), version 1: %d", len(tc.ms), len(enc), float64(len(enc))/float64(len(tc.ms)), v1Size(tc.ms, 1000))
		})
	}
	require.Equal(t, []byte{0}, AppendMetrics(nil, nil, 5))
	ms, n, err := DecodeMetrics(nil, []byte{0, 99}, 5)
	require.NoError(t, err)
	require.Empty(t, ms)
	require.Equal(t, 1, n)
}

// TestDecodeMetricsCorrupt checks that damaged records give a
// *CorruptionError at the damaged byte.
func TestDecodeMetricsCorrupt(t *testing.T) {
	ms := sensorMetrics(sensorSpecs[0], 300)
	good := AppendMetrics(nil, ms, ms[0].Interval)
	hdr := uvarintLen(uint64(len(good) - uvarintLen(uint64(len(good)))))
	// Offsets in the record: n (2 bytes for 300), first interval (1),
	// b0, b1, scale, modes (2): checks of the header fail after them.
	b0, b1 := hdr+3, hdr+4
	afterHeader := int64(b1 + 4)
	set := func(off int, v byte) func([]byte) []byte {
		return func(b []byte) []byte { b[off] = v; return b }
	}
	for _, tc := range []struct {
		name   string
		damage func([]byte) []byte
		offset int64
		msg    string
	}{
		{"empty", func([]byte) []byte { return nil }, 0, "bad varint"},
		{"length past the end", func(b []byte) []byte { return b[:len(b)-1] }, int64(hdr), "record of"},
		{"zero intervals", func(b []byte) []byte {
			return append(binary.AppendUvarint(nil, 3), 0, 0, 0)
		}, 2, "bad interval count 0"},
		{"too many intervals", func(b []byte) []byte {
			return append(binary.AppendUvarint(nil, 6), append(binary.AppendUvarint(nil, 100000), 0, 0, 0)...)
		}, 4, "bad interval count 100000"},
		{"bad domain", set(b0, 23), afterHeader, "bad value domain 23"},
		{"bad predictor", set(b0, good[b0]|3<<6), afterHeader, "bad sum predictor 3"},
		{"reserved flags", set(b1, good[b1]|32), afterHeader, "reserved flags"},
		{"sum of squares without sum", set(b1, 2), afterHeader, "bad sum domains"},
		{"bad width", set(b1+4, 65), int64(b1 + 5), "bit width 65"},
		{"bad unit", func(b []byte) []byte {
			body := append(append([]byte(nil), b[hdr:b1]...), b[b1]|16, 1) // unit 1
			body = append(body, b[b1+1:]...)
			return append(binary.AppendUvarint(nil, uint64(len(body))), body...)
		}, -1, "bad unit 1"},
		{"truncated column", func(b []byte) []byte {
			body := b[hdr : len(b)-5]
			return append(binary.AppendUvarint(nil, uint64(len(body))), body...)
		}, -1, "truncated"},
		{"trailing bytes", func(b []byte) []byte {
			body := append(b[hdr:], 0)
			return append(binary.AppendUvarint(nil, uint64(len(body))), body...)
		}, int64(len(good)), "bytes after the record"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.damage(append([]byte(nil), good...))
			_, _, err := DecodeMetrics(nil, b, ms[0].Interval)
			var ce *CorruptionError
			require.True(t, errors.As(err, &ce), "%v", err)
			require.True(t, strings.Contains(ce.Error(), tc.msg), "%v", ce)
			if tc.offset >= 0 {
				require.Equal(t, tc.offset, ce.Offset, "%v", ce)
			}
			require.LessOrEqual(t, ce.Offset, int64(len(b)))
			require.ErrorIs(t, err, ErrCorrupt)
		})
	}
}
