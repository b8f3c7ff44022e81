// Package encoding holds Aerie's tuple codecs: pure functions from samples to
// bytes and back, with no I/O. The byte layouts are specified in
// docs/format/tuples.md.
//
// # Design
//
// Aerie stores a group of series (Heracles, seed 000 §3.1) as one timestamp
// sequence shared by all series of the group plus one value sequence per
// series, each cut into tuples of a few rows so that a query decodes only the
// tuples it needs.
//
// In the head (memory), rows arrive one at a time and the final size of a
// tuple is unknown, so tuples are packed back to back and located through an
// index kept by the head package:
//
//   - A time tuple (AppendTimeTuple) keeps its first timestamp as 8 raw bytes,
//     so a binary search over tuples reads it without decoding, followed by
//     uvarint deltas.
//   - A value tuple (AppendValueTuple) is Gorilla-style XOR coding (cases 1–3)
//     of up to MaxTupleSize values; the first value is XORed with a base the
//     caller keeps (the series' first value in the partition). The whole
//     tuple is coded once its values are known, choosing per value between
//     case 2 (reuse the window) and case 3 (new window) to minimise the total
//     bits — Heracles' tuple-end re-check (Fig. 8), made exact by a dynamic
//     program over "which case-3 value set the window in force".
//
// On disk (blocks are immutable) tuples are padded so that offsets are
// computed, not searched:
//
//   - The timestamp column (AppendScaledTimestamps) stores start, the mean
//     interval and one fixed-width signed diff per row from start+i·interval,
//     so At(i) is O(1) and Search is a binary search over At.
//   - A value column (AppendColumn) chooses two XOR bases, the 25th and 75th
//     percentiles of its present values, and starts every tuple with one
//     indicator bit naming the base that codes the tuple's first value in
//     fewer bits. Tuples are grouped into disk blocks of BlockTuples tuples
//     padded to the block's widest tuple; the widths live in the ColumnMeta,
//     which the block index stores, so ColumnMeta.TupleRange gives the byte
//     range of any run of tuples from the index alone. A column whose rows are
//     all present and all equal has no data bytes at all (ColumnConst) —
//     common for node_exporter series that stay constant for hours.
//
// Every decoder takes arbitrary bytes: it returns a *DecodeError (wrapping
// ErrCorrupt) instead of panicking, and checks every length field against
// the bytes that must follow it, or against MaxRows, before allocating.
// Readers keep a sticky error (the bit reader's fail flag) and test it once
// per value or once per tuple.
//
// # Invariants
//
//  1. Every float64 bit pattern round-trips bit-exactly through the value
//     tuple and the value column: NaN payloads, the Prometheus stale marker
//     0x7ff0000000000002, ±Inf, −0 and subnormals included. Codecs work on
//     math.Float64bits, never on float comparisons.
//  2. Every strictly increasing []int64 round-trips through the time tuple and
//     the timestamp column, including spans wider than MaxInt64: arithmetic
//     on timestamps is unsigned or wraps modulo 2⁶⁴.
//  3. Encoding is deterministic: the same input gives the same bytes (plans
//     break ties towards the earlier choice, base 0 wins ties).
//  4. A value tuple and a column tuple decode on their own: no XOR window
//     and no reference value carries across tuples, except the caller-held
//     base of the head value tuple and the column's Bases.
//  5. The tuple-end plan is optimal: no other choice of case 2 and case 3
//     per value (each case-3 value opening its own significant-bits window)
//     gives fewer bits. In particular it never loses to greedy coding.
//  6. Tuple i of a value column occupies exactly the bytes [off, end) of the
//     column's data given by ColumnMeta.TupleRange(i, i), computed from the
//     meta alone; DataLen is the sum over disk blocks of width × tuples.
//  7. A ColumnConst column has no data bytes (DataLen 0) and decodes to
//     Rows copies of Bases[0], all present.
//  8. No decoder panics or allocates more than a constant factor of its
//     input length, or MaxRows values, whatever its input bytes; an invalid
//     input yields an error, never a silently wrong length.
//  9. ScaledTimestamps.At and Search are correct only after Validate has
//     returned nil on the column; Validate costs O(1) when all diffs are zero
//     and O(n) otherwise.
package encoding
