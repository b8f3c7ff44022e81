package head

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/aerie-db/aerie/internal/model"
	"github.com/aerie-db/aerie/internal/wal"
)

// Appender buffers samples and, at Commit, forms them into group rows:
// the samples of one group with one timestamp are one row. An Appender is
// not safe for concurrent use; use one per goroutine.
type Appender struct {
	h     *Head
	pend  []pending
	n     int         // Append calls since the last Commit or Rollback
	rej   AppendError // rejections found at Append time
	spill SpillFunc
}

// SpillFunc takes a sample that Commit cannot store in the head (out of
// bounds, older than the out-of-order window, or of a partition the
// memory manager cannot open while too many older ones are unflushed) and
// reports whether it took it; a sample taken is neither stored nor
// rejected by this head. The engine spills such samples to its backfill.
type SpillFunc func(lset labels.Labels, t int64, v float64) bool

// SetSpill sets the spill function of the following commits.
func (a *Appender) SetSpill(f SpillFunc) { a.spill = f }

type pending struct {
	s    *memSeries
	t    int64
	v    float64
	idx  int        // position among the Append calls
	slot model.Slot // in s's group, set by commit
	ok   bool       // slot assigned (the group had room)
}

// cmpPending orders samples by time, then slot: the order of group rows.
func cmpPending(a, b pending) int {
	if a.t != b.t {
		return cmp.Compare(a.t, b.t)
	}
	return cmp.Compare(a.slot, b.slot)
}

// pendingSorted is slices.IsSortedFunc(ps, cmpPending), as a loop the
// compiler keeps tight (the generic call was 6 % of a line-protocol
// load's CPU).
func pendingSorted(ps []pending) bool {
	for i := 1; i < len(ps); i++ {
		a, b := &ps[i-1], &ps[i]
		if b.t < a.t || (b.t == a.t && b.slot < a.slot) {
			return false
		}
	}
	return true
}

// maxMergeRuns is the most sorted runs sortPending merges; more are
// sorted.
const maxMergeRuns = 8

// pendingSort is the scratch memory of sortPending, reused by commits.
type pendingSort struct {
	buf   []pending
	rank  []uint8 // per sample: its timestamp's rank among the distinct ones
	count []int
}

// sortPending sorts ps by cmpPendingIdx.
//
// Samples of a few timestamps (at most maxRowTimes: a request's scrapes of
// many series, series after series, as remote write sends them) whose
// append positions increase are sorted in linear time: a stable counting
// sort by slot, then one by time. Unsorted samples of many timestamps
// usually come in a few sorted runs in append order — a backfill commit
// holds the samples its appender sent to the backfill at Append, then
// those its main head's commit spilled (rows cut in two, each part in
// order) — which it merges stably in linear time per run; other orders go
// to slices.SortFunc.
func (s *pendingSort) sortPending(ps []pending) {
	if s.byCounting(ps) {
		return
	}
	var ends [maxMergeRuns]int
	runs := 0
	for i := 1; i <= len(ps); i++ {
		if i == len(ps) || cmpPending(ps[i-1], ps[i]) > 0 {
			if runs == maxMergeRuns {
				slices.SortFunc(ps, cmpPendingIdx)
				return
			}
			ends[runs] = i
			runs++
		}
	}
	buf := s.scratch(len(ps))
	for r := 1; r < runs; r++ {
		// Merge ps[:ends[r-1]] (sorted so far) with the next run.
		left, right := ps[:ends[r-1]], ps[ends[r-1]:ends[r]]
		out := buf[:0]
		i, j := 0, 0
		for i < len(left) && j < len(right) {
			if cmpPending(right[j], left[i]) < 0 { // ties: the earlier append first
				out = append(out, right[j])
				j++
			} else {
				out = append(out, left[i])
				i++
			}
		}
		out = append(out, left[i:]...)
		out = append(out, right[j:]...)
		copy(ps, out)
	}
}

// scratch returns s.buf with length n.
func (s *pendingSort) scratch(n int) []pending {
	if cap(s.buf) < n {
		s.buf = make([]pending, n)
	}
	s.buf = s.buf[:n]
	return s.buf
}

// maxRowTimes is the most distinct timestamps byCounting sorts.
const maxRowTimes = 64

// maxCountSlot bounds the slots byCounting sorts (its count array).
const maxCountSlot = 1 << 16

// byCounting sorts ps by cmpPendingIdx with two stable counting sorts if
// they hold at most maxRowTimes distinct timestamps, their slots are below
// maxCountSlot and their append positions increase; else it reports false
// and leaves ps as it was.
func (s *pendingSort) byCounting(ps []pending) bool {
	var times [maxRowTimes]int64
	nt, last, maxSlot := 0, 0, model.Slot(0)
	if cap(s.rank) < 2*len(ps) {
		s.rank = make([]uint8, 2*len(ps))
	}
	rank, rank2 := s.rank[:len(ps)], s.rank[len(ps):2*len(ps)]
	for i := range ps {
		p := &ps[i]
		if i > 0 && p.idx <= ps[i-1].idx {
			return false
		}
		if p.slot >= maxCountSlot {
			return false
		}
		maxSlot = max(maxSlot, p.slot)
		if nt == 0 || times[last] != p.t {
			j := 0
			for j < nt && times[j] != p.t {
				j++
			}
			if j == nt {
				if nt == maxRowTimes {
					return false
				}
				times[nt] = p.t
				nt++
			}
			last = j
		}
		rank[i] = uint8(last) // the timestamp's index for now; its rank below
	}
	// Rank the distinct timestamps.
	var order [maxRowTimes]uint8
	for j := range nt {
		order[j] = uint8(j)
	}
	slices.SortFunc(order[:nt], func(a, b uint8) int { return cmp.Compare(times[a], times[b]) })
	var rankOf [maxRowTimes]uint8
	for r, j := range order[:nt] {
		rankOf[j] = uint8(r)
	}
	for i := range rank {
		rank[i] = rankOf[rank[i]]
	}
	// By slot (stable) into buf, each sample's rank with it in rank2.
	buf := s.scratch(len(ps))
	count := s.counts(int(maxSlot) + 1)
	for i := range ps {
		count[ps[i].slot]++
	}
	sum := 0
	for k, c := range count {
		count[k] = sum
		sum += c
	}
	for i := range ps {
		at := count[ps[i].slot]
		count[ps[i].slot]++
		buf[at], rank2[at] = ps[i], rank[i]
	}
	// By time (stable) back into ps.
	count = s.counts(nt)
	for _, r := range rank2 {
		count[r]++
	}
	sum = 0
	for k, c := range count {
		count[k] = sum
		sum += c
	}
	for i := range buf {
		r := rank2[i]
		ps[count[r]] = buf[i]
		count[r]++
	}
	return true
}

// counts returns s.count with n zeros.
func (s *pendingSort) counts(n int) []int {
	if cap(s.count) < n {
		s.count = make([]int, n)
	}
	s.count = s.count[:n]
	clear(s.count)
	return s.count
}

// cmpPendingIdx is cmpPending, then append order: a total order, so an
// unstable sort by it is the stable sort by cmpPending (the first of two
// samples of a series at one time is kept).
func cmpPendingIdx(a, b pending) int {
	if c := cmpPending(a, b); c != 0 {
		return c
	}
	return cmp.Compare(a.idx, b.idx)
}

// Appender returns a new appender.
func (h *Head) Appender() *Appender { return &Appender{h: h} }

// AppendLabels buffers one sample and returns its series' ref, which AppendRef
// and CheckRef take instead of the labels for the life of the head (a
// series is never removed from the registry, so a ref never changes
// meaning). It returns an error only for an invalid label set or a series
// limit; time checks happen at Commit.
func (a *Appender) AppendLabels(lset labels.Labels, t int64, v float64) (model.SeriesRef, error) {
	idx := a.n
	a.n++
	s, err := a.h.getOrCreate(lset) // validates the labels of a new series
	if err != nil {
		a.rej.add(idx, lset, t, err)
		return 0, err
	}
	a.grow()
	a.pend = append(a.pend, pending{s: s, t: t, v: v, idx: idx})
	return s.ref, nil
}

// Append is AppendLabels without the ref.
func (a *Appender) Append(lset labels.Labels, t int64, v float64) error {
	_, err := a.AppendLabels(lset, t, v)
	return err
}

// AppendRef buffers one sample of the series ref (from AppendLabels), without
// looking its labels up. It fails with ErrUnknownRef if the head has no
// such series.
func (a *Appender) AppendRef(ref model.SeriesRef, t int64, v float64) error {
	s := a.h.seriesOf(ref)
	if s == nil {
		return fmt.Errorf("%w: %d", ErrUnknownRef, ref)
	}
	a.grow()
	a.pend = append(a.pend, pending{s: s, t: t, v: v, idx: a.n})
	a.n++
	return nil
}

// grow takes a pooled buffer for the first sample.
func (a *Appender) grow() {
	if a.pend == nil {
		if p, ok := pendPool.Get().(*[]pending); ok {
			a.pend = *p
		}
	}
}

// Check reports the error Commit would give the sample (t, v) of lset
// given what is committed now: label, bounds and out-of-order rules, and a
// duplicate of the series' last sample. Prometheus' own appender reports
// these at Append time, and clients such as the scrape loop and the remote
// write handler count them there; Aerie's Commit still decides, so a
// sample that passes Check can be rejected by a concurrent commit. With
// inOrderOnly, a sample older than the series' last one is out of order
// even inside the out-of-order window (storage.AppendOptions'
// DiscardOutOfOrder, which the scrape loop sets).
func (a *Appender) Check(lset labels.Labels, t int64, v float64, inOrderOnly bool) error {
	h := a.h
	h.regMu.RLock()
	s := h.findLocked(lset.Hash(), lset)
	h.regMu.RUnlock()
	if s == nil {
		// A known series' labels were valid when it was created.
		if err := ValidateLabels(lset); err != nil {
			return err
		}
		_, err := h.limits().check(t, v, math.MinInt64, 0)
		return err
	}
	return h.checkSeries(s, t, v, inOrderOnly)
}

// CheckRef is Check for the series ref (from AppendLabels); ErrUnknownRef if
// the head has no such series.
func (a *Appender) CheckRef(ref model.SeriesRef, t int64, v float64, inOrderOnly bool) error {
	s := a.h.seriesOf(ref)
	if s == nil {
		return fmt.Errorf("%w: %d", ErrUnknownRef, ref)
	}
	return a.h.checkSeries(s, t, v, inOrderOnly)
}

func (h *Head) checkSeries(s *memSeries, t int64, v float64, inOrderOnly bool) error {
	last := s.lastT.Load()
	if inOrderOnly && t < last {
		return ErrOutOfOrder
	}
	_, err := h.limits().check(t, v, last, s.lastV.Load())
	return err
}

// limits are the time bounds of appends, from the committed state.
type limits struct {
	minValid   int64 // blocks cover what is below
	minInOrder int64 // in-order samples below are out of bounds
	oooMin     int64 // out-of-order samples below are too old
	oooWindow  int64
}

func (h *Head) limits() limits {
	headMaxT := h.maxT.Load()
	l := limits{minValid: h.minValid.Load(), oooMin: math.MinInt64, oooWindow: h.opts.OOOWindow}
	l.minInOrder = l.minValid
	if h.opts.AnyAge {
		l.oooWindow = math.MaxInt64
		return l
	}
	if headMaxT != math.MinInt64 {
		l.minInOrder = max(l.minInOrder, headMaxT-h.opts.PartitionRange/2)
		l.oooMin = headMaxT - h.opts.OOOWindow
	}
	return l
}

// check applies Prometheus' rules (memSeries.appendable) to a sample at t
// of a series whose last in-order sample is (last, lastV). dup is true for
// an identical duplicate of that sample, which is accepted as a no-op.
func (l limits) check(t int64, v float64, last int64, lastV uint64) (dup bool, err error) {
	switch {
	case t < l.minValid:
		return false, ErrOutOfBounds
	case t > last:
		if t < l.minInOrder {
			return false, ErrOutOfBounds
		}
		return false, nil
	case t == last:
		if math.Float64bits(v) != lastV {
			return false, ErrDuplicateValue
		}
		return true, nil
	case l.oooWindow > 0 && t >= l.oooMin:
		return false, nil
	case l.oooWindow > 0:
		return false, ErrTooOld
	case t < l.minInOrder:
		return false, ErrOutOfBounds
	}
	return false, ErrOutOfOrder
}

// pendPool keeps the pending buffers of appenders that committed or
// rolled back, for the next appenders (an Appender that is used again
// after its Commit or Rollback starts an empty buffer).
var pendPool sync.Pool

// Rollback drops the buffered samples.
func (a *Appender) Rollback() error {
	if cap(a.pend) >= 256 && cap(a.pend) <= 1<<20 {
		clear(a.pend)
		p := a.pend[:0]
		pendPool.Put(&p)
		a.pend = nil
	}
	a.pend = a.pend[:0]
	a.n = 0
	a.rej = AppendError{}
	return nil
}

// Commit validates the buffered samples, writes the accepted rows to the
// WAL (returning only once they are durable, per the WAL's sync mode) and
// applies them to the head. Rejected samples are reported in an
// *AppendError; every other sample is stored. A WAL error stores nothing.
func (a *Appender) Commit() error {
	ticket, err := a.CommitNoWait()
	if werr := a.h.WaitDurable(ticket); err == nil {
		err = werr
	}
	return err
}

// CommitNoWait is Commit without waiting for the WAL's fsync: the rows are
// applied (visible to queries, as after Commit) and their records written.
// The caller must not acknowledge them before WaitDurable(ticket) returns
// nil. A ticket of 0 needs no wait.
func (a *Appender) CommitNoWait() (ticket uint64, err error) {
	defer a.Rollback()
	rej := a.rej
	err = a.h.commitAll(a.pend, &rej, a.spill, &ticket)
	return ticket, err
}

// WaitDurable returns once the records of a CommitNoWait's ticket are
// durable, or with the error that keeps them from it.
func (h *Head) WaitDurable(ticket uint64) error {
	if ticket == 0 || h.wal == nil {
		return nil
	}
	return h.wal.Wait(ticket)
}

// commitAll commits pend, retrying when a series moved groups meanwhile
// (commit returns errRetry before it validates anything), and returns rej
// if any sample was rejected. With ticket set, the commit does not wait
// for its WAL records' fsync but leaves their ticket there.
func (h *Head) commitAll(pend []pending, rej *AppendError, spill SpillFunc, ticket *uint64) error {
	if len(pend) > 0 {
		err := h.commit(pend, rej, spill, ticket)
		for err == errRetry {
			err = h.commit(pend, rej, spill, ticket)
		}
		if err != nil {
			return err
		}
	}
	if rej.Rejected > 0 {
		return rej
	}
	return nil
}

// row is a group row: samples of one group at one timestamp, by slot order.
type row struct {
	t      int64
	slots  []model.Slot
	vals   []float64
	series []*memSeries
	idx    []int // append positions (nil during replay)
}

// commitScratch is the memory of one commit, reused through commitPool:
// nothing of it outlives the commit (applyRows copies the values).
type commitScratch struct {
	groupIdx map[*group]int
	buckets  [][]pending // by groupIdx
	gs       []*group
	// By slot of the group being validated.
	lastT []int64
	lastV []uint64
	seen  []bool
	// Every row's samples, end to end (cap len(pend): never reallocated
	// during a commit, so rows can slice them).
	slots  []model.Slot
	vals   []float64
	series []*memSeries
	idx    []int
	// Rows of every group end to end (cap len(pend): a group's rows take
	// at most its samples' room), and the WAL encoding of the commit: its
	// records end to end, each group's RowsDef and presence bitmaps reused.
	// A commit of many narrow groups (Graphite hosts with few series each)
	// then allocates nothing per group.
	rows    []row
	sort    pendingSort
	rec     []byte
	rd      wal.RowsDef
	walRows []wal.Row
	words   []uint64
}

var commitPool = sync.Pool{New: func() any { return &commitScratch{groupIdx: map[*group]int{}} }}

func (c *commitScratch) reset(n int) {
	clear(c.groupIdx)
	for i := range c.buckets {
		c.buckets[i] = c.buckets[i][:0]
	}
	c.gs = c.gs[:0]
	if cap(c.slots) < n {
		c.slots = make([]model.Slot, 0, n)
		c.vals = make([]float64, 0, n)
		c.series = make([]*memSeries, 0, n)
		c.idx = make([]int, 0, n)
	}
	c.slots, c.vals, c.series, c.idx = c.slots[:0], c.vals[:0], c.series[:0], c.idx[:0]
	if cap(c.rows) < n {
		c.rows = make([]row, 0, n)
	}
	c.rows, c.rec = c.rows[:0], c.rec[:0]
}

// release returns c to the pool unless it grew too big to keep.
func (c *commitScratch) release() {
	if cap(c.slots) > 1<<20 {
		return
	}
	// Do not pin series: only what this commit used holds them (each
	// commit clears its own; rows and walRows point into c's own arrays).
	clear(c.series)
	if cap(c.rec) > 4<<20 {
		c.rec = nil // do not pin the memory of one huge batch
	}
	for i := range c.buckets {
		clear(c.buckets[i])
	}
	clear(c.sort.buf)
	commitPool.Put(c)
}

// bySlot returns c.lastT, c.lastV and c.seen sized for width slots, seen
// all false.
func (c *commitScratch) bySlot(width int) ([]int64, []uint64, []bool) {
	if cap(c.seen) < width {
		c.lastT, c.lastV, c.seen = make([]int64, width), make([]uint64, width), make([]bool, width)
	}
	c.seen = c.seen[:width]
	clear(c.seen)
	return c.lastT[:width], c.lastV[:width], c.seen
}

// The commit writes its WAL records and applies its rows under the append
// locks of its groups, and waits for the records' fsync only after
// releasing them: a commit into the same groups writes and applies
// meanwhile, and the two share one fsync (group commit) instead of the
// second queueing behind the first's. A commit returns only once its
// records are durable; its rows are visible to queries from when they are
// applied, as Prometheus' are.
func (h *Head) commit(pend []pending, rej *AppendError, spill SpillFunc, noWait *uint64) (err error) {
	sc := commitPool.Get().(*commitScratch)
	defer sc.release()
	sc.reset(len(pend))
	// 1. Bucket the samples by their series' current group.
	h.regMu.RLock()
	g0, one := pend[0].s.cur, true
	for _, p := range pend {
		if p.s.cur != g0 {
			one = false
			break
		}
	}
	byGroup := func(i int) []pending { return sc.buckets[i] }
	if one {
		// The usual batch (one target, one host): no copy.
		sc.gs = append(sc.gs, g0)
		byGroup = func(int) []pending { return pend }
	} else {
		for _, p := range pend {
			i, ok := sc.groupIdx[p.s.cur]
			if !ok {
				i = len(sc.gs)
				sc.groupIdx[p.s.cur] = i
				sc.gs = append(sc.gs, p.s.cur)
				if i == len(sc.buckets) {
					sc.buckets = append(sc.buckets, nil)
				}
			}
			sc.buckets[i] = append(sc.buckets[i], p)
		}
	}
	h.regMu.RUnlock()
	// Sort the groups by id (the lock order), with their buckets.
	order := make([]int, len(sc.gs))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(sc.gs[a].id, sc.gs[b].id) })
	var ticket uint64 // the WAL's; waited for after the unlock below (defers run last first)
	defer func() {
		if ticket != 0 && noWait != nil {
			*noWait = ticket // the caller waits (CommitNoWait)
			return
		}
		if ticket != 0 {
			if werr := h.wal.Wait(ticket); err == nil {
				err = werr
			}
		}
	}()
	for _, i := range order {
		sc.gs[i].appendMu.Lock()
	}
	defer func() {
		for _, i := range order {
			sc.gs[i].appendMu.Unlock()
		}
	}()
	h.regMu.RLock()
	for i, g := range sc.gs {
		for _, p := range byGroup(i) {
			if p.s.cur != g {
				h.regMu.RUnlock()
				return errRetry
			}
		}
	}
	h.regMu.RUnlock()

	// 2. Validate and form rows, per group.
	lim := h.limits()
	type batch struct {
		g    *group
		rows []row
	}
	batches := make([]batch, 0, len(sc.gs))
	var recs [][]byte
	var moves []*memSeries
	for _, gi := range order {
		g, ps := sc.gs[gi], byGroup(gi)
		assigned := h.assignSlots(g, ps, rej)
		if !pendingSorted(ps) { // importers send rows in order
			sc.sort.sortPending(ps)
		}
		lastT, lastV, seen := sc.bySlot(assigned)
		// At least len(ps)/width rows: a narrow group's long batch (one
		// sensor's history) would otherwise grow the slice many times.
		off := len(sc.rows)
		rows := sc.rows[off : off : off+len(ps)]
		sc.rows = sc.rows[:off+len(ps)]
		rowStart := len(sc.slots) // the arena index of the last row's first sample
		closeRow := func() {
			if n := len(rows); n > 0 {
				r := &rows[n-1]
				e := len(sc.slots)
				r.slots, r.vals, r.series, r.idx = sc.slots[rowStart:e:e], sc.vals[rowStart:e:e], sc.series[rowStart:e:e], sc.idx[rowStart:e:e]
			}
		}
		for _, p := range ps {
			slot, ok := p.slot, p.ok
			if !ok {
				continue // rejected by assignSlots
			}
			sl, lv := lastT[slot], lastV[slot]
			if !seen[slot] {
				sl, lv = p.s.lastT.Load(), p.s.lastV.Load()
				lastT[slot], lastV[slot], seen[slot] = sl, lv, true
			}
			dup, err := lim.check(p.t, p.v, sl, lv)
			if dup {
				rej.Accepted++ // identical to the stored sample
				continue
			}
			if err != nil {
				if spill != nil && (err == ErrOutOfBounds || err == ErrTooOld) && spill(p.s.labels(), p.t, p.v) {
					continue
				}
				rej.add(p.idx, p.s.labels(), p.t, err)
				continue
			}
			if p.t > sl {
				lastT[slot] = p.t
				lastV[slot] = math.Float64bits(p.v)
			}
			if len(rows) > 0 && rows[len(rows)-1].t == p.t {
				if e := len(sc.slots); e > rowStart && sc.slots[e-1] == slot {
					// A second sample of the series in this row: same value
					// is a no-op, another is rejected, as a duplicate would be
					// treated later.
					if math.Float64bits(sc.vals[e-1]) != math.Float64bits(p.v) {
						rej.add(p.idx, p.s.labels(), p.t, ErrDuplicateValue)
					} else {
						rej.Accepted++
					}
					continue
				}
			} else {
				closeRow()
				rows = append(rows, row{t: p.t})
				rowStart = len(sc.slots)
			}
			sc.slots = append(sc.slots, slot)
			sc.vals = append(sc.vals, p.v)
			sc.series = append(sc.series, p.s)
			sc.idx = append(sc.idx, p.idx)
		}
		closeRow()
		rows = h.reserveRows(rows, rej, spill)
		if len(rows) == 0 {
			continue
		}
		moves = append(moves, h.trackMisfits(g, rows)...)
		g.mu.RLock()
		width := len(g.slots)
		g.mu.RUnlock()
		if h.wal != nil {
			recs = g.appendDefsLocked(recs, width)
			start := len(sc.rec)
			sc.rec = wal.AppendRows(sc.rec, sc.rowsRecord(g.id, width, rows))
			recs = append(recs, sc.rec[start:len(sc.rec):len(sc.rec)])
		}
		batches = append(batches, batch{g: g, rows: rows})
	}

	// 3. Write it (durable once the deferred Wait returns).
	if h.wal != nil && len(recs) > 0 {
		maxT := int64(math.MinInt64)
		for _, b := range batches {
			maxT = max(maxT, b.rows[len(b.rows)-1].t)
		}
		t, err := h.wal.Write(maxT, recs...)
		if err != nil {
			return err
		}
		ticket = t
		for _, b := range batches {
			b.g.loggedDef = true
			b.g.mu.RLock()
			b.g.loggedSlots = len(b.g.slots)
			b.g.mu.RUnlock()
		}
	}

	// 4. Apply.
	for _, b := range batches {
		h.applyRows(b.g, b.rows, rej)
	}
	if len(moves) > 0 {
		h.moveSeries(moves)
	}
	return nil
}

// reserveRows reserves the partitions of rows in the memory manager and
// rejects the rows whose partition cannot be opened (too many older ones
// are unflushed), unless spill takes their samples.
func (h *Head) reserveRows(rows []row, rej *AppendError, spill SpillFunc) []row {
	// Rows come in time order: reserve each partition once, not per row
	// (a long batch past the partition window fails for most of its rows).
	lastPid, lastErr := int64(math.MinInt64), error(nil)
	return slices.DeleteFunc(rows, func(r row) bool {
		if pid := h.partitionOf(r.t); pid != lastPid {
			lastPid, lastErr = pid, h.reserve(pid)
		}
		err := lastErr
		if err == nil {
			return false
		}
		for j, s := range r.series {
			if spill == nil || !spill(s.labels(), r.t, r.vals[j]) {
				rej.add(r.idx[j], s.labels(), r.t, err)
			}
		}
		return true
	})
}

// assignSlots gives every sample of ps its series' slot in g (setting
// slot and ok) and returns g's width. Series that do not fit (group too
// wide) are rejected, their samples left with ok false.
func (h *Head) assignSlots(g *group, ps []pending, rej *AppendError) (width int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for i := range ps {
		p := &ps[i]
		slot, ok := g.slotOfLocked(p.s)
		if !ok {
			if len(g.slots) >= h.opts.MaxGroupWidth {
				rej.add(p.idx, p.s.labels(), p.t, ErrGroupTooWide)
				p.ok = false
				continue
			}
			slot = g.addSlotLocked(p.s)
		}
		p.slot, p.ok = slot, true
	}
	return len(g.slots)
}

// trackMisfits counts, per series, consecutive rows in which it was alone
// although its group has other series; it returns the series that reached
// the limit. Called with g.appendMu held.
func (h *Head) trackMisfits(g *group, rows []row) []*memSeries {
	g.mu.RLock()
	width := len(g.slots)
	g.mu.RUnlock()
	if width < 2 {
		return nil
	}
	var out []*memSeries
	for _, r := range rows {
		if len(r.series) == 1 {
			s := r.series[0]
			s.misfits++
			if int(s.misfits) == h.opts.MisfitLimit {
				out = append(out, s)
			}
			continue
		}
		for _, s := range r.series {
			s.misfits = 0
		}
	}
	return out
}

// moveSeries gives each series a group of its own for its next rows.
func (h *Head) moveSeries(ss []*memSeries) {
	h.regMu.Lock()
	defer h.regMu.Unlock()
	for _, s := range ss {
		key := MovedKey(s.labels())
		g := h.groupOfKeyLocked(key)
		if g == nil {
			g = h.newGroupLocked(0, key)
		}
		if s.cur == g {
			continue
		}
		h.joinLocked(s, g)
		s.misfits = 0
	}
}

// rowsRecord is the package's rowsRecord in c's reusable memory: the
// result is valid until the next call.
func (c *commitScratch) rowsRecord(id model.GroupID, width int, rows []row) *wal.RowsDef {
	words := (width + 63) / 64
	if cap(c.walRows) < len(rows) {
		c.walRows = make([]wal.Row, len(rows))
	}
	if cap(c.words) < words*len(rows) {
		c.words = make([]uint64, words*len(rows))
	}
	c.rd = wal.RowsDef{Group: id, Width: uint32(width), Rows: c.walRows[:len(rows)]}
	bms := c.words[:words*len(rows)]
	clear(bms)
	for i, r := range rows {
		bm := bms[i*words : (i+1)*words : (i+1)*words]
		for _, s := range r.slots {
			bm[s/64] |= 1 << (s % 64)
		}
		c.rd.Rows[i] = wal.Row{T: r.t, Present: bm, Values: r.vals}
	}
	return &c.rd
}

func rowsRecord(id model.GroupID, width int, rows []row) *wal.RowsDef {
	rd := &wal.RowsDef{Group: id, Width: uint32(width), Rows: make([]wal.Row, len(rows))}
	words := (width + 63) / 64
	for i, r := range rows {
		bm := make([]uint64, words)
		for _, s := range r.slots {
			bm[s/64] |= 1 << (s % 64)
		}
		rd.Rows[i] = wal.Row{T: r.t, Present: bm, Values: r.vals}
	}
	return rd
}

// applyRows stores validated rows. Duplicates (a different value at a
// stored timestamp) are rejected here, deterministically, so WAL replay
// rejects the same ones. Called with g.appendMu held.
func (h *Head) applyRows(g *group, rows []row, rej *AppendError) {
	h.applyRowsLocked(g, rows, rej)
	// Series that have data now are in the index (see Head.idxMu).
	h.idxMu.RLock()
	defer h.idxMu.RUnlock()
	for _, r := range rows {
		for _, s := range r.series {
			if !s.indexed.Load() && s.indexed.CompareAndSwap(false, true) {
				h.idx.Add(uint32(s.ref), s.labels())
			}
		}
	}
}

func (h *Head) applyRowsLocked(g *group, rows []row, rej *AppendError) {
	ts := h.opts.TupleSize
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, r := range rows {
		pid := h.partitionOf(r.t)
		p := g.part(pid)
		if p == nil {
			p = newGPart(pid)
			g.parts = append(g.parts, p)
		}
		switch {
		case r.t > p.lastT:
			p.appendRowLocked(h.mem, r.t, r.slots, r.vals, ts)
			if rej != nil {
				rej.Accepted += len(r.slots)
			}
		case r.t == p.lastT:
			i := p.openN - 1
			for j, s := range r.slots {
				c := p.col(s)
				if c.openPres&(1<<i) != 0 {
					if math.Float64bits(c.open[i]) != math.Float64bits(r.vals[j]) {
						if rej != nil {
							rej.add(r.idx[j], r.series[j].labels(), r.t, ErrDuplicateValue)
						}
						continue
					}
				} else {
					c.open[i] = r.vals[j]
					c.openPres |= 1 << i
				}
				if rej != nil {
					rej.Accepted++
				}
			}
		default:
			for j, s := range r.slots {
				if v, ok := p.lookupLocked(h.mem, s, r.t, ts); ok {
					if math.Float64bits(v) != math.Float64bits(r.vals[j]) {
						if rej != nil {
							rej.add(r.idx[j], r.series[j].labels(), r.t, ErrDuplicateValue)
						}
					} else if rej != nil {
						rej.Accepted++
					}
					continue
				}
				p.col(s).insertOOO(r.t, r.vals[j])
				if rej != nil {
					rej.Accepted++
				}
			}
			p.widen(r.t)
		}
		for j, s := range r.series {
			if r.t > s.lastT.Load() {
				s.lastT.Store(r.t)
				s.lastV.Store(math.Float64bits(r.vals[j]))
			}
		}
		h.bumpTimes(r.t)
	}
}
