// Package resultcache is the results cache in front of Prometheus'
// /api/v1/query_range (DESIGN.md §2.7), storing into a TSCache slab store
// (internal/cache).
//
// A request is split at multiples of SplitInterval (a UTC day by
// default), as Thanos' and Mimir's query frontends split it; each part is
// a cache key: the SHA-1 of the normalized query (PromQL's own printing of
// the parsed expression), the step, the start's phase on the step grid,
// the lookback delta and the part's interval. The grid points of a part
// are its cache times; a point is one sample of one series: the hash of
// the series' labels and Prometheus' text of the value, so answers are
// rebuilt byte for byte as the engine writes them (the labels are kept
// once per series in an in-memory table; two label sets of one hash: that
// answer is not stored; a series the table dropped: the part is a miss).
// A part the cache has whole is a hit;
// one whose head or tail it has is a partial hit, and only the missing
// tail or head is asked of the engine; adjacent missing ranges across
// parts are one engine query. Evaluation times within MaxFreshness of now
// are never stored.
//
// Not cached (passed to the engine unchanged): requests with parameters
// other than query, start, end, step, timeout and lookback_delta (stats,
// rollup levels, limit), @ modifiers, negative offsets, smoothed
// selectors, answers with warnings or infos, native histograms, parts
// whose data reach past the storage's retention (Options.MinTime), and
// requests that do not parse — the engine answers those with its errors.
//
// Invalidation: the cache is the engine's late observer
// (tsdb.DB.SetLateObserver). Every committed sample older than the
// freshness horizon is reported per series (in one call per commit)
// before its Commit returns; the parts whose query has a selector
// matching the series and whose interval's data window
// (promql.FindMinMaxTime: ranges, offsets, lookback) holds the sample are
// deleted. A deletion drops every part whose window overlaps it.
//
// Locking: mu orders invalidations and stores; a request notes the
// invalidation count when it starts and stores nothing if it changed
// before the store.
//
// Invariants:
//
//  1. An answer through the cache is byte for byte the engine's answer to
//     the same request at the time the parts it uses were computed.
//  2. After a write or deletion is acknowledged, no answer uses a part
//     computed before it whose data window holds it: the part is deleted
//     first (Written, Deleted), and a part being computed during it is
//     not stored (the invalidation count moved).
//  3. No part stores evaluation times after now − MaxFreshness, or data
//     before Options.MinTime.
//  4. The registry (key → selectors and window) lives in memory only; the
//     server removes the cache file at start, so no part survives the
//     process that could invalidate it.
package resultcache
