package index

import "hash/crc32"

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// checksum is the one CRC32C (Castagnoli) helper every table and record of
// this package goes through.
func checksum(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }
