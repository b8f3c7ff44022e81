// Package pgarchive keeps Aerie's rollup levels also in PostgreSQL, in
// Tgres's write-optimized bundle layout, for users who want SQL: a ts row
// per (bundle, segment, slot) holds dp[] and ver[] arrays over the series
// of a segment, and the tv view turns them back into (series, t, r) rows.
// docs/format/pgarchive.md specifies the tables and the view.
//
// # Design
//
// The archive pulls; nothing pushes into it. A Source (the rollup package)
// says for each Level how far it is final (Ready) and reads a range of it
// series by series. An Archiver runs one loop per level and one flusher:
//
//	Source.Read [watermark, Ready) ─► level loop ─► queue (bounded, rows) ─► flusher ─► PostgreSQL
//	                                  (rows built)                          (batches, rate-limited,
//	                                                                          one transaction per job)
//
// A level loop reads at most Config.ChunkSteps steps at a time, turns the
// points into ts row updates (rowBuilder: slot = t/step mod size,
// segment = position/width), registers series it has not seen (ds and rra
// rows, positions handed out under the bundle's row lock) and queues the
// result as a job. The flusher writes a job in one transaction: the row
// upserts in pgx batches of Config.BatchRows (one flush each, under the
// Config.MaxFlushesPerSecond limit, Tgres's max-flushes-per-second), then
// the level's watermark (aerie_archive_progress.done_ms) and the bundle's
// newest slot (rra_bundle.latest_ms). A gap needs no write: the view hides
// a slot whose ver[] entry is not the lap the window expects there.
//
// PostgreSQL being down or slow never reaches the Source's writers: the
// Source is only read, by the archiver's own goroutines. When the flusher
// cannot write, it retries the job with jittered exponential backoff (and
// a rate-limited log line); the queue fills and the level loops wait on
// it. Since the Source is durable nothing is dropped for lack of room; on
// Close the queue is abandoned and the next archiver reads again from the
// watermark. After a long outage the loop skips what is older than the
// window: a newer lap would overwrite it, and the Source's own retention
// has dropped it too.
//
// There is one flusher, so the jobs of a level commit in the order they
// were read; pgxpool replaces connections that PostgreSQL dropped.
//
// # Values
//
// Values are stored bit for bit: NaN (with its payload, including
// Prometheus's staleness marker), ±Inf and -0 come back from tv exactly as
// the Source gave them, over pgx's binary protocol. A Source that means
// "no value" must not return a point. Timestamps are kept at slot
// granularity: tv reports a point at the start of its slot, and of two
// points of a series in one slot the later wins.
//
// # Invariants
//
//  1. A level's watermark (done_ms) is committed in the same transaction as
//     every ts update of the range it covers, so after any crash the
//     database holds every point before the watermark that the window
//     still shows, and the archiver resumes from there.
//  2. A job is written only if the watermark in the database is the one
//     the job starts from (checked under FOR UPDATE); otherwise the level
//     reloads its state from the database and reads again.
//  3. Writes are idempotent: a job written twice leaves the same rows.
//  4. A point is written only into its own slot (i = slot mod size) with
//     ver = lap mod 2^31; a point whose slot is older than the bundle's
//     window (it would overwrite a newer lap) is dropped and counted
//     (aerie_pgarchive_dropped_points_total{reason="too_old"}), as are
//     points outside the range read or out of time order ("out_of_range")
//     and points replaced by a later one in the same slot ("same_slot").
//  5. rra_bundle.latest_ms never decreases, and tv shows exactly the slots
//     in (latest - size·step, latest] whose ver matches their lap.
//  6. A series' position in a bundle is handed out once (under the
//     bundle's row lock) and never changes.
//  7. The queue never holds more than Config.QueueSize rows, except a
//     single job larger than that, which waits for an empty queue.
//  8. No goroutine outlives Close, and Start never waits for PostgreSQL.
//
// # Locking
//
// A level loop owns its levelState (but gen and done, which are atomic);
// the flusher owns the job it is writing. The queue, the bundle map and
// the schema flag have their own mutexes, never held together.
package pgarchive
