package index

import (
	"encoding/binary"
	"math"
)

// decbuf reads a byte range with a sticky error: after the first failure
// every read returns zero and err keeps the first CorruptionError, so a
// decoder checks err once per logical step instead of after every field.
type decbuf struct {
	b       []byte // whole input; offsets are relative to b[0]
	off     int    // next read position
	end     int    // reads must stay below end
	file    string
	section string
	err     error
}

func (d *decbuf) fail(off int, format string, args ...any) {
	if d.err == nil {
		d.err = corruptf(d.file, d.section, off, format, args...)
	}
}

func (d *decbuf) remaining() int { return d.end - d.off }

func (d *decbuf) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b[d.off:d.end])
	if n <= 0 {
		d.fail(d.off, "invalid uvarint")
		return 0
	}
	d.off += n
	return v
}

// uvarint32 reads a uvarint that must fit in a uint32.
func (d *decbuf) uvarint32() uint32 {
	at := d.off
	v := d.uvarint()
	if v > math.MaxUint32 {
		d.fail(at, "value %d overflows uint32", v)
		return 0
	}
	return uint32(v)
}

// has reports whether n more bytes can be read, failing d if they cannot.
func (d *decbuf) has(n int) bool {
	if d.err != nil {
		return false
	}
	if d.remaining() < n {
		d.fail(d.off, "unexpected end of data")
		return false
	}
	return true
}

func (d *decbuf) byte1() byte {
	if !d.has(1) {
		return 0
	}
	d.off++
	return d.b[d.off-1]
}

func (d *decbuf) be32() uint32 {
	if !d.has(4) {
		return 0
	}
	d.off += 4
	return binary.BigEndian.Uint32(d.b[d.off-4:])
}

// count reads the number of things (what, in the error) that follow, each
// taking at least one byte.
func (d *decbuf) count(what string) uint64 {
	at := d.off
	n := d.uvarint()
	if d.err == nil && n > uint64(d.remaining()) {
		d.fail(at, "%d %s cannot fit in %d bytes", n, what, d.remaining())
	}
	return n
}

// finish fails d if bytes are left before its end, the end of the unit
// (a section, a record) it decodes.
func (d *decbuf) finish(unit string) {
	if d.err == nil && d.remaining() != 0 {
		d.fail(d.off, "%d unused bytes at end of %s", d.remaining(), unit)
	}
}

// bytes returns the next n bytes without copying.
func (d *decbuf) bytes(n uint64) []byte {
	if d.err != nil {
		return nil
	}
	if n > uint64(d.remaining()) {
		d.fail(d.off, "length %d exceeds the %d bytes left", n, d.remaining())
		return nil
	}
	d.off += int(n)
	return d.b[d.off-int(n) : d.off]
}

// uvarintString reads a uvarint length and that many bytes.
func (d *decbuf) uvarintString() string {
	n := d.uvarint()
	return string(d.bytes(n))
}
