package bucket

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/aerie-db/aerie/internal/checksum"
	"github.com/aerie-db/aerie/internal/zstdx"
)

// The bucket layout (docs/format/bucket.md), CloudTS' separation of
// metadata from data:
//
//	tagdict/<from>-<to>        TagDict segments, append-only, codes [from, to)
//	blocks/<ULID>/data-<n>     data objects: group extents packed together
//	blocks/<ULID>/metrics      the block's metrics section (version 3 on)
//	blocks/<ULID>/meta         the block's metadata object, written last
//
// A block is visible once its metadata object exists; its data objects
// and the TagDict segments it needs are written and read back first.

// Format constants of the bucket objects (docs/format/bucket.md).
const (
	// MetaObjectMagic opens a block's metadata object.
	MetaObjectMagic uint32 = 0xAEB0BE7A
	// MetaObjectVersion is the metadata object version this code writes:
	// the index without its metrics section, which is an object of its
	// own, and window CRCs of every part of each group extent, its
	// timestamp column included, which stays in the data object only.
	// Versions 3 (a copy of each timestamp column inside) and 2 (that,
	// and the whole index) are still read; version 1, never released,
	// had one CRC per column and no timestamp columns.
	MetaObjectVersion uint8 = 4
	// MetricsObjectMagic opens a block's metrics object.
	MetricsObjectMagic uint32 = 0xAEB03E7C
	// MetricsObjectVersion is the only metrics object version.
	MetricsObjectVersion uint8 = 1
	// DataObjectMagic opens a data object.
	DataObjectMagic uint32 = 0xAEB0DA7A
	// DataObjectVersion is the only data object version this code writes
	// and reads.
	DataObjectVersion uint8 = 1
	// ObjectHeaderLen is the length of both objects' headers: magic,
	// version and three zero bytes.
	ObjectHeaderLen = 8
	// DefaultObjectSize bounds a data object unless one extent is larger.
	DefaultObjectSize = 64 << 20
	// DefaultWindowSize is the span of a column each window CRC covers:
	// the granule in which a reader fetches and checks data.
	DefaultWindowSize = 512
)

const (
	tagDictPrefix = "tagdict/"
	blocksPrefix  = "blocks/"
	metaName      = "meta"
	metricsName   = "metrics"
)

// Codecs of a metrics object's payload (persisted: never renumber).
const (
	metricsStored = 0 // the section as is
	metricsZstd   = 1 // the section compressed with zstd (package zstdx)
)

// TagDictSegmentName names the segment holding codes [from, to).
func TagDictSegmentName(from, to int) string {
	return fmt.Sprintf("%s%010d-%010d", tagDictPrefix, from, to)
}

// parseTagDictSegmentName is the inverse of TagDictSegmentName.
func parseTagDictSegmentName(name string) (from, to int, ok bool) {
	rest, ok := strings.CutPrefix(name, tagDictPrefix)
	if !ok {
		return 0, 0, false
	}
	a, b, ok := strings.Cut(rest, "-")
	if !ok || len(a) != 10 || len(b) != 10 {
		return 0, 0, false
	}
	f, err1 := strconv.Atoi(a)
	t, err2 := strconv.Atoi(b)
	if err1 != nil || err2 != nil || f < 0 || t <= f {
		return 0, 0, false
	}
	return f, t, true
}

// MetaObjectName names block ulid's metadata object.
func MetaObjectName(ulid string) string { return blocksPrefix + ulid + "/" + metaName }

// MetricsObjectName names block ulid's metrics object.
func MetricsObjectName(ulid string) string { return blocksPrefix + ulid + "/" + metricsName }

// DataObjectName names block ulid's n-th data object.
func DataObjectName(ulid string, n int) string {
	return fmt.Sprintf("%s%s/data-%06d", blocksPrefix, ulid, n)
}

// BlockMeta is a block's metadata object: everything a query needs before
// it reads data (CloudTS: metadata apart from data).
type BlockMeta struct {
	// Version is the object's format version (2, 3 or 4).
	Version uint8
	Meta    []byte // the block's meta.json
	// Index is the block's index file: tag array, TTMapping, groups,
	// series and, in version 2 only, the block metrics; in version 3 the
	// metrics section is cut out (block.SplitIndex) into the metrics
	// object, fetched only when metrics are read.
	Index []byte
	// Metrics describes the metrics object (version 3).
	Metrics ObjectInfo
	// TagDictLen is the number of TagDict codes the segments must cover
	// before the index can be read.
	TagDictLen int
	// WindowSize is the span, in bytes, of each window CRC of the
	// columns.
	WindowSize int
	Objects    []ObjectInfo // the data objects, by number
	Groups     []Placement  // where each group extent is, in index order
}

// ObjectInfo describes one data object.
type ObjectInfo struct {
	Size int64
	CRC  uint32 // CRC32C of the whole object
}

// Placement locates one group extent in a data object.
type Placement struct {
	Object   int
	Off, Len int64
	CRC      uint32 // CRC32C of the extent (the block index's)
	// Timestamps is, in versions 2 and 3, the group's timestamp column,
	// the extent's first part, copied here so that a reader found the
	// rows of a time range without reading data: in the TSBS bench, 85 %
	// of the metadata objects' bytes, all kept in memory by every reader
	// (bench/NOTES.md). Version 4 leaves it in the data object only.
	Timestamps []byte
	// Windows are, for each part of the extent in order (version 4: its
	// timestamp column, then each value column; versions 2 and 3: the
	// value columns only; their lengths are the index's), the CRC32C of
	// each WindowSize bytes of the part, the last window shorter: a
	// reader fetches and checks any run of windows alone.
	Windows [][]uint32
}

// partWindows returns the window CRCs of part p of group g's extent (0:
// its timestamp column, which versions before 4 keep in Timestamps and
// have none for).
func (m *BlockMeta) partWindows(g, p int) []uint32 {
	if m.Version >= 4 {
		return m.Groups[g].Windows[p]
	}
	if p == 0 {
		return nil
	}
	return m.Groups[g].Windows[p-1]
}

// timestampsInside tells a version that copies each group's timestamp
// column into the metadata object.
func (m *BlockMeta) timestampsInside() bool { return m.Version < 4 }

// windowCount is the number of windows of a column of n bytes.
func windowCount(n int64, size int) int { return int((n + int64(size) - 1) / int64(size)) }

// windowCRCs returns the window CRCs of col.
func windowCRCs(col []byte, size int) []uint32 {
	out := make([]uint32, 0, windowCount(int64(len(col)), size))
	for off := 0; off < len(col); off += size {
		out = append(out, checksum.CRC32C(col[off:min(off+size, len(col))]))
	}
	return out
}

// CorruptionError reports a damaged bucket object.
type CorruptionError struct {
	Object string
	Offset int64
	Err    error
}

func (e *CorruptionError) Error() string {
	return fmt.Sprintf("bucket object %s: corrupt at byte %d: %v", e.Object, e.Offset, e.Err)
}

func (e *CorruptionError) Unwrap() error { return e.Err }

// Corrupted marks the error as damage (not a failure to reach the
// bucket), for callers that cannot import this package (tsdb).
func (e *CorruptionError) Corrupted() bool { return true }

func appendObjectHeader(dst []byte, magic uint32, version uint8) []byte {
	dst = binary.BigEndian.AppendUint32(dst, magic)
	return append(dst, version, 0, 0, 0)
}

// AppendBlockMeta appends m's encoding to dst.
func AppendBlockMeta(dst []byte, m *BlockMeta) []byte {
	start := len(dst)
	v := m.Version
	if v == 0 {
		v = MetaObjectVersion
	}
	dst = appendObjectHeader(dst, MetaObjectMagic, v)
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(m.Meta)))
	dst = append(dst, m.Meta...)
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(m.Index)))
	dst = append(dst, m.Index...)
	if v >= 3 {
		dst = binary.AppendUvarint(dst, uint64(m.Metrics.Size))
		dst = binary.BigEndian.AppendUint32(dst, m.Metrics.CRC)
	}
	dst = binary.AppendUvarint(dst, uint64(m.TagDictLen))
	dst = binary.AppendUvarint(dst, uint64(m.WindowSize))
	dst = binary.AppendUvarint(dst, uint64(len(m.Objects)))
	for _, o := range m.Objects {
		dst = binary.AppendUvarint(dst, uint64(o.Size))
		dst = binary.BigEndian.AppendUint32(dst, o.CRC)
	}
	dst = binary.AppendUvarint(dst, uint64(len(m.Groups)))
	for _, g := range m.Groups {
		dst = binary.AppendUvarint(dst, uint64(g.Object))
		dst = binary.AppendUvarint(dst, uint64(g.Off))
		dst = binary.AppendUvarint(dst, uint64(g.Len))
		dst = binary.BigEndian.AppendUint32(dst, g.CRC)
		if v < 4 {
			dst = binary.AppendUvarint(dst, uint64(len(g.Timestamps)))
			dst = append(dst, g.Timestamps...)
		}
		dst = binary.AppendUvarint(dst, uint64(len(g.Windows)))
		for _, col := range g.Windows {
			dst = binary.AppendUvarint(dst, uint64(len(col)))
			for _, c := range col {
				dst = binary.BigEndian.AppendUint32(dst, c)
			}
		}
	}
	return binary.BigEndian.AppendUint32(dst, checksum.CRC32C(dst[start:]))
}

// metaDec decodes a metadata object, keeping the first error.
type metaDec struct {
	name string
	b    []byte
	pos  int
	err  error
}

func (d *metaDec) fail(at int, format string, args ...any) {
	if d.err == nil {
		d.err = &CorruptionError{Object: d.name, Offset: int64(at), Err: fmt.Errorf(format, args...)}
	}
}

func (d *metaDec) uvarint(what string, max uint64) uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b[d.pos:])
	if n <= 0 {
		d.fail(d.pos, "%s: bad uvarint", what)
		return 0
	}
	if v > max {
		d.fail(d.pos, "%s %d exceeds %d", what, v, max)
		return 0
	}
	d.pos += n
	return v
}

func (d *metaDec) u32(what string) uint32 {
	if d.err != nil {
		return 0
	}
	if len(d.b)-d.pos < 4 {
		d.fail(d.pos, "%s: truncated", what)
		return 0
	}
	v := binary.BigEndian.Uint32(d.b[d.pos:])
	d.pos += 4
	return v
}

func (d *metaDec) bytes(what string) []byte {
	n := d.u32(what + " length")
	if d.err != nil {
		return nil
	}
	if uint64(n) > uint64(len(d.b)-d.pos) {
		d.fail(d.pos-4, "%s of %d bytes runs past the end", what, n)
		return nil
	}
	out := d.b[d.pos : d.pos+int(n)]
	d.pos += int(n)
	return out
}

// ParseBlockMeta decodes the metadata object name. The slices of the
// result alias b. Damage is a *CorruptionError naming the byte offset.
func ParseBlockMeta(name string, b []byte) (*BlockMeta, error) {
	d := &metaDec{name: name, b: b}
	if len(b) < ObjectHeaderLen+4 {
		d.fail(0, "object is %d bytes, shorter than header and checksum", len(b))
		return nil, d.err
	}
	if m := binary.BigEndian.Uint32(b); m != MetaObjectMagic {
		d.fail(0, "bad magic %#08x, want %#08x", m, MetaObjectMagic)
		return nil, d.err
	}
	if b[4] < 2 || b[4] > 4 {
		d.fail(4, "unsupported version %d (this code reads 2 to 4)", b[4])
		return nil, d.err
	}
	if b[5]|b[6]|b[7] != 0 {
		d.fail(5, "reserved header bytes not zero")
		return nil, d.err
	}
	body := len(b) - 4
	if got, want := checksum.CRC32C(b[:body]), binary.BigEndian.Uint32(b[body:]); got != want {
		d.fail(body, "checksum mismatch")
		return nil, d.err
	}
	d.b = b[:body]
	d.pos = ObjectHeaderLen
	m := &BlockMeta{Version: b[4]}
	m.Meta = d.bytes("meta.json")
	m.Index = d.bytes("index")
	if m.Version >= 3 {
		at := d.pos
		m.Metrics.Size = int64(d.uvarint("metrics object size", math.MaxInt64))
		m.Metrics.CRC = d.u32("metrics object checksum")
		if d.err == nil && m.Metrics.Size < ObjectHeaderLen+4 {
			d.fail(at, "metrics object size %d shorter than its header and checksum", m.Metrics.Size)
		}
	}
	m.TagDictLen = int(d.uvarint("tagdict length", math.MaxUint32))
	at := d.pos
	m.WindowSize = int(d.uvarint("window size", math.MaxInt32))
	if d.err == nil && m.WindowSize == 0 {
		d.fail(at, "window size 0")
	}
	nobj := d.uvarint("object count", uint64(len(d.b)))
	for i := uint64(0); i < nobj && d.err == nil; i++ {
		o := ObjectInfo{Size: int64(d.uvarint("object size", math.MaxInt64))}
		o.CRC = d.u32("object checksum")
		if d.err == nil && o.Size < ObjectHeaderLen {
			d.fail(d.pos, "object %d: size %d shorter than its header", i, o.Size)
		}
		m.Objects = append(m.Objects, o)
	}
	ngroups := d.uvarint("group count", uint64(len(d.b)))
	for i := uint64(0); i < ngroups && d.err == nil; i++ {
		at := d.pos
		g := Placement{Object: int(d.uvarint("group object", uint64(len(m.Objects))))}
		g.Off = int64(d.uvarint("group offset", math.MaxInt64))
		g.Len = int64(d.uvarint("group length", math.MaxInt64))
		g.CRC = d.u32("group checksum")
		if m.Version < 4 {
			nts := d.uvarint("timestamp column length", uint64(len(d.b)-d.pos))
			if d.err == nil {
				g.Timestamps = d.b[d.pos : d.pos+int(nts)]
				d.pos += int(nts)
			}
		}
		ncols := d.uvarint("column count", uint64(len(d.b)-d.pos))
		for j := uint64(0); j < ncols && d.err == nil; j++ {
			nwin := d.uvarint("window count", uint64(len(d.b)-d.pos)/4)
			col := make([]uint32, 0, nwin)
			for k := uint64(0); k < nwin && d.err == nil; k++ {
				col = append(col, d.u32("window checksum"))
			}
			g.Windows = append(g.Windows, col)
		}
		if d.err != nil {
			break
		}
		if g.Object >= len(m.Objects) {
			d.fail(at, "group %d: object %d of %d", i, g.Object, len(m.Objects))
			break
		}
		if size := m.Objects[g.Object].Size; g.Off < ObjectHeaderLen || g.Len > size-g.Off {
			d.fail(at, "group %d: [%d, +%d) outside object %d of %d bytes", i, g.Off, g.Len, g.Object, size)
			break
		}
		m.Groups = append(m.Groups, g)
	}
	if d.err == nil && d.pos != len(d.b) {
		d.fail(d.pos, "%d unused bytes", len(d.b)-d.pos)
	}
	if d.err != nil {
		return nil, d.err
	}
	return m, nil
}

// CheckDataObject verifies a data object's header and its size and
// checksum against info.
func CheckDataObject(name string, b []byte, info ObjectInfo) error {
	switch {
	case int64(len(b)) != info.Size:
		return &CorruptionError{Object: name, Offset: int64(len(b)), Err: fmt.Errorf("%d bytes, metadata says %d", len(b), info.Size)}
	case len(b) < ObjectHeaderLen || binary.BigEndian.Uint32(b) != DataObjectMagic:
		return &CorruptionError{Object: name, Err: fmt.Errorf("bad magic")}
	case b[4] != DataObjectVersion:
		return &CorruptionError{Object: name, Offset: 4, Err: fmt.Errorf("unsupported version %d", b[4])}
	case checksum.CRC32C(b) != info.CRC:
		return &CorruptionError{Object: name, Err: fmt.Errorf("checksum mismatch")}
	}
	return nil
}

// packObjects assigns extents (by index) to data objects: in the order of
// keys (related groups next to each other, CloudTS' grouping), each
// object filled up to maxSize bytes unless one extent alone is larger.
// It returns the extents of each object in order.
func packObjects(lens []int64, keys []string, maxSize int64) [][]int {
	order := make([]int, len(lens))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return strings.Compare(keys[a], keys[b]) })
	var out [][]int
	var cur []int
	size := int64(ObjectHeaderLen)
	for _, i := range order {
		if len(cur) > 0 && size+lens[i] > maxSize {
			out = append(out, cur)
			cur, size = nil, ObjectHeaderLen
		}
		cur = append(cur, i)
		size += lens[i]
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// AppendMetricsObject appends a metrics object holding section, a block's
// metrics section (block.SplitIndex), to dst: zstd-compressed when that is
// smaller.
func AppendMetricsObject(dst, section []byte) []byte {
	start := len(dst)
	dst = appendObjectHeader(dst, MetricsObjectMagic, MetricsObjectVersion)
	codec := start + 5
	dst[codec] = metricsZstd
	dst = binary.AppendUvarint(dst, uint64(len(section)))
	body := len(dst)
	if len(section) <= zstdx.MaxSize {
		dst = zstdx.AppendDefault(dst, section)
	}
	if len(section) > zstdx.MaxSize || len(dst)-body >= len(section) {
		dst[codec] = metricsStored
		dst = append(dst[:body], section...)
	}
	return binary.BigEndian.AppendUint32(dst, checksum.CRC32C(dst[start:]))
}

// checkMetricsObject checks what a metrics object can check alone: its
// magic, version, reserved bytes and trailing CRC32C.
func checkMetricsObject(name string, b []byte) error {
	switch {
	case len(b) < ObjectHeaderLen+4 || binary.BigEndian.Uint32(b) != MetricsObjectMagic:
		return &CorruptionError{Object: name, Err: fmt.Errorf("bad magic")}
	case b[4] != MetricsObjectVersion:
		return &CorruptionError{Object: name, Offset: 4, Err: fmt.Errorf("unsupported version %d", b[4])}
	case b[6]|b[7] != 0:
		return &CorruptionError{Object: name, Offset: 6, Err: fmt.Errorf("reserved header bytes not zero")}
	case checksum.CRC32C(b[:len(b)-4]) != binary.BigEndian.Uint32(b[len(b)-4:]):
		return &CorruptionError{Object: name, Offset: int64(len(b) - 4), Err: fmt.Errorf("checksum mismatch")}
	}
	return nil
}

// ParseMetricsObject checks metrics object name (b) against info from its
// metadata object and returns the section it holds, which must be size
// bytes (the index footer's length). buf is reused for decompression.
func ParseMetricsObject(name string, b []byte, info ObjectInfo, size int64, buf []byte) (section, bufOut []byte, err error) {
	fail := func(at int, format string, args ...any) ([]byte, []byte, error) {
		return nil, buf, &CorruptionError{Object: name, Offset: int64(at), Err: fmt.Errorf(format, args...)}
	}
	if int64(len(b)) != info.Size {
		return fail(len(b), "%d bytes, metadata says %d", len(b), info.Size)
	}
	if err := checkMetricsObject(name, b); err != nil {
		return nil, buf, err
	}
	body := len(b) - 4
	if binary.BigEndian.Uint32(b[body:]) != info.CRC {
		return fail(body, "checksum mismatch with the metadata object's")
	}
	n, k := binary.Uvarint(b[ObjectHeaderLen:body])
	if k <= 0 || int64(n) != size || size <= 0 {
		return fail(ObjectHeaderLen, "section length %d, the index footer says %d", n, size)
	}
	payload := b[ObjectHeaderLen+k : body]
	switch b[5] {
	case metricsStored:
		if int64(len(payload)) != size {
			return fail(ObjectHeaderLen+k, "%d bytes stored, section length %d", len(payload), size)
		}
		return payload, buf, nil
	case metricsZstd:
		out, buf, err := zstdx.Decode(buf, payload, n)
		if err != nil {
			return fail(ObjectHeaderLen+k, "%v", err)
		}
		return out, buf, nil
	default:
		return fail(5, "unknown codec %d", b[5])
	}
}
