package block

import (
	"errors"
	"fmt"

	"github.com/aerie-db/aerie/internal/checksum"
)

// File names inside a block directory.
const (
	MetaFilename  = "meta.json"
	IndexFilename = "index"
	DataFilename  = "data"
	TmpSuffix     = ".tmp"
)

// Format constants (docs/format/block.md).
const (
	DataMagic    uint32 = 0xAE1BDA7A
	DataVersion  uint8  = 3 // reads 1 and 2 too (1: version 1 value columns; 2: no Rice codes)
	IndexMagic   uint32 = 0xAE1B1D8C
	IndexVersion uint8  = 4 // reads 1 to 3 too (1, 2: version 1 value columns; 1: version 1 metrics; 3: data version 2)
	MetaMagic           = "aerie-block"
	MetaVersion         = 1
	HeaderLen           = 8  // magic(4) version(1) reserved(3)
	FooterLen           = 88 // numSections × (offset 8, length 8, CRC 4) + CRC 4 + magic 4
	numSections         = 4

	// DefaultMetricInterval is the interval of block metrics in ms.
	DefaultMetricInterval = int64(3600 * 1000)
)

// Index sections, in file order. Persisted: explicit numbers.
const (
	SectionTags    = 0 // TagArray + TTMapping (internal/index)
	SectionGroups  = 1
	SectionSeries  = 2
	SectionMetrics = 3
)

var sectionNames = [numSections]string{"tags", "groups", "series", "metrics"}

func crc(b []byte) uint32 { return checksum.CRC32C(b) }

// ErrCorrupt is wrapped by every CorruptionError.
var ErrCorrupt = errors.New("corrupt block")

// CorruptionError reports a damaged block file.
type CorruptionError struct {
	File   string
	Offset int64
	Err    error
}

func (e *CorruptionError) Error() string {
	return fmt.Sprintf("corrupt block file %s at byte offset %d: %v", e.File, e.Offset, e.Err)
}

func (e *CorruptionError) Unwrap() []error { return []error{ErrCorrupt, e.Err} }
