// Package block writes and reads Aerie's immutable on-disk blocks: one
// directory per closed time partition holding meta.json, index and data
// (Heracles' on-disk group model, Peregreen's block metrics, CloudTS'
// per-partition metadata over the global TagDict).
//
// Invariants:
//  1. A block directory is complete or absent: it is written under a
//     temporary name, every file fsync'd, renamed, and the parent fsync'd.
//  2. data holds, per group, one contiguous extent: the group's scaled
//     timestamp column followed by its series' value columns. Every byte
//     offset inside an extent is computed from the index; reading k series
//     of one group over a time range issues at most 1 + k reads of data.
//  3. Every file starts with magic and version; every index section and
//     every data extent carries a CRC32C checked when the block is opened.
//     A mismatch is a *CorruptionError naming the file and byte offset.
//  4. Label pairs are stored as codes of the global TagDict, which is
//     synced before the block that references its codes is written.
//  5. Block metrics are per series per metric interval and combine into
//     any coarser aligned interval without reading data.
//  6. Blocks may overlap in time. meta.json's Seq orders them: on a sample
//     of one series at one timestamp in several blocks, the lowest Seq
//     wins. A compaction output (package compact) names the blocks merged
//     into it in Compaction.Parents; since it exists only once complete
//     (1), a block named by an existing block is obsolete.
//  7. Sum and SumSq of an interval are exact sums rounded once while every
//     value added is a decimal m·10⁻ᵏ (the float64 nearest to it, k ≤ 22,
//     |m| ≤ 2⁵³) and the integer sums of the mantissas stay within 2⁵³ (for
//     SumSq: of their squares, with k ≤ 11); from the first value that
//     breaks this on, each is the float sum of its rounded part and the
//     later values, as version 1 summed. So |Sum − Σx| ≤ 2⁻⁵³·|Σx| +
//     2⁻⁵³·Σ|x| for decimals (the second term: the decimals are not the
//     binary values), never worse than naive summation otherwise.
//     Count, Min, Max, First and Last are exact.
//  8. The metrics codec (AppendMetrics, DecodeMetrics; index version 2)
//     is lossless: every field of every interval round-trips bit for bit,
//     for any input, and the bytes depend on the input alone. Decoding
//     computes the same floats on every platform: predictions use no
//     fusable multiply-add and map NaN to 0, a decimal mantissa becomes a
//     float by one IEEE division, and the writer keeps a field decimal
//     only after decoding it back bit for bit (else it is an exception
//     stored raw). Version 1 indexes are still read.
//  9. Value columns of data versions 2 and 3 (index versions 3 and 4) are
//     cut into chunks of ChunkRows rows, each decodable on its own
//     (constant, decimal mantissas or XOR, with its presence; Rice codes
//     for mantissas only in version 3), so a time range
//     decodes only the chunks holding its rows. The codec is lossless bit
//     for bit (NaN payloads, stale markers, −0), deterministic, and its
//     decoder never panics: a chunk is valid only if its decoding
//     consumes exactly the bytes the meta gives it. Data versions 1 and 2
//     are still read; writers write version 3 (tests may ask for 1 or 2).
//  10. The metrics section is the index's last section, just before the
//     footer, so SplitIndex can cut it out for a store that keeps it
//     apart (the bucket's metrics object). A reader opened on a cut index
//     (OpenRemote with a MetricsLoader) has every other section checked
//     at open and gets the section from its loader when metrics are first
//     read; ParseMetrics accepts it only with the length and CRC32C the
//     footer gives, and with every series' record decoding, as Open
//     checks a whole index.
//  11. A local block's data file is mapped read-only once Open has read
//     and checked it (where the platform maps files and no WrapData is
//     set); selections then slice columns and timestamp columns out of
//     the mapping instead of reading them, with no copy and no system
//     call. Every such slice is held only by a selection or a column
//     source that keeps its Reader reachable, and the mapping is released
//     by a cleanup once the Reader is unreachable, never by Close or
//     Release: a series read after its querier closed reads the block as
//     it was (a deleted block's pages stay until unmapped), it cannot
//     fault.
//  12. A summary (Series.AppendSummaries) is given only for a metric
//     interval wholly inside the block where no value of the series is
//     NaN (its metrics' Count equals the rows its chunks' presence marks
//     in the interval), so its metrics are those of every sample of the
//     series in the block there. It says Integral only when every chunk
//     holding a value of the interval is a decimal chunk at 0 digits or a
//     constant integer: the values are integers and none is −0.
//
// Readers give series by label matchers (Select) or by local id
// (SelectIDs, which compaction uses to walk a block a group at a time).
package block
