package checksum

import (
	"hash"
	"hash/crc32"
)

// Table is the Castagnoli table, for crc32.Update.
var Table = crc32.MakeTable(crc32.Castagnoli)

// CRC32C returns the checksum of b.
func CRC32C(b []byte) uint32 { return crc32.Checksum(b, Table) }

// New returns a streaming CRC32C hash.
func New() hash.Hash32 { return crc32.New(Table) }
