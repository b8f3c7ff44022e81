// Package checksum is the one CRC32C (Castagnoli) helper every on-disk
// record, table and extent of Aerie goes through (WAL, blocks, TagDict,
// TTMapping, tombstones).
//
// Invariant: the bytes it produces are part of every format in docs/format/;
// changing the polynomial is a format version change everywhere.
package checksum
