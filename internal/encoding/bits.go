package encoding

import "encoding/binary"

// bitWriter appends a most-significant-bit-first bit stream to a byte slice.
// Bits are gathered in a 64-bit accumulator and appended 8 bytes at a time;
// finish appends the partly filled tail, zero-padded to a whole byte.
type bitWriter struct {
	b   []byte
	acc uint64 // pending bits, left-aligned
	n   uint   // number of pending bits, always < 64 between calls
}

// writeBits writes the low n bits of v, n ≤ 64. Bits of v above n are ignored.
func (w *bitWriter) writeBits(v uint64, n uint) {
	if n == 0 {
		return
	}
	if n < 64 {
		v &= 1<<n - 1
	}
	room := 64 - w.n
	if n < room {
		w.acc |= v << (room - n)
		w.n += n
		return
	}
	// Fill the accumulator, flush it, keep the rest.
	rest := n - room
	w.acc |= v >> rest
	w.b = append(w.b, byte(w.acc>>56), byte(w.acc>>48), byte(w.acc>>40), byte(w.acc>>32),
		byte(w.acc>>24), byte(w.acc>>16), byte(w.acc>>8), byte(w.acc))
	w.n = rest
	if rest == 0 {
		w.acc = 0
	} else {
		w.acc = v << (64 - rest)
	}
}

// finish appends the pending bits zero-padded to a whole byte and returns the
// buffer.
func (w *bitWriter) finish() []byte {
	for w.n > 0 {
		w.b = append(w.b, byte(w.acc>>56))
		w.acc <<= 8
		if w.n < 8 {
			w.n = 0
		} else {
			w.n -= 8
		}
	}
	w.acc = 0
	return w.b
}

// bitReader reads a most-significant-bit-first bit stream from src, never
// past its end. Bits are loaded into a 64-bit buffer by whole words: one
// big-endian load of 8 bytes while 8 remain, byte by byte after that.
//
// Contract:
//   - acc holds the n unread bits left-aligned (n ≤ 64). The bits below
//     them are either 0 or the stream's own next bits (a word load brings
//     in part of a byte it does not count yet), so a peek at acc's top k
//     bits sees the next k bits when n ≥ k; at the end of src, when refill
//     could not bring n up, the bits past the end read as 0.
//   - refill leaves n ≥ 56 unless src is exhausted.
//   - pos·8 − n is the number of bits read so far.
//   - The error is sticky: a read past the end sets fail, empties the
//     buffer and returns 0, and every later read fails too, so decoders
//     test fail once per value or once at the end.
type bitReader struct {
	src  []byte
	pos  int    // next byte of src to count into n
	acc  uint64 // unread bits, left-aligned
	n    uint   // number of unread bits in acc
	fail bool   // a read went past the end of src
}

func newBitReader(src []byte) bitReader { return bitReader{src: src} }

// refill loads whole bytes so that n ≥ 56, or as many as src still has; it
// needs n < 64, which holds after any read of at least one bit.
func (r *bitReader) refill() { r.pos, r.acc, r.n = fill(r.src, r.pos, r.acc, r.n) }

// fill is refill on a buffer (acc, n) held by the caller, reading src from
// pos. While 8 bytes remain it ORs in one 8-byte word and counts the whole
// bytes of it that fit below the n bits (n+8k = n|56 for k = (63−n)/8); the
// tail goes byte by byte.
func fill(src []byte, pos int, acc uint64, n uint) (int, uint64, uint) {
	if pos+8 <= len(src) {
		return pos + int(63-n)>>3, acc | binary.BigEndian.Uint64(src[pos:])>>(n&63), n | 56
	}
	for n <= 56 && pos < len(src) {
		acc |= uint64(src[pos]) << (56 - n)
		pos++
		n += 8
	}
	return pos, acc, n
}

// readBits reads n ≤ 64 bits; readBits(0) is 0.
func (r *bitReader) readBits(n uint) uint64 {
	if n <= r.n {
		v := r.acc >> (64 - n) // Go shifts by 64 give 0
		r.acc <<= n
		r.n -= n
		return v
	}
	return r.readBitsSlow(n)
}

// readBitsSlow refills, reading more than a refill guarantees in two parts.
func (r *bitReader) readBitsSlow(n uint) uint64 {
	if n > 56 {
		hi := r.readBitsSlow(n - 32)
		return hi<<32 | r.readBitsSlow(32)
	}
	if r.n < n {
		r.refill()
		if r.n < n {
			r.setFail()
			return 0
		}
	}
	v := r.acc >> (64 - n)
	r.acc <<= n
	r.n -= n
	return v
}

// skip drops n ≤ 64 bits, failing like readBits if fewer remain.
func (r *bitReader) skip(n uint) {
	if n <= r.n {
		r.acc <<= n
		r.n -= n
		return
	}
	r.readBitsSlow(n)
}

func (r *bitReader) setFail() {
	r.fail = true
	r.n = 0
	r.acc = 0
}

// consumed returns the number of whole bytes the bits read so far occupy.
func (r *bitReader) consumed() int {
	return (r.bitPos() + 7) / 8
}

// bitPos returns the number of bits read so far.
func (r *bitReader) bitPos() int { return r.pos*8 - int(r.n) }
