package memory

import "fmt"

// BlockID is the global index of a block: page*blocksPerPage + i.
type BlockID uint32

// Version identifies one opening of a time partition. The manager hands out
// versions 1, 2, 3, … in the order partitions are first allocated from (0 is
// never used, so the zero Ref is never valid). The version array keeps only
// the low VersionBits bits of it per block, Heracles' 6-bit version; a Ref
// keeps all 32 bits, which lets Valid reject a ref whose 6-bit tag came round
// again (see doc.go, invariant 4).
type Version uint32

const (
	// VersionBits is the number of version bits the version array holds per
	// block; the other two bits of the byte hold the block's Area.
	VersionBits = 6
	// VersionWindow bounds how many partition openings may separate the
	// newest partition from the oldest one still holding blocks. Within the
	// window, 6-bit tags are distinct and compare correctly modulo 64.
	VersionWindow = 1 << (VersionBits - 1)

	tagMask   = 1<<VersionBits - 1
	areaShift = VersionBits
)

// Tag returns the VersionBits-bit tag of v that the version array stores.
func (v Version) Tag() uint8 { return uint8(v) & tagMask }

// compareTags orders two 6-bit tags modulo 64: it returns -1 if a is older
// than b, +1 if newer, 0 if equal. The answer is right only when the two
// versions are fewer than VersionWindow openings apart, which the manager
// guarantees for every partition that holds blocks.
func compareTags(a, b uint8) int {
	d := (a - b) & tagMask
	switch {
	case d == 0:
		return 0
	case d < VersionWindow:
		return 1
	default:
		return -1
	}
}

// Area is the part of the manager a block is in: the top two bits of its
// byte in the version array. The numbers are part of that byte's layout.
type Area uint8

const (
	// AreaLive blocks belong to a partition still being written.
	AreaLive Area = 0
	// AreaHot blocks belong to a partition that was flushed to disk
	// (SoftRelease) but still serve queries.
	AreaHot Area = 1
	// AreaCooling blocks are invisible to new readers and wait for every
	// reader that could still hold them to exit.
	AreaCooling Area = 2
	// AreaRecycled blocks are free: never used, or reclaimed.
	AreaRecycled Area = 3
)

func (a Area) String() string {
	switch a {
	case AreaLive:
		return "live"
	case AreaHot:
		return "hot"
	case AreaCooling:
		return "cooling"
	case AreaRecycled:
		return "recycled"
	}
	return fmt.Sprintf("Area(%d)", uint8(a))
}

// tagOf is the version-array byte of a block in area a of version v.
func tagOf(a Area, v Version) uint8 { return uint8(a)<<areaShift | v.Tag() }

// freeTag is the byte of a block in the recycled area. Its version bits are
// zero and mean nothing.
const freeTag = uint8(AreaRecycled) << areaShift

// freeWord is four freeTag bytes: a fresh page's version words.
const freeWord = uint32(freeTag) * 0x01010101

func tagArea(t uint8) Area { return Area(t >> areaShift) }

// Ref names one block as allocated to one partition: the block id in the
// high 32 bits, the partition's full Version in the low 32. Readers keep
// Refs in their index and call Manager.Valid or Manager.Bytes before
// reading. The zero Ref is never valid.
type Ref uint64

// MakeRef packs a block id and the version Alloc returned with it.
func MakeRef(id BlockID, v Version) Ref { return Ref(uint64(id)<<32 | uint64(v)) }

// Block returns the block id of r.
func (r Ref) Block() BlockID { return BlockID(r >> 32) }

// Version returns the partition version of r.
func (r Ref) Version() Version { return Version(uint32(r)) }

func (r Ref) String() string { return fmt.Sprintf("%d@v%d", r.Block(), r.Version()) }
