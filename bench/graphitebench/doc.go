// Package graphitebench measures Aerie as a Graphite server (issue 14 §5;
// Tgres, seed 002): ingest over carbon's plaintext protocol against
// Debian's carbon-cache, and render latency of typical Grafana panels
// against graphite-web, on the same data, in one run. `aerie bench
// graphite` runs it; `aerie bench report` turns its JSON into the section
// "Graphite" of docs/BENCHMARKS.md.
//
// # Data
//
// Node-like hosts of MetricsPerHost (50) series each —
// bench.hostNNNNN.{cpu.N.user…, mem.*, load.*, disk.sdX.* and net.ethN.*
// counters, app.*, proc.*, tcp.*, swap.*} — one point every 10 s, the last
// at the run's start rounded down to 10 s minus 10 s. Values are integers
// from a hash of (host, metric, step): gauges in [0, 1000), counters
// growing by 100 to 999 a step; so every sum is exact in float64 and the
// expected count and sum of every point are known (data.go). Scales:
// small 5 K series on both peers for 5 minutes (30 points a series; CI),
// medium 500 K series into Aerie alone (issue 14's figure), then 20 K into
// both, for 10 minutes (60 points a series). Carbon gets 20 K because each whisper file of the
// schema holds 8640 slots (104 KB) and carbon creates and writes files one
// at a time: 500 K would be 52 GB of whisper; the ratios against carbon are
// at equal series counts.
//
// Both peers use the same storage-schemas.conf (Schemas: one 10 s archive
// for a day, so that 1 h, 6 h and 24 h panels read the same resolution on
// both) and carbon's default aggregation (average, xFilesFactor 0.5).
//
// # Peers
//
//   - aerie: `aerie serve` (this executable, or --aerie) over a fresh data
//     directory, with a configuration file that turns on carbon's
//     plaintext TCP listener only (UDP, pickle and statsd off) and names
//     the two carbon files (aerie: rollup:); every other setting at its
//     default (the WAL fsync'd before each commit returns: sync batch).
//   - carbon: Debian's carbon-cache and graphite-web as
//     internal/graphite/graphitetest starts them (StartDir): no creates or
//     updates limit, unlimited cache, sorted write strategy, whisper
//     without fsync, no self-instrumentation; graphite-web under Django's
//     threaded development server reading whisper and carbon's cache.
//
// # Method
//
//  1. Ingest. The payload of each of Clients (4) TCP connections — the
//     lines of the hosts h with h%4 == c, step after step — is generated
//     before the clock starts. The clients write it in 256 KB writes as
//     fast as the server reads (TCP backpressure), half-close, and wait
//     for the server to close. Accepted points/s: points over the time
//     from the first dial until every connection was closed by the
//     server. Stored points/s: points over the time until every point was
//     stored — for Aerie, until aerie_graphite_stored_total (committed to
//     the engine) has grown by the points sent (polled every 100 ms); for
//     carbon, until its cache holds no point of any series (graphitetest's
//     Flush, polled every 300 ms). CPU seconds: the server's utime+stime
//     (/proc/PID/stat) over the same interval; RSS: VmRSS sampled every
//     250 ms (peak) and at the end. Then every point is counted where it
//     is kept: Aerie through PromQL (sum(count_over_time), count(...) and
//     sum(sum_over_time) over every series), carbon by reading each
//     whisper file's archive (whisper.go); carbon's drops are the points
//     sent minus the points in whisper, recounted after another Flush
//     until two counts agree.
//  2. Render. The 20 Panels (Grafana's Graphite editor's first functions
//     over 1, 10 and 100 hosts; 1 h, 6 h and 24 h ending at the last
//     point; maxDataPoints 1000; format=json) are asked of Aerie and
//     graphite-web once and the answers compared point by point
//     (relative tolerance 1e-9: series, targets, times, nulls, values);
//     then Runs times each (1 small, 10 medium), the peers taking turns
//     to go first. Latency is from sending the request to reading the
//     last byte; p50 and p90 per panel and per peer, and the ratio of
//     p50s.
//
// With --profile, a CPU profile of Aerie's server is taken over its
// largest ingest (/debug/pprof/profile, --profile-seconds) and its top
// frames (go tool pprof -top) go into the report.
//
// # Invariants
//
//  1. Aerie's data are checked: a point not stored, rejected or
//     malformed, a series missing, or a sum of values that differs stops
//     the run with an error wrapping ErrMismatch; no report is written.
//     Carbon's drops and the panels' differences are measurements: they
//     are reported, never hidden (a panel that graphite-web answers
//     without points stops the run: the data did not arrive).
//  2. Nothing here asserts a timing; TestRun runs the small scale end to
//     end (about a minute) and the other tests check the generator, the
//     whisper reader, the comparison, the counters and the clients.
//  3. Every server is stopped before Run returns, also on error or ^C
//     (aerie serve by its harness.Fleet, carbon by graphitetest; the
//     kernel kills them if the bench dies: Pdeathsig); data
//     directories are under --dir or a temporary directory removed after.
//
// Two cores are shared by the clients, the servers under test and other
// work on this machine, so absolute numbers are indicative; the load
// averages at the start and end are in the report.
package graphitebench
