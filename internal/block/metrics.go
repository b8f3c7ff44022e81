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
// metrics gives exactly the metrics of their union, so any coarser aligned
// interval is answered without reading data.
type IntervalMetrics struct {
	Interval int64 // interval index: start time = Interval * interval length
	Count    uint64
	Min, Max float64
	Sum      float64
	SumSq    float64
	First    float64
	Last     float64

	firstT, lastT int64 // used while writing only
}

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
// than one group, so order is tracked by time.
func (m *IntervalMetrics) add(t int64, v float64) {
	if math.IsNaN(v) || value.IsStaleNaN(v) {
		return
	}
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
	m.Sum += v
	m.SumSq += v * v
}

// appendMetrics encodes one series' metrics: uvarint n, then per interval
// uvarint(interval - previous interval), uvarint count, and the six floats
// as raw little-endian bits.
func appendMetrics(dst []byte, ms []IntervalMetrics, base int64) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(ms)))
	prev := base
	for _, m := range ms {
		dst = binary.AppendUvarint(dst, uint64(m.Interval-prev))
		prev = m.Interval
		dst = binary.AppendUvarint(dst, m.Count)
		for _, f := range [...]float64{m.Min, m.Max, m.Sum, m.SumSq, m.First, m.Last} {
			dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(f))
		}
	}
	return dst
}

func decodeMetrics(src []byte, base int64) ([]IntervalMetrics, int, error) {
	n, k := binary.Uvarint(src)
	if k <= 0 || n > uint64(len(src)) {
		return nil, 0, fmt.Errorf("metrics: bad count")
	}
	pos := k
	out := make([]IntervalMetrics, 0, n)
	prev := base
	for i := uint64(0); i < n; i++ {
		d, k1 := binary.Uvarint(src[pos:])
		if k1 <= 0 {
			return nil, 0, fmt.Errorf("metrics: bad interval at %d", pos)
		}
		pos += k1
		c, k2 := binary.Uvarint(src[pos:])
		if k2 <= 0 {
			return nil, 0, fmt.Errorf("metrics: bad count at %d", pos)
		}
		pos += k2
		if len(src)-pos < 48 {
			return nil, 0, fmt.Errorf("metrics: truncated at %d", pos)
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
