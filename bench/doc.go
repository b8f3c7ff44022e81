// Package bench measures Aerie's engine side by side with the
// prometheus/tsdb library, in one process, on the same generated or real
// data, and reports every number as a ratio Aerie ÷ Prometheus
// (DESIGN.md §5). It reproduces the storage-engine evaluation of Heracles
// (seed 000, §4.4–4.5). `aerie bench` runs it; `make benchmarks`
// regenerates docs/BENCHMARKS.md from the medium-scale runs.
//
// # Engines
//
// Both engines run with their write-ahead log on and background flushing
// off, so each phase decides when data move to disk:
//   - Aerie: internal/tsdb with tuple size 8 and, by default,
//     wal.sync=interval (one background fsync a second). With
//     --aerie.wal-sync=batch every row is fsynced before it returns.
//   - Prometheus: tsdb.Open with DefaultOptions (its WAL writes records at
//     Commit and fsyncs only when a segment is full; no WAL compression)
//     and DisableCompactions. Its head m-maps full chunks to disk.
//
// # Phases
//
//  1. Main dataset (the scale's series, 12 h at 15 s; tsbs at 10 s).
//     insert_throughput: samples per second of write time. Rows are
//     generated untimed, 15 minutes of every target's scrapes at a time, and then written timed by GOMAXPROCS writers that own every
//     n-th target and write its scrapes in time order: one Appender and
//     Commit per scrape for Prometheus (series refs cached, as its scrape
//     loop does), one Head.AppendRow per scrape for Aerie (series joined
//     once). Joining or creating the series is timed for both.
//     tsbs_<pattern>_head: the six TSBS patterns of Heracles Table 2 as
//     PromQL through one promql.Engine over each storage while all data
//     are in the heads; instances are drawn by seed, each pattern runs once
//     unrecorded, then QueryRuns times alternating which engine goes first;
//     both results must agree (floats to 1e-9 relative) and be non-empty,
//     or the run fails. Median and p99 are reported.
//     Then both heads are flushed into 2 h blocks (Prometheus with
//     CompactHead per 2 h window, so neither engine merges blocks):
//     disk_bytes_per_sample counts every file of the blocks plus Aerie's
//     global tag dictionary, split into data and index. tsbs_*_disk repeat
//     the patterns over the blocks.
//  2. Flush dataset (FlushSeries series × 2 h): each engine in turn is
//     opened in an empty directory and loaded; head_bytes_per_series is the
//     settled Go heap (HeapAlloc after two GCs) it added, divided by the
//     series. Then the partition is flushed while one goroutine queries
//     the last 15 minutes of one random series in a loop through the
//     storage Querier (Heracles §4.5); flush_query_{p50,p99,p9999,max} are
//     those queries' latencies, flush_seconds the flush's wall time, and
//     flush_gc_pause/flush_gc_cycles the Go GC's stop-the-world pauses and
//     cycles during it. Aerie keeps its default of one flushed partition
//     in memory (hot, memory.hot_partitions), so queries after the flush
//     read memory as before it; the other phases set none, so …_disk and
//     the tuple table's disk columns read blocks.
//  3. Tuple sizes (Heracles §4.4.5): the flush dataset is loaded into Aerie
//     with tuple size 4, 8 and 16 and into Prometheus (120-sample chunks):
//     head and disk bytes per sample, median latency of 200 last-15-minute
//     queries over the head and over the block, and TSBS 5-1-1 over the
//     block. flush_idle_seconds and flush_cpu_seconds come from the tuple
//     size 8 and Prometheus flushes here, with no queries running.
//
// # Patterns
//
// On node-like data (node, random, real node_exporter captures) a host is
// the instance label, "1 metric" is node_load1 and the five metrics are
// node_load1, node_load5, node_load15, node_procs_running and
// node_memory_MemAvailable_bytes; double-groupby-1 averages
// rate(node_cpu_seconds_total{mode="user"}[1h]) per instance per hour. On
// tsbs a host is hostname and the metrics are cpu_usage_*. The 5-metric
// patterns copy __name__ into a label with label_replace after
// max_over_time and take the max by it, which needs PromQL's delayed name
// removal (enabled for both engines).
//
// Nothing here asserts a timing: the goals (Goals) are printed beside the
// ratios. Unit tests check that the harness measures what it says.
package bench
