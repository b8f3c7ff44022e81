package block

import (
	"encoding/binary"
	"fmt"
)

// decbuf is a sticky-error decoder of a part of a block file: b starts at
// byte at of the file (0 where the caller places the errors itself), and
// the first error is a *CorruptionError at the failing byte, its message
// prefixed with what ("section groups", "metrics").
type decbuf struct {
	b    []byte
	pos  int
	err  error
	what string
	at   int
}

func (d *decbuf) fail(format string, args ...any) {
	if d.err == nil {
		d.err = &CorruptionError{Offset: int64(d.at + d.pos), Err: fmt.Errorf(d.what+": "+format, args...)}
	}
}

func (d *decbuf) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b[d.pos:])
	if n <= 0 {
		d.fail("bad varint")
		return 0
	}
	d.pos += n
	return v
}

// varint is binary.Varint's zig-zag decoding of a uvarint.
func (d *decbuf) varint() int64 {
	u := d.uvarint()
	v := int64(u >> 1)
	if u&1 != 0 {
		v = ^v
	}
	return v
}

func (d *decbuf) u32() uint32 {
	if d.err != nil {
		return 0
	}
	if len(d.b)-d.pos < 4 {
		d.fail("truncated")
		return 0
	}
	v := binary.LittleEndian.Uint32(d.b[d.pos:])
	d.pos += 4
	return v
}

func (d *decbuf) byte() byte {
	if d.err != nil {
		return 0
	}
	if d.pos >= len(d.b) {
		d.fail("truncated")
		return 0
	}
	d.pos++
	return d.b[d.pos-1]
}

// take returns the next n bytes, capped at the buffer's end so that
// unpack can tell whether it may read past them.
func (d *decbuf) take(n int) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || n > len(d.b)-d.pos {
		d.fail("truncated: %d bytes wanted, %d left", n, len(d.b)-d.pos)
		return nil
	}
	d.pos += n
	return d.b[d.pos-n : d.pos : len(d.b)]
}

// count reads a count that each element needs at least min bytes for.
func (d *decbuf) count(min int) int {
	n := d.uvarint()
	if d.err == nil && n > uint64((len(d.b)-d.pos)/min+1) {
		d.fail("count %d exceeds section", n)
		return 0
	}
	return int(n)
}
