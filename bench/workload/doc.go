// Package workload makes the datasets of Aerie's benchmark: the same rows
// are written to Aerie's engine and to prometheus/tsdb, so that both store,
// compress and query identical data. A Workload is a set of targets; each
// target has a fixed list of series (Series) and a stream of rows
// (Scraper), one row per scrape, in which every value shares the scrape's
// timestamp — the shape of Prometheus' scrape appends.
//
// Generators (New):
//
//   - "node": node_exporter targets as Prometheus scrapes them (job="node",
//     instance="host-NNN:9100"), 517 series each: node_cpu_seconds_total
//     for 8 cpus × 8 modes, netdev and netclass per device (docker0, eth0,
//     eth1, lo), diskstats per disk (nvme0n1, sda, sdb), 7 filesystem
//     series per mount, ~50 node_memory_* gauges, load, procs, vmstat,
//     netstat, sockstat, pressure, per-collector scrape duration and
//     success, go_* and process_* of the exporter, a go_gc_duration_seconds
//     summary, an http_request_duration_seconds histogram, and the 5 series
//     Prometheus adds (up, scrape_*). The series are a table of families
//     (families.go); names, label sets and value behaviour were calibrated
//     against a 27-minute, 1 s capture of a Debian prometheus-node-exporter
//     1.5 (/work/shared/data/node-1s-a.rwpb.zst): counters advance at
//     per-target rates drawn from realistic ranges, as integers (bytes,
//     packets, 512-byte sectors) or with the decimals the kernel gives
//     (cpu seconds in 1/100 s ticks, disk times in ms, pressure in µs);
//     error and drop counters are mostly constant, with rare increments;
//     memory gauges random-walk in multiples of 4096 bytes; load averages
//     are the kernel's exponential averages of a noisy run queue, with 2
//     decimals; small integer gauges (procs_running 0–10) step by ±1;
//     sizes, limits and info series are constant; durations are noisy
//     values in whole nanoseconds. About 43% of the series are constant
//     over a run, as in the real capture (65% there, on a nearly idle VM).
//     A target reboots now and then (on average once per 100 h, at times
//     drawn from its seed): its counters restart near 0 and
//     node_boot_time_seconds and process_start_time_seconds change.
//   - "random": the same series and timestamps as "node" for the same
//     Spec, with values uniform in [0, 1) (the "random" dataset of the
//     Heracles paper): the worst case for value compression.
//   - "tsbs": TSBS's devops cpu-only use case. Each host has the 10
//     series cpu_usage_user … cpu_usage_guest_nice with TSBS's 10 tags
//     (hostname="host_N", region, datacenter, rack, os, arch, team,
//     service, service_version, service_environment), drawn in TSBS's
//     order from its choices. Each field is TSBS's clamped random walk:
//     it starts uniform in [0, 100), steps by a normal(0, 1) draw per row
//     and is clamped to [0, 100]; like TSBS's cpu-only serializer
//     (ToPointAllInt64), rows carry the walk truncated to an integer.
//     Deviations from TSBS: TSBS draws from one global math/rand stream
//     across hosts, here every host has its own stream seeded from (Seed,
//     host), so the tags and values for a seed differ from TSBS's while
//     their distributions are the same; TSBS writes every host at the same
//     instants, here the rows get Spec.Jitter (default 100 ms; a negative
//     Jitter gives TSBS's exact ticks) but no per-host phase; the start
//     time is Spec.Start, not TSBS's 2016-01-01.
//
// FromFile loads real data instead: a remote-write dump (the format of
// /work/shared/data/README.md: a zstd stream of uint32 big-endian lengths
// and raw prompb.WriteRequest records) or a text exposition file, Prometheus
// text or OpenMetrics, in which every sample carries its timestamp. Series
// are grouped into targets by (job, instance), targets sorted by job then
// instance; a target's rows are the distinct timestamps of its series, and
// Row.Present marks the series a row lacks. An identical repeated sample is
// dropped; two different values for one series and timestamp are an error.
// Values are kept as they are, stale markers (NaN) included. Interval is
// the median time between a target's consecutive rows.
//
// Generated workloads stream: a Scraper keeps the state of one target's
// series and makes each row when asked, so a run of any length needs memory
// for one row per running Scraper, plus the label sets of the targets whose
// Series were asked for (cached, since they are fixed for the run). A
// generated target's k-th row is at
//
//	T = Start + k·Interval + phase(target) + jitter(target, k)
//
// with phase in [0, Interval−Jitter) (0 for tsbs) and jitter in
// [0, Jitter), both hashes of (Seed, target, k); there are
// ⌊Duration/Interval⌋ rows per target.
//
// Invariants:
//  1. Scraper(i)'s rows are a pure function of (kind, Spec, i) — or of the
//     file for FromFile: every Scraper of a target yields the same rows, in
//     any process, whatever other Scrapers ran before or run concurrently.
//     Each target has its own random streams, seeded from (Seed, target).
//  2. A target's rows have strictly increasing T. A generated target's
//     k-th row lies in [Start+k·Interval, Start+(k+1)·Interval), and the
//     offsets T−(Start+k·Interval) of one target differ by less than
//     Jitter (are equal when Jitter < 0).
//  3. Every row's T lies in [MinTime(), MaxTime()], and both are the T of
//     some row.
//  4. Samples() is the exact count of present values in all rows of all
//     targets.
//  5. Series(i) holds unique, valid label sets sorted by labels.Compare and
//     is the same slice on every call; Row.Values[j] and Row.Present[j]
//     belong to Series(i)[j], and len(Row.Values) == len(Series(i)).
//  6. Generated rows have Present nil (every series in every row); a
//     FromFile row has Present nil unless a series of the target lacks it,
//     and then a value at an absent position is 0.
//  7. node counters (names ending in _total, _bucket, _sum, _count) never
//     decrease, except in the first row after a reboot, where
//     node_boot_time_seconds changes too; histogram buckets are cumulative.
//  8. The 8 node_cpu_seconds_total modes of one cpu advance in total by the
//     time between two rows, to within their rounding to 0.01 s.
//  9. "node" and "random" with equal Specs have equal Series and equal T in
//     every row.
package workload
