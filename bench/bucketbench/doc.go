// Package bucketbench measures Aerie's object-storage tier against a
// Thanos-style layout on the same bucket (issue 12 §3; `aerie bench
// bucket`, `make benchmarks`).
//
// For each workload (node: one node_exporter target's metric families;
// tsbs: one cpu field across hosts) it generates eight days of data and
// writes them into Aerie's engine and into prometheus/tsdb (library,
// v0.310.0), compacts both as far as their defaults go (Aerie's
// compaction levels; Prometheus' 2 h × 3ⁿ ranges up to 31 days, as its
// server sets them for a long retention), and uploads both sets of
// blocks into one filesystem bucket: Aerie's in its own layout
// (internal/bucket: metadata objects with index, timestamp columns and
// window CRCs; metrics objects with the block metrics, read only by value
// search, which the bench does once after the queries; data objects of
// grouped extents), Prometheus' as they are
// (bench/thanosstore, read as Thanos' store gateway reads them).
//
// Every request to the bucket, of either reader, waits Latency (30 ms)
// before it is served: object storage's per-request cost. Both readers
// open every block first (Aerie: its metadata object; Thanos: the index
// header — TOC, symbols, postings offset table) and keep that in memory,
// as their servers do; neither caches data between queries, so every
// query pays for its data. A query runs on every block it overlaps in
// parallel, as both servers do.
//
// Queries select 1, 10 and 100 series over the last 1 h, 24 h and 7 d of
// the data, a few instances each (other targets, other end times). For
// each, both readers' answers must be equal (else the run fails), and the
// report gives per query: GETs, round trips (sequential phases of GETs),
// bytes fetched, bytes needed and latency. Bytes needed are the bytes of
// data the query decodes: for Aerie the value-column ranges of its series
// and time range (the timestamp columns are metadata); for the Thanos
// layout the chunks it decodes. Read amplification is fetched ÷ needed.
//
// Invariants:
//  1. Both readers answer from the same samples: the run fails on any
//     difference of series, timestamps or values.
//  2. Neither reader's data reads are cached across queries; metadata
//     (Aerie's metadata objects, Thanos' index headers) are, and their
//     size is reported beside.
//  3. Nothing asserts a timing; small scale runs in CI to keep the code
//     working, medium in `make benchmarks`.
package bucketbench
