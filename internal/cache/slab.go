package cache

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"

	"github.com/aerie-db/aerie/internal/checksum"
)

// The slab format (docs/format/cache.md). Integers are little-endian.
const (
	// SlabMagic starts every slab.
	SlabMagic = 0x54534331 // "TSC1"
	// SlabVersion is the slab format's version.
	SlabVersion = 1
	// BlockSize is the unit of the time markers, of the data CRCs and of
	// every read and write (direct I/O's alignment).
	BlockSize = 4096
	// SnapshotMagic starts the key index snapshot written at a clean close.
	SnapshotMagic = 0x54534349 // "TSCI"
	// SnapshotVersion is the snapshot format's version.
	SnapshotVersion = 1
	// MaxFieldLen bounds a field name.
	MaxFieldLen = 256
)

const (
	slabFixedLen = 64 // the header's fixed part
	slabKeyLen   = 20 + 8 + 8 + 8 + 4 + 4
	markerLen    = 8 + 4 + 4
	noPoint      = math.MaxUint32 // a marker's offset when no point starts in its block
)

// slabKey is an entry of a slab's key array: a key at an epoch, the hull
// of that key's points in the slab (what an eviction of the slab takes
// from the key's cached ranges), and its run: the data bytes [off, end)
// holding, in time order, the points whose first key it is. A key whose
// points are all in its run is contiguous; one sharing points with an
// earlier key (scattered) has them in that key's run too.
type slabKey struct {
	key        Key
	epoch      uint64
	minT, maxT int64
	off, end   uint32
	scattered  bool
}

// scatteredBit marks a scattered key in the encoded run end.
const scatteredBit = 1 << 31

// marker is a time marker: the timestamp and data offset of the first
// point that starts in a block (off == noPoint: none does), and the CRC32C
// of the block.
type marker struct {
	t   int64
	off uint32
	crc uint32
}

// slabHeader is the decoded header of a sealed slab; a slab node keeps it
// in memory so that a read goes to the data blocks directly.
type slabHeader struct {
	seq        uint64
	minT, maxT int64
	field      string
	keys       []slabKey
	bitmapLen  int // bytes of a point's key bit array
	npoints    int
	dataOff    int // the data part's offset in the slab (a multiple of BlockSize)
	dataLen    int
	markers    []marker
}

// headerLen is the encoded length of a header with nkeys keys, nmarkers
// markers and a field name of fieldLen bytes.
func headerLen(fieldLen, nkeys, nmarkers int) int {
	return slabFixedLen + fieldLen + nkeys*slabKeyLen + nmarkers*markerLen
}

// dataOffFor is the data offset a slab of slabSize bytes reserves for
// headers of up to maxKeys keys.
func dataOffFor(slabSize, maxKeys int) int {
	// markers for every block of the slab is an upper bound
	n := headerLen(MaxFieldLen, maxKeys, slabSize/BlockSize)
	return (n + BlockSize - 1) / BlockSize * BlockSize
}

// slabPoint is a point being sealed into a slab: its key bits are indices
// into the slab's key array.
type slabPoint struct {
	t    int64
	v    []byte
	keys []uint16
}

// pointLen is the encoded length of a point with a value of n bytes.
func pointLen(bitmapLen, n int) int {
	return 8 + bitmapLen + (bits.Len64(uint64(n)|1)+6)/7 + n // the uvarint's bytes, without encoding it
}

// appendSlab encodes a sealed slab of slabSize bytes into dst: header at
// 0, data from dataOff. points must be sorted by (t, v) without duplicates
// and fit; keys' hulls must be set.
func appendSlab(dst []byte, slabSize, dataOff int, seq uint64, field string, keys []slabKey, points []slabPoint) ([]byte, error) {
	start := len(dst)
	dst = slices.Grow(dst, slabSize)[:start+slabSize]
	clear(dst[start:])
	s := dst[start:]
	bitmapLen := (len(keys) + 7) / 8
	data := s[dataOff:]
	nblocks := (len(data) + BlockSize - 1) / BlockSize
	markers := make([]marker, nblocks)
	for i := range markers {
		markers[i].off = noPoint
	}
	// Points in runs of their first key, each run in time order: a read
	// for one key scans its run only.
	home := func(p slabPoint) uint16 { return slices.Min(p.keys) }
	points = slices.Clone(points)
	slices.SortStableFunc(points, func(a, b slabPoint) int { return cmp.Compare(home(a), home(b)) })
	keys = slices.Clone(keys)
	for i := range keys {
		keys[i].off, keys[i].end, keys[i].scattered = 0, 0, false
	}
	for _, p := range points {
		for _, k := range p.keys {
			if k != home(p) {
				keys[k].scattered = true
			}
		}
	}
	off := 0
	minT, maxT := int64(math.MaxInt64), int64(math.MinInt64)
	run := -1
	for _, p := range points {
		if h := int(home(p)); h != run {
			if run >= 0 {
				keys[run].end = uint32(off)
			}
			run = h
			keys[run].off = uint32(off)
		}
		n := pointLen(bitmapLen, len(p.v))
		if off+n > len(data) {
			return dst[:start], fmt.Errorf("slab overflow: %d points do not fit in %d bytes", len(points), len(data))
		}
		if b := off / BlockSize; markers[b].off == noPoint {
			markers[b] = marker{t: p.t, off: uint32(off)}
		}
		binary.LittleEndian.PutUint64(data[off:], uint64(p.t))
		bm := data[off+8 : off+8+bitmapLen]
		for _, k := range p.keys {
			bm[k/8] |= 1 << (k % 8)
		}
		off += 8 + bitmapLen
		off += binary.PutUvarint(data[off:], uint64(len(p.v)))
		off += copy(data[off:], p.v)
		minT, maxT = min(minT, p.t), max(maxT, p.t)
	}
	if run >= 0 {
		keys[run].end = uint32(off)
	}
	if len(points) == 0 {
		minT, maxT = 0, -1
	}
	used := (off + BlockSize - 1) / BlockSize
	markers = markers[:used]
	for i := range markers {
		markers[i].crc = checksum.CRC32C(data[i*BlockSize : min((i+1)*BlockSize, off)])
	}
	hl := headerLen(len(field), len(keys), len(markers))
	if hl > dataOff || len(field) > MaxFieldLen || len(keys) > math.MaxUint16 {
		return dst[:start], fmt.Errorf("slab header of %d bytes does not fit in %d", hl, dataOff)
	}
	h := s[:0]
	h = binary.LittleEndian.AppendUint32(h, SlabMagic)
	h = append(h, SlabVersion, 0, 0, 0)
	h = binary.LittleEndian.AppendUint64(h, seq)
	h = binary.LittleEndian.AppendUint64(h, uint64(minT))
	h = binary.LittleEndian.AppendUint64(h, uint64(maxT))
	h = binary.LittleEndian.AppendUint16(h, uint16(len(keys)))
	h = binary.LittleEndian.AppendUint16(h, uint16(len(markers)))
	h = binary.LittleEndian.AppendUint16(h, uint16(len(field)))
	h = binary.LittleEndian.AppendUint16(h, 0)
	h = binary.LittleEndian.AppendUint32(h, uint32(len(points)))
	h = binary.LittleEndian.AppendUint32(h, uint32(off))
	h = binary.LittleEndian.AppendUint32(h, uint32(dataOff))
	h = binary.LittleEndian.AppendUint32(h, 0) // header CRC, below
	h = append(h, make([]byte, slabFixedLen-len(h))...)
	h = append(h, field...)
	for _, k := range keys {
		h = append(h, k.key[:]...)
		h = binary.LittleEndian.AppendUint64(h, k.epoch)
		h = binary.LittleEndian.AppendUint64(h, uint64(k.minT))
		h = binary.LittleEndian.AppendUint64(h, uint64(k.maxT))
		h = binary.LittleEndian.AppendUint32(h, k.off)
		end := k.end
		if k.scattered {
			end |= scatteredBit
		}
		h = binary.LittleEndian.AppendUint32(h, end)
	}
	for _, m := range markers {
		h = binary.LittleEndian.AppendUint64(h, uint64(m.t))
		h = binary.LittleEndian.AppendUint32(h, m.off)
		h = binary.LittleEndian.AppendUint32(h, m.crc)
	}
	binary.LittleEndian.PutUint32(s[52:], checksum.CRC32C(s[:hl]))
	return dst, nil
}

// errCorrupt marks a slab that fails a check; the cache drops it.
var errCorrupt = errors.New("corrupt slab")

// CorruptionError names the slab and what was wrong.
type CorruptionError struct {
	Slot   int
	Offset int64 // in the cache file
	Reason string
}

func (e *CorruptionError) Error() string {
	return fmt.Sprintf("cache slab %d at offset %d: %s", e.Slot, e.Offset, e.Reason)
}

func (e *CorruptionError) Unwrap() error { return errCorrupt }

// decodeSlabHeader decodes and checks the header at the start of b (at
// least the header's bytes; the data part is not read).
func decodeSlabHeader(b []byte, slabSize int) (slabHeader, string) {
	var h slabHeader
	if len(b) < slabFixedLen {
		return h, "short header"
	}
	if m := binary.LittleEndian.Uint32(b); m != SlabMagic {
		return h, fmt.Sprintf("magic %#x, want %#x", m, uint32(SlabMagic))
	}
	if v := b[4]; v != SlabVersion {
		return h, fmt.Sprintf("unknown version %d", v)
	}
	h.seq = binary.LittleEndian.Uint64(b[8:])
	h.minT = int64(binary.LittleEndian.Uint64(b[16:]))
	h.maxT = int64(binary.LittleEndian.Uint64(b[24:]))
	nkeys := int(binary.LittleEndian.Uint16(b[32:]))
	nmarkers := int(binary.LittleEndian.Uint16(b[34:]))
	fieldLen := int(binary.LittleEndian.Uint16(b[36:]))
	h.npoints = int(binary.LittleEndian.Uint32(b[40:]))
	h.dataLen = int(binary.LittleEndian.Uint32(b[44:]))
	h.dataOff = int(binary.LittleEndian.Uint32(b[48:]))
	crc := binary.LittleEndian.Uint32(b[52:])
	hl := headerLen(fieldLen, nkeys, nmarkers)
	switch {
	case fieldLen > MaxFieldLen:
		return h, fmt.Sprintf("field name of %d bytes", fieldLen)
	case h.dataOff%BlockSize != 0 || h.dataOff < hl || h.dataOff >= slabSize || hl > len(b):
		return h, fmt.Sprintf("header of %d bytes with data at %d", hl, h.dataOff)
	case h.dataLen > slabSize-h.dataOff || nmarkers != (h.dataLen+BlockSize-1)/BlockSize:
		return h, fmt.Sprintf("%d data bytes with %d markers", h.dataLen, nmarkers)
	}
	hb := slices.Clone(b[:hl])
	binary.LittleEndian.PutUint32(hb[52:], 0)
	if got := checksum.CRC32C(hb); got != crc {
		return h, fmt.Sprintf("header CRC %#x, want %#x", got, crc)
	}
	p := b[slabFixedLen:hl]
	h.field = string(p[:fieldLen])
	p = p[fieldLen:]
	h.keys = make([]slabKey, nkeys)
	for i := range h.keys {
		k := &h.keys[i]
		copy(k.key[:], p)
		k.epoch = binary.LittleEndian.Uint64(p[20:])
		k.minT = int64(binary.LittleEndian.Uint64(p[28:]))
		k.maxT = int64(binary.LittleEndian.Uint64(p[36:]))
		k.off = binary.LittleEndian.Uint32(p[44:])
		end := binary.LittleEndian.Uint32(p[48:])
		k.end, k.scattered = end&^scatteredBit, end&scatteredBit != 0
		if k.off > k.end || int(k.end) > h.dataLen {
			return h, fmt.Sprintf("key %d: run [%d, %d) outside %d data bytes", i, k.off, k.end, h.dataLen)
		}
		p = p[slabKeyLen:]
	}
	h.markers = make([]marker, nmarkers)
	for i := range h.markers {
		h.markers[i] = marker{
			t:   int64(binary.LittleEndian.Uint64(p)),
			off: binary.LittleEndian.Uint32(p[8:]),
			crc: binary.LittleEndian.Uint32(p[12:]),
		}
		p = p[markerLen:]
	}
	h.bitmapLen = (nkeys + 7) / 8
	return h, ""
}

// readSpan is what a read of key bit's points in [mint, maxt] scans: data
// bytes [from, to) (to: the run's end, or the data's), within blocks
// [b0, b1). A contiguous key scans its run from the last time marker in it
// before mint to the first after maxt; a scattered one scans everything.
type readSpan struct {
	b0, b1   int
	from, to int
	sorted   bool // the span is one run in time order: a point after maxt ends it
}

func (h *slabHeader) readSpan(bit int, mint, maxt int64) readSpan {
	k := h.keys[bit]
	if k.scattered {
		return readSpan{b0: 0, b1: len(h.markers), from: 0, to: h.dataLen}
	}
	from, to := int(k.off), int(k.end)
	for i, m := range h.markers {
		if m.off == noPoint || int(m.off) < int(k.off) || int(m.off) >= int(k.end) {
			continue // no point starts here, or it is another key's
		}
		if m.t < mint {
			from = int(m.off)
		}
		if m.t > maxt {
			to = min(to, (i+1)*BlockSize) // that point may start mid-block: read its block
			break
		}
	}
	return readSpan{b0: from / BlockSize, b1: (max(to, from+1) + BlockSize - 1) / BlockSize, from: from, to: to, sorted: true}
}

// scanPoints calls fn for each point of the span whose timestamp is in
// [mint, maxt], with its key bit array; data holds blocks sp.b0.. of the
// slab. It returns what is wrong with a point that does not decode.
func scanPoints(h *slabHeader, data []byte, sp readSpan, mint, maxt int64, fn func(t int64, bm, v []byte)) string {
	base := sp.b0 * BlockSize
	off, end := sp.from-base, min(sp.to-base, len(data), h.dataLen-base)
	for off < end {
		if off+8+h.bitmapLen > end {
			return fmt.Sprintf("point cut at data offset %d", off+base)
		}
		t := int64(binary.LittleEndian.Uint64(data[off:]))
		if t > maxt && sp.sorted {
			return ""
		}
		bm := data[off+8 : off+8+h.bitmapLen]
		off += 8 + h.bitmapLen
		n, k := binary.Uvarint(data[off:end])
		if k <= 0 {
			return fmt.Sprintf("bad value length at data offset %d", off+base)
		}
		off += k
		if n > uint64(end-off) {
			return fmt.Sprintf("value of %d bytes past the span's end at offset %d", n, off+base)
		}
		if t >= mint && t <= maxt {
			fn(t, bm, data[off:off+int(n)])
		}
		off += int(n)
	}
	return ""
}

// hasBit tells whether key bit i is set in a point's bit array.
func hasBit(bm []byte, i int) bool { return bm[i/8]&(1<<(i%8)) != 0 }
