package encoding

import (
	"encoding/binary"
	"errors"
	"math"
	"math/bits"
	"slices"
	"sync"
)

// ColumnMeta describes one on-disk value column: one series' values over
// the rows of its group in one block. It is stored in the block's index, not
// with the data, so that the byte range of any tuple is computed from the
// index alone.
type ColumnMeta struct {
	// Bases are the two XOR bases (float64 bits): the 25th and 75th
	// percentile of the column's present values.
	Bases [2]uint64
	// Flags is a combination of ColumnSparse and ColumnConst (never both).
	Flags uint8
	// Rows is the number of rows of the group in the block, ≤ MaxRows.
	Rows uint32
	// TupleSize is the number of rows per tuple (the last may be short).
	TupleSize uint8
	// BlockTuples is the number of tuples per disk block (the last may be short).
	BlockTuples uint8
	// Widths holds, per disk block, the padded width in bytes of each of its
	// tuples. It is empty for a ColumnConst column.
	Widths []uint16

	// starts, if built (Index), holds the offset of every disk block and
	// the data length: tuple offsets in O(1) instead of a sum over the
	// blocks before (which made reading a long column quadratic).
	starts []int64
}

// Index precomputes the disk blocks' offsets, so that TupleRange costs
// O(1) however long the column (8 bytes per disk block). Readers that
// keep a meta to read tuples call it once after decoding.
func (m *ColumnMeta) Index() {
	if m.Flags&ColumnConst != 0 || m.BlockTuples == 0 || len(m.Widths) < 4 {
		return
	}
	m.starts = make([]int64, len(m.Widths)+1)
	bt := int64(m.BlockTuples)
	for b, w := range m.Widths {
		m.starts[b+1] = m.starts[b] + int64(w)*bt
	}
}

// NumTuples returns the number of tuples, ⌈Rows/TupleSize⌉.
func (m *ColumnMeta) NumTuples() int {
	if m.TupleSize == 0 {
		return 0
	}
	return (int(m.Rows) + int(m.TupleSize) - 1) / int(m.TupleSize)
}

// NumBlocks returns the number of disk blocks, ⌈NumTuples/BlockTuples⌉.
func (m *ColumnMeta) NumBlocks() int {
	if m.BlockTuples == 0 {
		return 0
	}
	return (m.NumTuples() + int(m.BlockTuples) - 1) / int(m.BlockTuples)
}

// TupleRows returns the number of rows of tuple i: TupleSize except for a
// short last tuple; 0 when i is out of range.
func (m *ColumnMeta) TupleRows(i int) int {
	if i < 0 || i >= m.NumTuples() {
		return 0
	}
	return min(int(m.TupleSize), int(m.Rows)-i*int(m.TupleSize))
}

func (m *ColumnMeta) width(b int) int64 {
	if m.Flags&ColumnConst != 0 || b >= len(m.Widths) {
		return 0
	}
	return int64(m.Widths[b])
}

// locate returns the byte offset of tuple i in the column's data,
// Σ_{b < i/BlockTuples} Widths[b]·BlockTuples + (i mod BlockTuples)·Widths[i/BlockTuples],
// and its width, with one division.
func (m *ColumnMeta) locate(i int) (off, width int64) {
	bt := int(m.BlockTuples)
	blk, k := i/bt, i%bt
	width = m.width(blk)
	if blk < len(m.starts) {
		return m.starts[blk] + int64(k)*width, width
	}
	for b := 0; b < blk; b++ {
		off += m.width(b) * int64(bt)
	}
	return off + int64(k)*width, width
}

// TupleRange returns the byte range [off, end) of the column's data that
// holds tuples i through j inclusive. It returns 0, 0 when the range is
// empty or out of bounds.
func (m *ColumnMeta) TupleRange(i, j int) (off, end int64) {
	if i < 0 || i > j || j >= m.NumTuples() || m.BlockTuples == 0 {
		return 0, 0
	}
	off, w := m.locate(i)
	if j == i {
		return off, off + w
	}
	offJ, wJ := m.locate(j)
	return off, offJ + wJ
}

// DataLen returns the length in bytes of the column's data.
func (m *ColumnMeta) DataLen() int64 {
	nt := m.NumTuples()
	if nt == 0 || m.BlockTuples == 0 {
		return 0
	}
	_, end := m.TupleRange(nt-1, nt-1)
	return end
}

// check validates what every decoder relies on; it is O(1).
func (m *ColumnMeta) check() error {
	switch {
	case m.TupleSize == 0 || m.BlockTuples == 0:
		return argErr(fmtColumn, "meta has zero TupleSize or BlockTuples")
	case m.Rows > MaxRows:
		return argErr(fmtColumn, "meta Rows exceeds MaxRows")
	case m.Flags&^(ColumnSparse|ColumnConst) != 0 || m.Flags == ColumnSparse|ColumnConst:
		return argErr(fmtColumn, "meta has invalid Flags")
	case m.Flags&ColumnConst == 0 && len(m.Widths) != m.NumBlocks():
		return argErr(fmtColumn, "meta Widths length differs from the number of disk blocks")
	}
	return nil
}

// bitmapLen is the size of a sparse tuple's presence bitmap.
func bitmapLen(tupleSize int) int { return (tupleSize + 7) / 8 }

// maxTupleWidth bounds the encoded length of one tuple: bitmap, indicator
// bit, and every value in case 3 with 64 significant bits.
func maxTupleWidth(tupleSize int) int {
	return bitmapLen(tupleSize) + (1+tupleSize*(case3Overhead+64)+7)/8
}

// AppendColumnMeta appends the encoding of m to dst and returns the extended
// buffer:
//
//	flags <1 byte> | rows <uvarint> | tuple_size <1 byte> | block_tuples <1 byte> |
//	base_0 <8 bytes LE> | base_1 <8 bytes LE, absent if const> |
//	NumBlocks() widths <uvarint each, absent if const>
func AppendColumnMeta(dst []byte, m *ColumnMeta) []byte {
	dst = append(dst, m.Flags)
	dst = binary.AppendUvarint(dst, uint64(m.Rows))
	dst = append(dst, m.TupleSize, m.BlockTuples)
	dst = binary.LittleEndian.AppendUint64(dst, m.Bases[0])
	if m.Flags&ColumnConst != 0 {
		return dst
	}
	dst = binary.LittleEndian.AppendUint64(dst, m.Bases[1])
	for b := range m.NumBlocks() {
		dst = binary.AppendUvarint(dst, uint64(m.width(b)))
	}
	return dst
}

// DecodeColumnMeta decodes the column meta at the start of src and returns it
// and the number of bytes it occupies. Counts are checked against what src
// can hold before anything is allocated.
func DecodeColumnMeta(src []byte) (ColumnMeta, int, error) {
	var m ColumnMeta
	if len(src) < 1 {
		return m, 0, corrupt(fmtColumnMeta, 0, "empty input")
	}
	m.Flags = src[0]
	if m.Flags&^(ColumnSparse|ColumnConst) != 0 || m.Flags == ColumnSparse|ColumnConst {
		return ColumnMeta{}, 0, corrupt(fmtColumnMeta, 0, "invalid flags")
	}
	rows, k := binary.Uvarint(src[1:])
	if k <= 0 {
		return ColumnMeta{}, 0, corrupt(fmtColumnMeta, 1, "bad rows uvarint")
	}
	if rows > MaxRows {
		return ColumnMeta{}, 0, corrupt(fmtColumnMeta, 1, "rows exceed MaxRows")
	}
	m.Rows = uint32(rows)
	off := 1 + k
	if len(src)-off < 2+8 {
		return ColumnMeta{}, 0, corrupt(fmtColumnMeta, off, "truncated header")
	}
	m.TupleSize, m.BlockTuples = src[off], src[off+1]
	if m.TupleSize == 0 || m.BlockTuples == 0 {
		return ColumnMeta{}, 0, corrupt(fmtColumnMeta, off, "zero tuple size or block tuples")
	}
	off += 2
	m.Bases[0] = binary.LittleEndian.Uint64(src[off:])
	off += 8
	if m.Flags&ColumnConst != 0 {
		m.Bases[1] = m.Bases[0]
		return m, off, nil
	}
	if len(src)-off < 8 {
		return ColumnMeta{}, 0, corrupt(fmtColumnMeta, off, "truncated second base")
	}
	m.Bases[1] = binary.LittleEndian.Uint64(src[off:])
	off += 8
	nb := m.NumBlocks()
	if nb > len(src)-off { // each width takes at least one byte
		return ColumnMeta{}, 0, corrupt(fmtColumnMeta, off, "widths truncated")
	}
	maxW := uint64(maxTupleWidth(int(m.TupleSize)))
	m.Widths = make([]uint16, nb)
	for b := range m.Widths {
		w, k := binary.Uvarint(src[off:])
		if k <= 0 {
			return ColumnMeta{}, 0, corrupt(fmtColumnMeta, off, "bad width uvarint")
		}
		if w > maxW {
			return ColumnMeta{}, 0, corrupt(fmtColumnMeta, off, "width larger than any tuple of this size")
		}
		m.Widths[b] = uint16(w)
		off += k
	}
	return m, off, nil
}

// AppendColumn appends the on-disk value column of rows vals to dst and
// returns the extended buffer and the column's meta (to be stored in the
// index). present marks the rows the series has; nil means all rows are
// present, and the values of absent rows are ignored. The column covers
// min(len(vals), len(present)) rows (len(vals) when present is nil), at most
// MaxRows. tupleSize and blockTuples must lie in [1, MaxTupleSize]; values
// outside are replaced by DefaultTupleSize and DiskBlockTuples.
//
// Each tuple is: a presence bitmap of ⌈tupleSize/8⌉ bytes if the column is
// sparse; then, if any row of the tuple is present, one indicator bit naming
// the base the first present value is XORed with (the one giving fewer bits,
// base 0 on ties) followed by the present values in cases 1–3 as planned by
// the tuple-end re-check; zero padding to the width of its disk block.
func AppendColumn(dst []byte, vals []float64, present []bool, tupleSize, blockTuples int) ([]byte, ColumnMeta) {
	rows := len(vals)
	if present != nil {
		rows = min(rows, len(present))
		present = present[:rows]
	}
	rows = min(rows, MaxRows)
	vals = vals[:rows]
	if tupleSize < 1 || tupleSize > MaxTupleSize {
		tupleSize = DefaultTupleSize
	}
	if blockTuples < 1 || blockTuples > MaxTupleSize {
		blockTuples = DiskBlockTuples
	}
	m := ColumnMeta{Rows: uint32(rows), TupleSize: uint8(tupleSize), BlockTuples: uint8(blockTuples)}
	if rows == 0 {
		return dst, m
	}
	var constant bool
	m.Bases, m.Flags, constant = columnBases(vals, present)
	if constant && m.Flags&ColumnSparse == 0 {
		m.Flags = ColumnConst
		return dst, m
	}
	nt := m.NumTuples()
	m.Widths = make([]uint16, m.NumBlocks())
	var lens [MaxTupleSize]int
	for b := range m.Widths {
		first := b * blockTuples
		last := min(first+blockTuples, nt)
		start := len(dst)
		width := 0
		for t := first; t < last; t++ {
			r0, r1 := t*tupleSize, min((t+1)*tupleSize, rows)
			var pres []bool
			if present != nil {
				pres = present[r0:r1]
			}
			before := len(dst)
			dst = appendColumnTuple(dst, vals[r0:r1], pres, &m)
			lens[t-first] = len(dst) - before
			width = max(width, lens[t-first])
		}
		m.Widths[b] = uint16(width)
		dst = padTuples(dst, start, lens[:last-first], width)
	}
	return dst, m
}

// padTuples spreads the tuples packed at dst[start:] (lengths lens) to
// stride width, zero-filling the gaps. Moving from the last tuple to the
// first never overwrites a tuple not yet moved, since each tuple's new
// offset is at least its old one.
func padTuples(dst []byte, start int, lens []int, width int) []byte {
	packed := len(dst) - start
	total := width * len(lens)
	dst = slices.Grow(dst, total-packed)[:start+total]
	old := packed
	for t := len(lens) - 1; t >= 0; t-- {
		old -= lens[t]
		at := start + t*width
		copy(dst[at:], dst[start+old:start+old+lens[t]])
		clear(dst[at+lens[t] : at+width])
	}
	return dst
}

// columnBases returns the two quantile bases, the sparse flag, and whether
// every present value is bit-identical (then both bases are that value).
func columnBases(vals []float64, present []bool) (bases [2]uint64, flags uint8, constant bool) {
	count := 0
	var first uint64
	constant = true
	for i, v := range vals {
		if present != nil && !present[i] {
			continue
		}
		b := math.Float64bits(v)
		if count == 0 {
			first = b
		} else if b != first {
			constant = false
		}
		count++
	}
	if count < len(vals) {
		flags = ColumnSparse
	}
	if count == 0 || constant {
		return [2]uint64{first, first}, flags, count > 0
	}
	// Order by float value with -0 before +0; NaNs last, by bits. The
	// keys are scratch, pooled: a flush encodes one column per series.
	kp := keysPool.Get().(*[]uint64)
	defer keysPool.Put(kp)
	if cap(*kp) < count {
		*kp = make([]uint64, count)
	}
	keys := (*kp)[:count]
	lo, hi := 0, count
	for i, v := range vals {
		if present != nil && !present[i] {
			continue
		}
		b := math.Float64bits(v)
		if isNaNBits(b) {
			hi--
			keys[hi] = b
		} else {
			keys[lo] = orderKey(b)
			lo++
		}
	}
	at := func(i int) uint64 {
		if i < lo {
			return fromOrderKey(nthSmallest(keys[:lo], i))
		}
		return nthSmallest(keys[lo:], i-lo)
	}
	return [2]uint64{at(count / 4), at(3 * count / 4)}, flags, false
}

var keysPool = sync.Pool{New: func() any { return new([]uint64) }}

// nthSmallest reorders a so that a[k] holds the k-th smallest element, with
// no larger element before it and no smaller one after, and returns it.
// Quickselect with a median-of-three pivot, falling back to sorting when
// partitions shrink too slowly, so it is O(n) in practice and O(n log n)
// at worst.
func nthSmallest(a []uint64, k int) uint64 {
	lo, hi := 0, len(a) // a[lo:hi] holds the k-th smallest
	budget := 2 * bits.Len(uint(len(a)))
	for hi-lo > 16 {
		if budget--; budget < 0 {
			slices.Sort(a[lo:hi])
			return a[k]
		}
		mid := lo + (hi-lo)/2
		// Order a[lo], a[mid], a[hi-1]; the median becomes the pivot.
		if a[mid] < a[lo] {
			a[mid], a[lo] = a[lo], a[mid]
		}
		if a[hi-1] < a[mid] {
			a[hi-1], a[mid] = a[mid], a[hi-1]
			if a[mid] < a[lo] {
				a[mid], a[lo] = a[lo], a[mid]
			}
		}
		pivot := a[mid]
		// Hoare partition: a[lo:j+1] ≤ pivot ≤ a[j+1:hi].
		i, j := lo-1, hi
		for {
			for i++; a[i] < pivot; i++ {
			}
			for j--; a[j] > pivot; j-- {
			}
			if i >= j {
				break
			}
			a[i], a[j] = a[j], a[i]
		}
		if k <= j {
			hi = j + 1
		} else {
			lo = j + 1
		}
	}
	slices.Sort(a[lo:hi])
	return a[k]
}

func isNaNBits(b uint64) bool { return b&0x7ff0000000000000 == 0x7ff0000000000000 && b&(1<<52-1) != 0 }

// orderKey maps float64 bits to a uint64 whose order is the float order
// (with -0 < +0); fromOrderKey inverts it.
func orderKey(b uint64) uint64 {
	if b>>63 == 1 {
		return ^b
	}
	return b | 1<<63
}

func fromOrderKey(k uint64) uint64 {
	if k>>63 == 1 {
		return k &^ (1 << 63)
	}
	return ^k
}

// appendColumnTuple appends one unpadded tuple of the rows vals (present nil:
// all present) of a column described by m.
func appendColumnTuple(dst []byte, vals []float64, present []bool, m *ColumnMeta) []byte {
	if m.Flags&ColumnSparse != 0 {
		var bm [(MaxTupleSize + 7) / 8]byte
		for r, p := range present {
			if p {
				bm[r/8] |= 1 << (r % 8)
			}
		}
		dst = append(dst, bm[:bitmapLen(int(m.TupleSize))]...)
	}
	var xs [MaxTupleSize]uint64
	c := 0
	for r, v := range vals {
		if present == nil || present[r] {
			xs[c] = math.Float64bits(v)
			c++
		}
	}
	if c == 0 {
		return dst
	}
	first := xs[0]
	for i := c - 1; i > 0; i-- {
		xs[i] ^= xs[i-1]
	}
	x := xs[:c]
	var plan, alt xorPlan
	x[0] = first ^ m.Bases[0]
	bits := planXOR(x, &plan)
	var ind uint64
	if alt0 := first ^ m.Bases[1]; m.Bases[1] != m.Bases[0] && !sameWindow(alt0, x[0]) {
		x[0] = alt0
		if planXOR(x, &alt) < bits {
			ind, plan = 1, alt
		} else {
			x[0] = first ^ m.Bases[0]
		}
	}
	w := bitWriter{b: dst}
	w.writeBits(ind, 1)
	writeXOR(&w, x, &plan)
	return w.finish()
}

// DecodeColumnTuple decodes tuple i of the column described by m and appends
// its TupleRows(i) values and presence flags to dst and dstPresent (absent
// rows get value 0 and false). tuple holds the tuple's bytes, starting at
// data offset TupleRange(i, i); bytes past the tuple's encoding, such as its
// padding, are ignored. A ColumnConst tuple needs no bytes.
func DecodeColumnTuple(dst []float64, dstPresent []bool, m *ColumnMeta, tuple []byte, i int) ([]float64, []bool, error) {
	if err := m.check(); err != nil {
		return dst, dstPresent, err
	}
	if i < 0 || i >= m.NumTuples() {
		return dst, dstPresent, argErr(fmtColumn, "tuple index out of range")
	}
	return decodeColumnTuple(dst, dstPresent, m, tuple, i)
}

// decodeColumnTuple is DecodeColumnTuple once m is checked and i is known
// to be in range, so that DecodeColumn checks them once per column rather
// than once per tuple.
func decodeColumnTuple(dst []float64, dstPresent []bool, m *ColumnMeta, tuple []byte, i int) ([]float64, []bool, error) {
	rows := min(int(m.TupleSize), int(m.Rows)-i*int(m.TupleSize))
	n0 := len(dst)
	dst = slices.Grow(dst, rows)[:n0+rows]
	dstPresent = slices.Grow(dstPresent, rows)
	out := dst[n0:]
	if m.Flags&ColumnConst != 0 {
		v := math.Float64frombits(m.Bases[0])
		for r := range out {
			out[r] = v
			dstPresent = append(dstPresent, true)
		}
		return dst, dstPresent, nil
	}
	c := rows
	var bm []byte
	if m.Flags&ColumnSparse != 0 {
		n := bitmapLen(int(m.TupleSize))
		if len(tuple) < n {
			return dst[:n0], dstPresent, corrupt(fmtColumn, len(tuple), "tuple shorter than its presence bitmap")
		}
		bm, tuple = tuple[:n], tuple[n:]
		c = 0
		for r := range rows {
			c += int(bm[r/8] >> (r % 8) & 1)
		}
	}
	if c > 0 {
		r := newBitReader(tuple)
		ref := m.Bases[r.readBits(1)]
		reason := readXOR(&r, out[:c], ref)
		if reason == "" && r.fail {
			reason = "unexpected end of tuple"
		}
		if reason != "" {
			return dst[:n0], dstPresent, corrupt(fmtColumn, len(bm)+r.bitPos()/8, reason)
		}
	}
	if bm == nil {
		for range rows {
			dstPresent = append(dstPresent, true)
		}
		return dst, dstPresent, nil
	}
	// Scatter the c present values to their rows, last first: value k moves
	// to a row ≥ k, so nothing is overwritten before it is moved.
	for r := rows - 1; r >= 0; r-- {
		if bm[r/8]>>(r%8)&1 == 1 {
			c--
			out[r] = out[c]
		} else {
			out[r] = 0
		}
	}
	for r := range rows {
		dstPresent = append(dstPresent, bm[r/8]>>(r%8)&1 == 1)
	}
	return dst, dstPresent, nil
}

// DecodeColumn decodes every tuple of the column described by m from its
// data (at least DataLen() bytes) and appends the Rows values and presence
// flags to dst and dstPresent.
func DecodeColumn(dst []float64, dstPresent []bool, m *ColumnMeta, data []byte) ([]float64, []bool, error) {
	if err := m.check(); err != nil {
		return dst, dstPresent, err
	}
	if int64(len(data)) < m.DataLen() {
		return dst, dstPresent, corrupt(fmtColumn, len(data), "data shorter than the meta's DataLen")
	}
	n0, p0 := len(dst), len(dstPresent)
	dst = slices.Grow(dst, int(m.Rows))
	dstPresent = slices.Grow(dstPresent, int(m.Rows))
	var off int64
	nt := m.NumTuples()
	for b, i := 0, 0; i < nt; b++ {
		w := m.width(b)
		for end := min(i+int(m.BlockTuples), nt); i < end; i++ {
			var err error
			dst, dstPresent, err = decodeColumnTuple(dst, dstPresent, m, data[off:off+w], i)
			if err != nil {
				var de *DecodeError
				if errors.As(err, &de) {
					de.Offset += int(off)
				}
				return dst[:n0], dstPresent[:p0], err
			}
			off += w
		}
	}
	return dst, dstPresent, nil
}

// sameWindow reports whether a and b cost the same as the first XOR of a
// tuple and leave the same window, so the rest of the plan cannot differ.
func sameWindow(a, b uint64) bool {
	if a == 0 || b == 0 {
		return a == b
	}
	alz, al := xorWindow(a)
	blz, bl := xorWindow(b)
	return alz == blz && al == bl
}
