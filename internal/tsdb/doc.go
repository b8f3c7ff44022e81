// Package tsdb is Aerie's storage engine: it ties the WAL, the head, the
// on-disk blocks and the global TagDict together, flushes closed head
// partitions into blocks, applies retention, and serves queries through
// Prometheus' storage.Queryable so that promql.Engine runs on it unchanged.
//
// Invariants:
//  1. An append is acknowledged only after its rows are in the WAL per the
//     sync mode (fsync'd in SyncBatch mode, the default).
//  2. Head partitions and blocks never overlap in time: a partition is
//     flushed only once no accepted sample can land in it any more
//     (head max time − max(ooo_window, partition_range/2) ≥ its end), and
//     appends below the newest block's end are out of bounds.
//  3. A WAL segment is deleted only after every row in it is in a durable
//     block; the live group and series definitions are first written to a
//     checkpoint.
//  4. A block that fails verification at open is moved to quarantine/,
//     logged and counted; the other blocks keep serving.
//  5. Lock order: DB.flushMu, then DB.mu; neither is held while taking
//     head group locks for appends.
package tsdb
