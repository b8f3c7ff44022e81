package block

import (
	"encoding/binary"
	"math/bits"
)

// Integer column modes of the version 2 metrics encoding
// (docs/format/block.md). Persisted: explicit numbers.
const (
	colFOR         = 0 // frame of reference, bit-packed in blocks of forBlock
	colDeltaFOR    = 1 // colFOR of the differences x[i] − x[i−1] (x[−1] = 0)
	colVarint      = 2 // zigzag varints
	colDeltaVarint = 3 // zigzag varints of the differences
)

// forBlock is the number of values of a frame-of-reference block.
const forBlock = 128

// bestColMode returns the mode in which xs encodes smallest (the lowest
// such mode on ties, so encoding is deterministic) and its size.
func bestColMode(xs []int64) (mode, size int) {
	mode, size = colFOR, forSize(xs, false)
	for _, m := range [...]int{colDeltaFOR, colVarint, colDeltaVarint} {
		var n int
		switch m {
		case colDeltaFOR:
			n = forSize(xs, true)
		default:
			n = varintSize(xs, m == colDeltaVarint)
		}
		if n < size {
			mode, size = m, n
		}
	}
	return mode, size
}

// appendCol appends xs in mode; a decoder must know len(xs) and mode.
func appendCol(dst []byte, xs []int64, mode int) []byte {
	switch mode {
	case colFOR, colDeltaFOR:
		return appendFOR(dst, xs, mode == colDeltaFOR)
	default:
		prev := int64(0)
		for _, x := range xs {
			if mode == colDeltaVarint {
				x, prev = x-prev, x
			}
			dst = binary.AppendUvarint(dst, zigzag(x))
		}
		return dst
	}
}

func varintSize(xs []int64, delta bool) int {
	n, prev := 0, int64(0)
	for _, x := range xs {
		if delta {
			x, prev = x-prev, x
		}
		n += uvarintLen(zigzag(x))
	}
	return n
}

func uvarintLen(u uint64) int { return (bits.Len64(u|1) + 6) / 7 }

// forBlockAt returns the frame-of-reference block xs[i:i+forBlock] (as
// differences if delta, computed in buf), its least value and the bit
// width of its range.
func forBlockAt(xs []int64, i int, delta bool, buf *[forBlock]int64) (blk []int64, lo int64, w int) {
	blk = xs[i:min(i+forBlock, len(xs))]
	if delta {
		prev := int64(0)
		if i > 0 {
			prev = xs[i-1]
		}
		for j, x := range blk {
			buf[j], prev = x-prev, x
		}
		blk = buf[:len(blk)]
	}
	lo, hi := blk[0], blk[0]
	for _, x := range blk[1:] {
		lo, hi = min(lo, x), max(hi, x)
	}
	return blk, lo, bits.Len64(uint64(hi - lo))
}

func forSize(xs []int64, delta bool) int {
	var buf [forBlock]int64
	n, prevLo := 0, int64(0)
	for i := 0; i < len(xs); i += forBlock {
		blk, lo, w := forBlockAt(xs, i, delta, &buf)
		n += 1 + uvarintLen(zigzag(lo-prevLo)) + (len(blk)*w+7)/8
		prevLo = lo
	}
	return n
}

// appendFOR writes per block: width <1b>, least value − the previous
// block's <zigzag uvarint>, then each value − least value in width bits,
// little-endian bit order, padded to a byte.
func appendFOR(dst []byte, xs []int64, delta bool) []byte {
	var buf [forBlock]int64
	prevLo := int64(0)
	for i := 0; i < len(xs); i += forBlock {
		blk, lo, w := forBlockAt(xs, i, delta, &buf)
		dst = append(dst, byte(w))
		dst = binary.AppendUvarint(dst, zigzag(lo-prevLo))
		prevLo = lo
		dst = appendPacked(dst, blk, lo, uint(w))
	}
	return dst
}

func appendPacked(dst []byte, blk []int64, lo int64, w uint) []byte {
	if w == 0 {
		return dst
	}
	var acc uint64
	var nb uint
	for _, x := range blk {
		v := uint64(x - lo)
		acc |= v << nb
		if nb+w >= 64 {
			dst = binary.LittleEndian.AppendUint64(dst, acc)
			acc = v >> (64 - nb) // 0 when nb is 0: Go shifts by 64 give 0
			nb = nb + w - 64
		} else {
			nb += w
		}
	}
	for ; nb > 0; nb -= min(nb, 8) {
		dst = append(dst, byte(acc))
		acc >>= 8
	}
	return dst
}

// locateCol checks the next column, of n values in mode, and returns a
// reader of it; d moves past it.
func (d *decbuf) locateCol(n, mode int) colReader {
	start := d.pos
	switch mode {
	case colFOR, colDeltaFOR:
		for i := 0; i < n && d.err == nil; i += forBlock {
			w := int(d.byte())
			if d.err == nil && w > 64 {
				d.fail("bit width %d", w)
			}
			d.uvarint()
			d.take((min(forBlock, n-i)*w + 7) / 8)
		}
	default:
		for i := 0; i < n && d.err == nil; i++ {
			d.uvarint()
		}
	}
	if d.err != nil {
		return colReader{}
	}
	// The reader may load up to 8 bytes past the column (unpack).
	return colReader{b: d.b[start:d.pos:len(d.b)], mode: mode}
}

// colReader decodes a column that locateCol checked, up to forBlock
// values at a time; every call but the last must take forBlock values.
type colReader struct {
	b    []byte
	pos  int
	mode int
	lo   int64 // FOR: the previous block's least value
	prev int64 // delta modes: the previous value
}

func (r *colReader) next(dst []int64) {
	switch r.mode {
	case colFOR, colDeltaFOR:
		w := uint(r.b[r.pos])
		u, k := binary.Uvarint(r.b[r.pos+1:])
		r.pos += 1 + k
		r.lo += unzigzag(u)
		size := (len(dst)*int(w) + 7) / 8
		unpack(dst, r.b[r.pos:r.pos+size:cap(r.b)], r.lo, w)
		r.pos += size
		if r.mode == colDeltaFOR {
			s := r.prev
			for i, x := range dst {
				s += x
				dst[i] = s
			}
			r.prev = s
		}
	default:
		for i := range dst {
			u, k := binary.Uvarint(r.b[r.pos:])
			r.pos += k
			x := unzigzag(u)
			if r.mode == colDeltaVarint {
				x += r.prev
				r.prev = x
			}
			dst[i] = x
		}
	}
}

// unpack sets dst[i] to lo plus the i-th w-bit value of src, which holds
// exactly (len(dst)·w + 7)/8 bytes. It loads 8 bytes at a time, so when
// src is not followed by 8 readable bytes it works on a padded copy.
func unpack(dst []int64, src []byte, lo int64, w uint) {
	if w == 0 {
		for i := range dst {
			dst[i] = lo
		}
		return
	}
	if cap(src)-len(src) < 8 {
		var pad [forBlock*8 + 8]byte
		copy(pad[:], src)
		src = pad[:len(src)]
	}
	src = src[:len(src)+8]
	mask := ^uint64(0) >> (64 - w)
	if w <= 57 {
		// One 8-byte load at a byte boundary holds at least 57 bits
		// from any bit position: per values.
		per := int(57 / w)
		p := uint(0)
		for i := 0; i < len(dst); i += per {
			word := binary.LittleEndian.Uint64(src[p>>3:]) >> (p & 7)
			for j := i; j < min(i+per, len(dst)); j++ {
				dst[j] = lo + int64(word&mask)
				word >>= w
			}
			p += uint(per) * w
		}
		return
	}
	p := uint(0)
	for i := range dst {
		o, s := p>>3, p&7
		v := binary.LittleEndian.Uint64(src[o:]) >> s
		if s+w > 64 {
			v |= uint64(src[o+8]) << (64 - s)
		}
		dst[i] = lo + int64(v&mask)
		p += w
	}
}
