package tsdb

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/aerie-db/aerie/internal/block"
	"github.com/aerie-db/aerie/internal/head"
	"github.com/aerie-db/aerie/internal/index"
	"github.com/aerie-db/aerie/internal/memory"
	"github.com/aerie-db/aerie/internal/model"
	"github.com/aerie-db/aerie/internal/wal"
)

// Options configure the engine. Zero values take the defaults in brackets.
type Options struct {
	PartitionRange int64    // [2h] ms
	OOOWindow      int64    // [1h] ms; see NoOOO
	NoOOO          bool     // out-of-order rows off (OOOWindow ignored)
	Retention      int64    // [0 = keep forever] ms
	GroupBy        []string // [job, instance]
	GraphiteDepth  int      // [2] path components forming a Graphite group
	MaxGroupWidth  int      // [20000]
	MaxSeries      int      // [0 = unlimited]
	TupleSize      int      // [8] rows per head tuple, 1..head.MaxTupleSize
	BlockTupleSize int      // [TupleSize] rows per tuple in blocks, 1..32
	MetricInterval int64    // [1h] ms, block metrics

	// SeriesRetention, when set, is a per-series retention on top of
	// Retention: it returns the time (ms) before which a series' samples
	// are gone, math.MinInt64 for none (the rollup schemas' raw archives,
	// internal/rollup). Queries hide those samples as if deleted,
	// compaction drops them, and ApplySeriesRetention rewrites the blocks
	// that still hold a series wholly past it. It must be cheap (it is
	// called per series per query) and safe for concurrent use.
	SeriesRetention func(labels.Labels) int64

	WALSync         wal.SyncMode  // [wal.SyncBatch]
	WALSyncInterval time.Duration // [1s], SyncInterval mode
	WALSegmentSize  int64         // [128 MiB]

	// FlushCPUBudget is the share of one core a partition flush may use
	// [1]: after converting a group it sleeps so that its busy time stays
	// within the budget, and it yields between groups either way, so that
	// queries are not starved while the WAL keeps the data durable.
	FlushCPUBudget float64

	// Memory configures the memory manager holding the head's tuples
	// (page and block size, limit, reclamation threshold and split).
	Memory memory.Options
	// ReclaimInterval is how often the memory manager advances its epoch
	// and reclaims [1s]; it also runs early when the limit is approached.
	ReclaimInterval time.Duration
	// HotPartitions is how many flushed partitions stay in memory, newest
	// first, serving queries until the memory limit needs their blocks
	// [1]; negative: none (a flushed partition is dropped at once).
	HotPartitions int

	// FlushCheckInterval is how often the background loop looks for
	// partitions to flush and blocks to delete [1m]; negative disables the
	// loop (callers then call Compact).
	FlushCheckInterval time.Duration

	// NoBackfill turns writes of any age off: samples older than the
	// head's bounds (the out-of-order window, or below the newest block)
	// are rejected, as Prometheus does. By default they go to the
	// backfill (backfill.go).
	NoBackfill bool
	// MaxFuture rejects samples more than this many ms ahead of the wall
	// clock (too_far_in_future) [0 = no limit; the server sets 10 min].
	MaxFuture int64
	// BackfillPartitionRange is the time partition of backfill
	// generations, and so of the blocks they are flushed into [the
	// largest compaction level range up to 8 days: 8d by default].
	BackfillPartitionRange int64
	// BackfillPartitions, BackfillBytes and BackfillIdle bound a backfill
	// generation: it is frozen and flushed once it holds that many
	// partitions [24, at most 24], that many bytes of tuples [256 MiB], or
	// took no write for that long [10s].
	BackfillPartitions int
	BackfillBytes      int64
	// Remote is a second tier of blocks (remote.go) [none].
	Remote Remote
	// LocalRetention is how long, from the newest data, blocks stay only
	// local: older ones are uploaded to Remote [24h].
	LocalRetention int64
	// RemoteMetadataBytes bounds the metadata of Remote's blocks kept in
	// memory (remotemeta.go); the blocks read least recently are dropped
	// and opened again when read [0: unbounded].
	RemoteMetadataBytes int64
	BackfillIdle        time.Duration
	// MaxBlockRange bounds compacted blocks, ms [31 days, or 10 % of
	// Retention if that is smaller].
	MaxBlockRange int64

	Logger *slog.Logger

	// Hooks for the server's metrics; nil is fine.
	OnWALFsync   func(time.Duration) // every WAL fsync
	OnFlush      func(time.Duration) // every partition written as a block
	OnCompaction func(time.Duration) // every compaction output written
	// OnBackfill is called after samples in [mint, maxt] went durably to
	// the backfill (older than the head takes), before their Commit
	// returns: the rollup manager recomputes its levels over such ranges.
	OnBackfill func(mint, maxt int64)
}

type lateHolder struct{ o LateObserver }

// SetLateObserver makes o hear of writes and deletions reaching back
// before its horizon (the results cache: what it may have cached); nil
// stops it. Appenders made before the call do not report to o.
func (db *DB) SetLateObserver(o LateObserver) {
	if o == nil {
		db.late.Store(nil)
		return
	}
	db.late.Store(&lateHolder{o})
}

func (db *DB) lateObserver() LateObserver {
	if h := db.late.Load(); h != nil {
		return h.o
	}
	return nil
}

// LateObserver hears of committed samples older than Horizon() and of
// deletions, before the Commit or Delete that made them returns, so a
// cache of query results can drop what they make stale.
type LateObserver interface {
	// Horizon is read once per appender: samples before it are reported.
	Horizon() int64
	// Written reports the late samples of one commit, one LateWrite per
	// series (a series may rarely have two). ws is the caller's: it is
	// reused once Written returns.
	Written(ws []LateWrite)
	// Deleted reports a deletion of the series matching ms in
	// [mint, maxt].
	Deleted(mint, maxt int64, ms []*labels.Matcher)
}

// LateWrite is one series' late samples in one commit. Its labels are
// read only when an observer asks (Labels): most reports match nothing
// cached, and a series written by ref would have its labels rebuilt by
// the head for nothing.
type LateWrite struct {
	Hash       uint64 // Labels().Hash()
	MinT, MaxT int64

	lset labels.Labels // the writer's, or empty: then the head's series ref
	ref  model.SeriesRef
	head *head.Head
}

// NewLateWrite is a LateWrite of series lset.
func NewLateWrite(lset labels.Labels, mint, maxt int64) LateWrite {
	return LateWrite{Hash: lset.Hash(), MinT: mint, MaxT: maxt, lset: lset}
}

// Labels returns the written series' labels.
func (w LateWrite) Labels() labels.Labels {
	if !w.lset.IsEmpty() || w.head == nil {
		return w.lset
	}
	l, _ := w.head.SeriesLabels(w.ref)
	return l
}

// LateObservers tells each of its observers (several caches over one
// engine): its horizon is the latest of theirs, so each hears at least of
// the samples it asks for. A write reaches an observer only if it reaches
// before that observer's own horizon as it is at the report (later than
// when the appender read it, so nothing it asked for is held back).
type LateObservers []LateObserver

func (os LateObservers) Horizon() int64 {
	h := int64(math.MinInt64)
	for _, o := range os {
		h = max(h, o.Horizon())
	}
	return h
}

func (os LateObservers) Written(ws []LateWrite) {
	var some []LateWrite
	for _, o := range os {
		h := o.Horizon()
		all := true
		for _, w := range ws {
			if w.MinT >= h {
				all = false
				break
			}
		}
		if all {
			o.Written(ws) // a load of history: every write, no copy
			continue
		}
		some = some[:0]
		for _, w := range ws {
			if w.MinT < h {
				some = append(some, w)
			}
		}
		if len(some) > 0 {
			o.Written(some)
		}
	}
}

func (os LateObservers) Deleted(mint, maxt int64, ms []*labels.Matcher) {
	for _, o := range os {
		o.Deleted(mint, maxt, ms)
	}
}

func (o *Options) headOptions() head.Options {
	ho := head.Options{
		GroupBy:            o.GroupBy,
		GraphiteGroupDepth: o.GraphiteDepth,
		MaxGroupWidth:      o.MaxGroupWidth,
		MaxSeries:          o.MaxSeries,
		PartitionRange:     o.PartitionRange,
		OOOWindow:          o.OOOWindow,
		TupleSize:          o.TupleSize,
		Memory:             o.Memory,
	}
	if o.NoOOO {
		ho.OOOWindow, ho.NoOOODefault = 0, true
	}
	return ho
}

// DB is an open data directory.
type DB struct {
	dir  string
	opts Options
	log  *slog.Logger

	dict *index.TagDict
	wal  *wal.WAL
	head *head.Head
	tomb *tombstones

	late atomic.Pointer[lateHolder] // SetLateObserver's

	flushMu sync.Mutex // serializes flushes, retention and WAL truncation

	mu     sync.RWMutex // guards blocks, headBlocks and compactedHot
	blocks []*block.Reader
	rmeta  remoteMeta // remote blocks' metadata in memory (remotemeta.go)
	// shippedBlocks and shipFailures count blocks moved to the remote
	// tier and failed uploads (remote.go).
	shippedBlocks, shipFailures atomic.Int64
	tierMu                      sync.Mutex       // guards tierDrop
	tierDrop                    []string         // remote blocks retention dropped, to delete from the tier
	headBlocks                  map[int64]string // head partition → ULID of the block it was flushed into
	// compactedHot maps a flushed head partition whose flush block was
	// compacted to the ULID of the block that holds it now: a query
	// reading that block skips the partition's hot columns (querier.go).
	compactedHot map[int64]string
	added        atomic.Uint64 // blocks ever added by flushes; written under mu

	newestBlockSample atomic.Int64 // greatest sample time in a block; written under mu

	bf backfill

	compactMu   sync.Mutex // serializes compactions
	compactKick chan struct{}
	cstats      compactionStats

	quarantined atomic.Int64
	flushes     atomic.Int64
	hotReads    atomic.Int64 // series partitions a Select read from hot memory instead of a block
	queriers    atomic.Int64 // queriers opened
	flushDone   atomic.Int64 // groups converted by the running flush
	flushTotal  atomic.Int64 // groups of the running flush (0: none)

	meta     metadataStore
	rejMu    sync.Mutex // guards rejected
	rejected map[string]int64

	stop chan struct{}
	wg   sync.WaitGroup
}

// Open opens (creating if needed) the data directory dir: it opens the
// TagDict and the blocks (quarantining corrupt ones) and replays the WAL.
func Open(dir string, opts *Options) (*DB, error) {
	if opts == nil {
		opts = &Options{}
	}
	o := *opts
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.FlushCheckInterval == 0 {
		o.FlushCheckInterval = time.Minute
	}
	if o.MetricInterval <= 0 {
		o.MetricInterval = block.DefaultMetricInterval
	}
	if o.LocalRetention <= 0 {
		o.LocalRetention = 24 * 3600_000
	}
	if o.FlushCPUBudget <= 0 || o.FlushCPUBudget > 1 {
		o.FlushCPUBudget = 1
	}
	if o.ReclaimInterval <= 0 {
		o.ReclaimInterval = time.Second
	}
	if o.HotPartitions == 0 {
		o.HotPartitions = 1
	}
	o.fillBackfill()
	for _, d := range []string{dir, filepath.Join(dir, blocksDirname)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	db := &DB{dir: dir, opts: o, log: o.Logger, headBlocks: map[int64]string{}, compactedHot: map[int64]string{}, stop: make(chan struct{}), compactKick: make(chan struct{}, 1)}
	db.rmeta.budget = o.RemoteMetadataBytes
	db.newestBlockSample.Store(math.MinInt64)
	// undo closes what Open has opened so far, last opened first, when a
	// later step fails.
	var undo []func()
	fail := func(err error) (*DB, error) {
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i]()
		}
		return nil, err
	}
	var err error
	if db.dict, err = index.OpenTagDict(filepath.Join(dir, tagDictFilename)); err != nil {
		return nil, fmt.Errorf("open tag dictionary: %w", err)
	}
	undo = append(undo, func() { db.dict.Close() })
	if db.tomb, err = openTombstones(filepath.Join(dir, tombstonesFilename)); err != nil {
		return fail(fmt.Errorf("open tombstones: %w", err))
	}
	undo = append(undo, func() { db.tomb.close() })
	if err := db.openBlocks(); err != nil {
		return fail(err)
	}
	undo = append(undo, db.closeBlocks)
	if err := db.deleteObsolete(); err != nil {
		return fail(err)
	}
	undo = append(undo, db.closeBackfill) // also after a failed openBackfill
	if err := db.openBackfill(); err != nil {
		return fail(err)
	}
	if err := db.openRemote(context.Background()); err != nil {
		return fail(err)
	}
	db.wal, err = wal.Open(filepath.Join(dir, walDirname), wal.Options{
		SegmentSize: o.WALSegmentSize, Sync: o.WALSync, SyncInterval: o.WALSyncInterval, Logger: o.Logger,
		OnFsync: o.OnWALFsync,
	})
	if err != nil {
		return fail(fmt.Errorf("open WAL: %w", err))
	}
	undo = append(undo, func() { db.wal.Close() })
	db.head, err = head.New(o.headOptions(), walLogger{db})
	if err != nil {
		return fail(err)
	}
	db.opts.PartitionRange = db.head.Options().PartitionRange
	db.head.SetMinValidTime(db.headCovered())
	if err := db.replay(); err != nil {
		return fail(err)
	}
	if db.head.MaxTime() == math.MinInt64 {
		// An empty head takes nothing older than the blocks (as
		// Prometheus'), which history runs rely on (RunBound).
		db.head.SetMinValidTime(db.blocksEnd())
	}
	if err := db.flush(false); err != nil {
		db.log.Error("flush after replay", "err", err)
	}
	if err := db.head.Memory().Start(o.ReclaimInterval); err != nil {
		return nil, err
	}
	if o.FlushCheckInterval > 0 {
		db.wg.Add(2)
		go db.loop()
		go db.compactLoop(o.FlushCheckInterval)
	}
	db.wg.Add(1)
	go db.backfillLoop()
	return db, nil
}

// walLogger adapts the WAL to the head. Which rows a segment holds does not
// matter: truncateWAL carries the rows not yet in blocks into the
// checkpoint.
type walLogger struct{ db *DB }

func (l walLogger) Write(_ int64, recs ...[]byte) (uint64, error) { return l.db.wal.Write(recs...) }

func (l walLogger) Wait(ticket uint64) error { return l.db.wal.Wait(ticket) }

func (db *DB) replay() error { return replayInto(db, db.wal, db.head) }

// replayInto replays w into h. A corrupt tail is truncated.
func replayInto(db *DB, w *wal.WAL, h *head.Head) error {
	var (
		gs   []wal.GroupDef
		ss   []wal.SeriesDef
		rows wal.RowsDef
	)
	apply := func(_ int, rec []byte) error {
		var err error
		switch wal.RecordType(rec) {
		case wal.RecordGroups:
			if gs, err = wal.DecodeGroups(rec, gs[:0]); err != nil {
				return err
			}
			for _, g := range gs {
				h.ReplayGroup(g)
			}
		case wal.RecordSeries:
			if ss, err = wal.DecodeSeries(rec, ss[:0]); err != nil {
				return err
			}
			for _, s := range ss {
				if err := h.ReplaySeries(s); err != nil {
					return err
				}
			}
		case wal.RecordRows:
			if err = wal.DecodeRows(rec, &rows); err != nil {
				return err
			}
			return h.ReplayRows(&rows)
		}
		return nil
	}
	err := w.Replay(apply)
	var ce *wal.CorruptionError
	if errors.As(err, &ce) {
		db.log.Warn("WAL corrupt, truncating at the last good record", "file", ce.Segment, "offset", ce.Offset, "err", ce.Err)
		if rerr := w.Repair(err); rerr != nil {
			return fmt.Errorf("repair WAL: %w (after %v)", rerr, err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("replay WAL: %w", err)
	}
	return nil
}

func (db *DB) openBlocks() error {
	bdir := filepath.Join(db.dir, blocksDirname)
	ents, err := os.ReadDir(bdir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		p := filepath.Join(bdir, e.Name())
		if strings.HasSuffix(e.Name(), block.TmpSuffix) {
			os.RemoveAll(p) // an unfinished write
			continue
		}
		b, err := block.Open(p, db.dict, block.ReaderOptions{})
		if err != nil {
			if qerr := db.quarantine(p, err); qerr != nil {
				return qerr
			}
			continue
		}
		db.blocks = append(db.blocks, b)
		db.noteBlockLocked(b.Meta())
	}
	sortBlocks(db.blocks)
	return nil
}

// quarantine moves a block that cannot be read aside.
func (db *DB) quarantine(p string, cause error) error {
	qdir := filepath.Join(db.dir, quarantineDirname)
	if err := os.MkdirAll(qdir, 0o755); err != nil {
		return err
	}
	dst := filepath.Join(qdir, filepath.Base(p))
	if err := os.Rename(p, dst); err != nil {
		return fmt.Errorf("quarantine block %s: %w (block error: %v)", p, err, cause)
	}
	db.quarantined.Add(1)
	db.log.Error("block quarantined", "block", filepath.Base(p), "moved_to", dst, "err", cause)
	return nil
}

// headCovered is the end of the newest head partition in a block: the
// head's rows below it are in blocks (its minimum valid time at open, and
// what the WAL may drop). Blocks written before meta.json had headMaxTime
// were all head flushes.
func (db *DB) headCovered() int64 {
	db.mu.RLock()
	defer db.mu.RUnlock()
	m := int64(math.MinInt64)
	for _, b := range db.blocks {
		bm := b.Meta()
		switch {
		case bm.HeadMaxTime != 0:
			m = max(m, bm.HeadMaxTime)
		case bm.Seq == 0 && bm.Backfill == 0 && bm.Compaction.Level == 0 && len(bm.Compaction.Parents) == 0:
			m = max(m, bm.MaxTime)
		}
	}
	return m
}

// blocksEnd is the greatest end of a block (math.MinInt64: no block).
func (db *DB) blocksEnd() int64 {
	db.mu.RLock()
	defer db.mu.RUnlock()
	m := int64(math.MinInt64)
	for _, b := range db.blocks {
		m = max(m, b.Meta().MaxTime)
	}
	return m
}

func (db *DB) closeBlocks() {
	db.mu.Lock()
	defer db.mu.Unlock()
	for _, b := range db.blocks {
		b.Close()
	}
	db.blocks = nil
}

func (db *DB) loop() {
	defer db.wg.Done()
	t := time.NewTicker(db.opts.FlushCheckInterval)
	defer t.Stop()
	for {
		select {
		case <-db.stop:
			return
		case <-t.C:
			if err := db.Compact(); err != nil {
				db.log.Error("flush", "err", err)
			}
		}
	}
}

// Head returns the head (for statistics and tests).
func (db *DB) Head() *head.Head { return db.head }

// Dir returns the data directory.
func (db *DB) Dir() string { return db.dir }

// Stats are counters of the engine.
type Stats struct {
	Blocks      int
	Quarantined int64
	Flushes     int64
	// HotReads counts the series partitions queries read from flushed
	// partitions still in memory instead of from their blocks.
	HotReads int64
	// HotPartitions is the number of flushed partitions still in memory.
	HotPartitions int
	HeadSeries    int
	HeadGroups    int
	// Queriers counts the queriers opened (OpenQuerier, and the engine's
	// own reads through one), so tests can check a request opens one.
	Queriers int64
}

// Stats returns the engine's counters.
func (db *DB) Stats() Stats {
	db.mu.RLock()
	n := len(db.blocks)
	db.mu.RUnlock()
	return Stats{Blocks: n, Quarantined: db.quarantined.Load(), Flushes: db.flushes.Load(), HotReads: db.hotReads.Load(), Queriers: db.queriers.Load(), HotPartitions: len(db.head.FlushedPartitions()), HeadSeries: db.head.NumSeries(), HeadGroups: db.head.NumGroups()}
}

// BlockSizes returns, for each open block, oldest first, its meta and
// where its bytes go (block.Reader.Sizes).
func (db *DB) BlockSizes() ([]block.Meta, []block.Sizes, error) {
	db.mu.RLock()
	bs := slices.Clone(db.blocks)
	db.mu.RUnlock()
	metas := make([]block.Meta, 0, len(bs))
	sizes := make([]block.Sizes, 0, len(bs))
	for _, b := range bs {
		if !b.Acquire() {
			continue // deleted meanwhile
		}
		s, err := b.Sizes()
		b.Release()
		if err != nil {
			return nil, nil, err
		}
		metas, sizes = append(metas, b.Meta()), append(sizes, s)
	}
	return metas, sizes, nil
}

// Blocks returns the metas of the open blocks, oldest first.
func (db *DB) Blocks() []block.Meta {
	db.mu.RLock()
	defer db.mu.RUnlock()
	out := make([]block.Meta, len(db.blocks))
	for i, b := range db.blocks {
		out[i] = b.Meta()
	}
	return out
}

// RowAppender returns the engine's own appender: Append buffers, Commit
// forms group rows, makes them durable and visible, and reports every
// rejected sample in an *head.AppendError.
func (db *DB) RowAppender() *head.Appender { return db.head.Appender() }

// Close stops the background loop and closes the WAL, blocks and TagDict.
// The head's rows stay in the WAL for the next Open.
func (db *DB) Close() error {
	db.bf.mu.Lock()
	db.bf.closing = true // commits waiting for a generation give up
	db.bf.cond.Broadcast()
	for db.bf.runs > 0 { // history runs in flight write blocks
		db.bf.cond.Wait()
	}
	db.bf.mu.Unlock()
	close(db.stop)
	db.wg.Wait()
	db.closeBackfill()
	db.head.Memory().Close()
	db.flushMu.Lock()
	defer db.flushMu.Unlock()
	err := db.wal.Close()
	db.closeBlocks()
	db.tomb.close()
	if derr := db.dict.Close(); err == nil {
		err = derr
	}
	return err
}

// labelsLess orders label sets as Prometheus does.
func labelsLess(a, b labels.Labels) bool { return labels.Compare(a, b) < 0 }
