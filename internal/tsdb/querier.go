package tsdb

import (
	"cmp"
	"context"
	"errors"
	"math"
	"slices"
	"sync"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/util/annotations"

	"github.com/aerie-db/aerie/internal/block"
	"github.com/aerie-db/aerie/internal/head"
	"github.com/aerie-db/aerie/internal/index"
	"github.com/aerie-db/aerie/internal/memory"
	"github.com/aerie-db/aerie/internal/seriesiter"
)

// Querier implements storage.Queryable: it returns OpenQuerier's querier.
func (db *DB) Querier(mint, maxt int64) (storage.Querier, error) {
	return db.OpenQuerier(mint, maxt), nil
}

// OpenQuerier returns a querier over [mint, maxt]: it acquires the blocks
// overlapping the range now and reads the head per call (see Querier).
// A request that makes several reads (Select, SeriesSets, SeriesMetrics,
// SeriesBytes) makes them through one querier, so they see the same
// blocks. Close must be called.
func (db *DB) OpenQuerier(mint, maxt int64) *Querier {
	db.queriers.Add(1)
	q := &Querier{db: db, mint: mint, maxt: maxt, guard: db.head.Enter()}
	db.mu.RLock()
	q.added = db.added.Load()
	for _, b := range db.blocks {
		m := b.Meta()
		if m.MaxTime <= mint || m.MinTime > maxt {
			continue
		}
		if b.IsUnloaded() {
			q.pending = append(q.pending, b) // opened again at the first read (remotemeta.go)
		} else if b.Acquire() {
			db.rmeta.touch(b)
			q.blocks = append(q.blocks, b)
		}
	}
	db.mu.RUnlock()
	return q
}

// Querier reads the blocks it acquired and the head. Head data are
// snapshotted per Select, so a querier sees every row committed before
// its Select.
//
// A flush adds its block before it drops the partition from the head, so
// a Select that reads the head after the drop must also read the new
// block: after each head snapshot, the querier acquires the blocks added
// since (moreBlocks). A sample seen in both is merged once.
//
// A flushed partition stays in the head (hot) until the memory manager
// reclaims it; where the head reports a series' columns of such a
// partition still valid (SeriesSnapshot.Covered), its block is not read
// for that series. The querier holds a memory guard from its creation to
// Close, so the head memory its iterators read stays intact (Heracles'
// second-level epoch protection); Close must be called, and series and
// iterators from the querier must not be used after it (their head
// snapshots are recycled).
type Querier struct {
	db         *DB
	mint, maxt int64
	guard      memory.Guard

	mu     sync.Mutex // guards blocks, added, snaps, gens and closed; Selects may run concurrently
	blocks []*block.Reader
	// pending are stand-ins (block.Unloaded) of remote blocks in range
	// whose metadata was dropped from memory; resolve opens them again
	// and moves them to blocks.
	pending []*block.Reader
	added   uint64 // db.added when blocks was last brought up to date
	snaps   [][]head.SeriesSnapshot
	gens    []genSnap // backfill generations read, released at Close
	// prefetch are the Selects' read-ahead, stopped at Close before
	// the snapshots they read are released.
	prefetch []*prefetcher
	closed   bool
}

// genSnap is what a Select took of a backfill generation's head.
type genSnap struct {
	h     *head.Head
	guard memory.Guard
	snaps []head.SeriesSnapshot
}

func (q *Querier) Close() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return nil
	}
	q.closed = true
	for _, pf := range q.prefetch {
		pf.stop()
	}
	q.prefetch = nil
	for _, b := range q.blocks {
		b.Release()
	}
	q.blocks = nil
	for _, hs := range q.snaps {
		q.db.head.Release(hs)
	}
	q.snaps = nil
	for _, g := range q.gens {
		g.h.Release(g.snaps)
		g.guard.Exit()
	}
	q.gens = nil
	q.guard.Exit()
	return nil
}

// acquired returns the blocks the querier holds, with the remote blocks
// it found dropped from memory opened again (resolve).
func (q *Querier) acquired(ctx context.Context) ([]*block.Reader, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if err := q.resolve(ctx); err != nil {
		return nil, err
	}
	return slices.Clone(q.blocks), nil
}

// resolve opens again the remote blocks of q.pending and acquires them
// (DB.loadRemote). Called with q.mu held.
func (q *Querier) resolve(ctx context.Context) error {
	for len(q.pending) > 0 {
		if q.closed {
			return errors.New("querier closed")
		}
		b, err := q.db.loadRemote(ctx, q.pending[0])
		if err != nil {
			return err
		}
		q.pending = q.pending[1:]
		if b != nil && !q.holds(b.Meta().ULID) {
			q.blocks = append(q.blocks, b)
		} else if b != nil {
			b.Release()
		}
	}
	return nil
}

// holds reports whether the querier holds block id. Called with q.mu
// held.
func (q *Querier) holds(id string) bool {
	for _, b := range q.blocks {
		if b.Meta().ULID == id {
			return true
		}
	}
	return false
}

// blocksNow returns the blocks the querier holds and those added since
// (moreBlocks), remote blocks dropped from memory opened again.
func (q *Querier) blocksNow(ctx context.Context) ([]*block.Reader, error) {
	bs, err := q.acquired(ctx)
	if err != nil {
		return nil, err
	}
	more, err := q.moreBlocks(ctx)
	return append(bs, more...), err
}

// moreBlocks acquires the blocks overlapping the querier's range that were
// added since it acquired its own, and returns them. Without a flush in
// between it is one atomic load.
func (q *Querier) moreBlocks(ctx context.Context) ([]*block.Reader, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.db.added.Load() == q.added {
		return nil, nil
	}
	q.db.mu.RLock()
	q.added = q.db.added.Load()
	var added []*block.Reader
	for _, b := range q.db.blocks {
		m := b.Meta()
		if m.MaxTime <= q.mint || m.MinTime > q.maxt || q.holds(m.ULID) {
			continue
		}
		if b.IsUnloaded() {
			q.pending = append(q.pending, b)
		} else if b.Acquire() {
			q.db.rmeta.touch(b)
			q.blocks = append(q.blocks, b)
			added = append(added, b)
		}
	}
	q.db.mu.RUnlock()
	n := len(q.blocks)
	if err := q.resolve(ctx); err != nil {
		return added, err
	}
	return append(added, q.blocks[n:]...), nil
}

// snapshot is what one read of [mint, maxt] takes of the engine through
// a querier, for the series matching its matchers: the main head's series
// (seq 0), then the backfill generations' overlapping the range (seq: the
// generation's number), oldest first, then the selections of the blocks
// overlapping the range, those the querier acquired at creation and those
// flushed since. Taken in that order, data a flush moves from a head to a
// block meanwhile is seen at least once (see Querier); a sample seen
// twice is merged once.
//
// Everything in it is valid until the querier's Close, which releases it
// (head snapshots, generation memory guards, block references), and not
// before: the querier owns what a snapshot takes.
type snapshot struct {
	heads  []headSnap
	blocks []blockSel
}

// headSnap is a head's series matching a read.
type headSnap struct {
	seq    uint64 // write order: 0 for the main head, else the generation's number
	series []head.SeriesSnapshot
}

// blockSel is a block and its selection for a read.
type blockSel struct {
	b   *block.Reader
	sel *block.Selection
}

// snapshot takes the snapshot of the series matching ms over [mint, maxt],
// which must lie within the querier's range. It holds q.mu only to record
// what Close releases, so reads of one querier may run concurrently; each
// generation's head is entered (its memory guard) before it is read.
func (q *Querier) snapshot(ctx context.Context, mint, maxt int64, ms ...*labels.Matcher) (snapshot, error) {
	var snap snapshot
	hs, err := q.db.head.Select(mint, maxt, ms...)
	if err != nil {
		return snap, err
	}
	q.mu.Lock()
	q.snaps = append(q.snaps, hs) // released at Close
	q.mu.Unlock()
	snap.heads = append(snap.heads, headSnap{seq: 0, series: hs})
	// Backfill generations, read before the blocks: a generation flushed
	// meanwhile is found in its blocks.
	for _, g := range q.db.generations() {
		if g.head.MaxTime() < mint || g.head.MinTime() > maxt {
			continue
		}
		guard := g.head.Enter()
		gs, err := g.head.Select(mint, maxt, ms...)
		q.mu.Lock()
		q.gens = append(q.gens, genSnap{h: g.head, guard: guard, snaps: gs})
		q.mu.Unlock()
		if err != nil {
			return snap, err
		}
		snap.heads = append(snap.heads, headSnap{seq: g.n, series: gs})
	}
	bs, err := q.blocksNow(ctx)
	if err != nil {
		return snap, err
	}
	for _, b := range bs {
		if m := b.Meta(); m.MaxTime <= mint || m.MinTime > maxt {
			continue // a block outside the read's range selects nothing (block.Reader.Select)
		}
		if err := ctx.Err(); err != nil {
			return snap, err
		}
		sel, err := b.Select(mint, maxt, ms...)
		if err != nil {
			return snap, err
		}
		snap.blocks = append(snap.blocks, blockSel{b: b, sel: sel})
	}
	return snap, nil
}

// labelsIndex numbers label sets in the order they were first added.
type labelsIndex struct {
	byHash map[uint64][]int // label set hash → indexes in lsets
	lsets  []labels.Labels
}

// add returns the index of lset, adding it if it is new.
func (x *labelsIndex) add(lset labels.Labels) (i int, added bool) {
	h := lset.Hash()
	for _, i := range x.byHash[h] {
		if labels.Equal(x.lsets[i], lset) {
			return i, false
		}
	}
	if x.byHash == nil {
		x.byHash = map[uint64][]int{}
	}
	i = len(x.lsets)
	x.byHash[h] = append(x.byHash[h], i)
	x.lsets = append(x.lsets, lset)
	return i, true
}

// seriesTable holds one entry per label set; all is in the order the
// entries were added.
type seriesTable[E any] struct {
	labelsIndex
	all []*E
}

// get returns the entry of lset, adding newEntry(lset) if it has none.
func (t *seriesTable[E]) get(lset labels.Labels, newEntry func(labels.Labels) *E) *E {
	i, added := t.add(lset)
	if added {
		t.all = append(t.all, newEntry(lset))
	}
	return t.all[i]
}

// source is one place a series' samples live: a block selection or a head
// column.
type source struct {
	open func(chunkenc.Iterator) chunkenc.Iterator
	// lo and hi bound the times of the samples open gives (inclusive).
	lo, hi int64
	// block is the block series of a block's source (nil for a head
	// column's): it appends samples to arrays without an iterator and
	// summarizes metric intervals (AppendSpan, AppendSummaries).
	block *block.Series
}

type seriesEntry struct {
	lset    labels.Labels
	sources []source
	seqs    []uint64 // per source: its write order; sources stay sorted by it
	covered []int64  // head partitions read from memory (see Querier)
	sure    bool     // a block's index says it has a sample in range
}

func newSeriesEntry(lset labels.Labels) *seriesEntry { return &seriesEntry{lset: lset} }

// add inserts a source after those of a lower or equal seq, so that on
// equal timestamps Merge keeps the first write.
func (e *seriesEntry) add(src source, seq uint64) {
	i := len(e.seqs)
	for i > 0 && e.seqs[i-1] > seq {
		i--
	}
	e.sources = slices.Insert(e.sources, i, src)
	e.seqs = slices.Insert(e.seqs, i, seq)
}

type noReadAheadKey struct{}

// WithoutReadAhead marks ctx so that the Selects made with it do not
// decode their series ahead on another goroutine (prefetch.go): the
// caller reads the series on several goroutines itself, each through the
// series' plain iterator (internal/queryeval).
func WithoutReadAhead(ctx context.Context) context.Context {
	return context.WithValue(ctx, noReadAheadKey{}, true)
}

type mayBeEmptyKey struct{}

// WithEmptySeries marks ctx so that the Selects made with it may return
// series without a sample in range (whose data would otherwise be read to
// tell): for a caller that reads every series anyway and ignores those
// without samples (internal/queryeval's rollups).
func WithEmptySeries(ctx context.Context) context.Context {
	return context.WithValue(ctx, mayBeEmptyKey{}, true)
}

func (q *Querier) Select(ctx context.Context, sortSeries bool, hints *storage.SelectHints, ms ...*labels.Matcher) storage.SeriesSet {
	mint, maxt := q.mint, q.maxt
	if hints != nil {
		mint, maxt = max(mint, hints.Start), min(maxt, hints.End)
	}
	var entries seriesTable[seriesEntry]
	snap, err := q.snapshot(ctx, mint, maxt, ms...)
	if err != nil {
		return storage.ErrSeriesSet(err)
	}
	inBlock := q.db.hotInBlocks(snap.blocks)
	for _, hs := range snap.heads {
		for i := range hs.series {
			e := entries.get(hs.series[i].Labels, newSeriesEntry)
			if hs.seq == 0 {
				e.covered = hs.series[i].Covered
			}
			for _, c := range hs.series[i].Columns {
				if hs.seq == 0 && c.Flushed && inBlock[c.Partition] {
					continue // a compacted block read below holds these rows
				}
				lo, hi := c.MinT, c.MaxT
				for _, x := range c.Extra {
					lo, hi = min(lo, x.T), max(hi, x.T)
				}
				e.add(source{open: func(it chunkenc.Iterator) chunkenc.Iterator {
					return seriesiter.NewIterator(it, c, c.Extra, mint, maxt)
				}, lo: max(lo, mint), hi: min(hi, maxt)}, hs.seq)
			}
		}
	}
	h := q.db.head
	for _, bs := range snap.blocks {
		bm := bs.b.Meta()
		pid := h.PartitionOf(bm.MinTime)
		flushedFrom := q.db.headFlushOf(pid) == bm.ULID
		for i := range bs.sel.Series {
			s := &bs.sel.Series[i]
			e := entries.get(s.Labels, newSeriesEntry)
			if flushedFrom && slices.Contains(e.covered, pid) {
				q.db.hotReads.Add(1)
				continue // read from the head's memory
			}
			e.add(source{open: s.Iterator, lo: max(bm.MinTime, mint), hi: min(bm.MaxTime-1, maxt), block: s}, bm.Seq)
			e.sure = e.sure || s.SurelyHasSample()
		}
	}
	all := entries.all
	if hints != nil && hints.ShardCount > 0 {
		all = slices.DeleteFunc(all, func(e *seriesEntry) bool {
			return labels.StableHash(e.lset)%hints.ShardCount != hints.ShardIndex
		})
	}
	// A series is returned only if it has a sample in range: a group
	// partition overlapping the range does not mean this slot has one.
	// Where a block's index tells it (and nothing is deleted), its data
	// are not read for this; nor for a caller that asked for empty series
	// too (WithEmptySeries).
	out := make([]storage.Series, 0, len(all))
	ip := checkIters.Get().(*chunkenc.Iterator)
	defer checkIters.Put(ip)
	it := *ip
	defer func() { *ip = releaseIterator(it) }()
	mayBeEmpty := ctx.Value(mayBeEmptyKey{}) != nil
	for _, e := range all {
		s := &series{lset: e.lset, sources: e.sources, deleted: q.db.deletedIntervals(e.lset)}
		if err := ctx.Err(); err != nil {
			return storage.ErrSeriesSet(err)
		}
		if mayBeEmpty || (e.sure && len(s.deleted) == 0) {
			out = append(out, s)
			continue
		}
		it = s.rawIterator(it)
		if it.Next() == chunkenc.ValNone {
			if err := it.Err(); err != nil {
				return storage.ErrSeriesSet(err)
			}
			continue
		}
		out = append(out, s)
	}
	{ // always sorted, whatever sortSeries says: cheap next to decoding, and deterministic
		slices.SortFunc(out, func(a, b storage.Series) int { return labels.Compare(a.Labels(), b.Labels()) })
	}
	if hints != nil && hints.Limit > 0 && len(out) > hints.Limit {
		out = out[:hints.Limit]
	}
	if usePrefetch(len(out), mint, maxt) && (hints == nil || hints.Func != "series") && ctx.Value(noReadAheadKey{}) == nil {
		ss := make([]*series, len(out))
		for i, s := range out {
			ss[i] = s.(*series)
		}
		pf := newPrefetcher(ss)
		for i, s := range ss {
			s.pf, s.idx = pf, i
		}
		q.mu.Lock()
		q.prefetch = append(q.prefetch, pf)
		q.mu.Unlock()
	}
	return &seriesSet{series: out, i: -1}
}

// checkIters pools the iterators Select uses to check that a series has a
// sample in range, which every query would otherwise allocate.
var checkIters = sync.Pool{New: func() any { return new(chunkenc.Iterator) }}

// releaseIterator keeps it for reuse if it is a plain tuple iterator,
// cleared so the pool holds no head snapshot.
func releaseIterator(it chunkenc.Iterator) chunkenc.Iterator {
	if si, ok := it.(*seriesiter.Iterator); ok {
		return seriesiter.NewIterator(si, nil, nil, 0, 0)
	}
	return nil
}

type series struct {
	lset    labels.Labels
	sources []source
	deleted []Interval  // tombstones
	pf      *prefetcher // reads the series ahead, if not nil
	idx     int         // the series' index in pf
}

func (s *series) Labels() labels.Labels { return s.lset }

// Iterator returns an iterator over the series' samples: the prefetched
// batches, or else its sources merged.
func (s *series) Iterator(it chunkenc.Iterator) chunkenc.Iterator {
	if s.pf != nil {
		if b := s.pf.take(s.idx); b != nil {
			bi, ok := it.(*batchIterator)
			if !ok {
				bi = &batchIterator{}
			}
			bi.reset(s.pf, s, s.idx, b)
			return bi
		}
	}
	return s.rawIterator(it)
}

// rawIterator merges the series' sources, without tombstoned samples.
func (s *series) rawIterator(it chunkenc.Iterator) chunkenc.Iterator {
	var out chunkenc.Iterator
	if len(s.sources) == 1 {
		if d, ok := it.(*deletedIterator); ok {
			it = d.Iterator
		}
		out = s.sources[0].open(it)
	} else {
		its := make([]chunkenc.Iterator, len(s.sources))
		for i, src := range s.sources {
			its[i] = src.open(nil)
		}
		out = seriesiter.Merge(its...)
	}
	if len(s.deleted) > 0 {
		return &deletedIterator{Iterator: out, ivs: s.deleted}
	}
	return out
}

// AppendSpan appends the series' samples in [mint, maxt] and in the
// Select's range to ts and vs, as its Iterator would give them (and, from
// a head column, possibly more of that column's samples: the caller keeps
// those it wants), for a caller that reads them all (internal/queryeval's
// rollups): when no sample is deleted and its sources do not overlap in
// time, they are appended one after the other, blocks' whole chunks at a
// time (block.Series.AppendRange) and the head's columns through their
// iterators, with no merge, and sources outside [mint, maxt] are not
// read. ok is false when that does not hold (the caller reads the
// Iterator instead), when the series is prefetched, and when no source is
// a block's (its Iterator then costs no more, and reuses the caller's
// iterator).
func (s *series) AppendSpan(ts []int64, vs []float64, mint, maxt int64) (_ []int64, _ []float64, ok bool, err error) {
	var buf [8]*source
	srcs, blocks := s.ordered(buf[:0])
	if srcs == nil || !blocks {
		return ts, vs, false, nil
	}
	for _, src := range srcs {
		if src.hi < mint || src.lo > maxt {
			continue
		}
		if src.block != nil {
			if ts, vs, err = src.block.AppendRange(ts, vs, mint, maxt); err != nil {
				return ts, vs, true, err
			}
			continue
		}
		it := src.open(nil)
		if b, ok := it.(bulkIterator); ok {
			for more := true; more; {
				ts, vs, more = b.AppendSamples(ts, vs, math.MaxInt)
			}
		} else {
			for it.Next() == chunkenc.ValFloat {
				t, v := it.At()
				ts, vs = append(ts, t), append(vs, v)
			}
		}
		if err := it.Err(); err != nil {
			return ts, vs, true, err
		}
	}
	return ts, vs, true, nil
}

// ordered appends the series' sources to dst in time order, and tells
// whether one is a block's; nil when they cannot be read one after the
// other: the series is prefetched, has deleted samples, or two sources
// overlap in time.
func (s *series) ordered(dst []*source) (_ []*source, blocks bool) {
	if s.pf != nil || len(s.deleted) > 0 {
		return nil, false
	}
	for i := range s.sources {
		dst = append(dst, &s.sources[i])
		blocks = blocks || s.sources[i].block != nil
	}
	slices.SortFunc(dst, func(a, b *source) int { return cmp.Compare(a.lo, b.lo) })
	for i := 1; i < len(dst); i++ {
		if dst[i].lo <= dst[i-1].hi {
			return nil, false
		}
	}
	return dst, blocks
}

// AppendSummaries appends to dst what the series' blocks tell, without
// decoding values, of its metric intervals of iv ms k0 … k1
// (block.Series.AppendSummaries), in interval order: only intervals that
// lie wholly in one block and that no other source of the series reaches
// into, so that a summary is of every sample of the series in its
// interval. ok is false when the series is prefetched or has deleted
// samples.
func (s *series) AppendSummaries(dst []block.IntervalSummary, iv, k0, k1 int64) (_ []block.IntervalSummary, ok bool, err error) {
	if s.pf != nil || len(s.deleted) > 0 {
		return dst, false, nil
	}
	// Where each source's samples lie: a block's, where its series'
	// groups have rows, not its whole range.
	var buf [8][2]int64
	spans := buf[:0]
	for i := range s.sources {
		o := &s.sources[i]
		lo, hi := o.lo, o.hi
		if o.block != nil {
			bmin, bmax := o.block.Span()
			lo, hi = max(lo, bmin), min(hi, bmax)
		}
		spans = append(spans, [2]int64{lo, hi})
	}
	n0 := len(dst)
	for i := range s.sources {
		src := &s.sources[i]
		if src.block == nil {
			continue
		}
		n := len(dst)
		if dst, err = src.block.AppendSummaries(dst, iv, k0, k1); err != nil {
			return dst[:n], true, err
		}
		keep := dst[:n]
		for _, sm := range dst[n:] {
			lo, hi := sm.Metrics.Interval*iv, sm.Metrics.Interval*iv+iv-1
			alone := true
			for j, sp := range spans {
				if j != i && sp[0] <= hi && sp[1] >= lo && sp[0] <= sp[1] {
					alone = false
					break
				}
			}
			if alone {
				keep = append(keep, sm)
			}
		}
		dst = keep
	}
	slices.SortFunc(dst[n0:], func(a, b block.IntervalSummary) int { return cmp.Compare(a.Metrics.Interval, b.Metrics.Interval) })
	return dst, true, nil
}

type seriesSet struct {
	series []storage.Series
	i      int
}

func (s *seriesSet) Next() bool                        { s.i++; return s.i < len(s.series) }
func (s *seriesSet) At() storage.Series                { return s.series[s.i] }
func (s *seriesSet) Err() error                        { return nil }
func (s *seriesSet) Warnings() annotations.Annotations { return nil }

// LabelValues returns the values of name over the head and the blocks in
// range, restricted to series matching ms.
func (q *Querier) LabelValues(ctx context.Context, name string, hints *storage.LabelHints, ms ...*labels.Matcher) ([]string, annotations.Annotations, error) {
	var out []string
	for _, h := range q.heads() {
		vs, err := index.LabelValues(h.Index(), name, ms...)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, vs...)
	}
	bs, err := q.blocksNow(ctx) // after the head: see Querier
	if err != nil {
		return nil, nil, err
	}
	for _, b := range bs {
		vs, err := index.LabelValues(b.Index(), name, ms...)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, vs...)
	}
	return limit(sortUnique(out), hints), nil, nil
}

// LabelNames returns the label names over the head and blocks in range.
func (q *Querier) LabelNames(ctx context.Context, hints *storage.LabelHints, ms ...*labels.Matcher) ([]string, annotations.Annotations, error) {
	var out []string
	for _, h := range q.heads() {
		ns, err := index.LabelNames(h.Index(), ms...)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, ns...)
	}
	bs, err := q.blocksNow(ctx)
	if err != nil {
		return nil, nil, err
	}
	for _, b := range bs {
		ns, err := index.LabelNames(b.Index(), ms...)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, ns...)
	}
	return limit(sortUnique(out), hints), nil, nil
}

// heads returns the main head and the backfill generations' heads that
// overlap the querier's range.
func (q *Querier) heads() []*head.Head {
	var out []*head.Head
	overlaps := func(h *head.Head) bool {
		return h.MaxTime() != math.MinInt64 && h.MinTime() <= q.maxt && h.MaxTime() >= q.mint
	}
	if overlaps(q.db.head) {
		out = append(out, q.db.head)
	}
	for _, g := range q.db.generations() {
		if overlaps(g.head) {
			out = append(out, g.head)
		}
	}
	return out
}

// hotInBlocks returns the flushed head partitions whose rows one of bs (a
// compaction output holding their flush block) holds: their hot columns
// would only repeat what that block gives.
func (db *DB) hotInBlocks(bs []blockSel) map[int64]bool {
	db.mu.RLock()
	defer db.mu.RUnlock()
	if len(db.compactedHot) == 0 {
		return nil
	}
	read := make(map[string]bool, len(bs))
	for _, b := range bs {
		read[b.b.Meta().ULID] = true
	}
	var out map[int64]bool
	for pid, id := range db.compactedHot {
		if read[id] {
			if out == nil {
				out = map[int64]bool{}
			}
			out[pid] = true
		}
	}
	return out
}

// headFlushOf returns the ULID of the block head partition pid was flushed
// into by this process ("" if none).
func (db *DB) headFlushOf(pid int64) string {
	db.mu.RLock()
	defer db.mu.RUnlock()
	return db.headBlocks[pid]
}

func sortUnique(s []string) []string {
	slices.Sort(s)
	return slices.Compact(s)
}

func limit(s []string, hints *storage.LabelHints) []string {
	if hints != nil && hints.Limit > 0 && len(s) > hints.Limit {
		return s[:hints.Limit]
	}
	return s
}

var _ head.WAL = walLogger{}
