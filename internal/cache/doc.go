// Package cache is TSCache (seed 001): a cache of time-series query
// results by (query key, time range), with partial hits, in large
// write-once slabs of one cache file, a two-layer index and a time-aware
// replacement policy. Aerie uses it three ways (DESIGN.md §2.7): results
// cache, chunk cache of the bucket tier, and the standalone `aerie cache`
// server (internal/cacheserver).
//
// Interface (§3.2): Set(key, start, end, fields) stores the complete
// result of a query over [start, end] (inclusive, in the client's time
// unit); Get(key, start, end, fields) answers a hit (the whole range), a
// partial hit (only when the head or the tail of the range is cached, and
// the cached part's estimated size — the key's density times its length —
// is at least PartialMinBytes, §3.3) or a miss. A key is the SHA-1 of the
// query without its time range. A point is a timestamp and an opaque
// value; a field (column) is a list of points.
//
// Slabs (§3.4; docs/format/cache.md): the file is a row of slots of
// SlabSize bytes. Points of one field gather in an open slab in memory;
// sealed, they are sorted by (time, value), equal points merged, and
// written in one write to a free slot (O_DIRECT where the filesystem
// takes it): a header with the key array (each key with the hull of its
// points in the slab and its run of data bytes), a time marker and a
// CRC32C per 4 KiB data block, and a header CRC. A point is its time as a
// delta from the previous point of its run, its key bit array (empty for a
// point of its run's key alone: the bits from the byte of that key's bit
// otherwise) and its value: a few bytes over the value for regular series,
// where the first format's fixed 8-byte time and full-width bit array took
// 2.3× the bytes of the bench's sensor values. The data are in runs, one per key, each in time order: a Get reads
// only its key's run, narrowed by the time markers (with every key's
// points in one time order, as the paper lays them out, a Get of one key
// among many whose ranges overlap read all of theirs). Equal points of
// two keys are stored twice, so every run is whole. A slab holds at most
// MaxKeysPerSlab keys; one whose key array is full is sealed (the format
// takes up to 65535).
//
// Indexes (§3.5), in memory: the key index maps a key to its cached time
// ranges (ordered, disjoint, merged when they touch), its fields and its
// density; the slab index maps a field to its virtual time ranges (the
// connected components of its slabs' time ranges), each a list of slab
// nodes with a 64-bit Bloom filter of their keys and their time range. A
// read goes key index → field → virtual ranges → slabs passing the Bloom
// filter and the time test → the blocks the time markers point to.
//
// Replacement (§3.6): a FIFO partition in data-time order and an LRU
// partition of old slabs that were read again; ghost slabs tune the LRU's
// share (policy.go). Compaction (§3.7): a virtual range where more than
// CompactSlabs slabs hold one same instant (the paper counts the range's
// slabs; with wide query ranges every slab of a field joins one range, so
// counting them would rewrite the field at every new slab) is rewritten,
// newest slab first, into as few slabs as hold its points, duplicates
// merged and points of deleted keys dropped.
//
// A Set stores only the points outside the ranges its key has cached
// already (those are in the slabs, invariant 2): a dashboard's shifted
// range adds its new tail, not a second copy of the rest.
//
// Invalidation: Delete(key) forgets the key's ranges and gives it a new
// epoch when it is set again; slab key entries name their epoch, so points
// of an earlier epoch are never returned.
//
// Locking: one mutex guards the indexes, the policy and the file's
// writes; Set, Delete and Compact hold it throughout (a Set that seals a
// slab writes one slab; a compaction reads and writes its range's slabs
// under it). A Get holds it to find the slabs it needs, which it pins, and
// again to record what it read; it reads and decodes the blocks without
// it. A pinned slab's slot is not reused until the last Get reading it is
// done; Close waits for those Gets.
//
// Invariants:
//
//  1. A Get returns only points that were Set for its key at its current
//     epoch, each once, in (time, value) order.
//  2. A range is in a key's cached ranges only while every point Set for
//     the key in it is in a slab or an open slab: a range is added before
//     its points are placed, and whenever a slab leaves (eviction,
//     corruption) the spans of the Sets that put each key's points in it
//     leave that key's ranges (the hull of its points there, when those
//     spans are not known: slabs read back at Open); a compaction moves points without removing any point of a
//     live key. So a hit's data are complete over the range it claims.
//  3. A partial hit covers [start, x] or [x, end] of the request, never a
//     middle part, and only when its estimated size reaches
//     PartialMinBytes.
//  4. Every slab read is checked: its header's CRC when it is loaded, each
//     data block's CRC when it is read. A slab failing a check is dropped
//     with the ranges it backed (invariant 2); the Get goes on without it.
//  5. The key index reaches disk only at Close (a snapshot with a CRC,
//     read and deleted at Open). A cache that was not closed, or whose
//     snapshot or any slab it names fails a check, starts empty: a crash
//     costs the cache's content, never a wrong answer.
//  6. Size and memory are bounded: an open slab holds a slot of the file
//     from its first point (so data in memory and on disk together fit in
//     Size); at most max(1, min(64, slabs/2)) are open; at most
//     slabs×MaxKeysPerSlab+1024 keys (the least recently used eighth is
//     forgotten when a new key would pass the bound).
package cache
