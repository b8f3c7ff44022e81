package head

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"sort"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/aerie-db/aerie/internal/encoding"
	"github.com/aerie-db/aerie/internal/memory"
	"github.com/aerie-db/aerie/internal/model"
	"github.com/aerie-db/aerie/internal/seriesiter"
)

// FlushSeries is one slot of a group partition, laid out over the group's
// rows.
type FlushSeries struct {
	Ref     model.SeriesRef
	Labels  labels.Labels
	Values  []float64 // len = rows; meaningful where Present
	Present []bool
}

// FlushGroup is one group's data in one partition: the union of its rows
// (in-order and out-of-order, merged) and every slot with data. Its slices
// are reused for the next group: they are valid only during the callback.
type FlushGroup struct {
	ID     model.GroupID
	Key    string
	T      []int64 // strictly increasing
	Series []FlushSeries
}

// Partitions returns the partitions with data not yet flushed, oldest
// first.
func (h *Head) Partitions() []int64 { return h.partitions(false) }

// FlushedPartitions returns the flushed partitions still in memory (hot),
// oldest first.
func (h *Head) FlushedPartitions() []int64 { return h.partitions(true) }

func (h *Head) partitions(flushed bool) []int64 {
	seen := map[int64]bool{}
	for _, g := range h.groupList() {
		g.mu.RLock()
		for _, p := range g.parts {
			if p.flushed == flushed {
				seen[p.pid] = true
			}
		}
		g.mu.RUnlock()
	}
	out := make([]int64, 0, len(seen))
	for pid := range seen {
		out = append(out, pid)
	}
	slices.Sort(out)
	return out
}

func (h *Head) groupList() []*group {
	h.regMu.RLock()
	defer h.regMu.RUnlock()
	out := make([]*group, 0, len(h.groups))
	for _, g := range h.groups[1:] {
		if g != nil {
			out = append(out, g)
		}
	}
	return out
}

// PartitionGroups calls fn for every group with data in partition pid, in
// group id order, with its rows merged. The data stay in the head (and
// keep serving queries) until DropPartition. The caller seals the
// partition first (SealPartition), so no row lands in it meanwhile.
func (h *Head) PartitionGroups(pid int64, fn func(*FlushGroup) error) error {
	guard := h.mem.Enter()
	defer guard.Exit()
	type slotSnap struct {
		s *memSeries
		c *ColumnSnapshot
	}
	var (
		vbuf  []float64 // every series' Values, reused across groups
		pbuf  []bool    // and Present
		snaps []slotSnap
		it    *seriesiter.Iterator
	)
	for _, g := range h.groupList() {
		g.mu.RLock()
		p := g.part(pid)
		if p == nil {
			g.mu.RUnlock()
			continue
		}
		snaps = snaps[:0]
		inorder, err := p.timesLocked(h.mem, h.opts.TupleSize)
		if err != nil {
			g.mu.RUnlock()
			return fmt.Errorf("group %d partition %d: %w", g.id, pid, err)
		}
		for slot := range p.cols {
			if c := p.snapshotLocked(h.mem, model.Slot(slot), h.opts.TupleSize); c != nil {
				snaps = append(snaps, slotSnap{g.slots[slot], c})
			}
		}
		g.mu.RUnlock()
		if len(snaps) == 0 {
			continue
		}
		// Union of the row timestamps: in-order rows, then out-of-order.
		ts := append([]int64(nil), inorder...)
		for _, sn := range snaps {
			for _, e := range sn.c.Extra {
				ts = append(ts, e.T)
			}
		}
		slices.Sort(ts)
		ts = slices.Compact(ts)
		fg := &FlushGroup{ID: g.id, Key: g.Key(), T: ts}
		n := len(ts) * len(snaps)
		if cap(vbuf) < n {
			vbuf, pbuf = make([]float64, n), make([]bool, n)
		}
		vbuf, pbuf = vbuf[:n], pbuf[:n]
		clear(pbuf)
		for i, sn := range snaps {
			lo, hi := i*len(ts), (i+1)*len(ts)
			fs := FlushSeries{Ref: sn.s.ref, Labels: sn.s.labels(), Values: vbuf[lo:hi:hi], Present: pbuf[lo:hi:hi]}
			it = seriesiter.NewIterator(it, sn.c, sn.c.Extra, math.MinInt64, math.MaxInt64)
			j := 0
			for it.Next() != 0 {
				t, v := it.At()
				j += sort.Search(len(ts)-j, func(i int) bool { return ts[j+i] >= t })
				fs.Values[j], fs.Present[j] = v, true
			}
			if err := it.Err(); err != nil {
				return err
			}
			fg.Series = append(fg.Series, fs)
			if i%yieldEvery == yieldEvery-1 {
				runtime.Gosched() // a group can take tens of milliseconds: let queries in
			}
		}
		for _, sn := range snaps {
			sn.c.release()
		}
		if err := fn(fg); err != nil {
			return err
		}
	}
	return nil
}

// SealPartition closes partition pid to writes before it is flushed: it
// raises the minimum valid time to the partition's end, then waits for the
// commits that validated rows against the old bound.
func (h *Head) SealPartition(pid int64) {
	_, maxt := h.PartitionBounds(pid)
	h.SetMinValidTime(maxt)
	for _, g := range h.groupList() {
		g.appendMu.Lock()
		g.appendMu.Unlock() // a barrier: commits hold appendMu from validation to application
	}
}

// ReleasePartition marks partition pid flushed, its block being durable and
// visible to queriers: its memory blocks turn hot (the first-level soft
// release) and keep serving queries until DropPartition, DropFlushed or
// the manager's reclamation.
func (h *Head) ReleasePartition(pid int64) {
	h.SealPartition(pid)
	for _, g := range h.groupList() {
		g.mu.Lock()
		if p := g.part(pid); p != nil {
			p.flushed = true
		}
		g.mu.Unlock()
	}
	h.unreserve(pid)
	h.mem.SoftRelease(pid)
}

// yieldEvery is how many series a flush converts between yields to the
// scheduler. On a busy machine a query waiting for a processor otherwise
// waits for the whole group (or for the runtime's 10 ms preemption).
const yieldEvery = 8

// DropPartition removes partition pid from every group (after its block is
// durable and visible) and hard-releases its memory: readers that entered
// before keep it until they exit; new ones read the block. It raises the
// minimum valid time to the partition's end, and removes from the head's
// index the series left without data in the head (their data are in
// blocks now).
func (h *Head) DropPartition(pid int64) {
	h.SealPartition(pid)
	var dropped []*memSeries
	for _, g := range h.groupList() {
		g.mu.Lock()
		if p := g.part(pid); p != nil {
			for slot, c := range p.cols {
				if c != nil { // a column exists only with samples
					dropped = append(dropped, g.slots[slot])
				}
			}
			g.dropPart(pid)
		}
		g.mu.Unlock()
	}
	h.unreserve(pid)
	h.mem.HardRelease(pid)
	h.recomputeMinT()
	h.gcSeries(dropped)
}

// DropFlushed drops the flushed partitions beyond the newest keep, those
// ending at or before cutoff (their blocks were deleted by retention) and
// those whose memory the manager reclaimed entirely. It returns the
// partitions dropped.
func (h *Head) DropFlushed(keep int, cutoff int64) []int64 {
	hot := h.FlushedPartitions()
	var drop []int64
	for i, pid := range hot {
		_, pmax := h.PartitionBounds(pid)
		a, ok := h.mem.PartitionArea(pid)
		if i < len(hot)-max(keep, 0) || pmax <= cutoff || !ok || a == memory.AreaCooling {
			drop = append(drop, pid)
		}
	}
	for _, pid := range drop {
		h.DropPartition(pid)
	}
	return drop
}

// gcSeries removes from the index the series of ss that have no data left
// in the head. The registry keeps them (their refs stay stable for the WAL).
func (h *Head) gcSeries(ss []*memSeries) {
	h.idxMu.Lock()
	defer h.idxMu.Unlock()
	for _, s := range ss {
		if !s.indexed.Load() || h.hasData(s) {
			continue
		}
		s.indexed.Store(false)
		h.idx.Delete(uint32(s.ref))
	}
}

// hasData reports whether any head partition holds samples of s.
func (h *Head) hasData(s *memSeries) bool {
	h.regMu.RLock()
	var buf [2]*group
	locs := h.groupsLocked(s, buf[:0])
	h.regMu.RUnlock()
	for _, g := range locs {
		g.mu.RLock()
		slot, ok := g.slotOfLocked(s)
		if ok {
			for _, p := range g.parts {
				if int(slot) < len(p.cols) && p.cols[slot] != nil {
					g.mu.RUnlock()
					return true
				}
			}
		}
		g.mu.RUnlock()
	}
	return false
}

func (h *Head) recomputeMinT() {
	minT := int64(math.MaxInt64)
	for _, g := range h.groupList() {
		g.mu.RLock()
		for _, p := range g.parts {
			if p.minT < minT {
				minT = p.minT
			}
		}
		g.mu.RUnlock()
	}
	h.minT.Store(minT)
}

// timesLocked decodes every in-order row timestamp. Called with g.mu held
// and a memory guard.
func (p *gpart) timesLocked(m *memory.Manager, tupleSize int) ([]int64, error) {
	out := make([]int64, 0, p.nRows)
	var err error
	tv := p.times.view()
	for k := range tv.offs {
		if out, _, err = encoding.DecodeTimeTuple(out, tv.tuple(m, k), tupleSize); err != nil {
			return nil, err
		}
	}
	return append(out, p.openT[:p.openN]...), nil
}

// PartitionTimeRange returns the least and greatest sample time of
// partition pid over every group (ok false if it holds none).
func (h *Head) PartitionTimeRange(pid int64) (mint, maxt int64, ok bool) {
	mint, maxt = math.MaxInt64, math.MinInt64
	for _, g := range h.groupList() {
		g.mu.RLock()
		if p := g.part(pid); p != nil && p.minT <= p.maxT {
			mint, maxt, ok = min(mint, p.minT), max(maxt, p.maxT), true
		}
		g.mu.RUnlock()
	}
	return mint, maxt, ok
}
