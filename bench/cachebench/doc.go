// Package cachebench reproduces TSCache's evaluation (seed 001, §5) for
// Aerie's time-series cache (internal/cache): a client issues YCSB-TS-like
// queries against InfluxDB through three systems in one run, and the
// report gives each one's hit ratio, bandwidth delivered and latency,
// with the ratios the issue sets as goals. `aerie bench cache` runs it;
// `aerie bench report` turns its JSON into the section "Cache" of
// docs/BENCHMARKS.md.
//
// # Backend and data
//
// Debian's InfluxDB 1.6 (`influxd`, package influxdb) is started here on
// a free loopback port with a configuration whose directories are under
// the run's scratch directory, usage reporting, self-monitoring and the
// request logs off; the package's system service is never used. The
// dataset is synthetic, like the paper's Sensor set: measurement "sensor",
// tags sensor (sNNN) and room, eight float fields, one point a minute
// (small: 16 sensors × 14 days, medium: 16 × 60 days), values a daily
// cycle plus hashed noise rounded to 2 decimals (data.go), so the data
// are known without storing them. It is written over /write in batches
// of 5000 lines from two writers.
//
// # Queries
//
// A query is a key — one of the sensors × FieldSets (each field alone,
// two, four or all eight) — and a time range. Generate draws, with a
// fixed seed: the key Zipfian (YCSB's generator, θ 0.99, over the keys
// in a seeded shuffle); the end Latest over the data's minutes (YCSB's
// SkewedLatest: the newest minute most likely); the length Zipfian in
// minutes between the workload's bounds (YCSB-TS's minscanlength and
// maxscanlength), the start clipped to the first point. Workloads: full
// (1 minute to 1 week, the paper's overall comparison), small (1 minute
// to 1 hour), medium (1 hour to 1 day), large (1 day to 1 week; the
// paper's §5.2 three) and mixed (each query from one of small, medium
// and large, uniformly).
//
// # Systems
//
//  1. no-cache: every query is an InfluxQL SELECT over /query.
//  2. memcached-4h: Debian's memcached, started here with -m the cache
//     size, holding Fatcache-style fixed 4-hour chunks. A query is split
//     into the chunks it overlaps (item key: the SHA-1 of the query
//     without its range, and the chunk's start), fetched with one
//     multi-get; each run of missing chunks is one InfluxDB query over
//     the whole chunks, stored chunk by chunk; the answer is cut to the
//     range.
//  3. aerie-cache: internal/cache opened in this process (not through
//     the cacheserver front end) over a file of the scratch directory.
//     Get; on a hit the cache answers; on a partial hit InfluxDB is
//     asked for the missing head or tail only, which is Set; on a miss
//     InfluxDB is asked for the range, which is Set. The key is
//     cache.KeyOf of the query without its range; values are the float's
//     shortest text.
//
// Both caches get the same size: CacheShare (10 %, the paper's) of the
// dataset's bytes as counted here — 8 bytes of timestamp per value plus
// its text — rounded to whole MiB. Each workload runs each system from
// a fresh, empty cache on the same InfluxDB, with the same queries,
// from Clients goroutines (16 by default; the paper's 64 on 4 cores),
// each taking the next query in order.
//
// # Measures
//
// Hits, partial hits and misses per query; the hit ratio as bytes of the
// answers served from the cache ÷ bytes delivered; bandwidth as bytes
// delivered ÷ the workload's wall time; latency per query (mean, p50,
// p99); InfluxDB queries made; and the ratios against the goals: Aerie's
// hit ratio ≥ 92 %, its bandwidth ≥ 1.5× memcached's and ≥ 2.7× no
// cache's.
//
// # Invariants
//
//  1. Every CheckEvery-th query (50 by default) is checked: InfluxDB's
//     answer must equal the generated data, and every system's answer
//     must equal InfluxDB's, point for point and byte for byte; the
//     first difference stops the run with an error wrapping ErrMismatch,
//     and no report is written. That makes the small scale a test
//     (scripts/test.sh).
//  2. Nothing here asserts a timing or a hit ratio; the goals are
//     reported as met or behind.
//  3. Every server is stopped before Run returns, also on error or ^C
//     (the kernel kills them if the bench dies: Pdeathsig); files are
//     under --dir or a temporary directory removed after.
//
// Two cores are shared by the clients, InfluxDB, memcached, the cache and
// other work on this machine, so absolute numbers are indicative; the
// load averages at the start and end are in the report.
package cachebench
