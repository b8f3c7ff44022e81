// Package index holds Aerie's series metadata in the CloudTS layout: one
// global TagDict of label pairs, and per block a tag array plus a TTMapping
// (a series×tag bitmap stored as CSR without a values array), decoded into
// postings. MemIndex is the head's mutable counterpart. Select, LabelValues
// and LabelNames evaluate Prometheus label matchers over either through the
// Reader interface, with the semantics of Prometheus' tsdb.PostingsForMatchers.
// Select reads the equalities' postings first and, once few candidates
// are left, tests their label values against the other matchers instead of
// uniting the postings of every value those accept (valueReader).
//
// # TagDict
//
// The dictionary gives every distinct (name, value) pair a global code. It
// is a map name → value → code plus, per name, the codes sorted by value,
// not the Patricia trie of the CloudTS paper: Go maps give O(1) exact lookup,
// which is what encoding and `=` need; the per-name sorted lists give the
// ordered value scans that `=~` and label-value listing need; and the trie's
// prefix sharing would save memory only on long shared prefixes at the cost
// of a pointer per node. The file is an append-only log of records, one or
// more per Sync (docs/format/tagdict.md).
//
// # Block index
//
// A block maps the global codes it uses to dense local codes, most used
// first (ties by global code), so frequent tags get the shortest varints.
// The TTMapping stores, per series, the sorted local codes of its tags; it
// answers "tags of a series" directly and, transposed at decode into one
// roaring bitmap per tag, "series with a tag" (docs/format/ttmapping.md).
// Strings are never stored in a block: they come from the TagDict.
//
// # Invariants
//
//  1. A global code, once returned by TagDict.Add, names the same pair for
//     the lifetime of the data directory; codes are dense from 0 in order of
//     first Add, and the file holds them in that order.
//  2. After TagDict.Sync returns nil, every code it covered survives a crash.
//     Only the last record of the file can be torn; opening truncates it.
//     Damage anywhere before it fails Open with a *CorruptionError.
//  3. A block references only synced codes: the block writer calls Sync
//     before it writes a block built with AddSeries.
//  4. Every header, record and section carries a CRC32C (checksum in
//     crc.go); decoders check it before reading a field, and every
//     damaged byte yields a *CorruptionError naming the file or section and
//     the byte offset.
//  5. The serialized block index is canonical: the same AddSeries sequence
//     over the same dictionary yields the same bytes, and the decoder
//     rejects anything the encoder cannot produce (tags out of order, unused
//     or repeated tags, empty values, a name twice in one series).
//  6. A label with an empty value is the same as an absent label: builders
//     and MemIndex drop it, as Prometheus' head does.
//  7. Bitmaps returned by a Reader and by Select are owned by the caller;
//     indexes never hand out their internal postings.
//  8. Select over a MemIndex that changes meanwhile never misses a matching
//     series that existed throughout the call, and never returns a series
//     added during it that does not match; it may return series deleted
//     during it, which Labels then reports as missing (series refs are
//     never reused, see model.SeriesRef).
package index
