package head

import (
	"encoding/binary"
	"math/bits"
	"sort"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/aerie-db/aerie/internal/encoding"
	"github.com/aerie-db/aerie/internal/index"
	"github.com/aerie-db/aerie/internal/model"
	"github.com/aerie-db/aerie/internal/seriesiter"
)

// ColumnSnapshot is an immutable view of one slot of one group partition,
// taken under the group's read lock and read without any lock (invariant 2
// of the package). It is a seriesiter.TupleSource; Extra holds the
// out-of-order samples.
type ColumnSnapshot struct {
	tupleSize  int
	tdata      []byte
	toffs      []uint32 // closed tuples
	firstTuple int
	data       []byte
	offs       []uint32
	pres       []uint8
	base       float64

	openT    []int64 // the open tuple's rows, if any
	openV    []float64
	openPres uint8

	Extra      []seriesiter.Sample
	MinT, MaxT int64
}

// NumTuples implements seriesiter.TupleSource: the closed tuples from the
// column's first, then the open one.
func (c *ColumnSnapshot) NumTuples() int {
	n := len(c.toffs) - c.firstTuple
	if len(c.openT) > 0 {
		n++
	}
	return n
}

// First implements seriesiter.TupleSource.
func (c *ColumnSnapshot) First(k int) int64 {
	k += c.firstTuple
	if k == len(c.toffs) {
		return c.openT[0]
	}
	return int64(binary.LittleEndian.Uint64(c.tdata[c.toffs[k]:]))
}

// Load implements seriesiter.TupleSource.
func (c *ColumnSnapshot) Load(k int, ts []int64, vs []float64) (int, uint32, error) {
	gk := k + c.firstTuple
	if gk == len(c.toffs) {
		n := copy(ts, c.openT)
		copy(vs, c.openV)
		return n, uint32(c.openPres), nil
	}
	tts, _, err := encoding.DecodeTimeTuple(ts[:0], c.tdata[c.toffs[gk]:], c.tupleSize)
	if err != nil {
		return 0, 0, err
	}
	p := c.pres[k]
	if p == 0 {
		return len(tts), 0, nil
	}
	var buf [MaxTupleSize]float64
	vals, _, err := encoding.DecodeValueTuple(buf[:0], c.data[c.offs[k]:], c.base, bits.OnesCount8(p))
	if err != nil {
		return 0, 0, err
	}
	j := 0
	for i := range tts {
		if p&(1<<i) != 0 {
			vs[i] = vals[j]
			j++
		}
	}
	return len(tts), uint32(p), nil
}

// snapshotLocked copies the slice headers of a slot. Called with g.mu held
// (read or write).
func (p *gpart) snapshotLocked(slot model.Slot, tupleSize int) *ColumnSnapshot {
	if int(slot) >= len(p.cols) || p.cols[slot] == nil {
		return nil
	}
	c := p.cols[slot]
	if c.n == 0 {
		return nil
	}
	s := &ColumnSnapshot{
		tupleSize:  tupleSize,
		tdata:      p.tdata,
		toffs:      p.toffs[:len(p.toffs):len(p.toffs)],
		firstTuple: c.firstTuple,
		data:       c.data,
		offs:       c.offs,
		pres:       c.pres,
		base:       c.base,
		MinT:       p.minT,
		MaxT:       p.maxT,
	}
	if p.openN > 0 {
		s.openT = append([]int64(nil), p.openT[:p.openN]...)
		s.openV = append([]float64(nil), c.open[:p.openN]...)
		s.openPres = c.openPres
	}
	if len(c.ooo) > 0 {
		s.Extra = make([]seriesiter.Sample, len(c.ooo))
		for i, o := range c.ooo {
			s.Extra[i] = seriesiter.Sample{T: o.t, V: o.v}
		}
	}
	return s
}

// SeriesSnapshot is one series of a head query: its labels and, per
// partition overlapping the query, the columns holding its data (a series
// that moved groups has several per partition).
type SeriesSnapshot struct {
	Ref     model.SeriesRef
	Labels  labels.Labels
	Columns []*ColumnSnapshot // sorted by MinT
}

// Select returns the series matching ms that have samples in [mint, maxt].
func (h *Head) Select(mint, maxt int64, ms ...*labels.Matcher) ([]SeriesSnapshot, error) {
	refs, err := index.Select(h.idx, ms...)
	if err != nil {
		return nil, err
	}
	out := make([]SeriesSnapshot, 0, refs.GetCardinality())
	pmin, pmax := h.partitionOf(mint), h.partitionOf(maxt)
	it := refs.Iterator()
	for it.HasNext() {
		ref := model.SeriesRef(it.Next())
		h.regMu.RLock()
		s := h.refs[ref]
		locs := append([]*group(nil), s.locs...)
		h.regMu.RUnlock()
		ss := SeriesSnapshot{Ref: ref, Labels: s.lset}
		for _, g := range locs {
			g.mu.RLock()
			slot, ok := g.slotOf[s]
			if ok {
				for pid, p := range g.parts {
					if pid < pmin || pid > pmax || p.maxT < mint || p.minT > maxt {
						continue
					}
					if c := p.snapshotLocked(slot, h.opts.TupleSize); c != nil && c.MinT <= maxt && c.MaxT >= mint {
						ss.Columns = append(ss.Columns, c)
					}
				}
			}
			g.mu.RUnlock()
		}
		if len(ss.Columns) == 0 {
			continue
		}
		sort.Slice(ss.Columns, func(i, j int) bool { return ss.Columns[i].MinT < ss.Columns[j].MinT })
		out = append(out, ss)
	}
	return out, nil
}
