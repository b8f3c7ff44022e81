package encoding

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

// bitReader reads a most-significant-bit-first bit stream. Its error is
// sticky: after running out of input every read returns 0 and err stays set,
// so decoders check it once per value or once at the end.
type bitReader struct {
	src  []byte
	pos  int    // next byte of src to load
	acc  uint64 // loaded, unread bits, left-aligned
	n    uint   // number of valid bits in acc
	fail bool   // ran out of input
}

func newBitReader(src []byte) bitReader { return bitReader{src: src} }

func (r *bitReader) refill() {
	for r.n <= 56 && r.pos < len(r.src) {
		r.acc |= uint64(r.src[r.pos]) << (56 - r.n)
		r.pos++
		r.n += 8
	}
}

// readBits reads n ≤ 64 bits.
func (r *bitReader) readBits(n uint) uint64 {
	if n > 32 {
		hi := r.readBits(n - 32)
		return hi<<32 | r.readBits(32)
	}
	if n == 0 {
		return 0
	}
	if r.n < n {
		r.refill()
		if r.n < n {
			r.fail = true
			r.n = 0
			r.acc = 0
			return 0
		}
	}
	v := r.acc >> (64 - n)
	r.acc <<= n
	r.n -= n
	return v
}

func (r *bitReader) readBit() bool { return r.readBits(1) == 1 }

// consumed returns the number of whole bytes the bits read so far occupy.
func (r *bitReader) consumed() int {
	bitsRead := r.pos*8 - int(r.n)
	return (bitsRead + 7) / 8
}

// bitPos returns the number of bits read so far.
func (r *bitReader) bitPos() int { return r.pos*8 - int(r.n) }
