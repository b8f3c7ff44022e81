package seriesiter

import (
	"math"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
)

// Merge returns an iterator over the union of float iterators, in time
// order. On equal timestamps the earliest iterator in the argument list
// wins. The number of iterators is small (a series' partitions and moved
// groups), so the minimum is found by a linear scan.
func Merge(its ...chunkenc.Iterator) chunkenc.Iterator {
	if len(its) == 1 {
		return its[0]
	}
	m := &mergeIterator{its: its, ok: make([]bool, len(its)), cur: -1}
	return m
}

type mergeIterator struct {
	its     []chunkenc.Iterator
	ok      []bool // its[i] is positioned on a sample
	started bool
	cur     int
	t       int64
	v       float64
	// next is the least timestamp of the positioned iterators other than
	// cur (math.MaxInt64 if none): while cur stays below it, Next only
	// advances cur, so sources that do not overlap in time (partitions,
	// blocks) cost one comparison per sample, not a scan of all sources.
	next int64
	err  error
}

func (m *mergeIterator) Next() chunkenc.ValueType {
	if !m.started {
		m.started = true
		for i, it := range m.its {
			m.ok[i] = it.Next() == chunkenc.ValFloat
		}
		return m.pick()
	}
	if m.cur < 0 {
		return chunkenc.ValNone
	}
	if m.t < m.next { // only cur is at m.t
		it := m.its[m.cur]
		if b, ok := it.(*Iterator); ok { // the usual source, called directly
			if b.Next() == chunkenc.ValFloat {
				if b.t < m.next {
					m.t, m.v = b.t, b.v
					return chunkenc.ValFloat
				}
			} else {
				m.ok[m.cur] = false
			}
			return m.pick()
		}
		if it.Next() == chunkenc.ValFloat {
			if t, v := it.At(); t < m.next {
				m.t, m.v = t, v
				return chunkenc.ValFloat
			}
		} else {
			m.ok[m.cur] = false
		}
		return m.pick()
	}
	t := m.t
	for i, it := range m.its {
		if m.ok[i] && it.AtT() == t {
			m.ok[i] = it.Next() == chunkenc.ValFloat
		}
	}
	return m.pick()
}

func (m *mergeIterator) Seek(t int64) chunkenc.ValueType {
	if m.started && m.cur < 0 {
		return chunkenc.ValNone
	}
	if m.started && m.t >= t {
		return chunkenc.ValFloat
	}
	m.started = true
	for i, it := range m.its {
		if !m.ok[i] || it.AtT() < t {
			m.ok[i] = it.Seek(t) == chunkenc.ValFloat
		}
	}
	return m.pick()
}

func (m *mergeIterator) pick() chunkenc.ValueType {
	m.cur = -1
	m.next = math.MaxInt64
	for i, it := range m.its {
		if !m.ok[i] {
			if err := it.Err(); err != nil && m.err == nil {
				m.err = err
			}
			continue
		}
		switch t := it.AtT(); {
		case m.cur < 0:
			m.cur = i
			m.t, m.v = it.At()
		case t < m.t:
			m.next = m.t
			m.cur = i
			m.t, m.v = it.At()
		default:
			m.next = min(m.next, t)
		}
	}
	if m.err != nil {
		m.cur = -1
	}
	if m.cur < 0 {
		return chunkenc.ValNone
	}
	return chunkenc.ValFloat
}

// AppendSamples is Iterator.AppendSamples for merged sources: while the
// current source is a tuple iterator and the others start later, its
// samples up to the next source's first are appended in bulk (sources
// that do not overlap in time, partitions and blocks, are appended one
// after the other); otherwise one Next at a time.
func (m *mergeIterator) AppendSamples(ts []int64, vs []float64, max int) ([]int64, []float64, bool) {
	for len(ts) < max {
		if m.started && m.cur >= 0 && m.t < m.next {
			if b, ok := m.its[m.cur].(*Iterator); ok {
				n := len(ts)
				ts, vs, _ = b.appendBefore(ts, vs, max, m.next)
				if len(ts) > n {
					m.t, m.v = ts[len(ts)-1], vs[len(vs)-1]
					continue
				}
			}
		}
		if m.Next() == chunkenc.ValNone {
			return ts, vs, false
		}
		ts = append(ts, m.t)
		vs = append(vs, m.v)
	}
	return ts, vs, true
}

func (m *mergeIterator) At() (int64, float64) { return m.t, m.v }
func (m *mergeIterator) AtT() int64           { return m.t }
func (m *mergeIterator) AtST() int64          { return 0 }
func (m *mergeIterator) Err() error           { return m.err }
func (m *mergeIterator) AtHistogram(*histogram.Histogram) (int64, *histogram.Histogram) {
	panic("seriesiter: AtHistogram on a float series")
}
func (m *mergeIterator) AtFloatHistogram(*histogram.FloatHistogram) (int64, *histogram.FloatHistogram) {
	panic("seriesiter: AtFloatHistogram on a float series")
}
