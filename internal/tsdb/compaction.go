package tsdb

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"sync/atomic"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/aerie-db/aerie/internal/block"
	"github.com/aerie-db/aerie/internal/compact"
	"github.com/aerie-db/aerie/internal/head"
)

// Block compaction (internal/compact does the merging). Overlapping blocks
// (backfill) are merged vertically and adjacent ones into aligned windows
// of growing ranges up to MaxBlockRange. It runs in its own goroutine,
// under the flush's CPU budget, so head flushes and backfill flushes go on
// meanwhile; compactMu serializes compactions. The crash-safety protocol
// is compact's (doc.go there): an output is complete before it is added,
// inputs are deleted only after it is open, and at open every block a
// newer output replaces (compact.Obsolete) is deleted first.

// DefaultMaxBlockRange bounds compacted blocks (31 days).
var DefaultMaxBlockRange = int64(31 * 24 * 3600 * 1000)

// compactionStats are the counters behind CompactionStats.
type compactionStats struct {
	runs      atomic.Int64
	failures  atomic.Int64
	bytesIn   atomic.Int64
	bytesOut  atomic.Int64
	seconds   atomic.Int64 // nanoseconds, summed
	lastNanos atomic.Int64
}

// CompactionStats are counters of block compaction.
type CompactionStats struct {
	Compactions int64         // outputs written
	Failures    int64         // compactions that failed
	BytesIn     int64         // bytes of the inputs of those compactions
	BytesOut    int64         // bytes written
	Duration    time.Duration // total time spent
	Last        time.Duration // duration of the last one
	// BlocksByLevel counts the open blocks per compaction level.
	BlocksByLevel map[int]int
}

// CompactionStats returns the compaction counters.
func (db *DB) CompactionStats() CompactionStats {
	s := CompactionStats{
		Compactions: db.cstats.runs.Load(), Failures: db.cstats.failures.Load(),
		BytesIn: db.cstats.bytesIn.Load(), BytesOut: db.cstats.bytesOut.Load(),
		Duration: time.Duration(db.cstats.seconds.Load()), Last: time.Duration(db.cstats.lastNanos.Load()),
		BlocksByLevel: map[int]int{},
	}
	for _, m := range db.Blocks() {
		s.BlocksByLevel[m.Compaction.Level]++
	}
	return s
}

// maxBlockRange is the largest compaction window.
func (db *DB) maxBlockRange() int64 { return db.opts.blockRangeLimit(db.opts.PartitionRange) }

// blockRangeLimit is MaxBlockRange with its default (31 days, or 10 % of
// the retention if smaller), at least base.
func (o *Options) blockRangeLimit(base int64) int64 {
	r := o.MaxBlockRange
	if r <= 0 {
		r = DefaultMaxBlockRange
		if o.Retention > 0 {
			r = min(r, o.Retention/10)
		}
	}
	return max(r, base)
}

// compactionHorizon is the end of the newest head partition in a block:
// windows after it still receive the head's flushes.
func (db *DB) compactionHorizon() int64 { return db.headCovered() }

// CompactBlocks runs every compaction that is due now, including
// vertical merges of overlaps reaching past the horizon (tools, imports
// and tests call it once they are done writing).
func (db *DB) CompactBlocks() error { return db.compactBlocks(0) }

// compactQuiet is how long the background loop leaves a vertical merge
// reaching past the horizon alone after its newest input was written:
// while the head still flushes into that range, merging at once would
// rewrite it after every flush.
const compactQuiet = 10 * time.Minute

// compactBlocks runs compactions until none is due. A vertical merge whose
// range reaches past the horizon waits until its newest input is quiet
// (0: never waits).
func (db *DB) compactBlocks(quiet time.Duration) error {
	db.compactMu.Lock()
	defer db.compactMu.Unlock()
	for round := 0; round < 16; round++ {
		jobs := db.planCompactions(quiet)
		if len(jobs) == 0 {
			return nil
		}
		for _, j := range jobs {
			select {
			case <-db.stop:
				return nil
			default:
			}
			if err := db.runCompaction(j); err != nil {
				db.cstats.failures.Add(1)
				return err
			}
		}
	}
	return nil
}

// planCompactions plans over the open blocks (see compactBlocks).
func (db *DB) planCompactions(quiet time.Duration) []compact.Job {
	metas := db.localBlocks()
	if len(metas) < 2 {
		return nil
	}
	horizon := db.compactionHorizon()
	if horizon == math.MinInt64 {
		return nil
	}
	ranges := compact.Ranges(db.opts.PartitionRange, db.maxBlockRange())
	jobs := compact.Plan(metas, ranges, horizon)
	if quiet <= 0 {
		return jobs
	}
	created := map[string]time.Time{}
	for _, m := range metas {
		if id, err := ulid.Parse(m.ULID); err == nil {
			created[m.ULID] = ulid.Time(id.Time())
		}
	}
	return slices.DeleteFunc(jobs, func(j compact.Job) bool {
		if j.MaxTime <= horizon {
			return false
		}
		for _, id := range j.Inputs {
			if time.Since(created[id]) < quiet {
				return true
			}
		}
		return false
	})
}

// runCompaction merges a job's inputs into one block, swaps it in, and
// deletes the inputs.
func (db *DB) runCompaction(j compact.Job) error {
	start := time.Now()
	var inputs []*block.Reader
	db.mu.RLock()
	for _, id := range j.Inputs {
		for _, b := range db.blocks {
			if b.Meta().ULID == id && b.Acquire() {
				inputs = append(inputs, b)
			}
		}
	}
	db.mu.RUnlock()
	defer func() {
		for _, b := range inputs {
			b.Release()
		}
	}()
	if len(inputs) != len(j.Inputs) {
		return nil // an input went meanwhile (retention): plan again
	}
	var in int64
	for _, b := range inputs {
		in += b.Meta().Stats.DataBytes + b.Meta().Stats.IndexBytes
	}
	ho := db.head.Options()
	pace := newPacer(db.opts.FlushCPUBudget)
	dropBefore := int64(math.MinInt64)
	if db.opts.Retention > 0 {
		if newest := db.newestT(); newest != math.MinInt64 {
			dropBefore = newest - db.opts.Retention + 1
		}
	}
	dir, meta, err := compact.Merge(filepath.Join(db.dir, blocksDirname), inputs, db.dict, compact.Options{
		MinTime: j.MinTime, MaxTime: j.MaxTime, Level: j.Level,
		TupleSize: db.blockTupleSize(), MetricInterval: db.opts.MetricInterval,
		GroupKey: func(l labels.Labels) string { return head.GroupKey(l, ho.GroupBy, ho.GraphiteGroupDepth) },
		Deleted: func(l labels.Labels) [][2]int64 {
			ivs := db.deletedIntervals(l)
			out := make([][2]int64, len(ivs))
			for i, iv := range ivs {
				out[i] = [2]int64{iv.Mint, iv.Maxt}
			}
			return out
		},
		DropBefore:    dropBefore,
		Pace:          pace.step,
		MaxGroupWidth: ho.MaxGroupWidth,
	})
	if err != nil {
		return fmt.Errorf("compact %d blocks into [%d, %d): %w", len(inputs), j.MinTime, j.MaxTime, err)
	}
	out, err := block.Open(dir, db.dict, block.ReaderOptions{})
	if err != nil {
		return fmt.Errorf("open compacted block %s: %w", dir, err)
	}
	hot := db.head.FlushedPartitions() // before db.mu: the head takes its own locks
	db.mu.Lock()
	db.blocks = slices.DeleteFunc(db.blocks, func(b *block.Reader) bool { return slices.Contains(inputs, b) })
	for pid, id := range db.headBlocks {
		if slices.Contains(j.Inputs, id) {
			// The output holds the hot partition's flush, among other
			// data: a query reads the output and skips the partition's
			// columns in memory (querier.go).
			delete(db.headBlocks, pid)
			db.compactedHot[pid] = meta.ULID
		}
	}
	for pid, id := range db.compactedHot {
		switch {
		case !slices.Contains(hot, pid):
			delete(db.compactedHot, pid) // no longer in memory: nothing to skip
		case slices.Contains(j.Inputs, id):
			db.compactedHot[pid] = meta.ULID
		}
	}
	db.blocks = append(db.blocks, out)
	db.noteBlockLocked(out.Meta())
	db.added.Add(1)
	sortBlocks(db.blocks)
	db.mu.Unlock()
	for _, b := range inputs {
		b.Close() // the engine's reference; queriers keep theirs
		if err := removeDir(b.Dir()); err != nil {
			return fmt.Errorf("delete compacted block %s: %w", b.Meta().ULID, err)
		}
	}
	took := time.Since(start)
	db.cstats.runs.Add(1)
	db.cstats.bytesIn.Add(in)
	db.cstats.bytesOut.Add(meta.Stats.DataBytes + meta.Stats.IndexBytes)
	db.cstats.seconds.Add(int64(took))
	db.cstats.lastNanos.Store(int64(took))
	if db.opts.OnCompaction != nil {
		db.opts.OnCompaction(took)
	}
	db.log.Info("blocks compacted", "block", meta.ULID, "level", meta.Compaction.Level, "inputs", len(inputs),
		"mint", j.MinTime, "maxt", j.MaxTime, "samples", meta.Stats.Samples, "bytes_in", in,
		"bytes_out", meta.Stats.DataBytes+meta.Stats.IndexBytes, "took", took)
	return nil
}

// deleteObsolete deletes, at open, the blocks a compaction output
// replaces (a crash came between the output's rename and the inputs'
// deletion). Called before the blocks serve queries.
func (db *DB) deleteObsolete() error {
	metas := make([]block.Meta, len(db.blocks))
	for i, b := range db.blocks {
		metas[i] = b.Meta()
	}
	obsolete := compact.Obsolete(metas)
	if len(obsolete) == 0 {
		return nil
	}
	keep := db.blocks[:0]
	for _, b := range db.blocks {
		if !slices.Contains(obsolete, b.Meta().ULID) {
			keep = append(keep, b)
			continue
		}
		b.Close()
		if err := removeDir(b.Dir()); err != nil {
			return fmt.Errorf("delete replaced block %s: %w", b.Meta().ULID, err)
		}
		db.log.Info("deleted a block a compaction replaced", "block", b.Meta().ULID)
	}
	db.blocks = keep
	return nil
}

// compactLoop runs compactions when kicked (after a flush) and on the
// flush loop's interval.
func (db *DB) compactLoop(every time.Duration) {
	defer db.wg.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { // ends with the loop: both wait for db.stop
		<-db.stop
		cancel()
	}()
	for {
		select {
		case <-db.stop:
			return
		case <-db.compactKick:
		case <-t.C:
		}
		if err := db.compactBlocks(compactQuiet); err != nil {
			db.log.Error("compaction", "err", err)
		}
		// Uploads run here, off the flush path: a slow bucket delays
		// compaction, never a flush.
		if err := db.shipBlocks(ctx); err != nil {
			// The blocks stay local and are tried again next time.
			db.log.Warn("remote tier: upload failed", "err", err)
		}
	}
}

// kickCompaction wakes the compaction loop (if there is one).
func (db *DB) kickCompaction() {
	select {
	case db.compactKick <- struct{}{}:
	default:
	}
}
