// Package sensor serves Peregreen's operations (seed 004: upload of whole
// histories, search by value from the index alone, extraction with
// sampling, aggregation and transformation, deletion, list and meta) over
// Aerie's engine, for every series, on every tier (head, local blocks,
// bucket blocks).
//
// A sensor is a series: Peregreen's endpoints take a sensor id, which
// names the series whose metric name (__name__) is that id and which has
// no other label when it was uploaded through /upload. An id shared by
// several series (a metric name with labels) is refused by those
// endpoints with a pointer to the native ones, /api/v1/sensor/search and
// /api/v1/sensor/extract, which take Prometheus series selectors and
// answer many series at once. Timestamps in Peregreen's paths are
// milliseconds and both ends of {from}-{to} are inclusive.
//
// Subpackages hold the parts that need no engine: cond (the condition
// grammar), extract (aggregates, sampling, transformations as streaming
// operators) and pointio (the csv, json and msgp readers and writers).
//
// Invariants:
//  1. An upload is all or nothing for its input: every point is read,
//     checked against its type and the engine's time limits, and spooled
//     (memory up to Options.SpoolPoints, then an unlinked temporary file)
//     before the first is stored. A failure while storing says how many
//     points, the first rows in order, were stored; each committed batch
//     is durable (the engine's WAL) before the next starts. Points in
//     time order older than the head's partitions are one history run
//     (tsdb.DB.WriteRun), durable in blocks before anything after them
//     is stored.
//  2. Memory is bounded for any body and any answer: uploads spool, and
//     extraction streams points from the engine's iterators through the
//     operators to the writer without holding a series.
//  3. Search reads block metrics only (tsdb.DB.SeriesMetrics): block data
//     are never read for intervals a single block answers; the head is
//     summed from memory; intervals written twice or partly deleted are
//     recomputed from data and counted (aerie_sensor_search_*_total).
//  4. Aggregation whose windows are whole metric intervals is answered
//     from block metrics too, by the same operator code as from data, so
//     both give the same rows.
//  5. A sensor's type is recorded once, durably, at its first upload
//     (docs/format/sensors.md); a later upload with another type is
//     refused with 409 and stores nothing.
//  6. A request reads the engine through one tsdb.Querier, opened over
//     all time (Service.querier) and passed to every step that reads
//     (the sensor check, block metrics and bytes, data), so the steps see
//     the same blocks; each read prunes blocks to its own range, and what
//     the reads take is released when the request closes the querier.
package sensor
