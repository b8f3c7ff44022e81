package tsdb

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"

	"github.com/aerie-db/aerie/internal/block"
	"github.com/aerie-db/aerie/internal/compact"
	"github.com/aerie-db/aerie/internal/fileutil"
	"github.com/aerie-db/aerie/internal/head"
	"github.com/aerie-db/aerie/internal/mathx"
	"github.com/aerie-db/aerie/internal/memory"
	"github.com/aerie-db/aerie/internal/model"
	"github.com/aerie-db/aerie/internal/wal"
)

// Writes of any age (backfill).
//
// The head takes what Prometheus' head takes: in-order samples above its
// minimum valid time and out-of-order ones inside ooo_window. A sample it
// refuses as too old goes, with Options.Backfill on (the default), to a
// backfill generation instead: a head of its own (head.Options.AnyAge,
// partitions of BackfillPartitionRange) with a WAL of its own under
// wal-backfill/<generation>. Rows there are Heracles group rows like the
// head's, durable (the generation's WAL, same sync mode) before the commit
// returns, and visible to queries at once (the querier reads every
// generation's head).
//
// A sample of a series the main head knows comes with the main head's
// ref; a generation maps those to its own refs (generation.refOf), so from
// a series' second commit into it on, its samples are appended by ref.
//
// A generation takes commits until it holds BackfillPartitions partitions
// (the memory manager's version window is 32), BackfillBytes of tuples, or
// has been idle for BackfillIdle. Then it is frozen: a new generation
// takes the commits, and the backfill loop writes each of the frozen
// generation's partitions as a block (meta seq = backfill = the
// generation's number), adds the blocks to the queryable set, unlinks the
// generation from queries, and deletes its WAL directory. At most
// maxFrozen generations wait for their flush; a commit that needs a new
// generation beyond that waits (back-pressure), so memory stays bounded
// whatever the age and amount of data.
//
// At open, blocks of a generation whose WAL directory still exists are an
// unfinished flush: they are deleted and the WAL is replayed into a frozen
// generation, flushed again.
//
// Duplicates: first write wins. A head (main or generation) rejects a
// different value at a timestamp it holds (duplicate_sample) and accepts
// the same value as a no-op. Across sources the querier and compaction
// keep the sample of the lowest seq: the head and its flushed blocks are
// seq 0, because a timestamp reaches the backfill only after it fell below
// the head's bounds, so the head's sample for it was written first;
// generations are numbered in the order they took writes.

// Rejections of samples outside the accepted time range. Both wrap
// storage.ErrOutOfBounds, so Prometheus' remote-write handler answers 400.
var (
	ErrTooOldForRetention = fmt.Errorf("too_old_for_retention: sample older than the retention period: %w", storage.ErrOutOfBounds)
	ErrTooFarInFuture     = fmt.Errorf("too_far_in_future: sample further in the future than max_future: %w", storage.ErrOutOfBounds)
)

// Backfill defaults (see Options).
var (
	DefaultBackfillPartitionRange = int64(8 * 24 * 3600 * 1000)
	DefaultBackfillPartitions     = 24
	DefaultBackfillBytes          = int64(256 << 20)
)

const (
	// maxFrozen generations may wait for their flush before commits that
	// need a new generation wait.
	maxFrozen = 2
	// backfillMaxAge freezes a generation that keeps taking a trickle of
	// writes, so its rows reach blocks and its WAL is deleted.
	backfillMaxAge = time.Hour
	// maxChunkPartitions bounds the partitions one commit chunk reserves
	// in a generation, so a chunk always fits a fresh generation.
	maxChunkPartitions = 8
)

// DefaultBackfillIdle is how long a generation may go without a write
// before it is flushed.
var DefaultBackfillIdle = 10 * time.Second

// errClosed is returned to backfill commits once the DB is closing.
var errClosed = errors.New("tsdb: closed")

// generation is one backfill head with its WAL.
type generation struct {
	n    uint64
	dir  string
	wal  *wal.WAL
	head *head.Head

	// commitMu is held shared by commits into the generation, and taken
	// once exclusively by its flush after it is frozen: a barrier after
	// which no commit is in flight and none starts.
	commitMu sync.RWMutex
	frozen   atomic.Bool

	partsMu sync.Mutex         // guards parts
	parts   map[int64]struct{} // partitions reserved by commits

	lastWrite  atomic.Int64 // unix nanoseconds of the last commit
	lastSizeAt atomic.Int64 // unix nanoseconds of the last size check
	opened     time.Time

	// refOf maps the main head's refs to this generation's, so a sample
	// whose series the main head knows is appended by ref, not by its
	// labels (hashed and looked up otherwise). Guarded by refMu.
	refMu sync.Mutex
	refOf map[model.SeriesRef]model.SeriesRef
}

// genRefs sets the generation's ref of every sample of ss whose main ref
// it knows.
func (g *generation) genRefs(ss []bfSample) {
	g.refMu.Lock()
	defer g.refMu.Unlock()
	for i := range ss {
		if ss[i].ref != 0 {
			ss[i].gref = g.refOf[ss[i].ref]
		}
	}
}

// learnRefs records pairs of (main ref, generation ref).
func (g *generation) learnRefs(pairs [][2]model.SeriesRef) {
	if len(pairs) == 0 {
		return
	}
	g.refMu.Lock()
	defer g.refMu.Unlock()
	if g.refOf == nil {
		g.refOf = map[model.SeriesRef]model.SeriesRef{}
	}
	for _, p := range pairs {
		g.refOf[p[0]] = p[1]
	}
}

// reserve records that a commit will write partitions pids; it fails if
// that would take the generation beyond limit partitions (a generation
// with none always takes the chunk).
func (g *generation) reserve(pids []int64, limit int) bool {
	g.partsMu.Lock()
	defer g.partsMu.Unlock()
	n := 0
	for _, p := range pids {
		if _, ok := g.parts[p]; !ok {
			n++
		}
	}
	if len(g.parts) > 0 && len(g.parts)+n > limit {
		return false
	}
	for _, p := range pids {
		g.parts[p] = struct{}{}
	}
	return true
}

// backfill is the engine's set of generations.
type backfill struct {
	mu      sync.Mutex // guards the following
	cond    *sync.Cond // broadcast when a frozen generation is flushed or the DB closes
	active  *generation
	frozen  []*generation // oldest first
	next    uint64
	closing bool
	runs    int // history runs in flight (history.go); Close waits for none

	kick    chan struct{} // wakes the loop
	flushed atomic.Int64  // generations flushed
	samples atomic.Int64  // samples stored through the backfill (generations and runs)
	// runSamples are those of history runs (history.go).
	runSamples atomic.Int64
}

// backfillOpts are the backfill options with defaults filled in.
func (o *Options) fillBackfill() {
	if o.BackfillPartitionRange <= 0 {
		// The largest compaction level range up to 8 days (and the block
		// range limit): a generation's blocks are then whole level windows,
		// few and large, whatever order the history arrives in.
		base := o.PartitionRange
		if base <= 0 {
			base = head.DefaultPartitionRange
		}
		o.BackfillPartitionRange = base
		for _, r := range compact.Ranges(base, min(DefaultBackfillPartitionRange, o.blockRangeLimit(base))) {
			o.BackfillPartitionRange = r
		}
	}
	if o.BackfillPartitions <= 0 || o.BackfillPartitions > 24 {
		o.BackfillPartitions = DefaultBackfillPartitions
	}
	if o.BackfillBytes <= 0 {
		o.BackfillBytes = DefaultBackfillBytes
	}
	if o.BackfillIdle <= 0 {
		o.BackfillIdle = DefaultBackfillIdle
	}
}

func (db *DB) backfillOn() bool { return !db.opts.NoBackfill }

// timeBounds checks a sample's time against max_future (wall clock) and
// the retention (measured from the newest data, as retention deletes).
// CheckTime returns the error Append would return for a sample at t on
// account of its time alone (ErrTooFarInFuture, ErrTooOldForRetention), so
// a bulk upload can refuse a bad point before it stores any.
func (db *DB) CheckTime(t int64) error {
	if err := db.checkFuture(t); err != nil {
		return err
	}
	return db.checkRetention(t)
}

// TimeBounds returns the least and greatest sample times CheckTime
// accepts now: a bulk load checks a time against them and calls CheckTime
// (for its error, or with bounds that moved) only for a time outside.
func (db *DB) TimeBounds() (mint, maxt int64) {
	mint, maxt = math.MinInt64, db.futureBound()
	if db.opts.Retention > 0 {
		if newest := max(db.head.MaxTime(), db.newestBlockSample.Load()); newest != math.MinInt64 {
			mint = newest - db.opts.Retention + 1
		}
	}
	return mint, maxt
}

func (db *DB) checkFuture(t int64) error {
	if t > db.futureBound() {
		return ErrTooFarInFuture
	}
	return nil
}

// futureBound is the latest sample time max_future accepts now
// (math.MaxInt64 without max_future).
func (db *DB) futureBound() int64 {
	if db.opts.MaxFuture <= 0 {
		return math.MaxInt64
	}
	return time.Now().UnixMilli() + db.opts.MaxFuture
}

func (db *DB) checkRetention(t int64) error {
	if db.opts.Retention <= 0 {
		return nil
	}
	// Per sample, so no lock: the head's max and the blocks' newest sample
	// bound the newest data (a generation only holds samples that fell
	// below the head's bounds; newestT, for retention, also asks them).
	if newest := max(db.head.MaxTime(), db.newestBlockSample.Load()); newest != math.MinInt64 && t <= newest-db.opts.Retention {
		return ErrTooOldForRetention
	}
	return nil
}

// newestT is the greatest sample time the engine holds.
func (db *DB) newestT() int64 {
	m := max(db.head.MaxTime(), db.newestBlockSample.Load())
	for _, g := range db.generations() {
		m = max(m, g.head.MaxTime())
	}
	return m
}

// backfillable reports whether a sample the head refused with err may go
// to the backfill instead.
func (db *DB) backfillable(err error) bool {
	return db.backfillOn() && (errors.Is(err, head.ErrOutOfBounds) || errors.Is(err, head.ErrTooOld))
}

func (db *DB) generationOptions() head.Options {
	ho := db.opts.headOptions()
	ho.PartitionRange = db.opts.BackfillPartitionRange
	ho.AnyAge = true
	// No limit: the generation's size is bounded by BackfillBytes, and
	// the main head's limit is for the main head.
	ho.Memory = memory.Options{PageSize: db.opts.Memory.PageSize, BlockSize: db.opts.Memory.BlockSize}
	return ho
}

// openGeneration opens (creating) generation n's WAL and replays it into a
// new head.
func (db *DB) openGeneration(n uint64) (*generation, error) {
	dir := filepath.Join(db.dir, backfillDirname, fmt.Sprintf("%020d", n))
	w, err := wal.Open(dir, wal.Options{
		SegmentSize: db.opts.WALSegmentSize, Sync: db.opts.WALSync, SyncInterval: db.opts.WALSyncInterval, Logger: db.log,
		OnFsync: db.opts.OnWALFsync,
	})
	if err != nil {
		return nil, fmt.Errorf("open backfill WAL %d: %w", n, err)
	}
	g := &generation{n: n, dir: dir, wal: w, parts: map[int64]struct{}{}, opened: time.Now()}
	g.head, err = head.New(db.generationOptions(), genLogger{w})
	if err != nil {
		w.Close()
		return nil, err
	}
	if err := replayInto(db, w, g.head); err != nil {
		w.Close()
		return nil, fmt.Errorf("backfill generation %d: %w", n, err)
	}
	for _, pid := range g.head.Partitions() {
		g.parts[pid] = struct{}{}
	}
	g.lastWrite.Store(time.Now().UnixNano())
	if err := fileutil.SyncDir(filepath.Dir(dir)); err != nil {
		w.Close()
		return nil, err
	}
	return g, nil
}

// genLogger adapts a generation's WAL to the head.
type genLogger struct{ w *wal.WAL }

func (l genLogger) Write(_ int64, recs ...[]byte) (uint64, error) { return l.w.Write(recs...) }

func (l genLogger) Wait(ticket uint64) error { return l.w.Wait(ticket) }

// openBackfill runs at open, after the blocks are open: it deletes the
// blocks of unfinished generation flushes and replays every generation
// left into a frozen generation, to be flushed by the loop.
func (db *DB) openBackfill() error {
	db.bf.cond = sync.NewCond(&db.bf.mu)
	db.bf.kick = make(chan struct{}, 1)
	bdir := filepath.Join(db.dir, backfillDirname)
	if err := os.MkdirAll(bdir, 0o755); err != nil {
		return err
	}
	ents, err := os.ReadDir(bdir)
	if err != nil {
		return err
	}
	var gens []uint64
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), block.TmpSuffix) {
			// A generation's WAL whose deletion a crash interrupted: its
			// rows are in blocks (see removeDir).
			if err := os.RemoveAll(filepath.Join(bdir, e.Name())); err != nil {
				return err
			}
			continue
		}
		n, err := strconv.ParseUint(e.Name(), 10, 64)
		if err != nil || !e.IsDir() {
			db.log.Warn("unexpected entry in backfill directory", "name", e.Name())
			continue
		}
		gens = append(gens, n)
	}
	slices.Sort(gens)
	next := uint64(1)
	db.mu.Lock()
	keep := db.blocks[:0]
	for _, b := range db.blocks {
		m := b.Meta()
		next = max(next, m.Seq+1, m.Backfill+1)
		if m.Backfill != 0 && slices.Contains(gens, m.Backfill) {
			b.Close()
			if err := removeDir(b.Dir()); err != nil {
				db.mu.Unlock()
				return fmt.Errorf("delete block %s of unfinished backfill flush: %w", m.ULID, err)
			}
			db.log.Info("deleted block of an unfinished backfill flush", "block", m.ULID, "generation", m.Backfill)
			continue
		}
		keep = append(keep, b)
	}
	db.blocks = keep
	db.mu.Unlock()
	for _, n := range gens {
		next = max(next, n+1)
		g, err := db.openGeneration(n)
		if err != nil {
			return err
		}
		if g.head.MaxTime() == math.MinInt64 {
			g.wal.Close()
			if err := removeDir(g.dir); err != nil {
				return err
			}
			continue
		}
		g.frozen.Store(true)
		db.bf.frozen = append(db.bf.frozen, g)
	}
	db.bf.next = next
	return nil
}

// generations returns the generations queries read, oldest first.
func (db *DB) generations() []*generation {
	if db.bf.cond == nil {
		return nil
	}
	db.bf.mu.Lock()
	defer db.bf.mu.Unlock()
	out := slices.Clone(db.bf.frozen)
	if db.bf.active != nil {
		out = append(out, db.bf.active)
	}
	return out
}

// acquireGeneration returns the active generation, with commitMu held
// shared and pids reserved in it, opening or rotating generations as
// needed. It waits while maxFrozen generations wait for their flush.
func (db *DB) acquireGeneration(pids []int64) (*generation, error) {
	db.bf.mu.Lock()
	defer db.bf.mu.Unlock()
	for {
		if db.bf.closing {
			return nil, errClosed
		}
		g := db.bf.active
		if g == nil {
			if len(db.bf.frozen) >= maxFrozen {
				db.bf.cond.Wait()
				continue
			}
			var err error
			if g, err = db.openGeneration(db.bf.next); err != nil {
				return nil, err
			}
			db.bf.next++
			db.bf.active = g
		}
		if !g.reserve(pids, db.opts.BackfillPartitions) {
			db.freezeLocked(g)
			continue
		}
		// g is active, so its flush cannot hold commitMu: this never blocks
		// long (see generation.commitMu).
		g.commitMu.RLock()
		return g, nil
	}
}

// freezeLocked stops g taking commits and queues it for its flush. Called
// with bf.mu held.
func (db *DB) freezeLocked(g *generation) {
	if g.frozen.Load() {
		return
	}
	g.frozen.Store(true)
	db.bf.frozen = append(db.bf.frozen, g)
	if db.bf.active == g {
		db.bf.active = nil
	}
	select {
	case db.bf.kick <- struct{}{}:
	default:
	}
}

// bfSample is a sample bound for the backfill.
type bfSample struct {
	l    labels.Labels   // empty when ref is set and the caller had no labels: the head's, read when needed
	ref  model.SeriesRef // the main head's ref of l, or 0
	gref model.SeriesRef // the generation's, set by commitBackfill
	t    int64
	v    float64
	pid  int64
}

// commitBackfill stores samples through the backfill generations without
// waiting for their WALs' fsyncs: it returns waits with a ticket appended
// for every generation commit, which the caller waits for (durable.wait)
// before it acknowledges the samples. A generation flushed or closed
// meanwhile fsyncs its WAL as it closes it, which ends those waits. It
// returns an *head.AppendError for samples the generations rejected
// (duplicates with another value).
func (db *DB) commitBackfill(ss []bfSample, waits []walTicket) ([]walTicket, error) {
	r := db.opts.BackfillPartitionRange
	for i := range ss {
		ss[i].pid = mathx.FloorDiv(ss[i].t, r)
	}
	sort.SliceStable(ss, func(i, j int) bool { return ss[i].pid < ss[j].pid })
	total := &head.AppendError{}
	var pids []int64
	var learned [][2]model.SeriesRef
	for len(ss) > 0 {
		// A chunk: the samples of at most maxChunkPartitions partitions.
		pids = pids[:0]
		n := 0
		for n < len(ss) {
			if len(pids) == 0 || pids[len(pids)-1] != ss[n].pid {
				if len(pids) == maxChunkPartitions {
					break
				}
				pids = append(pids, ss[n].pid)
			}
			n++
		}
		g, err := db.acquireGeneration(pids)
		if err != nil {
			return waits, err
		}
		app := g.head.Appender()
		mint, maxt := int64(math.MaxInt64), int64(math.MinInt64)
		g.genRefs(ss[:n])
		learned = learned[:0]
		for _, s := range ss[:n] {
			mint, maxt = min(mint, s.t), max(maxt, s.t)
			if s.gref != 0 && app.AppendRef(s.gref, s.t, s.v) == nil {
				continue
			}
			// Label errors are in the commit's AppendError.
			l := s.l
			if l.IsEmpty() {
				l, _ = db.head.SeriesLabels(s.ref)
			}
			if r, err := app.AppendLabels(l, s.t, s.v); err == nil && s.ref != 0 {
				learned = append(learned, [2]model.SeriesRef{s.ref, r})
			}
		}
		g.learnRefs(learned)
		ticket, err := app.CommitNoWait()
		if ticket != 0 {
			waits = append(waits, walTicket{g.head, ticket})
		}
		if db.opts.OnBackfill != nil && (err == nil || errors.As(err, new(*head.AppendError))) {
			db.opts.OnBackfill(mint, maxt)
		}
		g.lastWrite.Store(time.Now().UnixNano())
		g.commitMu.RUnlock()
		var ae *head.AppendError
		switch {
		case errors.As(err, &ae):
			total.Accepted += ae.Accepted
			total.Rejected += ae.Rejected
			for k, v := range ae.ByReason {
				if total.ByReason == nil {
					total.ByReason = map[string]int{}
				}
				total.ByReason[k] += v
			}
			total.Examples = append(total.Examples, ae.Examples...)
			db.bf.samples.Add(int64(ae.Accepted))
		case err != nil:
			return waits, err
		default:
			db.bf.samples.Add(int64(n))
			total.Accepted += n
		}
		db.checkGenerationSize(g)
		ss = ss[n:]
	}
	if total.Rejected > 0 {
		return waits, total
	}
	return waits, nil
}

// checkGenerationSize freezes g once its tuples exceed BackfillBytes,
// checking at most once a second (Head.Bytes walks every group).
func (db *DB) checkGenerationSize(g *generation) {
	now := time.Now().UnixNano()
	last := g.lastSizeAt.Load()
	if now-last < int64(time.Second) || !g.lastSizeAt.CompareAndSwap(last, now) {
		return
	}
	if g.head.Bytes() < db.opts.BackfillBytes {
		return
	}
	db.bf.mu.Lock()
	defer db.bf.mu.Unlock()
	if db.bf.active == g {
		db.freezeLocked(g)
	}
}

// backfillLoop freezes an idle generation and flushes frozen ones.
func (db *DB) backfillLoop() {
	defer db.wg.Done()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-db.stop:
			return
		case <-db.bf.kick:
		case <-t.C:
		}
		db.bf.mu.Lock()
		if g := db.bf.active; g != nil && (time.Since(time.Unix(0, g.lastWrite.Load())) >= db.opts.BackfillIdle ||
			time.Since(g.opened) >= backfillMaxAge) {
			db.freezeLocked(g) // idle, or a trickle that would keep its WAL forever
		}
		db.bf.mu.Unlock()
		if err := db.flushFrozen(); err != nil {
			db.log.Error("backfill flush", "err", err)
		}
	}
}

// flushFrozen flushes the frozen generations, oldest first.
func (db *DB) flushFrozen() error {
	for {
		db.bf.mu.Lock()
		if len(db.bf.frozen) == 0 || db.bf.closing {
			db.bf.mu.Unlock()
			return nil
		}
		g := db.bf.frozen[0]
		db.bf.mu.Unlock()
		if err := db.flushGeneration(g); err != nil {
			return err
		}
	}
}

// FlushBackfill freezes the active generation and flushes every frozen
// one into blocks (tools and tests; the loop does it in the background).
func (db *DB) FlushBackfill() error {
	db.bf.mu.Lock()
	if g := db.bf.active; g != nil {
		db.freezeLocked(g)
	}
	db.bf.mu.Unlock()
	return db.flushFrozen()
}

// flushGeneration writes a frozen generation's partitions as blocks, adds
// them, unlinks the generation from queries and deletes its WAL.
func (db *DB) flushGeneration(g *generation) error {
	db.flushMu.Lock()
	defer db.flushMu.Unlock()
	db.bf.mu.Lock()
	queued := slices.Contains(db.bf.frozen, g)
	db.bf.mu.Unlock()
	if !queued {
		return nil // flushed by another caller meanwhile
	}
	g.commitMu.Lock()
	g.commitMu.Unlock() // barrier: no commit in flight, none will start
	start := time.Now()
	var (
		bs      []*block.Reader
		samples int
	)
	abort := func(err error) error {
		for _, b := range bs {
			b.Close()
			removeDir(b.Dir())
		}
		return fmt.Errorf("flush backfill generation %d: %w", g.n, err)
	}
	r := db.opts.PartitionRange
	for _, pid := range g.head.Partitions() {
		// The block covers the head partitions (2 h) its samples are in,
		// inside the generation's partition (a level window): it overlaps
		// only what it must, so compaction merges it as soon as the head
		// has moved past it, and never across a level window's edge.
		pmin, pmax := g.head.PartitionBounds(pid)
		if lo, hi, ok := g.head.PartitionTimeRange(pid); ok {
			pmin, pmax = max(pmin, mathx.FloorDiv(lo, r)*r), min(pmax, (mathx.FloorDiv(hi, r)+1)*r)
		}
		b, err := db.writePartition(g.head, pid, pmin, pmax, block.WriterOptions{Seq: g.n, Backfill: g.n})
		if err != nil {
			return abort(err)
		}
		if b == nil {
			continue
		}
		samples += b.Meta().Stats.Samples
		bs = append(bs, b)
	}
	db.addBlocks(bs, nil)
	db.bf.mu.Lock()
	db.bf.frozen = slices.DeleteFunc(db.bf.frozen, func(x *generation) bool { return x == g })
	db.bf.cond.Broadcast()
	db.bf.mu.Unlock()
	// Readers that still hold the generation's snapshots keep its memory
	// alive (it is never recycled: the head is dropped whole).
	if err := g.wal.Close(); err != nil {
		db.log.Warn("close backfill WAL", "generation", g.n, "err", err)
	}
	if err := removeDir(g.dir); err != nil {
		return fmt.Errorf("delete backfill WAL %d: %w", g.n, err)
	}
	db.bf.flushed.Add(1)
	db.kickCompaction()
	db.log.Info("backfill generation flushed", "generation", g.n, "blocks", len(bs), "samples", samples, "took", time.Since(start))
	return nil
}

// closeBackfill stops commits into the backfill and closes the WALs of the
// generations left (replayed at the next open).
func (db *DB) closeBackfill() {
	if db.bf.cond == nil {
		return
	}
	db.bf.mu.Lock()
	db.bf.closing = true
	db.bf.cond.Broadcast()
	gens := slices.Clone(db.bf.frozen)
	if db.bf.active != nil {
		gens = append(gens, db.bf.active)
	}
	db.bf.mu.Unlock()
	for _, g := range gens {
		g.commitMu.Lock() // wait for commits in flight
		g.wal.Close()
		g.commitMu.Unlock()
	}
}

// BackfillStats are counters of the backfill path.
type BackfillStats struct {
	Generations int   // generations in memory (active and frozen)
	Flushed     int64 // generations flushed into blocks
	Samples     int64 // samples stored through the backfill
	RunSamples  int64 // of which by history runs, straight into blocks
}

// BackfillStats returns the backfill counters.
func (db *DB) BackfillStats() BackfillStats {
	return BackfillStats{Generations: len(db.generations()), Flushed: db.bf.flushed.Load(), Samples: db.bf.samples.Load(), RunSamples: db.bf.runSamples.Load()}
}

// removeDir deletes a directory (a block, a generation's WAL) so that a
// crash leaves it whole or renamed with block.TmpSuffix, which open
// deletes; never a part of it, which would read as a block without its
// meta.json or a WAL without its first segments: rename, fsync the parent,
// remove.
func removeDir(dir string) error {
	tmp := dir + block.TmpSuffix
	if err := os.Rename(dir, tmp); err != nil {
		return err
	}
	if err := fileutil.SyncDir(filepath.Dir(dir)); err != nil {
		return err
	}
	return os.RemoveAll(tmp)
}

// NewestTime returns the newest sample time in the engine: the head, the
// blocks and the backfill generations (math.MinInt64 when empty). It
// moves on even while the head spills samples to the backfill.
func (db *DB) NewestTime() int64 { return db.newestT() }
