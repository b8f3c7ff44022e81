// Package sensorbench measures Peregreen's operations on Aerie (issue 13
// §4; seed 004 §4, scaled to this machine): upload of whole sensor
// histories, search by value from the index alone, and extraction, against
// VictoriaMetrics. `aerie bench sensors` runs it; `aerie bench
// report` turns its JSON into the section "Sensor histories" of
// docs/BENCHMARKS.md.
//
// # Data
//
// Sensors at 1 Hz from 2024-01-01 00:00 UTC, each value a base level, a
// daily cycle, a mean-reverting random walk (Ornstein–Uhlenbeck, 30 min
// time constant) and noise, quantized to 0.01, deterministic by seed and
// sensor (data.go). Scales: small 4 sensors × 6 h (CI), medium 100 × 7
// days, large 100 × 30 days. Each sensor's history is one CSV file of
// Peregreen's `t,v` rows (ms timestamps, two decimals), written once
// before anything is timed and kept in --dir for later runs; the files'
// bytes are the "raw CSV" of the compression figure. While writing them
// the generator records each sensor's extremes per hour and the sum of
// its values, from which every answer is checked.
//
// # Peers
//
//   - aerie: this binary's `serve --data.dir=DIR --http.addr=ADDR` with
//     every other setting at its default (the object-storage tier on, on
//     a filesystem bucket in DIR; 1-hour metric intervals). Its WAL syncs
//     in batch mode: an upload is answered after its batches' WAL records
//     are fsync'd.
//   - vm: VictoriaMetrics single-node (../shared/peers/victoria-metrics,
//     --vm) with -retentionPeriod=100y and -search.latencyOffset=0s. It
//     acknowledges a write before anything is fsync'd.
//
// Both run as bench/harness peers: in a directory of the run, on a free
// loopback port, stopped before Run returns.
//
// # Method
//
//  1. Upload. Every sensor's file is the body of one request, --writers
//     clients (4) each taking the next sensor: Aerie's `POST
//     /upload/{sensor}/csv/0-1-,/float64` into a fresh server (each answer
//     must report the sensor's points, first and last time), and
//     VictoriaMetrics' `POST /api/v1/import/csv?format=1:time:unix_ms,
//     2:metric:{sensor}` into another, the same bytes. Then one `aerie
//     import --format=sensor-csv --sensor.format=0-1-, --sensor.type=float64
//     --data.dir=DIR` of every file (NAME.csv is sensor NAME) into a third
//     directory. records/s
//     is records over the wall time from the first request (process start)
//     to the last answer (exit); CPU is the server's utime+stime from
//     /proc/PID/stat over that interval, or the import processes' own.
//  2. Disk. Aerie's upload directory once it has flushed what is due (no
//     backfill generation left, its loop's first partition flush, and its
//     flush, compaction and bucket counters unchanged for a few seconds);
//     its newest head partitions stay in the WAL, as they would in
//     production, which the report notes. `aerie import` flushes
//     everything into blocks at its end. VictoriaMetrics after
//     /internal/force_flush once its in-memory parts are on disk. Every
//     file of a directory counts, once the sum has not changed for a
//     second; stored ÷ raw is that over the raw CSV bytes (Peregreen:
//     172 GB of 750 GB). Index bytes per sensor-year: the sum over sensors
//     of /meta's index_bytes (block metrics) ÷ its intervals (1-hour
//     metric intervals holding points) × 8766, after the import (every
//     point in blocks) and after the upload (the head's points not
//     counted); Peregreen's is 110 KB.
//  3. Decode. The import directory is opened in this process with
//     internal/tsdb (background loops off), compacted as the server's loop
//     would (untimed), and one goroutine iterates every sample of every
//     sensor through a Querier twice: the first pass checks counts, times
//     and the sum of values against the data and warms the page cache and
//     the engine's caches; the second is timed. samples/s per core is the
//     samples ÷ this process' CPU seconds (getrusage) over the second
//     pass. This is not a Go benchmark: it decodes the blocks the bench
//     wrote, as a query would.
//  4. Search. Both servers are restarted over their data (Aerie flushes
//     what became due when it opens; the run waits until it rests) and
//     every sensor is counted again (/meta; count_over_time). Two
//     conditions over every sensor's whole range: Peregreen's amplitude
//     search `min lte A & max gte B` with bounds beyond every value (every
//     interval is read and answered), and a selective one whose bounds are
//     the medians of the hourly minima and maxima (half a resolution step
//     off, so that no comparison is a tie). Per sensor: Aerie's `POST
//     /search/{sensor}/{from}-{to}/json` with the condition as body, and
//     VictoriaMetrics' `/api/v1/query_range` at step 1h of
//     `min_over_time(s[1h] offset 1ms) <= A and max_over_time(s[1h] offset
//     1ms) >= B`, whose windows are the same aligned hours as Aerie's
//     metric intervals. All sensors at once: Aerie's
//     /api/v1/sensor/search with match[]={__name__=~"sensor_.*"}, and the
//     same PromQL over that selector with the name copied into a label to
//     match on. Each query runs once unrecorded, its answers compared with
//     the hours of the data that meet the condition (a difference fails
//     the run), then Repeats times per peer (all sensors: at least 10),
//     the peers taking turns to go first. One client; latency is from
//     sending the request to reading the answer's last byte; median and
//     p99 are reported, and the ratio of medians Aerie ÷ VictoriaMetrics
//     (goal ≤ 0.1).
//  5. Extraction. For 1 h, 24 h and 240 h (where the data cover it),
//     instances of whole hours of sensors drawn by seed, and each of
//     Peregreen's modes — full (interval 0, func none), sampling (60000,
//     none), aggregation (3600000, min,max,avg) and transformation (0,
//     movavg:10) — and writers (csv, json, msgp): `GET
//     /extract/{sensor}/{from}-{to}/{interval}/{func}/{writer}`; for the
//     full mode also VictoriaMetrics' /api/v1/export of the same ranges
//     (JSON lines). A case has about ExtractRecords records, within
//     [MinRequests, MaxRequests] requests, after one unrecorded request;
//     two clients send them, each reading and decoding its whole answer
//     (decoders of its own, not the server's) and checking its count of
//     records (3600 an hour full or transformed, 60 sampled, 1
//     aggregated) and that they lie in the range. records/s is over the
//     case's wall time; records per CPU second divides by the server's
//     CPU seconds over the case: the rate per core (goal for the full
//     mode: Aerie ≥ VictoriaMetrics' export). The kernel counts CPU time
//     in 10 ms ticks, so the rates of cases that cost the server less than
//     a second (short ranges at small scale; sampling and aggregation,
//     whose answers are small) are coarse.
//
// # Invariants
//
//  1. Every answer is checked against the data: upload answers and
//     /meta (count, first, last), VictoriaMetrics' counts, decoded counts,
//     times and sums, search intervals of both peers and both Aerie
//     endpoints, extraction record counts and times. A mismatch stops the
//     run with an error wrapping ErrMismatch; no report is written.
//  2. Nothing here asserts a timing; TestRun runs the small scale end to
//     end (this repository's aerie against VictoriaMetrics, about a
//     minute), the other tests check the generator and the decoders.
//  3. Every server is stopped before Run returns, also on error or ^C;
//     data directories are under --dir (or a temporary directory, removed
//     after).
//
// Two cores are shared by the clients and the server under test, so
// absolute numbers are indicative; compare ratios and per-CPU-second
// rates.
package sensorbench
