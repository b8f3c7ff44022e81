// Package ingest holds Aerie's push-ingestion HTTP handlers: InfluxDB line
// protocol (/write, /api/v2/write), Prometheus remote write 1.0
// (/api/v1/write, with Prometheus' handler for 2.0 and for what it does not
// read itself) and VictoriaMetrics' imports: Prometheus
// text / OpenMetrics (/api/v1/import/prometheus), JSON lines
// (/api/v1/import) and CSV (/api/v1/import/csv). Each handler is a plain
// http.Handler over a storage.Appendable: it parses the body with the
// protocol's own library (influxdata/line-protocol, Prometheus textparse,
// internal/vmformat), turns every sample into an Append and commits in
// batches. ReadInflux, ReadExposition, ReadJSONLines and ReadCSV run the
// same parsers over whole files for `aerie import` (internal/importer),
// handing out samples with their lines.
//
// Data model (DESIGN.md §1): the Influx line `m,tag=v f1=1,f2=2 ts` gives
// the series m_f1{tag="v"} and m_f2{tag="v"} (VictoriaMetrics' convention;
// a field named "value" still gives m_value). Names are sanitized to
// Prometheus' classic metric and label names: every other character becomes
// '_', and a leading digit gets a '_' in front. The fields of one line share
// its timestamp and are appended together, so they form one group row.
//
// Invariants:
//  1. Never a silent drop: every sample of a body is either stored or
//     counted as rejected with a reason, and any rejection makes the answer
//     a 4xx whose message says how many samples were stored, how many were
//     rejected by reason, and where (line number; for syntax errors also
//     column and byte offset) the first few bad lines are. An unparseable
//     line counts as one rejected sample, since its fields cannot be known.
//     The one exception is an Influx string field: Aerie stores numbers
//     only, so it is skipped and counted (aerie_rejected_samples_total
//     {reason="string_field"}) without failing the request, as
//     VictoriaMetrics does — Telegraf sends string fields in ordinary
//     batches, and a 400 for each would drown its logs.
//  2. Good lines of a partly bad body are stored: a bad line is skipped and
//     parsing resumes on the next line. The answer is 204 only when every
//     sample was stored, 400 otherwise.
//  3. Samples are committed in batches of Options.BatchSamples, always at
//     line boundaries, so a body never needs memory in proportion to its
//     size for buffered samples (the Prometheus import holds the body
//     itself, as textparse needs it whole). Hence a 5xx (storage failure
//     at Commit: 503 with Retry-After) or a 413 found mid-stream (gzip, or
//     no Content-Length) may follow a partial commit; the message says how
//     many samples were stored before it. Re-sending the body is safe for
//     samples with explicit timestamps: identical duplicates are no-ops.
//     A full batch commits without waiting for its WAL fsync (the engine's
//     CommitNoWait); the request waits for every such fsync before it
//     answers, so nothing is acknowledged, nor counted stored, before it
//     is durable, and one request's batches share fsyncs.
//  4. Bodies are limited to Options.MaxBodyBytes both on the wire and
//     after gzip decompression (no gzip bombs); beyond it the answer is 413.
//  5. Two samples of one series with one timestamp in one batch keep the
//     first: an identical second one is a no-op counted as stored, a
//     different one is rejected as "duplicate" here, before the engine
//     would drop it at Commit. Rejections that only Commit can see (a race
//     with a concurrent writer, an out-of-order sample that collides with
//     a stored one) are counted by the engine, not in the answer, because
//     storage.Appender.Commit does not report them.
//  6. Samples without a timestamp get the time the request was received
//     (for Influx, truncated to the request's precision, as InfluxDB does).
//  7. The error report and the body decoding (limits, gzip) have one
//     implementation each, shared by both handlers. The line loop of JSON
//     lines and CSV (vmLines.read) is one implementation, shared by their
//     handlers and by ReadJSONLines and ReadCSV.
//  8. Known series are appended by ref (refcache.go): the Influx and remote
//     write handlers remember, per series as written (an Influx line's
//     measurement and tags, with each field name seen with them; a remote
//     write series' label fields), the ref the storage returned and the
//     hash of its labels, keyed by a 128-bit digest. A line or series
//     whose every field is known is appended without building, sorting or
//     looking up labels; any other is parsed in full, as before, and fills
//     the cache. An Influx line of known measurement and tags has its
//     fields and timestamp read without the line-protocol decoder, for the
//     plainly written forms only (influxParser.fastLine); anything else
//     goes to the full path. The answer, the stored samples and the
//     messages are the same either way (the fast path parses a line with a
//     rejection again, in full, to say why; FuzzInfluxFastPath compares
//     the two).
//  9. Remote write 1.0 answers exactly as Prometheus' handler (v0.310) does
//     — same status, same stored samples — which a differential fuzz test
//     checks; a request it cannot read as a well-formed WriteRequest of
//     float samples goes to that handler.
package ingest
