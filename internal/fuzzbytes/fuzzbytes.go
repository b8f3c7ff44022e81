package fuzzbytes

import "encoding/binary"

// Reader hands out a fuzzer's bytes; past their end it gives zeros.
type Reader struct{ b []byte }

// NewReader returns a Reader of b.
func NewReader(b []byte) *Reader { return &Reader{b: b} }

// Byte returns the next byte.
func (r *Reader) Byte() byte {
	if len(r.b) == 0 {
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

// Uint64 returns the next 8 bytes, little-endian, the missing ones zero.
func (r *Reader) Uint64() uint64 {
	var buf [8]byte
	n := copy(buf[:], r.b)
	r.b = r.b[n:]
	return binary.LittleEndian.Uint64(buf[:])
}

// Empty reports whether every byte was handed out.
func (r *Reader) Empty() bool { return len(r.b) == 0 }
