package block

import (
	"encoding/binary"
	"math"
	"path/filepath"
	"sync"

	"github.com/aerie-db/aerie/internal/mathx"
)

// IntervalSummary is what a block tells, without decoding a value, of one
// series' samples in one metric interval that lies wholly inside the
// block (Series.AppendSummaries).
type IntervalSummary struct {
	// Metrics are the interval's block metrics. Count is every sample
	// of the series in the interval: none is NaN or a stale marker. An
	// interval without samples has Count 0.
	Metrics IntervalMetrics
	// AtStart: a sample lies at the interval's first millisecond; its
	// value is Metrics.First.
	AtStart bool
	// Integral: every value is an integer held exactly, |v| < 2⁶³ and
	// none −0 (the chunks holding them are decimal at 0 digits or
	// integral constants). While
	// Count × max(|Min|, |Max|) < 2⁵³, Metrics.Sum is then their exact
	// sum, and so is every partial sum in any order.
	Integral bool
}

// summaryScratch recycles the metrics decoded by AppendSummaries.
var summaryScratch = sync.Pool{New: func() any { return new([]IntervalMetrics) }}

// AppendSummaries appends to dst the summaries of the series' metric
// intervals k0 … k1 (of iv ms; interval k is [k·iv, (k+1)·iv)) that lie
// wholly inside the block and where no value of the series is NaN, in
// interval order. It appends none when the block cannot tell without
// decoding values: it is not a mapped local block (chunk headers would be
// reads), its metric interval is not iv, or the series is not in one
// version 2 or 3 column. Only the group's timestamp column, the series'
// metrics and the headers and presence of its value chunks are read.
func (s *Series) AppendSummaries(dst []IntervalSummary, iv, k0, k1 int64) ([]IntervalSummary, error) {
	r := s.q.r
	locs := r.seriesLocs(s.ID)
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
	dec := decoders.Get().(*valueDecoder)
	defer decoders.Put(dec)
	g := &r.groups[l.group]
	var (
		chunk    = -1 // the chunk whose presence dec holds
		intChunk bool // its values are integers (integralPayload)
	)
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
		var present uint64
		first, integral := -1, true
		for base := r0 / ChunkRows * ChunkRows; base < r1; base += ChunkRows {
			if ci := base / ChunkRows; ci != chunk {
				off, end := c.ch.chunkRange(ci, ci)
				d := &decbuf{b: r.mm[c.off+off : c.off+end], what: "value chunk", at: int(c.off + off)}
				kind, _ := dec.presence(d, min(ChunkRows, g.rows-base))
				if d.err != nil {
					if ce, ok := d.err.(*CorruptionError); ok {
						ce.File = filepath.Join(r.dir, DataFilename)
					}
					return dst, d.err
				}
				chunk, intChunk = ci, integralPayload(kind, d.b[d.pos:])
			}
			n, f := dec.presentIn(max(r0, base)-base, min(r1, base+ChunkRows)-base)
			if n > 0 {
				present += uint64(n)
				integral = integral && intChunk
				if first < 0 {
					first = base + f
				}
			}
		}
		if m.Count != present { // a value is NaN or a stale marker
			continue
		}
		dst = append(dst, IntervalSummary{Metrics: m, AtStart: first >= 0 && ts.At(first) == lo, Integral: integral})
	}
	return dst, nil
}

// Span returns the first and the last time of the rows of the groups that
// hold the series in the block: its samples lie between them (a narrower
// range than the block's when its groups are short, such as those of
// late rows flushed apart).
func (s *Series) Span() (mint, maxt int64) {
	mint, maxt = math.MaxInt64, math.MinInt64
	for _, l := range s.q.r.seriesLocs(s.ID) {
		g := &s.q.r.groups[l.group]
		if g.rows > 0 {
			mint, maxt = min(mint, g.minT), max(maxt, g.maxT)
		}
	}
	return mint, maxt
}

// integralPayload reports, from its first bytes, that the payload b of a
// value chunk of the given kind holds integers only: decimal at 0 digits
// (the float64 of an int64, never −0), or a constant integer.
func integralPayload(kind byte, b []byte) bool {
	switch kind {
	case chunkDecimal:
		return len(b) > 0 && b[0]&31 == 0
	case chunkConst:
		if len(b) < 8 {
			return false
		}
		v := math.Float64frombits(binary.LittleEndian.Uint64(b))
		return v == math.Trunc(v) && math.Abs(v) < 1<<63 && !(v == 0 && math.Signbit(v))
	}
	return false
}
