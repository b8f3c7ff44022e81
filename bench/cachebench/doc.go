// Package cachebench reproduces TSCache's evaluation (seed 001, §5) for
// Aerie's time-series cache (internal/cache): a client issues YCSB-TS-like
// queries against InfluxDB through three systems in one run, and the
// report gives each one's hit ratio, bandwidth delivered and latency,
// with the ratios the issue sets as goals. `aerie bench cache` runs it;
// `aerie bench report` turns its JSON into the section "Cache" of
// docs/BENCHMARKS.md.
//
// Backend and data: Debian's InfluxDB 1.6 (package influxdb), a harness
// peer on loopback over the run's scratch directory (influxConfig), holds
// a synthetic dataset like the paper's Sensor set: measurement "sensor",
// tags sensor and room, eight float fields, one point a minute (small: 16
// sensors × 14 days, medium: 16 × 60 days), values known without storing
// them (data.go), written over /write from two writers.
//
// Queries (Generate): a key — a sensor and one of FieldSets — drawn
// Zipfian (YCSB's generator, θ 0.99), the end Latest over the data's
// minutes, the length Zipfian between the workload's bounds. Workloads:
// full (1 minute to 1 week, the paper's overall comparison), small (to
// 1 hour), medium (1 hour to 1 day), large (1 day to 1 week; the paper's
// §5.2 three) and mixed (a third from each of small, medium and large).
//
// Systems, each fresh for every workload, same queries, from Clients
// goroutines (16 by default; the paper's 64 on 4 cores):
//
//  1. no-cache: every query is an InfluxQL SELECT over /query.
//  2. memcached-4h: Debian's memcached, a harness peer with -m the cache
//     size, holding Fatcache-style fixed 4-hour chunks (chunks.go).
//  3. aerie-cache: internal/cache opened in this process (not through the
//     cacheserver front end); a partial hit asks InfluxDB for the missing
//     head or tail only (aerie.go).
//
// Both caches get the same size: CacheShare (10 %, the paper's) of the
// dataset's bytes as counted here — 8 bytes of timestamp per value plus
// its text — rounded to whole MiB.
//
// Measures: hits, partial hits and misses; the hit ratio as bytes served
// from the cache ÷ bytes delivered; bandwidth as bytes delivered ÷ the
// workload's wall time; latency per query (mean, p50, p99); InfluxDB
// queries made; and the goals: Aerie's hit ratio ≥ 92 %, its bandwidth
// ≥ 1.5× memcached's and ≥ 2.7× no cache's.
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
//     (harness.Fleet; the kernel kills them if the bench dies); files are
//     under --dir or a temporary directory removed after.
//
// Two cores are shared by the clients, InfluxDB, memcached, the cache and
// other work on this machine, so absolute numbers are indicative; the
// load averages at the start and end are in the report.
package cachebench
