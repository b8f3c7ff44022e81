// Package tsdb is Aerie's storage engine: it ties the WAL, the head, the
// on-disk blocks and the global TagDict together, flushes closed head
// partitions into blocks, applies retention, and serves queries through
// Prometheus' storage.Queryable so that promql.Engine runs on it unchanged.
//
// Invariants:
//  1. An append is acknowledged only after its rows are in the WAL per the
//     sync mode (fsync'd in SyncBatch mode, the default): the main head's
//     WAL and those of the backfill generations it wrote to. Commit waits
//     for all of them; CommitNoWait hands that wait to its caller, and a
//     generation flushed or closed meanwhile fsyncs its WAL as it closes
//     it, which ends the wait.
//  2. The head takes what Prometheus' head takes (in-order samples above
//     its minimum valid time, out-of-order ones inside ooo_window); a head
//     partition is flushed once no such sample can land in it (head max
//     time − max(ooo_window, partition_range/2) ≥ its end), exactly once.
//     Every other sample inside the retention (and not beyond max_future)
//     goes to a backfill generation (backfill.go), so blocks may overlap in
//     time; compaction folds them (compaction.go).
//  3. A WAL segment is deleted only after every row in it is in a durable
//     block; the live group and series definitions are first written to a
//     checkpoint.
//  4. A block that fails verification at open is moved to quarantine/,
//     logged and counted; the other blocks keep serving.
//  5. Lock order: DB.flushMu, then backfill.mu, then DB.mu; DB.compactMu
//     is held with DB.mu only (never with flushMu); none is held while
//     taking head group locks for appends. A
//     generation's commitMu is taken shared under backfill.mu only while
//     the generation is active (its flush takes it exclusively only once
//     it is frozen), so that never waits.
//  6. First write wins. Sources of a series are merged in seq order, the
//     lowest first, and a sample at a timestamp already taken by an
//     earlier source is dropped: the head and its blocks are seq 0 (a
//     timestamp reaches the backfill only after it fell below the head's
//     bounds, so the head's sample for it is older), backfill generations
//     and their blocks take increasing numbers, a compaction output the
//     greatest of its inputs'. A history run (history.go) takes a
//     generation number of its own after freezing the active generation,
//     and only a range below the head's AcceptFloor, which never falls
//     (an empty head's is raised by RunBound and, at open, to the end of
//     the blocks), so the head never later takes a sample there. Within
//     one head (main or generation) a different value at a stored
//     timestamp is rejected as a duplicate and the same value is a no-op.
//     One exception: samples the head spills to the backfill because the
//     memory manager cannot open their partition (too many unflushed
//     partitions) are written before later head samples of the same
//     partition.
//  7. A backfill generation's WAL is deleted only after all its blocks
//     are durable and open; at open, blocks of a generation whose WAL
//     exists are deleted and the WAL replayed (an unfinished flush). A
//     history run has no WAL: WriteRun returns only after all its blocks
//     are durable and queryable, and removes them all on failure.
//  8. Compaction deletes its inputs only after the output is durable and
//     open; at open, blocks an existing output names as parents are
//     deleted before anything reads them (compact.Obsolete).
//  9. A Select's samples may be decoded ahead of the engine on another
//     goroutine (prefetch.go), giving exactly what the series' own
//     iterators give whatever order the series are read in; every such
//     goroutine has stopped before Close releases what it reads.
//  10. With a remote tier (remote.go), a block is read from the tier only
//     if it is not in the data directory, and only after the tier's
//     TagDict segments are applied to the local dictionary, so codes
//     agree. A local block is deleted for being uploaded only after the
//     tier read every object of it back, and after its remote copy took
//     its place; remote blocks are never compacted. A remote block whose
//     metadata was dropped from memory (remotemeta.go) stays in the
//     block list as a stand-in with its meta; a querier opens it again
//     before its first read of that range, so no read skips it.
//  11. Every read through a querier (Select, SeriesMetrics, SeriesSets)
//     takes what it reads in one place, Querier.snapshot: the main head,
//     then the backfill generations overlapping its range, then the
//     blocks overlapping it (those acquired when the querier was opened
//     and those added since), so a sample a flush moves from a head to a
//     block meanwhile is read at least once, and merged once. What a
//     snapshot takes (head snapshots, generation memory guards, block
//     references) is released by the querier's Close and nowhere else.
//  12. A hot head partition whose flush block was compacted is skipped by
//     a Select that reads the compacted block (compactedHot): flushed
//     partitions take no more samples, so the block holds every row of
//     it. A series whose sources then do not overlap in time is read
//     source after source (series.AppendSpan), which gives what the merge
//     of its sources gives.
//  13. A series gives a block's summary of a metric interval
//     (series.AppendSummaries) only when no sample of it is deleted and no
//     other of its sources reaches into the interval: the summary is then
//     of every sample the series has there.
package tsdb
