package index

import crc "github.com/aerie-db/aerie/internal/checksum"

// checksum is the CRC32C every table and record of this package goes
// through: internal/checksum's.
func checksum(b []byte) uint32 { return crc.CRC32C(b) }
