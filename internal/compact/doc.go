// Package compact merges blocks: vertically, where blocks overlap in time
// (backfilled data), and by level, where small adjacent blocks become one
// block of an aligned larger range. It is a library: the engine plans with
// Plan, runs each Job with Merge, and deletes what Obsolete names.
//
// Levels. Level 0 is a flushed head partition (2 h by default). Level k ≥ 1
// windows are ranges[k] long (Ranges: ×6 then ×4: 12 h, 2 d, 8 d, 32 d…)
// and aligned to epoch 0. A window is compacted once it ends at or before
// the horizon (newest data minus a guard) and holds two or more blocks,
// none of which crosses its edges. Every compaction output is level ≥ 1:
// a vertical merge takes the greatest level of its inputs, at least 1.
//
// Merging. Duplicates (one series, one timestamp, several inputs) resolve
// to the input of the lowest Meta.Seq, ties to the earlier input: the
// engine's first-write-wins rule, applied whether or not the values are
// equal. Groups are formed again over the output range by the engine's
// GroupKey: one timestamp column per group, the union of its series'
// timestamps, with presence bits. A series present in fewer than half of
// its group's rows leaves the group and is written as a group of its own
// (the union of a few sparse series' timestamps would otherwise make every
// dense column mostly absent rows); groups wider than MaxGroupWidth are
// split by label order, and groups of more than MaxGroupCells rows × series
// are written as several groups of consecutive rows. Memory is bounded by
// one such group plus, per series of it, the encoded column of the input
// being read: inputs are read in time order, each when the merge reaches
// its range.
//
// Crash safety. The engine follows this protocol; the package provides
// the pieces.
//  1. A Merge output is complete or absent: block.Writer writes it as
//     <ULID>.tmp, fsyncs every file, renames it and fsyncs the parent. The
//     engine deletes leftover .tmp directories at open.
//  2. An output's meta.json lists its inputs in Compaction.Parents. The
//     engine deletes the inputs only after the output is durable and open
//     (serving queries), each by renaming it to <ULID>.tmp, fsyncing the
//     parent directory, then removing it, so a crash leaves an input whole
//     or a .tmp directory, never a block without meta.json.
//  3. At open, before any query, the engine deletes every block Obsolete
//     names: a block whose data are in an existing output. So no sample is
//     counted twice and none is lost, wherever the process stopped.
//  4. A block is never an input while a parent of it exists (the engine
//     resolves Obsolete first), so lineage is complete in existing metas.
//  5. Outputs never overlap a block they do not replace: Plan takes every
//     block overlapping a window, or none (vertical merges take whole
//     transitive overlap sets).
//  6. An output's Seq is the greatest of its inputs'. First write still
//     wins against any block that overlaps it later: a head flush (Seq 0)
//     holds rows written before any backfilled row for their time, and a
//     new backfill generation's Seq is above every existing one. Blocks of
//     an unfinished backfill generation are not given to Plan.
//  7. Merge is deterministic given its inputs and options, except for the
//     output's ULID: groups in key order, series in label order.
package compact
