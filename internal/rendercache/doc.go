// Package rendercache is the results cache of Graphite's /render
// (issue 15 §2): a TSCache slab store (internal/cache) between the render
// API and its archive.Store (rollup.Manager), caching the series a render
// fetches rather than its output — render functions read outside the
// requested range (movingAverage, timeShift, …) and consolidate to
// maxDataPoints, but every fetch is one series' points on one archive's
// grid, and dashboards fetch the same grids again, shifted a little at
// each refresh.
//
// The store must implement archive.GridStore: before reading, Grid tells
// which archive and grid Points would read; ReadGrid reads part of that
// grid. A key is the SHA-1 of the series' labels (their canonical
// string), the archive's index and step, and the archive's Version (and
// an epoch of the cache's own, see invariant 5). A point is a chunk of
// Chunk (16) buckets starting at a multiple of 16 steps (Unix time): its
// start time (Unix seconds) and its values' 8 bytes each, nulls (NaN)
// included, so a cached range is complete; only whole chunks are cached
// (a point per bucket cost a Get more than the engine's read of the
// same buckets). A Set of the chunks [a, b) covers [a, b−1] so that
// adjacent Sets merge. Points asks the cache for the cacheable part of
// the grid; on a hit it reads nothing else there, on a partial hit (head
// or tail) it reads only the rest, and then the buckets outside the
// cacheable part, through ReadGrid, stitching them on the same grid; what
// it read in the cacheable part it stores.
//
// Cacheable buckets of a grid: the whole chunks of those that end at
// least MaxFreshness before now (the wall clock), start before the grid's
// Stable time (a rollup level's done time: its newer buckets are computed
// from raw data at read time and change as data arrive), and start at or
// after Oldest+Reach (and, for the raw archive, Options.MinTime+Reach), so
// that retention never deletes data a cached bucket was computed from.
//
// Invalidation. The engine's late observer (tsdb.DB.SetLateObserver,
// through tsdb.LateObservers beside the PromQL results cache) reports
// every committed sample older than Horizon (now − MaxFreshness/2) per
// series, and every deletion, before the Commit or Delete returns: Written
// drops every cached key of the series (all its archives), Deleted those
// of every cached series the deletion's matchers select. Rollup levels
// compute backfilled ranges again later, asynchronously (internal/rollup,
// invariant 2): until then a level holds, and the store answers, its old
// buckets, which the cache may keep answering; the pass that computes
// them again bumps the levels' Version after its writes, and since the
// Version is part of the key, no bucket cached from the level before it
// is read after it. Level buckets are never stored from a range the level
// has not reached (Stable).
//
// Level buckets are cached in ranges waiting to be computed again, too
// (the alternative, skipping them, needs the waiting ranges read in the
// same instant as the level, and still a moment to invalidate at): they
// are the store's answer until the version moves. A level before its
// first pass answers nulls and is not cached at all (no Stable time).
//
// Locking: mu guards the generations (one bumped by every deletion, and
// 256 bumped by the writes of the series whose label hash falls in
// them), the registry and the epoch, and orders invalidations and
// stores: a Points call notes the deletion generation and its series'
// write generation when it starts, before it reads the cache or the
// store, and stores nothing if either moved before its store (taken
// under mu). Gets and store reads run without mu. Lock order: mu, then
// the cache's own lock.
//
// Invariants:
//
//  1. Points through the cache answers what the store's Points answers:
//     the same grid (Start, Step, number of values), Method, XFilesFactor
//     and values bit for bit (NaN positions too), each cached bucket being
//     the value ReadGrid gave it when it was stored.
//  2. After a write or deletion is acknowledged, no bucket computed
//     before it from data it changed is answered: the series' keys are
//     deleted first (Written, Deleted), and a Points call that read the
//     store during it stores nothing (its generation moved). This holds
//     for writes older than the horizon; younger ones fall in buckets that
//     are never cached, for appenders committed within MaxFreshness/2 of
//     their creation.
//  3. No level bucket at or after the level's done time is stored, and no
//     level bucket stored under one Version is answered under another.
//  4. No stored bucket ends within MaxFreshness of the wall clock, and no
//     bucket is answered from the cache whose data window reaches before
//     the archive's retention (Oldest, MinTime): the store's own answer
//     for it may have changed.
//  5. The registry (series → keys) lives in memory and is bounded
//     (Options.MaxSeries): when full, a new epoch makes every key
//     unreachable and the registry starts empty, since a series it forgot
//     could not be invalidated. The server removes the cache file at
//     start: no entry outlives the process that could invalidate it.
package rendercache
