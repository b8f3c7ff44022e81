package block

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/prometheus/prometheus/model/value"
)

// IntervalMetrics are Peregreen's block metrics of one series over one
// metric interval. NaN values (including Prometheus stale markers) are not
// counted: they carry no magnitude. Combining two adjacent intervals'
// metrics gives exactly the metrics of their union (Sum and SumSq up to
// rounding), so any coarser aligned interval is answered without reading
// data. Sum and SumSq are exact sums rounded once when the interval's
// values are decimals (package doc, invariant 7).
type IntervalMetrics struct {
	Interval int64 // interval index: start time = Interval * interval length
	Count    uint64
	Min, Max float64
	Sum      float64
	SumSq    float64
	First    float64
	Last     float64

	// Used while adding samples only. While exact&exactSum is set, sumM
	// is the sum of the values' decimal mantissas at digits digits after
	// the point, an integer of magnitude ≤ 2^53 and so exact, and Sum is
	// sumM/10^digits rounded once; exact&exactSq likewise for sqM, the
	// squares and SumSq at 2·digits digits.
	firstT, lastT int64
	sumM, sqM     float64
	digits        int8
	exact         uint8
}

// Flags of IntervalMetrics.exact.
const (
	exactSum = 1 << iota
	exactSq
)

// Mean returns Sum/Count.
func (m IntervalMetrics) Mean() float64 { return m.Sum / float64(m.Count) }

// Combine merges o, a later interval, into m.
func (m *IntervalMetrics) Combine(o IntervalMetrics) {
	if o.Count == 0 {
		return
	}
	if m.Count == 0 {
		iv := m.Interval
		*m = o
		m.Interval = iv
		return
	}
	m.Count += o.Count
	m.Min = math.Min(m.Min, o.Min)
	m.Max = math.Max(m.Max, o.Max)
	m.Sum += o.Sum
	m.SumSq += o.SumSq
	m.Last = o.Last
}

// add records one sample at t; samples of one series may come from more
// than one group, so order is tracked by time. Sum and SumSq are exact
// (addExact) while they can be; from the first value that breaks that on,
// each is the plain float sum of its rounded part and the later values.
func (m *IntervalMetrics) add(t int64, v float64) {
	if math.IsNaN(v) || value.IsStaleNaN(v) {
		return
	}
	if m.Count == 0 {
		m.Sum, m.SumSq, m.sumM, m.sqM, m.digits, m.exact = 0, 0, 0, 0, 0, exactSum|exactSq
	}
	m.addExtremes(t, v)
	if m.exact != 0 {
		m.addExact(v)
	}
	if m.exact&exactSum == 0 {
		m.Sum += v
	}
	if m.exact&exactSq == 0 {
		m.SumSq += v * v
	}
}

// addExtremes records v at t in Min, Max, First and Last, and counts it.
func (m *IntervalMetrics) addExtremes(t int64, v float64) {
	if m.Count == 0 {
		m.Min, m.Max, m.First, m.Last, m.firstT, m.lastT = v, v, v, v, t, t
	} else {
		m.Min = math.Min(m.Min, v)
		m.Max = math.Max(m.Max, v)
		if t < m.firstT {
			m.First, m.firstT = v, t
		}
		if t > m.lastT {
			m.Last, m.lastT = v, t
		}
	}
	m.Count++
}

// addExact adds v's decimal mantissa (and its square) to the exact sums,
// taking more digits if v needs them, and rounds them into Sum and SumSq.
// A sum that cannot stay exact keeps its last rounding and leaves v to the
// float path.
func (m *IntervalMetrics) addExact(v float64) {
	k := int(m.digits)
	mant, ok := decimalAt(v, k)
	for d := k + 1; !ok && d <= maxDigits; d++ {
		if mant, ok = decimalAt(v, d); ok {
			m.rescale(d)
			k = d
		}
	}
	if !ok {
		m.exact = 0
		return
	}
	if m.exact&exactSum != 0 {
		if math.Abs(m.sumM)+math.Abs(float64(mant)) <= maxExactInt {
			m.sumM += float64(mant)
			m.Sum = m.sumM / pow10[k]
		} else {
			m.exact &^= exactSum
		}
	}
	if m.exact&exactSq != 0 {
		if sq := float64(mant) * float64(mant); mant >= -maxSquareMantissa && mant <= maxSquareMantissa && m.sqM+sq <= maxExactInt {
			m.sqM += sq
			m.SumSq = m.sqM / pow10[2*k]
		} else {
			m.exact &^= exactSq
		}
	}
}

// rescale moves the exact sums to d > digits digits; a sum that would no
// longer be exact leaves the exact path.
func (m *IntervalMetrics) rescale(d int) {
	up := d - int(m.digits)
	if s := m.sumM * pow10[up]; m.exact&exactSum != 0 && math.Abs(s) <= maxExactInt {
		m.sumM = s
	} else {
		m.exact &^= exactSum
	}
	if 2*d <= maxDigits && m.exact&exactSq != 0 && m.sqM*pow10[2*up] <= maxExactInt {
		m.sqM *= pow10[2*up]
	} else {
		m.exact &^= exactSq
	}
	m.digits = int8(d)
}

// decodeMetricsV1 decodes one series' metrics of an index of version 1:
// uvarint n, then per interval uvarint(interval − previous interval),
// uvarint count, and min, max, sum, sum of squares, first and last as raw
// little-endian float64 bits. Error offsets are from the start of src.
func decodeMetricsV1(src []byte, base int64) ([]IntervalMetrics, int, error) {
	bad := func(pos int, what string) ([]IntervalMetrics, int, error) {
		return nil, 0, &CorruptionError{Offset: int64(pos), Err: fmt.Errorf("metrics: %s", what)}
	}
	n, k := binary.Uvarint(src)
	if k <= 0 || n > uint64(len(src)) {
		return bad(0, "bad count")
	}
	pos := k
	out := make([]IntervalMetrics, 0, n)
	prev := base
	for i := uint64(0); i < n; i++ {
		d, k1 := binary.Uvarint(src[pos:])
		if k1 <= 0 {
			return bad(pos, "bad interval")
		}
		pos += k1
		c, k2 := binary.Uvarint(src[pos:])
		if k2 <= 0 {
			return bad(pos, "bad count")
		}
		pos += k2
		if len(src)-pos < 48 {
			return bad(pos, "truncated")
		}
		var f [6]float64
		for j := range f {
			f[j] = math.Float64frombits(binary.LittleEndian.Uint64(src[pos:]))
			pos += 8
		}
		prev += int64(d)
		out = append(out, IntervalMetrics{Interval: prev, Count: c, Min: f[0], Max: f[1], Sum: f[2], SumSq: f[3], First: f[4], Last: f[5]})
	}
	return out, pos, nil
}
