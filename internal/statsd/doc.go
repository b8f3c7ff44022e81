// Package statsd receives statsd traffic over UDP and TCP, aggregates it
// per flush interval as statsd (github.com/statsd/statsd, formerly
// etsy/statsd) does, and appends the results to storage under the
// Graphite names statsd's graphite backend gives them. Behaviour follows
// statsd's docs (docs/metric_types.md, docs/namespacing.md,
// exampleConfig.js) and, where they are silent, its code (stats.js,
// lib/process_metrics.js, backends/graphite.js) — not Tgres, whose
// negative gauges and timer sums and means are wrong (DESIGN.md §6).
//
// # Protocol
//
// A datagram (or a TCP line) holds "\n"-separated lines:
//
//	name:value|type[|@rate][:value|type[|@rate]]...[|#tag:value,...]
//
// The types and forms:
//
//   - c: counter; adds value/rate ("gorets:1|c|@0.1" counts 10).
//   - g: gauge; a plain value sets it, a leading "+" or "-" changes it
//     ("gaugor:-10|g" subtracts 10: a gauge is set negative by setting
//     it to 0 first). A gauge not yet known starts at 0.
//   - ms (and DogStatsD's h): timer; the value is kept for the
//     statistics, 1/rate is added to its count.
//   - s: set; counts the distinct values of the interval.
//   - Several values per line after one name ("a:1|c:2|ms") as statsd's
//     stats.js splits them (its docs do not mention the form).
//   - DogStatsD tags "|#k:v,k2:v2" (last on the line, applying to all its
//     values) become labels; names are non-empty UTF-8 not starting with
//     "__", values non-empty, no name twice.
//
// Names are sanitized as statsd's keyNameSanitize does (blank runs to
// "_", "/" to "-", other bytes than [A-Za-z0-9_.-] dropped) unless
// Config.KeepNames. Stricter than statsd, on purpose: an unknown type is
// an error (statsd counts it as a counter), values are finite decimal
// numbers (statsd's JavaScript Number() takes "0x10" and "Infinity"),
// sample rates are in (0, 1], an empty set member is an error, and a
// malformed line is refused whole (statsd refuses per value).
//
// # Flushed series
//
// Every Config.FlushInterval (10 s), at multiples of it since the epoch,
// with statsd's non-legacy graphite namespace (Config.Namespace, default
// prefixes "stats", "counters", "timers", "gauges", "sets", optional
// global suffix appended as ".suffix"):
//
//	stats.counters.<name>.rate     value per second over the flush interval
//	stats.counters.<name>.count
//	stats.timers.<name>.count      sum of 1/rate; count_ps: per second
//	stats.timers.<name>.{sum,sum_squares,mean,median,lower,upper,std}
//	stats.timers.<name>.{count,mean,upper,sum,sum_squares}_<P>  per percentile P (default 90)
//	stats.timers.<name>.{count,mean,lower,sum,sum_squares}_top<P>  per negative percentile -P
//	stats.timers.<name>.histogram.bin_<bound>  with Config.Histograms
//	stats.gauges.<name>
//	stats.sets.<name>.count
//	stats.statsd.numStats, stats.counters.statsd.{packets_received,metrics_received,bad_lines_seen}.*
//	                               with Config.InternalStats
//
// The Graphite path is the __name__ label; tags are the other labels.
// Percentile P keeps the round(|P|% of count) lowest (highest for P < 0)
// values of the interval, sorted; a threshold that rounds to none is left
// out, and with one value every threshold holds it, as in statsd's
// process_metrics.js, whose naming it keeps (99.9 → "99_9", -10 →
// "top10"). std is the population standard deviation. Idle metrics follow
// statsd's defaults: a counter sends 0, a timer only count and count_ps
// at 0, a set 0, a gauge its last value; Config.DeleteIdleStats forgets
// every metric after each flush instead.
//
// # Structure
//
// Listeners come from internal/listen: the UDP read loop and one goroutine
// per TCP connection parse into batches of records, queued (bounded) to
// one consumer goroutine that aggregates. A full queue drops UDP batches,
// counted in aerie_statsd_dropped_total{listener}, and blocks TCP readers
// (backpressure). The flush loop snapshots the aggregator, computes the
// statistics outside its lock and appends them in one Commit at the
// flush timestamp. Each output series keeps its labels and storage ref,
// so a steady flush builds no labels.
//
// Metrics: aerie_statsd_packets_total, received_total, malformed_total
// (all {listener}), rejected_total{reason}, flushes_total,
// flush_failures_total, flushed_samples_total, append_errors_total,
// series, and internal/listen's dropped_total, too_long_total,
// queue_length, connections, connections_refused_total. Malformed input
// is logged at most once a second with its source address, line, byte
// offset and the number of log lines suppressed.
//
// # Invariants
//
//  1. Every value a listener accepts is aggregated into exactly one flush
//     or counted: as dropped (UDP, full queue), malformed (its line) or
//     rejected (a limit). Close aggregates everything its listeners read
//     and flushes it.
//  2. A line is all or nothing: none of its values is aggregated unless
//     all of them parse.
//  3. Values of one TCP connection are aggregated in the order sent; a
//     gauge delta applies to the gauge's last value, including one set
//     in an earlier interval (unless DeleteIdleStats forgot it, when it
//     applies to 0).
//  4. Flush timestamps strictly increase; all samples of one flush share
//     one timestamp and one Commit. A failed Commit is logged and counted
//     (its interval's counters, timers and sets are lost; gauges keep
//     their values) and never stops the server.
//  5. Memory is bounded: a packet by MaxPacketBytes and Limits, the
//     distinct metrics by MaxSeries, timer values and set members of an
//     interval by MaxIntervalValues, the queue by QueueSize batches.
//  6. No input panics or stops a listener; every refusal says what and
//     where (line, byte offset, metric name).
//  7. No goroutine started by Start outlives Close.
//
// Locking: see Server and aggregator. Listener goroutines never take the
// aggregator's lock; the consumer takes it per batch, a flush once to
// snapshot.
package statsd
