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
	SlabVersion = 2
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
	// segs (in memory only, not encoded) are the time spans of the Sets
	// whose points of the key went to this slab, each clipped to the
	// hull: what an eviction takes from the key's ranges. nil when not
	// known (a slab read back from a snapshot): the hull is taken.
	segs []span
}

// spans is what losing the slab takes from the key's cached ranges: its
// Sets' spans, or the hull when those are not known.
func (k *slabKey) spans() []span {
	if k.segs != nil {
		return k.segs
	}
	return []span{{k.minT, k.maxT}}
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

// uvarintLen is the number of bytes binary.PutUvarint writes for x.
func uvarintLen(x uint64) int { return (bits.Len64(x|1) + 6) / 7 }

// maxDeltaLen is what a point's time delta can take: the estimate for a
// point that does not follow its key's last one (see pointLen).
const maxDeltaLen = binary.MaxVarintLen64

// pointLen is the encoded length of a point of one key whose time is dt
// after the previous point of its run, with a value of n bytes.
func pointLen(dt uint64, n int) int {
	return uvarintLen(dt) + 1 + uvarintLen(uint64(n)) + n
}

// keyBits is the encoded length of the key bit array of a point of keys
// (sorted or not; the lowest is its run's), with its length prefix.
func keyBits(keys []uint16) (nbytes int) {
	if len(keys) <= 1 {
		return 0
	}
	lo, hi := slices.Min(keys), slices.Max(keys)
	return int(hi/8-lo/8) + 1
}

// groupByHome returns points grouped by their home key, in key order,
// each group in the points' order (a stable counting sort).
func groupByHome(points []slabPoint, nkeys int, home func(slabPoint) uint16) []slabPoint {
	start := make([]int, nkeys+1)
	for _, p := range points {
		start[int(home(p))+1]++
	}
	for i := 1; i <= nkeys; i++ {
		start[i] += start[i-1]
	}
	out := make([]slabPoint, len(points))
	for _, p := range points {
		h := home(p)
		out[start[h]] = p
		start[h]++
	}
	return out
}

// appendSlab encodes a sealed slab of slabSize bytes into dst: header at
// 0, data from dataOff. points must be sorted by (t, v) without duplicates
// and fit; keys' hulls must be set.
func appendSlab(dst []byte, slabSize, dataOff int, seq uint64, field string, keys []slabKey, points []slabPoint) ([]byte, error) {
	start := len(dst)
	dst = slices.Grow(dst, slabSize)[:start+slabSize]
	clear(dst[start:])
	s := dst[start:]
	data := s[dataOff:]
	nblocks := (len(data) + BlockSize - 1) / BlockSize
	markers := make([]marker, nblocks)
	for i := range markers {
		markers[i].off = noPoint
	}
	// Points in runs of their first key, each run in time order: a read
	// for one key scans its run only.
	home := func(p slabPoint) uint16 { return slices.Min(p.keys) }
	points = groupByHome(points, len(keys), home)
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
	var prev int64 // the previous point's time in the run
	for _, p := range points {
		h := int(home(p))
		if h != run {
			if run >= 0 {
				keys[run].end = uint32(off)
			}
			run = h
			keys[run].off = uint32(off)
			prev = keys[run].minT
		}
		if p.t < prev {
			return dst[:start], fmt.Errorf("slab: point at %d before %d, the previous one of key %d's run (or its min time)", p.t, prev, run)
		}
		nb := keyBits(p.keys)
		n := pointLen(uint64(p.t-prev), len(p.v)) + uvarintLen(uint64(nb)) - 1 + nb
		if off+n > len(data) {
			return dst[:start], fmt.Errorf("slab overflow: %d points do not fit in %d bytes", len(points), len(data))
		}
		if b := off / BlockSize; markers[b].off == noPoint {
			markers[b] = marker{t: p.t, off: uint32(off)}
		}
		off += binary.PutUvarint(data[off:], uint64(p.t-prev))
		off += binary.PutUvarint(data[off:], uint64(nb))
		if nb > 0 {
			bm := data[off : off+nb]
			for _, k := range p.keys {
				j := int(k/8) - h/8
				bm[j] |= 1 << (k % 8)
			}
			off += nb
		}
		off += binary.PutUvarint(data[off:], uint64(len(p.v)))
		off += copy(data[off:], p.v)
		prev = p.t
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
	return h, ""
}

// readSpan is what a read of key bit's points in [mint, maxt] scans: data
// bytes [from, to) (to: the run's end, or the data's), within blocks
// [b0, b1), starting at a point whose time is known: the run's first (its
// time delta counts from the key's min time) or one a time marker names.
// A contiguous key scans its run from the last time marker in it before
// mint to the first after maxt; a scattered one scans every run (all).
type readSpan struct {
	b0, b1   int
	from, to int
	run      int   // the key whose run is scanned
	markT    int64 // the time of the point at from, when fromMark
	fromMark bool
	sorted   bool // the span is one run in time order: a point after maxt ends it
	all      bool // every run, one after the other
}

func (h *slabHeader) readSpan(bit int, mint, maxt int64) readSpan {
	k := h.keys[bit]
	if k.scattered {
		return readSpan{b0: 0, b1: len(h.markers), from: 0, to: h.dataLen, all: true}
	}
	sp := readSpan{from: int(k.off), to: int(k.end), run: bit, sorted: true}
	for i, m := range h.markers {
		if m.off == noPoint || int(m.off) < int(k.off) || int(m.off) >= int(k.end) {
			continue // no point starts here, or it is another key's
		}
		if m.t < mint {
			sp.from, sp.markT, sp.fromMark = int(m.off), m.t, true
		}
		if m.t > maxt {
			sp.to = min(sp.to, (i+1)*BlockSize) // that point may start mid-block: read its block
			break
		}
	}
	sp.b0, sp.b1 = sp.from/BlockSize, (max(sp.to, sp.from+1)+BlockSize-1)/BlockSize
	return sp
}

// keySet is a point's keys: its run's key alone (bits nil), or the bit
// array of its keys from the byte holding the run's key's bit.
type keySet struct {
	home int
	bits []byte
}

// has tells whether key bit i is in the set.
func (ks keySet) has(i int) bool {
	if ks.bits == nil {
		return i == ks.home
	}
	j := i/8 - ks.home/8
	return j >= 0 && j < len(ks.bits) && ks.bits[j]&(1<<(i%8)) != 0
}

// scanPoints calls fn for each point of the span whose timestamp is in
// [mint, maxt], with its keys; data holds blocks sp.b0.. of the slab. It
// returns what is wrong with a point that does not decode.
func scanPoints(h *slabHeader, data []byte, sp readSpan, mint, maxt int64, fn func(t int64, ks keySet, v []byte)) string {
	if !sp.all {
		return scanRun(h, data, sp, mint, maxt, fn)
	}
	runs := make([]int, 0, len(h.keys))
	for i, k := range h.keys {
		if k.end > k.off {
			runs = append(runs, i)
		}
	}
	slices.SortFunc(runs, func(a, b int) int { return cmp.Compare(h.keys[a].off, h.keys[b].off) })
	for _, r := range runs {
		k := h.keys[r]
		run := readSpan{b0: sp.b0, b1: sp.b1, from: int(k.off), to: int(k.end), run: r, sorted: true}
		if reason := scanRun(h, data, run, mint, maxt, fn); reason != "" {
			return reason
		}
	}
	return ""
}

// scanRun scans the part [sp.from, sp.to) of one run.
func scanRun(h *slabHeader, data []byte, sp readSpan, mint, maxt int64, fn func(t int64, ks keySet, v []byte)) string {
	base := sp.b0 * BlockSize
	if sp.from < base {
		return fmt.Sprintf("run at data offset %d before the blocks read", sp.from)
	}
	off, end := sp.from-base, min(sp.to-base, len(data), h.dataLen-base)
	t := h.keys[sp.run].minT
	first := true
	for off < end {
		dt, k := binary.Uvarint(data[off:end])
		if k <= 0 {
			return fmt.Sprintf("bad time delta at data offset %d", off+base)
		}
		off += k
		if first && sp.fromMark {
			t = sp.markT
		} else {
			t += int64(dt)
		}
		first = false
		if t > maxt && sp.sorted {
			return ""
		}
		nb, k := binary.Uvarint(data[off:end])
		if k <= 0 || nb > uint64(end-off-k) {
			return fmt.Sprintf("bad key bit array length at data offset %d", off+base)
		}
		off += k
		ks := keySet{home: sp.run}
		if nb > 0 {
			ks.bits = data[off : off+int(nb)]
			off += int(nb)
		}
		n, k := binary.Uvarint(data[off:end])
		if k <= 0 {
			return fmt.Sprintf("bad value length at data offset %d", off+base)
		}
		off += k
		if n > uint64(end-off) {
			return fmt.Sprintf("value of %d bytes past the span's end at offset %d", n, off+base)
		}
		if t >= mint && t <= maxt {
			fn(t, ks, data[off:off+int(n)])
		}
		off += int(n)
	}
	return ""
}
