package encoding

import (
	"encoding/binary"
	"math"
	"slices"
)

// AppendTimeTuple appends the head time tuple of ts to dst and returns the
// extended buffer: ts[0] as 8 bytes little-endian, then uvarint(ts[i]−ts[i−1])
// for each following timestamp. ts must be non-empty and strictly increasing
// (the caller guarantees it); for an empty ts nothing is appended.
func AppendTimeTuple(dst []byte, ts []int64) []byte {
	if len(ts) == 0 {
		return dst
	}
	dst = binary.LittleEndian.AppendUint64(dst, uint64(ts[0]))
	for i := 1; i < len(ts); i++ {
		// Unsigned difference: exact even when ts[i]−ts[i−1] exceeds MaxInt64.
		dst = binary.AppendUvarint(dst, uint64(ts[i])-uint64(ts[i-1]))
	}
	return dst
}

// TimeTupleFirst returns the first timestamp of the time tuple at the start
// of src without decoding the rest.
func TimeTupleFirst(src []byte) (int64, error) {
	if len(src) < 8 {
		return 0, corrupt(fmtTimeTuple, len(src), "shorter than the 8-byte first timestamp")
	}
	return int64(binary.LittleEndian.Uint64(src)), nil
}

// DecodeTimeTuple decodes the n ≥ 1 timestamps of the time tuple at the start
// of src, appends them to dst, and returns dst and the number of bytes the
// tuple occupies. It rejects truncated input, malformed varints, zero deltas
// and deltas that would overflow int64.
func DecodeTimeTuple(dst []int64, src []byte, n int) ([]int64, int, error) {
	if n < 1 {
		return dst, 0, argErr(fmtTimeTuple, "timestamp count must be at least 1")
	}
	t, err := TimeTupleFirst(src)
	if err != nil {
		return dst, 0, err
	}
	// Each delta takes at least one byte: bound the allocation by the input.
	if n-1 > len(src)-8 {
		return dst, 0, corrupt(fmtTimeTuple, len(src), "input too short for the timestamp count")
	}
	dst = slices.Grow(dst, n)
	dst = append(dst, t)
	off := 8
	for i := 1; i < n; i++ {
		d, k := binary.Uvarint(src[off:])
		if k <= 0 {
			return dst[:len(dst)-i], 0, corrupt(fmtTimeTuple, off, "truncated or overlong uvarint delta")
		}
		// room is MaxInt64−t computed without overflow (t may be negative).
		if room := uint64(math.MaxInt64) - uint64(t); d == 0 || d > room {
			return dst[:len(dst)-i], 0, corrupt(fmtTimeTuple, off, "timestamps not strictly increasing within int64")
		}
		off += k
		t = int64(uint64(t) + d)
		dst = append(dst, t)
	}
	return dst, off, nil
}
