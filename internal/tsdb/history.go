package tsdb

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/aerie-db/aerie/internal/block"
	"github.com/aerie-db/aerie/internal/head"
	"github.com/aerie-db/aerie/internal/mathx"
)

// History runs: one series' history, sorted, straight into blocks.
//
// A bulk load of history (a sensor upload, aerie import) would otherwise
// go sample by sample through an appender, the backfill's WAL and a
// generation's head, and reach blocks only at the generation's flush: it
// would be encoded three times (WAL record, head tuples, block) for one
// copy kept. A run of one series whose samples are strictly increasing in
// time needs none of that: a RunWriter encodes it into blocks as it reads
// it (an extent per head partition, a block per backfill partition shared
// by the writer's series, bounded to the head partitions they cover, as a
// generation's flush writes them); Commit fsyncs the blocks, adds them to
// the queryable set and only then returns. Nothing is acknowledged that
// is not in a durable block. A crash before Commit returns leaves
// temporary directories, deleted at open, and perhaps some finished
// blocks of the writer, which hold only samples given to it.
//
// First write wins (doc.go, invariant 6): a run's blocks take a backfill
// generation number of their own (Meta.Seq and Meta.Backfill), drawn
// after freezing the active generation, so everything written before the
// run has a lower number and keeps its samples where the run has others,
// and every generation opened after it a higher one. No WAL directory
// carries that number, so the blocks are never taken for an unfinished
// flush at open.

// ErrRunOrder is returned for a run whose samples are not strictly
// increasing in time.
var ErrRunOrder = errors.New("history run: samples not strictly increasing in time")

// ErrRunBound is returned for a run sample at or after RunBound.
var ErrRunBound = errors.New("history run: sample not older than the head's partitions")

// RunBound returns the time before which WriteRun takes samples
// (math.MinInt64: none, as with the backfill off): the start of the head
// partition holding the head's AcceptFloor, so the head never later takes
// a sample of a run's range (it would win as the earlier write, seq 0),
// and a partition is either the runs' or the head's and the backfill's,
// so no metric interval has sources of both kinds.
//
// An empty head with no floor (a new data directory, or every partition
// flushed and nothing after) would take anything: RunBound first gives it
// a floor, the start of the head partition before the clock's, as
// Prometheus' empty head takes nothing older than its blocks; a sample
// older than that then goes to the backfill instead, and a load of
// history into a new data directory goes to blocks rather than into a
// head that live data would then have to move past. At open, an empty
// head's floor is the end of the newest block (Open), so it holds over a
// restart.
func (db *DB) RunBound() int64 {
	if !db.backfillOn() {
		return math.MinInt64
	}
	pr := db.opts.PartitionRange
	if db.head.MaxTime() == math.MinInt64 {
		db.head.SetMinValidTime(mathx.FloorDiv(time.Now().UnixMilli(), pr)*pr - pr)
	}
	b := db.head.AcceptFloor()
	if b == math.MinInt64 {
		return math.MinInt64
	}
	return mathx.FloorDiv(b, pr) * pr
}

// beginRun returns the generation number of a new run, freezing the
// active generation first (see above), or errClosed.
func (db *DB) beginRun() (uint64, error) {
	db.bf.mu.Lock()
	defer db.bf.mu.Unlock()
	if db.bf.closing || db.bf.cond == nil {
		return 0, errClosed
	}
	if g := db.bf.active; g != nil {
		db.freezeLocked(g)
	}
	n := db.bf.next
	db.bf.next++
	db.bf.runs++
	return n, nil
}

// endRun ends a run begun by beginRun; Close waits for every run to end.
func (db *DB) endRun() {
	db.bf.mu.Lock()
	defer db.bf.mu.Unlock()
	db.bf.runs--
	db.bf.cond.Broadcast()
}

// WriteRun stores one series' samples, given by next in strictly
// increasing time order, through a RunWriter, and returns how many it
// stored: all of them, or none with an error.
func (db *DB) WriteRun(ctx context.Context, lset labels.Labels, next func() (t int64, v float64, ok bool)) (int64, error) {
	rw, err := db.NewRunWriter(ctx)
	if err != nil {
		return 0, err
	}
	if err := rw.Series(lset); err != nil {
		rw.Abort()
		return 0, err
	}
	for {
		t, v, ok := next()
		if !ok {
			break
		}
		if err := rw.Add(t, v); err != nil {
			rw.Abort()
			return 0, err
		}
	}
	return rw.Commit()
}

// maxRunWindows bounds the blocks a RunWriter writes at once.
const maxRunWindows = 8

// RunWriter writes history runs: series after series (each once), each
// one's samples strictly increasing in time, every one before RunBound
// (as it was when the writer was made) and inside the retention, straight
// into blocks. Commit makes them durable and queryable, all at once; Abort
// (or any error, after which only Abort may be called) removes what was
// written. The series of one backfill partition share its block, so a
// load of many small series makes few blocks: a writer keeps up to
// maxRunWindows blocks open, and finishes the least recently written one
// beyond that (its partition may then get another block, which
// compaction merges).
//
// A crash before Commit returns may leave some of the finished blocks (as
// a crash in a backfill load leaves its committed batches): they hold
// only samples given to the writer. Close waits for writers in flight;
// every NewRunWriter must end in Commit or Abort. Not safe for concurrent
// use.
type RunWriter struct {
	db    *DB
	ctx   context.Context
	opts  block.WriterOptions
	bound int64

	open  []*runBlock     // blocks being written, least recently written first
	done  []*block.Reader // finished blocks, not yet queryable
	seen  map[uint64]bool // series given, by labels hash (a collision refuses a series, never merges two)
	late  []LateWrite     // per series, for the late observer
	lset  labels.Labels   // the current series
	ts    []int64         // its samples of one head partition not yet in a block
	vs    []float64
	pres  []bool
	n     int64 // samples added
	smin  int64 // the current series' first time, last one in a block
	smax  int64
	last  int64 // and last one added
	mint  int64 // every series' least and greatest time
	maxt  int64
	err   error // sticky
	ended bool  // Commit or Abort ran
}

// runBlock is a block a RunWriter is writing: one backfill partition's.
type runBlock struct {
	w          *block.Writer
	win        int64 // its backfill partition
	mint, maxt int64 // its groups' least and greatest times
}

// NewRunWriter starts history runs; its blocks take a generation number of
// their own (see above), or it fails with errClosed.
func (db *DB) NewRunWriter(ctx context.Context) (*RunWriter, error) {
	bound := db.RunBound()
	seq, err := db.beginRun()
	if err != nil {
		return nil, err
	}
	return &RunWriter{db: db, ctx: ctx, bound: bound, seen: map[uint64]bool{},
		opts: block.WriterOptions{Seq: seq, Backfill: seq, TupleSize: db.blockTupleSize(), MetricInterval: db.opts.MetricInterval},
		mint: math.MaxInt64, maxt: math.MinInt64}, nil
}

// Bound is the time before which the writer takes samples.
func (r *RunWriter) Bound() int64 { return r.bound }

// Has reports whether series lset was given to Series.
func (r *RunWriter) Has(lset labels.Labels) bool { return r.seen[lset.Hash()] }

// Series starts the next series; its samples follow with Add.
func (r *RunWriter) Series(lset labels.Labels) error {
	if r.err != nil {
		return r.err
	}
	if err := r.endSeries(); err != nil {
		return r.fail(err)
	}
	if err := head.ValidateLabels(lset); err != nil {
		return r.fail(err)
	}
	h := lset.Hash()
	if r.seen[h] {
		return r.fail(fmt.Errorf("history run: series %s given twice", lset))
	}
	r.seen[h] = true
	r.lset = lset
	return nil
}

// Add adds a sample of the current series.
func (r *RunWriter) Add(t int64, v float64) error {
	if r.err != nil {
		return r.err
	}
	switch {
	case r.lset.IsEmpty():
		return r.fail(errors.New("history run: a sample before its series"))
	case t <= r.last:
		return r.fail(fmt.Errorf("%w: %d after %d", ErrRunOrder, t, r.last))
	case t >= r.bound:
		return r.fail(fmt.Errorf("%w: %d, bound %d", ErrRunBound, t, r.bound))
	}
	if r.smin == math.MaxInt64 {
		if err := r.db.checkRetention(t); err != nil {
			return r.fail(err)
		}
		r.smin = t
	}
	if r.n%(1<<16) == 0 {
		if err := r.ctx.Err(); err != nil {
			return r.fail(err)
		}
	}
	pr := r.db.opts.PartitionRange
	if len(r.ts) > 0 && mathx.FloorDiv(t, pr) != mathx.FloorDiv(r.ts[0], pr) {
		if err := r.addExtent(); err != nil {
			return r.fail(err)
		}
	}
	r.ts, r.vs = append(r.ts, t), append(r.vs, v)
	r.last = t
	r.n++
	return nil
}

// Commit finishes every block, makes them queryable and tells the late
// observer and Options.OnBackfill; it returns the samples stored.
func (r *RunWriter) Commit() (int64, error) {
	if r.err != nil {
		r.Abort()
		return 0, r.err
	}
	err := r.endSeries()
	for err == nil && len(r.open) > 0 {
		err = r.finishBlock(0)
	}
	if err != nil {
		r.fail(err)
		r.Abort()
		return 0, err
	}
	db := r.db
	r.ended = true
	defer db.endRun()
	if r.n == 0 {
		return 0, nil
	}
	db.addBlocks(r.done, nil)
	db.bf.samples.Add(r.n)
	db.bf.runSamples.Add(r.n)
	if db.opts.OnBackfill != nil {
		db.opts.OnBackfill(r.mint, r.maxt)
	}
	if o := db.lateObserver(); o != nil && r.mint < o.Horizon() {
		o.Written(r.late)
	}
	db.kickCompaction()
	return r.n, nil
}

// Abort removes what the writer wrote.
func (r *RunWriter) Abort() {
	if r.ended {
		return
	}
	r.ended = true
	for _, b := range r.open {
		b.w.Abort()
	}
	r.open = nil
	for _, b := range r.done {
		b.Close()
		removeDir(b.Dir())
	}
	r.done = nil
	r.db.endRun()
}

func (r *RunWriter) fail(err error) error {
	if r.err == nil {
		r.err = err
	}
	return r.err
}

// endSeries writes what is buffered of the current series and notes its
// range.
func (r *RunWriter) endSeries() error {
	if r.lset.IsEmpty() {
		r.smin, r.smax, r.last = math.MaxInt64, math.MinInt64, math.MinInt64
		return nil
	}
	if len(r.ts) > 0 {
		if err := r.addExtent(); err != nil {
			return err
		}
	}
	if r.smax != math.MinInt64 {
		r.late = append(r.late, NewLateWrite(r.lset, r.smin, r.smax))
		r.mint, r.maxt = min(r.mint, r.smin), max(r.maxt, r.smax)
	}
	r.lset = labels.EmptyLabels()
	r.smin, r.smax, r.last = math.MaxInt64, math.MinInt64, math.MinInt64
	return nil
}

// addExtent writes the buffered samples (one head partition's) as a group
// extent of their backfill partition's block.
func (r *RunWriter) addExtent() error {
	b, err := r.blockFor(mathx.FloorDiv(r.ts[0], r.db.opts.BackfillPartitionRange))
	if err != nil {
		return err
	}
	for len(r.pres) < len(r.ts) {
		r.pres = append(r.pres, true)
	}
	if err := b.w.AddGroup(r.ts, []block.Column{{Labels: r.lset, Values: r.vs, Present: r.pres[:len(r.ts)]}}); err != nil {
		return err
	}
	b.mint, b.maxt = min(b.mint, r.ts[0]), max(b.maxt, r.ts[len(r.ts)-1])
	r.smax = r.ts[len(r.ts)-1]
	r.ts, r.vs = r.ts[:0], r.vs[:0]
	return nil
}

// blockFor returns the open block of backfill partition win, opening it
// (and finishing the least recently written beyond maxRunWindows).
func (r *RunWriter) blockFor(win int64) (*runBlock, error) {
	for i, b := range r.open {
		if b.win == win {
			copy(r.open[i:], r.open[i+1:])
			r.open[len(r.open)-1] = b
			return b, nil
		}
	}
	if len(r.open) == maxRunWindows {
		if err := r.finishBlock(0); err != nil {
			return nil, err
		}
	}
	wr := r.db.opts.BackfillPartitionRange
	w, err := block.NewWriter(r.db.dir+"/"+blocksDirname, win*wr, (win+1)*wr, r.db.dict, r.opts)
	if err != nil {
		return nil, err
	}
	b := &runBlock{w: w, win: win, mint: math.MaxInt64, maxt: math.MinInt64}
	r.open = append(r.open, b)
	return b, nil
}

// finishBlock finishes open block i, its range narrowed to the head
// partitions its samples are in, as a generation's flush writes them.
func (r *RunWriter) finishBlock(i int) error {
	b := r.open[i]
	r.open = append(r.open[:i], r.open[i+1:]...)
	pr := r.db.opts.PartitionRange
	if err := b.w.SetRange(mathx.FloorDiv(b.mint, pr)*pr, mathx.FloorDiv(b.maxt, pr)*pr+pr); err != nil {
		b.w.Abort()
		return err
	}
	dir, _, err := b.w.Finish()
	if err != nil {
		return err
	}
	rd, err := block.Open(dir, r.db.dict, block.ReaderOptions{})
	if err != nil {
		removeDir(dir)
		return fmt.Errorf("open new block %s: %w", dir, err)
	}
	r.done = append(r.done, rd)
	return nil
}
