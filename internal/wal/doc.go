// Package wal is Aerie's write-ahead log: a directory of numbered segment
// files holding CRC32C-framed, compressed frames of records, written with
// group commit, plus checkpoints that let old segments go. record.go holds
// the record codecs: group and series definitions, rows of samples,
// tombstones; frame.go the frames (format version 2: a batch a frame,
// Snappy for Log, zstd for checkpoints). The on-disk format is specified in
// docs/format/wal.md.
//
// Design. Log compresses a batch of records into a frame before it takes
// the WAL mutex, then writes it to the active segment with one write(2)
// under the mutex. In SyncBatch mode a
// single flusher goroutine fsyncs: it notes how many batches are written,
// fsyncs without the mutex, then acknowledges them; callers that wrote while
// an fsync ran wait for the next one, so concurrent callers share fsyncs. In
// SyncInterval mode a ticker goroutine fsyncs and Log does not wait.
//
// Invariants:
//  1. Log returns nil in SyncBatch mode only after every byte of its batch
//     and of every earlier batch is fsync'd.
//  2. A batch (and so a record) never spans segments; a batch larger than
//     Options.SegmentSize gets a segment of its own. A batch of at most
//     MaxFramePayload bytes is one frame, so it replays all or nothing.
//  3. A segment is fsync'd before its successor is created, so after a crash
//     only the last segment can hold a torn write.
//  4. After a failed write or fsync the WAL is failed: nothing more is
//     acknowledged, not even batches the failing fsync may have covered, and
//     every call returns the error. Retrying an fsync after a failure can
//     falsely succeed, so the WAL never does.
//  5. Replay truncates a bad record only in the last segment an earlier
//     process wrote, and only if no valid record follows it; any other bad
//     header or record is a *CorruptionError naming the file and the byte
//     offset of the header or frame, and nothing is changed until Repair.
//  6. Replay's memory is bounded by the largest frame, not by the size of
//     the log: one read buffer and one decompression buffer are reused.
//  7. A checkpoint file is complete or absent (tmp → fsync → rename → fsync
//     dir); segments below its index are deleted only after it is durable.
//     Replay reads the newest checkpoint, then the segments from its index
//     on, which must be contiguous.
//  8. Segment indexes start at 1, only grow, and are never reused except by
//     Repair, which deletes the segments after the one it truncates.
//  9. Decoders never panic and allocate in proportion to the bytes they are
//     given: every count is checked against the bytes left, and a frame's
//     decompressed size against MaxFramePayload and against what its
//     compressed body can yield (the codec's densest encoding) before the
//     buffer is allocated.
//  10. Every file is read by the rules of the version in its header:
//     segments and checkpoints of version 1 still replay.
//
// Limitation: a corrupt length field in the last segment is
// indistinguishable from a torn write when it points past the end of the
// file; the records after it are then dropped as torn.
package wal
