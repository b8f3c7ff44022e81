// Package head holds the in-memory part of the engine: the series registry,
// the groups (Heracles' in-memory group model) and their partitions.
//
// A group is a set of series written together. Each group keeps, per time
// partition, one shared column of time tuples and, per slot (series), one
// column of value tuples. A time tuple holds TupleSize timestamps (its first
// one raw, the rest as varint deltas) so a binary search over tuples finds a
// time without decoding; the value tuples of every slot are indexed by the
// same tuple number (Heracles' "tuples with index").
//
// Memory. Closed tuples are stored in the blocks of the head's
// memory.Manager (Heracles' pages of blocks with a version array), as one
// chain of block refs per time column and per value column (chain.go).
// A commit reserves its rows' partition in the manager before they are
// acknowledged, so storing them cannot fail. A flush seals the partition
// (no more rows), then ReleasePartition soft-releases it: it stays in the
// head, marked flushed, and Select reports the series whose columns of it
// are still valid (Covered) so the querier skips its block for them.
// DropPartition removes a partition from the groups and then hard-releases
// its blocks; readers hold a memory guard (Enter) from before Select until
// they are done with the snapshots, so a block they found valid is not
// recycled under them.
//
// Tuple size. Heracles' paper uses tuples of 8, its code 4. Both were
// measured (BenchmarkTupleSize here, BenchmarkHeadTuple in encoding, on the
// real node_exporter capture of shared/data): tuples of 8 take 0.89 B/sample
// against 1.13 for 4 (encoded time and value tuples), 5.7 against 7.6 B/sample
// with the per-tuple index on a synthetic counter workload, and a seek plus
// 16-sample read costs about the same (97 vs 108 ns on counters). The larger
// tuple halves the per-tuple index (offset + presence byte per slot) and
// gives the XOR window more values to amortize case 3; the cost is decoding
// up to 7 extra values on a seek, which the measurement shows is not
// visible. DefaultTupleSize is therefore 8.
//
// Invariants:
//  1. Within a group partition the in-order rows have strictly increasing
//     timestamps; rows older than the partition's last row live in the
//     per-slot out-of-order buffer and are merged at query and flush time.
//  2. A closed tuple is never modified after it is published: readers that
//     copied the chain views under the group's read lock may decode it
//     without any lock, under their memory guard, if every block of the
//     view was valid when checked under that guard (live partitions'
//     blocks always are).
//  3. A series present in a row has its presence bit set even if its value
//     is NaN; absence (presence 0) and NaN are distinct.
//  4. Lock order: Head.regMu is never held while taking a group lock;
//     several group append locks are taken in increasing group id order;
//     group.appendMu is taken before group.mu.
//  5. The head's label index lists exactly the series with data in the
//     head (up to the moment a flush drops a partition): appliers add a
//     series after storing its rows, the flush removes those left without
//     data, and Head.idxMu orders the two. The registry keeps every series
//     so refs stay stable for the WAL.
//  6. Every row applied to the head was first written to the WAL (when one is
//     configured); application is deterministic, so WAL replay rebuilds the
//     same state, including the same duplicate rejections. A commit returns
//     once its records are durable (WAL.Wait), which it waits for after
//     releasing its groups' append locks: its rows may be visible to
//     queries before their fsync, as Prometheus' are, never acknowledged
//     before it. CommitNoWait leaves that wait to its caller (WaitDurable),
//     who must not acknowledge before it returns.
//  7. A series' labels are fixed at its creation. In a tag-set group
//     (GroupKey's "t:" keys) a series keeps only its __name__ (interned)
//     and points at the labels it shares with the group's other members,
//     which the group holds once (Heracles); memSeries.labels rebuilds
//     them, and memSeries.equal compares without rebuilding. Such a group
//     keeps no key string either: group.Key derives it from the tags, and
//     WAL replay parses it back into them. The label index keeps no
//     labels of its own: it reads them from the registry.
package head
