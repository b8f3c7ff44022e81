// Package rollup keeps Graphite-style round-robin archives over Aerie's
// engine (Tgres's RRAs, seed 002; DESIGN.md §2.8): storage schemas
// (`10s:6h,1m:7d,1h:1y`) and aggregation rules in carbon's own terms,
// matched by the series' path (__name__), first match wins, with carbon's
// defaults for unmatched series.
//
// A schema's first archive is the raw data: the engine's samples, read on
// the archive's grid (AppendSlots) and deleted past its duration through
// the raw engine's per-series retention (Retainer, tsdb.Options.
// SeriesRetention). Every further archive is a level: an engine of its
// own under <data.dir>/rollup/<step> (so its blocks have their own
// resolution, partitions and retention), written by the Manager from the
// raw data once they are settled, and read by the Graphite render API
// (Manager implements graphite.Store, picking archives as graphite-web
// does, and archive.GridStore: the grid it reads, before reading it, for
// the render cache) and by PromQL with the `rollup=<step>` parameter.
//
// Consolidation: raw samples are first put on the schema's finest grid —
// a slot is the method over the samples inside it (average: their mean;
// count: how many), an empty slot is a gap unless the last earlier
// sample is at most a heartbeat older than the slot's end — and a
// level's bucket is the method over its slots, known only if at least
// xFilesFactor of them are (graphite-web's sense). Average over equal
// slots is the time-weighted mean over the known time (Tgres's), and a
// gap is a gap, never interpolated. Unlike whisper, every level is
// computed from the finest grid, not from the next finer archive, so an
// average of a partly known bucket weighs each known slot equally. A bucket
// that is already older than the raw archive's duration (from the wall
// clock) when it is rolled up — history sent late or in a burst, a
// backfill — is consolidated without the xFilesFactor, as whisper writes
// such points straight into the coarser archive. Until the level reaches them, the newest buckets of a level
// archive are computed from the raw data at read time, as whisper updates
// its coarser archives on every write.
//
// Invariants:
//  1. A level's state (the file `state`, docs/format/rollup.md) names a
//     time only after every bucket before it is durable in the level's
//     engine; a crash before the state is written makes the next pass
//     write the same buckets again, which the engine takes as no-ops
//     (identical samples), so a level never has a hole and never two
//     values for one bucket.
//  2. Ranges are rolled up in time order, each once the raw head takes
//     no more samples in it (its newest time minus the out-of-order
//     window or half a partition). Samples that reach a range later go to
//     the raw engine's backfill, which reports the range
//     (tsdb.Options.OnBackfill) before the write is acknowledged; the
//     range is recorded in the state file and every level computes it
//     again at the next pass. A bucket that was empty gets its value; one
//     that already held another keeps it (first write wins) and is counted
//     in aerie_rollup_stale_buckets_total. A pass that computes ranges
//     again moves the levels' version (archive.Grid.Version) after its
//     writes: caches of level buckets key on it.
//  3. Raw samples of a schema's series are dropped only past the raw
//     archive's duration and only once every level of the schema has
//     consumed them (Retainer.Cutoff ≤ each level's done time and ≤ the
//     oldest range waiting to be computed again).
//  4. A level's engine keeps a series' buckets for its own schema's
//     duration at that step; the engine's retention is the longest of
//     them.
//
// Locking: Manager.runMu serializes passes; stMu guards the state (done
// times, ranges to redo) and its file, and is taken under runMu, never
// the reverse. The Retainer reads a snapshot published through atomics, so
// queries never wait for a pass.
package rollup
