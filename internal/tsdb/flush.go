package tsdb

import (
	"fmt"
	"math"
	"runtime"
	"sort"
	"time"

	"github.com/aerie-db/aerie/internal/block"
	"github.com/aerie-db/aerie/internal/head"
	"github.com/aerie-db/aerie/internal/wal"
)

// Compact flushes every head partition that can no longer receive samples,
// deletes blocks past retention, truncates the WAL and compacts blocks.
// The background loops do the same; tools and tests call it.
func (db *DB) Compact() error {
	if err := db.flush(false); err != nil {
		return err
	}
	return db.CompactBlocks()
}

// FlushHead flushes every head partition, closed or not, into blocks. Later
// appends below the newest block's end are out of bounds. Used at shutdown
// by tools and by tests that exercise the block path.
func (db *DB) FlushHead() error {
	return db.flush(true)
}

func (db *DB) flush(all bool) error {
	db.flushMu.Lock()
	defer db.flushMu.Unlock()
	ho := db.head.Options()
	guard := max(ho.OOOWindow, ho.PartitionRange/2)
	flushed := false
	for _, pid := range db.head.Partitions() {
		_, pmax := db.head.PartitionBounds(pid)
		if !all && db.head.MaxTime()-guard < pmax {
			continue
		}
		if err := db.flushPartition(pid); err != nil {
			return err
		}
		flushed = true
	}
	cutoff, err := db.applyRetention()
	if err != nil {
		return err
	}
	db.head.DropFlushed(db.opts.HotPartitions, cutoff)
	if flushed {
		db.kickCompaction()
		return db.truncateWAL()
	}
	return nil
}

// flushPartition writes partition pid as a block, opens it, and only then
// drops it from the head, so queries see the data throughout.
func (db *DB) flushPartition(pid int64) error {
	start := time.Now()
	pmin, pmax := db.head.PartitionBounds(pid)
	db.head.SealPartition(pid)
	b, err := db.writePartition(db.head, pid, pmin, pmax, block.WriterOptions{HeadMaxTime: pmax})
	if err != nil {
		return fmt.Errorf("flush partition %d: %w", pid, err)
	}
	if b != nil {
		db.addBlocks([]*block.Reader{b}, map[int64]string{pid: b.Meta().ULID})
	}
	if db.opts.HotPartitions > 0 {
		db.head.ReleasePartition(pid) // soft release: it keeps serving queries
	} else {
		db.head.DropPartition(pid)
	}
	db.flushes.Add(1)
	if db.opts.OnFlush != nil {
		db.opts.OnFlush(time.Since(start))
	}
	if b != nil {
		meta := b.Meta()
		db.log.Info("partition flushed", "block", meta.ULID, "mint", pmin, "maxt", pmax,
			"series", meta.Stats.Series, "samples", meta.Stats.Samples, "bytes", meta.Stats.DataBytes+meta.Stats.IndexBytes, "took", time.Since(start))
	}
	return nil
}

// writePartition writes partition pid of h as a block of [pmin, pmax) and
// opens it; nil if the partition holds no group. opts' tuple size and
// metric interval are the engine's.
func (db *DB) writePartition(h *head.Head, pid, pmin, pmax int64, opts block.WriterOptions) (*block.Reader, error) {
	opts.TupleSize, opts.MetricInterval = db.blockTupleSize(), db.opts.MetricInterval
	w, err := block.NewWriter(fmt.Sprintf("%s/%s", db.dir, blocksDirname), pmin, pmax, db.dict, opts)
	if err != nil {
		return nil, err
	}
	cols := []block.Column{}
	db.flushDone.Store(0)
	db.flushTotal.Store(int64(h.NumGroups()))
	defer func() { db.flushTotal.Store(0); db.flushDone.Store(0) }()
	pace := newPacer(db.opts.FlushCPUBudget)
	groups := 0
	err = h.PartitionGroups(pid, func(g *head.FlushGroup) error {
		cols = cols[:0]
		for _, s := range g.Series {
			cols = append(cols, block.Column{Labels: s.Labels, Values: s.Values, Present: s.Present})
		}
		err := w.AddGroup(g.T, cols)
		groups++
		db.flushDone.Add(1)
		pace.step()
		return err
	})
	if err != nil {
		w.Abort()
		return nil, err
	}
	if groups == 0 && opts.HeadMaxTime == 0 {
		w.Abort()
		return nil, nil
	}
	dir, _, err := w.Finish()
	if err != nil {
		return nil, err
	}
	b, err := block.Open(dir, db.dict, block.ReaderOptions{})
	if err != nil {
		return nil, fmt.Errorf("open new block %s: %w", dir, err)
	}
	return b, nil
}

// addBlocks makes new blocks queryable; headFlush maps the head partitions
// they were flushed from to their ULIDs (see querier: a hot partition is
// read from memory instead of that block).
func (db *DB) addBlocks(bs []*block.Reader, headFlush map[int64]string) {
	if len(bs) == 0 {
		return
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	for _, b := range bs {
		db.blocks = append(db.blocks, b)
		db.noteBlockLocked(b.Meta())
	}
	for pid, id := range headFlush {
		db.headBlocks[pid] = id
	}
	db.added.Add(1)
	sortBlocks(db.blocks)
}

// noteBlockLocked updates the engine's time marks for a block now in the
// set. Called with db.mu held.
func (db *DB) noteBlockLocked(m block.Meta) {
	if m.Stats.Samples > 0 && m.Stats.MaxSampleTime > db.newestBlockSample.Load() {
		db.newestBlockSample.Store(m.Stats.MaxSampleTime)
	}
}

// blockTupleSize is the tuple size of new blocks.
func (db *DB) blockTupleSize() int {
	if db.opts.BlockTupleSize > 0 {
		return db.opts.BlockTupleSize
	}
	return db.head.Options().TupleSize
}

// FlushProgress reports the groups converted by the running partition flush
// and the groups there are (0, 0 when no flush runs).
func (db *DB) FlushProgress() (done, total int64) {
	return db.flushDone.Load(), db.flushTotal.Load()
}

// pacer keeps a loop's busy time within a share of one core: step, called
// after each unit of work, sleeps for the work's time × (1/budget − 1)
// and yields the processor either way. The flush runs in one goroutine,
// so a budget of 1 is one core at most.
type pacer struct {
	budget float64
	last   time.Time
}

func newPacer(budget float64) *pacer { return &pacer{budget: budget, last: time.Now()} }

func (p *pacer) step() {
	if p.budget < 1 {
		busy := time.Since(p.last)
		time.Sleep(time.Duration(float64(busy) * (1/p.budget - 1)))
	}
	runtime.Gosched()
	p.last = time.Now()
}

// applyRetention deletes blocks whose whole range is older than the
// retention, measured from the newest data, and returns that cutoff
// (math.MinInt64 without retention).
func (db *DB) applyRetention() (int64, error) {
	if db.opts.Retention <= 0 {
		return math.MinInt64, nil
	}
	newest := db.newestT()
	if newest == math.MinInt64 {
		return math.MinInt64, nil
	}
	cutoff := newest - db.opts.Retention
	db.mu.Lock()
	var keep, drop []*block.Reader
	for _, b := range db.blocks {
		if b.Meta().MaxTime <= cutoff {
			drop = append(drop, b)
		} else {
			keep = append(keep, b)
		}
	}
	db.blocks = keep
	db.mu.Unlock()
	for _, d := range drop {
		// Queriers hold their own references; the file closes with the
		// last one, and an unlinked file stays readable until then.
		d.Close()
		db.rmeta.forget(d)
		if d.Remote() {
			// Deleted from the tier by the compaction loop, off the
			// flush path (remote.go).
			db.queueTierDelete(d.Meta().ULID)
			continue
		}
		if err := removeDir(d.Dir()); err != nil {
			return cutoff, fmt.Errorf("retention: delete block %s: %w", d.Dir(), err)
		}
		db.log.Info("block deleted by retention", "block", d.Meta().ULID, "maxt", d.Meta().MaxTime)
	}
	return cutoff, nil
}

// truncateWAL lets go of every segment written before it: it cuts the
// active segment, then writes a checkpoint that replaces the closed
// segments and the previous checkpoint with the head's live definitions
// and the rows not yet in a durable block (at or after headCovered, which
// replay would not skip), and deletes them. The WAL then holds what the
// head still needs and nothing it has flushed. Called after a flush, with
// flushMu held; the rows carried are at most the head's unflushed ones.
func (db *DB) truncateWAL() error {
	covered := db.headCovered()
	before, err := db.wal.Cut()
	if err != nil {
		return err
	}
	first, _, err := db.wal.Segments()
	if err != nil {
		return err
	}
	if first >= before {
		return nil
	}
	var (
		rows wal.RowsDef
		kept []wal.Row
		buf  []byte
	)
	carry := func(rec []byte, yield func([]byte) error) error {
		if wal.RecordType(rec) != wal.RecordRows {
			return nil // definitions: the head's own come first
		}
		if err := wal.DecodeRows(rec, &rows); err != nil {
			return err
		}
		// A separate slice: DecodeRows reuses the slices of rows.Rows.
		kept = kept[:0]
		for _, r := range rows.Rows {
			if r.T >= covered {
				kept = append(kept, r)
			}
		}
		switch len(kept) {
		case 0:
			return nil
		case len(rows.Rows):
			return yield(rec)
		}
		buf = wal.AppendRows(buf[:0], &wal.RowsDef{Group: rows.Group, Width: rows.Width, Rows: kept})
		return yield(buf)
	}
	err = db.wal.Checkpoint(before, func(yield func([]byte) error) error {
		return db.head.Defs(yield)
	}, carry)
	if err != nil {
		return fmt.Errorf("WAL checkpoint: %w", err)
	}
	return nil
}

// sortBlocks orders blocks by seq (write order: first write wins), then
// by time.
func sortBlocks(bs []*block.Reader) {
	sort.SliceStable(bs, func(i, j int) bool { return blockLess(bs[i].Meta(), bs[j].Meta()) })
}

func blockLess(a, b block.Meta) bool {
	if a.Seq != b.Seq {
		return a.Seq < b.Seq
	}
	return a.MinTime < b.MinTime
}
