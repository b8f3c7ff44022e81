// Package importer loads files of samples into Aerie: what `aerie import`
// does (cmd/aerie keeps the command: flags, progress display, signals).
// Run reads every file, sorts its samples in bounded memory and writes
// them either into a data directory that no server holds (series after
// series, each in time order) or to a running server's /api/v1/import
// (in time order).
//
// Design. A file goes through three stages:
//
//   - Read: the format is Options.Format or the file name's extension
//     (FileFormat, after .gz or .zst); gzip and zstd are found by their
//     magic bytes. The parsers are the HTTP handlers' own, in
//     internal/ingest: ReadInflux (/write), ReadExposition
//     (/api/v1/import/prometheus), ReadJSONLines (/api/v1/import) and
//     ReadCSV (/api/v1/import/csv), which hand out each sample with its
//     line instead of appending it. Peregreen's sensor files go through
//     /upload's readers (internal/sensor/pointio), with its types and row
//     positions, and the sensor's type is checked against and recorded in
//     the data directory's registry (sensor.TypeOf, sensor.RecordType).
//   - Sensor files into a data directory (sensor.go): a file is read into
//     a spool (internal/sensor/spool), the next one while the one before
//     is stored (prefetchSensor); a sensor whose only file it is, in time
//     order and older than the head's partitions, goes straight into a
//     history run, the others to the sorter.
//   - Sort (sort.go): every sample becomes one record (labels, file, line,
//     value) in an arena; a full arena (Options.RunBytes) is sorted by
//     (time, record) and spilled to a run file in a temporary directory
//     under Options.TmpDir; the runs are merged with a heap, at most
//     mergeFanIn at a time.
//   - Write (sink.go, urlsink.go): in merge order, through a sampleSink.
//     dbSink takes the samples series after series (the sorter's
//     bySeries order): a series' samples older than the head's
//     partitions go straight into blocks as a history run
//     (tsdb.RunWriter, committed at the end), the rest are appended to
//     the engine (tsdb.DB.Appender), committed every
//     Options.BatchSamples; at the end it flushes the backfill and the
//     head into blocks, as promtool's create-blocks-from does. urlSink
//     posts gzip'd JSON lines, one line per series of a batch, re-sending
//     after 429, 503 or a network error, and reads a 400 answer back with
//     ingest.ParseMessage to map the server's body lines to lines of the
//     files.
//
// What is not shared with the handlers, and why: the handlers commit a
// body as it streams and answer per request, while an import sorts first
// (files are often written series by series, further apart in time than
// the engine's out-of-order window), so batching (ingest's batch versus
// the sinks) and the account of rejections (ingest's report versus
// summary, which names files) are separate. The duplicate rule is the
// same (invariant 3), applied to neighbours in merge order instead of
// through a per-batch map.
//
// Invariants:
//  1. Never a silent drop: every sample read is stored or counted in the
//     summary by reason, as the handlers count them (ingest.Reason*), and
//     any rejection (not a skipped Influx string field) makes Run fail
//     with "N samples rejected". The summary names, per reason, the first
//     bad line by file order, then line; for samples the engine or the
//     server refuses, the line they were read from where it is known (not
//     for what the engine drops at Commit, which it only counts).
//  2. Samples are written in (time, series, place in the input) order,
//     or (series, time, place) into a data directory:
//     the sorter gives each sample back exactly once, from memory or from
//     runs merged in several passes, and memory stays bounded by
//     Options.RunBytes whatever the size of the files.
//  3. Of two samples of one series at one time the one read first wins
//     (file order, then line): the same value again counts as stored, a
//     different one is rejected as duplicate, naming where the first was
//     — the handlers' rule (ingest invariant 5).
//  4. No sample is written before every file was read: a bad file name,
//     an unreadable file, a bad sensor row or an interruption (the
//     context) while reading ends Run with no sample stored, and a wrong
//     destination (data directory, URL) is found before the reading
//     starts. An interruption while writing keeps the batches committed
//     or posted before it. A sensor's type is recorded only after all its
//     samples were stored.
//  5. Temporary runs are removed whatever the outcome; the data directory
//     is closed on every path.
//  6. Options mirror the flags of `aerie import` (docs/quickstart.md and
//     bench/sensorbench use them); an error about an option names its flag.
package importer
