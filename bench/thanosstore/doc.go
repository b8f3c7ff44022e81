// Package thanosstore reads prometheus/tsdb blocks from an object bucket the
// way Thanos' store gateway does (pkg/store/bucket.go, pkg/block/indexheader
// in thanos-io/thanos). It is the peer Aerie's object-storage tier is
// benchmarked against: the same data as plain Prometheus blocks, uploaded as
// they are, and read with the requests Thanos would make. It does not import
// Thanos; it reimplements the read pattern on prometheus/tsdb's index,
// chunks and chunkenc packages and on objstore.
//
// What it reproduces:
//
//  1. Layout. Upload copies a block directory to prefix/ULID/ as is:
//     chunks/000001…, index, and meta.json last, as Thanos' block.Upload
//     does, so a block whose meta.json is visible is complete. Blocks with
//     tombstones are refused.
//
//  2. Opening. OpenBlock makes the requests the store gateway makes to load
//     a block and build its index-header (indexheader.WriteBinary): GET
//     meta.json, LIST chunks/, HEAD index for its size, then range GETs of
//     the index for its 5-byte header, its 52-byte TOC, its symbol table
//     [TOC.Symbols, TOC.Series) and its postings offset table
//     [TOC.PostingsTable, end): 7 requests, counted in Stats.MetaGets and
//     Stats.MetaBytes. The result stays in memory for the Block's life.
//
//  3. Postings phase. Matchers become one posting group per label name
//     (matchersToPostingGroups): an equality looks up its one value in the
//     header; a regexp or negative matcher is tested against every value
//     the header has for the name; matchers that match the empty string
//     make a group that subtracts the values they reject. Only keys the
//     header has are fetched, and a group that selects nothing ends the
//     query before any GET. When every group subtracts, the all-postings
//     key is added. The lists' byte ranges come from the postings offset
//     table (a list ends where the next begins; the last ends at the table,
//     as Thanos estimates it), are sorted, coalesced by the gap partitioner
//     and fetched with range GETs of the index in parallel. The lists are
//     then intersected and subtracted as ExpandedPostings does.
//
//  4. Series phase. A posting is an entry's offset/16 (index format v2).
//     Thanos reads EstimatedMaxSeriesSize bytes from each entry's start;
//     the ranges are coalesced by the same partitioner and fetched in
//     parallel. An entry longer than what was read is fetched again, alone,
//     with its real length (loadSeries' re-fetch). Labels are resolved with
//     the header's symbol table; only chunk metas overlapping [mint, maxt]
//     are kept (decodeSeriesForTime), and series with none are dropped.
//
//  5. Chunks phase. Per segment object, chunk offsets are sorted and each
//     covers EstimatedMaxChunkSize bytes from its start; the partitioner
//     coalesces them and the parts are fetched in parallel. A chunk longer
//     than what was read is fetched again with its real length
//     (loadChunks' re-fetch). XOR chunks are decoded and the samples in
//     [mint, maxt] kept. Other encodings (native histograms) are an error
//     naming the object and offset. Phases 4 and 5 run once per batch of
//     SeriesBatchSize postings, as Thanos' blockSeriesClient does.
//
//  6. Counting. Select counts its range GETs and the bytes they returned
//     (less than asked where a range runs past an object's end) in
//     Stats.Gets and Stats.BytesFetched. Stats.RoundTrips counts its waits
//     for the bucket. A phase with n parts costs ceil(n/16) round trips
//     (16 GETs in flight at most), plus the longest chain of re-fetches one
//     part made after its first GET. A query that finds data in one batch,
//     with at most 16 parts per phase and no re-fetch, costs 3. A query the header rules out costs 0. A query whose postings
//     intersect to nothing costs 1.
//
// Constants, all from thanos-io/thanos pkg/store/bucket.go:
//
//	partitionerMaxGap      = 512 KiB  PartitionerMaxGapSize
//	estimatedMaxSeriesSize = 64 KiB   EstimatedMaxSeriesSize
//	estimatedMaxChunkSize  = 16000 B  EstimatedMaxChunkSize
//	seriesBatchSize        = 10000    SeriesBatchSize
//
// Thanos lowers the two estimates to the maxima its compactor records in
// meta.json's "thanos" section. A Prometheus meta.json has none, so the
// defaults above apply. The bound of 16 parallel GETs per phase
// (maxConcurrentGets) is this package's choice. Thanos' per-block errgroups
// have no bound.
//
// What it simplifies or does differently:
//
//  7. No caching between queries. Thanos keeps postings, series and
//     expanded postings in an index cache: in memory by default
//     (--index-cache-size, 250 MB), or memcached/redis. It can also cache
//     chunks in a caching bucket, which is off by default. Here every Select
//     is a cold query. It costs what Thanos' first query after a start
//     costs, or a query whose keys were evicted. A Thanos store gateway
//     without memcached still has the in-memory cache, so repeated queries
//     there make fewer requests than here.
//
//  8. The index-header lives in memory only. Thanos writes it to local disk
//     and keeps 1 in 32 postings offsets in memory
//     (DefaultPostingOffsetInMemorySampling), reading the rest from that
//     file. Both answer the same ranges with no bucket request.
//
//  9. Checksums are verified. Thanos reads postings lists, series entries
//     and chunks without their CRC32C. Here a postings range runs to the
//     next list's start, not 4 bytes short of it, and a re-fetch includes
//     the 4 CRC bytes. These cost at most 8 more bytes per list and no extra
//     request, and corruption becomes a *CorruptionError naming the object
//     and offset instead of wrong samples. Corrupt or truncated objects
//     never cause a panic.
//
//  10. Not reproduced: lazy expanded postings (off by default in Thanos),
//     downsampled blocks and aggregates, index format v1, query sharding,
//     limits, and deduplication across blocks. Select reads one block;
//     callers merge blocks.
//
//  11. A short series entry is fetched again alone, and the entries after
//     it in its part still decode from the part's first GET. Thanos'
//     loadSeries continues the rest of the part from the re-fetched range
//     instead. Both make the same GETs when only the part's last entry is
//     short.
package thanosstore
