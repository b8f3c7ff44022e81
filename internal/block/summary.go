package block

import (
	"encoding/binary"
	"math"
	"sync"

	"github.com/aerie-db/aerie/internal/mathx"
)

// IntervalSummary is what a block tells, without decoding a value, of one
// series' samples in one metric interval that lies wholly inside the
// block (Series.AppendSummaries).
type IntervalSummary struct {
	// Metrics are the interval's block metrics. Count is every sample
	// of the interval: none is NaN or a stale marker. An interval
	// without samples has Count 0.
	Metrics IntervalMetrics
	// AtStart: a sample lies at the interval's first millisecond; its
	// value is Metrics.First.
	AtStart bool
	// Integral: every value is an integer held exactly, |v| < 2⁶³ and
	// none −0 (decimal chunks at 0 digits, integral constants). While
	// Count × max(|Min|, |Max|) < 2⁵³, Metrics.Sum is then their exact
	// sum, and so is every partial sum in any order.
	Integral bool
}

// summaryScratch recycles the metrics decoded by AppendSummaries.
var summaryScratch = sync.Pool{New: func() any { return new([]IntervalMetrics) }}

// AppendSummaries appends to dst the summaries of the series' metric
// intervals k0 … k1 (of iv ms; interval k is [k·iv, (k+1)·iv)) that lie
// wholly inside the block and whose every row the series holds with a
// value that is not NaN, in interval order. It appends none when the
// block cannot tell without reading values: it is not a mapped local
// block (chunk headers would be reads), its metric interval is not iv,
// or the series is not in one version 2 or 3 column. Only the group's
// timestamp column, the series' metrics and the first bytes of its value
// chunks are read.
func (s *Series) AppendSummaries(dst []IntervalSummary, iv, k0, k1 int64) ([]IntervalSummary, error) {
	r := s.q.r
	locs := r.series[s.ID]
	if r.mm == nil || r.msec == nil || r.meta.MetricInterval != iv || len(locs) != 1 {
		return dst, nil
	}
	l := locs[0]
	c := &r.groups[l.group].cols[l.col]
	if c.ch.ends == nil {
		return dst, nil
	}
	k0 = max(k0, -mathx.FloorDiv(-r.meta.MinTime, iv))
	k1 = min(k1, mathx.FloorDiv(r.meta.MaxTime, iv)-1)
	if k0 > k1 {
		return dst, nil
	}
	ts, err := s.q.timestamps(l.group)
	if err != nil {
		return dst, err
	}
	buf := summaryScratch.Get().(*[]IntervalMetrics)
	defer summaryScratch.Put(buf)
	ms, err := r.msec.Append((*buf)[:0], s.ID)
	*buf = ms
	if err != nil {
		return dst, err
	}
	j := 0
	for k := k0; k <= k1; k++ {
		lo := k * iv
		r0, r1 := ts.Search(lo), ts.Search(lo+iv)
		for j < len(ms) && ms[j].Interval < k {
			j++
		}
		m := IntervalMetrics{Interval: k}
		if j < len(ms) && ms[j].Interval == k {
			m = ms[j]
		}
		if m.Count != uint64(r1-r0) { // a row absent, or a NaN
			continue
		}
		sm := IntervalSummary{Metrics: m, Integral: true}
		if r0 < r1 {
			sm.AtStart = ts.At(r0) == lo
			for ci := r0 / ChunkRows; ci <= (r1-1)/ChunkRows && sm.Integral; ci++ {
				off, end := c.ch.chunkRange(ci, ci)
				sm.Integral = integralChunk(r.mm[c.off+off : c.off+end])
			}
		}
		dst = append(dst, sm)
	}
	return dst, nil
}

// integralChunk reports, from its header and first bytes, that the value
// chunk b holds integers only, every row present: decimal at 0 digits
// (the float64 of an int64, never −0), or a constant integer.
func integralChunk(b []byte) bool {
	if len(b) < 2 || b[0]&(chunkBitmap|chunkRuns) != 0 {
		return false
	}
	switch b[0] & 7 {
	case chunkDecimal:
		return b[1]&31 == 0
	case chunkConst:
		if len(b) < 9 {
			return false
		}
		v := math.Float64frombits(binary.LittleEndian.Uint64(b[1:9]))
		return v == math.Trunc(v) && math.Abs(v) < 1<<63 && !(v == 0 && math.Signbit(v))
	}
	return false
}
