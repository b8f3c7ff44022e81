package head

import (
	"math/bits"
	"slices"
	"sort"
	"sync"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/aerie-db/aerie/internal/encoding"
	"github.com/aerie-db/aerie/internal/index"
	"github.com/aerie-db/aerie/internal/invariants"
	"github.com/aerie-db/aerie/internal/memory"
	"github.com/aerie-db/aerie/internal/model"
	"github.com/aerie-db/aerie/internal/seriesiter"
)

// ColumnSnapshot is an immutable view of one slot of one group partition,
// taken under the group's read lock and read without any lock (invariant 2
// of the package). Its tuples are in the memory manager's blocks: it is
// valid only under the memory guard of the query that took it (see
// Head.Select). It is a seriesiter.TupleSource; Extra holds the
// out-of-order samples.
type ColumnSnapshot struct {
	m          *memory.Manager
	tupleSize  int
	times      chainView // closed time tuples of the partition
	firstTuple int
	vals       chainView // value tuples from firstTuple
	pres       []uint8
	base       float64

	openN    int // rows of the open tuple, if any
	openT    [MaxTupleSize]int64
	openV    [MaxTupleSize]float64
	openPres uint8

	part *gpart     // the partition the column is in
	tc   *timeCache // its time tuples decoded, shared with the Select's other columns of it

	Extra      []seriesiter.Sample
	MinT, MaxT int64
	// Partition is the head partition the column belongs to; Flushed is
	// true if that partition is already in a block (hot).
	Partition int64
	Flushed   bool

	released bool // returned to snapshotPool (see Release)
}

// NumTuples implements seriesiter.TupleSource: the closed tuples from the
// column's first, then the open one.
func (c *ColumnSnapshot) NumTuples() int {
	c.checkLive()
	n := len(c.times.offs) - c.firstTuple
	if c.openN > 0 {
		n++
	}
	return n
}

// First implements seriesiter.TupleSource.
func (c *ColumnSnapshot) First(k int) int64 {
	k += c.firstTuple
	if k == len(c.times.offs) {
		return c.openT[0]
	}
	return tupleFirst(c.times.tuple(c.m, k))
}

// Load implements seriesiter.TupleSource.
func (c *ColumnSnapshot) Load(k int, ts []int64, vs []float64) (int, uint32, error) {
	c.checkLive()
	gk := k + c.firstTuple
	if gk == len(c.times.offs) {
		n := copy(ts, c.openT[:c.openN])
		copy(vs, c.openV[:c.openN])
		return n, uint32(c.openPres), nil
	}
	var tts []int64
	if cached := c.tc.tuple(c, gk); cached != nil {
		tts = append(ts[:0], cached...)
	} else {
		var err error
		if tts, _, err = encoding.DecodeTimeTuple(ts[:0], c.times.tuple(c.m, gk), c.tupleSize); err != nil {
			return 0, 0, err
		}
	}
	p := c.pres[k]
	if p == 0 {
		return len(tts), 0, nil
	}
	var buf [MaxTupleSize]float64
	vals, _, err := encoding.DecodeValueTuple(buf[:0], c.vals.tuple(c.m, k), c.base, bits.OnesCount8(p))
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

// valid reports whether every block the snapshot reads is still visible
// (under the caller's guard).
func (c *ColumnSnapshot) valid() bool {
	return c.times.valid(c.m) && c.vals.valid(c.m)
}

// timeCache holds the closed time tuples of one group partition, decoded,
// for the columns of that partition one Select returns: a query over
// several series of a group decodes the group's time column once instead
// of once per series (issue 23). A tuple is decoded on its first use.
// Closed tuples never change, so a column whose view of the partition is
// longer or shorter than the cache's may use every tuple the cache holds.
//
// Locking: each tuple is decoded under its own sync.Once, and only read
// after it.
type timeCache struct {
	tupleSize int
	once      []sync.Once
	n         []int8  // tuple k's length; -1: it did not decode (Load decodes it again and reports why)
	ts        []int64 // tuple k at [k*tupleSize, k*tupleSize+n[k])
}

// tuple returns closed time tuple gk of c's partition, or nil when the
// cache does not hold it (nor c have one).
func (tc *timeCache) tuple(c *ColumnSnapshot, gk int) []int64 {
	if tc == nil || gk >= len(tc.n) {
		return nil
	}
	at := gk * tc.tupleSize
	tc.once[gk].Do(func() {
		t, _, err := encoding.DecodeTimeTuple(tc.ts[at:at:at+tc.tupleSize], c.times.tuple(c.m, gk), tc.tupleSize)
		if err != nil || len(t) > tc.tupleSize {
			tc.n[gk] = -1
			return
		}
		tc.n[gk] = int8(len(t))
	})
	if tc.n[gk] < 0 {
		return nil
	}
	return tc.ts[at : at+int(tc.n[gk])]
}

// shareTimes gives the columns of out that are in one partition, where
// there are several, one timeCache.
func shareTimes(out []SeriesSnapshot) {
	if len(out) < 2 {
		return
	}
	type shared struct {
		first *ColumnSnapshot
		tc    *timeCache
	}
	seen := map[*gpart]*shared{}
	for i := range out {
		for _, c := range out[i].Columns {
			if len(c.times.offs) == 0 {
				continue
			}
			e := seen[c.part]
			switch {
			case e == nil:
				seen[c.part] = &shared{first: c}
			case e.tc == nil:
				n := max(len(e.first.times.offs), len(c.times.offs))
				e.tc = &timeCache{tupleSize: c.tupleSize, once: make([]sync.Once, n), n: make([]int8, n), ts: make([]int64, n*c.tupleSize)}
				e.first.tc, c.tc = e.tc, e.tc
			default:
				c.tc = e.tc
			}
		}
	}
}

// snapshotPool recycles column snapshots: every query takes one per column
// it reads, and at ~450 bytes they were a third of a one-series query's
// garbage. Release returns them.
var snapshotPool = sync.Pool{New: func() any { return new(ColumnSnapshot) }}

// Release returns the column snapshots of ss for reuse. The caller (the
// querier, at Close) must not use ss, nor any iterator over them, again:
// like the memory their tuples are in, they are valid only until the
// reader is done. In an invariants build a released snapshot panics when
// read.
func (h *Head) Release(ss []SeriesSnapshot) {
	for i := range ss {
		for _, c := range ss[i].Columns {
			c.release()
		}
		ss[i].Columns = nil
	}
}

func (c *ColumnSnapshot) release() {
	*c = ColumnSnapshot{released: true}
	snapshotPool.Put(c)
}

// checkLive panics if c was released (invariants builds only).
func (c *ColumnSnapshot) checkLive() {
	if invariants.Enabled && c.released {
		panic("head: column snapshot read after its querier released it")
	}
}

// snapshotLocked copies the slice headers of a slot. Called with g.mu held
// (read or write).
func (p *gpart) snapshotLocked(m *memory.Manager, slot model.Slot, tupleSize int) *ColumnSnapshot {
	if int(slot) >= len(p.cols) || p.cols[slot] == nil {
		return nil
	}
	c := p.cols[slot]
	s := snapshotPool.Get().(*ColumnSnapshot)
	*s = ColumnSnapshot{
		m:          m,
		tupleSize:  tupleSize,
		times:      p.times.view(),
		part:       p,
		firstTuple: int(c.firstTuple),
		MinT:       p.minT,
		MaxT:       p.maxT,
		Partition:  p.pid,
	}
	if cv := c.ext; cv != nil {
		s.vals, s.pres, s.base = cv.vals.view(), cv.pres[:len(cv.pres):len(cv.pres)], cv.base
	}
	if p.openN > 0 {
		s.openN, s.openT, s.openV, s.openPres = p.openN, p.openT, c.open, c.openPres
	}
	if ooo := c.oooSamples(); len(ooo) > 0 {
		s.Extra = make([]seriesiter.Sample, len(ooo))
		for i, o := range ooo {
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
	// Covered lists the flushed (hot) partitions whose columns of this
	// series are all still in memory: the caller need not read the
	// series from those partitions' blocks. A flushed partition with a
	// column whose blocks were reclaimed is left out, and so are its
	// columns: the block has the data.
	Covered []int64
}

// Enter registers a reader with the head's memory manager; see Select.
func (h *Head) Enter() memory.Guard { return h.mem.Enter() }

// PartitionOf returns the partition holding time t.
func (h *Head) PartitionOf(t int64) int64 { return h.partitionOf(t) }

// Select returns the series matching ms that have samples in [mint, maxt].
// The caller holds a guard from Enter, taken before the call, until it is
// done with the snapshots: their tuples stay intact only until it exits.
func (h *Head) Select(mint, maxt int64, ms ...*labels.Matcher) ([]SeriesSnapshot, error) {
	var buf [16]uint32
	ids, ok := h.idx.EqualRefs(buf[:0], ms) // no bitmap for the usual query of known series
	if !ok {
		refs, err := index.Select(h.idx, ms...)
		if err != nil {
			return nil, err
		}
		ids = refs.ToArray()
	}
	out := make([]SeriesSnapshot, 0, len(ids))
	pmin, pmax := h.partitionOf(mint), h.partitionOf(maxt)
	var stale []int64 // flushed partitions with a reclaimed column, per series
	var locs []*group
	for _, id := range ids {
		ref := model.SeriesRef(id)
		h.regMu.RLock()
		s := h.refs[ref]
		locs = h.groupsLocked(s, locs[:0])
		h.regMu.RUnlock()
		ss := SeriesSnapshot{Ref: ref, Labels: s.labels()}
		stale = stale[:0]
		for _, g := range locs {
			g.mu.RLock()
			slot, ok := g.slotOfLocked(s)
			if ok {
				for _, p := range g.parts {
					pid := p.pid
					if pid < pmin || pid > pmax || p.maxT < mint || p.minT > maxt {
						continue
					}
					c := p.snapshotLocked(h.mem, slot, h.opts.TupleSize)
					if c == nil || c.MinT > maxt || c.MaxT < mint {
						continue
					}
					if p.flushed {
						c.Flushed = true
						if !c.valid() {
							stale = append(stale, pid)
							c.release()
							continue
						}
						if !slices.Contains(ss.Covered, pid) {
							ss.Covered = append(ss.Covered, pid)
						}
					}
					ss.Columns = append(ss.Columns, c)
				}
			}
			g.mu.RUnlock()
		}
		if len(stale) > 0 {
			ss.Columns = slices.DeleteFunc(ss.Columns, func(c *ColumnSnapshot) bool {
				if slices.Contains(stale, c.Partition) {
					c.release()
					return true
				}
				return false
			})
			ss.Covered = slices.DeleteFunc(ss.Covered, func(pid int64) bool { return slices.Contains(stale, pid) })
		}
		if len(ss.Columns) == 0 {
			continue
		}
		sort.Slice(ss.Columns, func(i, j int) bool { return ss.Columns[i].MinT < ss.Columns[j].MinT })
		out = append(out, ss)
	}
	shareTimes(out)
	return out, nil
}
