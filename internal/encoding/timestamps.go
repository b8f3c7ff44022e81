package encoding

import (
	"encoding/binary"
	"math"
	"math/bits"
	"sort"
)

// AppendScaledTimestamps appends the on-disk timestamp column of ts to dst
// and returns the extended buffer (Heracles "scaling"):
//
//	uvarint n | varint start | varint interval | width w <1 byte> | n diffs <w bytes each, signed LE>
//
// with start = ts[0], interval = (ts[n−1]−ts[0])/(n−1) rounded to the nearest
// integer, halves up (0 when n == 1), and
// diff_i = ts[i] − (start + i·interval); w ∈ {0, 1, 2, 4, 8} is the smallest
// width holding every diff, 0 when all are 0. Arithmetic wraps modulo 2⁶⁴,
// so every strictly increasing ts round-trips, even spans beyond MaxInt64.
// ts must be non-empty, strictly increasing and at most MaxRows long (the
// caller guarantees it); for an empty ts nothing is appended.
func AppendScaledTimestamps(dst []byte, ts []int64) []byte {
	n := len(ts)
	if n == 0 {
		return dst
	}
	start := ts[0]
	var interval int64
	if n > 1 {
		// Rounded, not truncated: with jittered endpoints a truncated
		// interval is often 1 ms short and the diffs then grow to n−1.
		span, steps := uint64(ts[n-1])-uint64(start), uint64(n-1)
		q, rem := span/steps, span%steps
		if rem >= steps-rem {
			q++
		}
		interval = int64(q)
	}
	var lo, hi int64
	for i, t := range ts {
		d := t - (start + int64(i)*interval)
		lo, hi = min(lo, d), max(hi, d)
	}
	w := diffWidth(lo, hi)
	dst = binary.AppendUvarint(dst, uint64(n))
	dst = binary.AppendVarint(dst, start)
	dst = binary.AppendVarint(dst, interval)
	dst = append(dst, byte(w))
	if w == 0 {
		return dst
	}
	for i, t := range ts {
		d := uint64(t - (start + int64(i)*interval))
		switch w {
		case 1:
			dst = append(dst, byte(d))
		case 2:
			dst = binary.LittleEndian.AppendUint16(dst, uint16(d))
		case 4:
			dst = binary.LittleEndian.AppendUint32(dst, uint32(d))
		default:
			dst = binary.LittleEndian.AppendUint64(dst, d)
		}
	}
	return dst
}

func diffWidth(lo, hi int64) int {
	switch {
	case lo == 0 && hi == 0:
		return 0
	case lo >= math.MinInt8 && hi <= math.MaxInt8:
		return 1
	case lo >= math.MinInt16 && hi <= math.MaxInt16:
		return 2
	case lo >= math.MinInt32 && hi <= math.MaxInt32:
		return 4
	}
	return 8
}

// ScaledTimestamps is a parsed on-disk timestamp column. It reads
// timestamps in place from the bytes it was parsed from, in O(1) each.
type ScaledTimestamps struct {
	n        int
	start    int64
	interval int64
	w        int
	hdr      int    // header length: byte offset of diffs in the parsed input
	diffs    []byte // n·w bytes
}

// ParseScaledTimestamps parses the timestamp column at the start of src and
// returns it and the number of bytes it occupies. It checks the header and
// that the n·w diff bytes are present, but not that the timestamps increase:
// run Validate once before trusting At and Search.
func ParseScaledTimestamps(src []byte) (ScaledTimestamps, int, error) {
	var s ScaledTimestamps
	n, k := binary.Uvarint(src)
	if k <= 0 {
		return s, 0, corrupt(fmtTimestamps, 0, "bad row count uvarint")
	}
	if n == 0 || n > MaxRows {
		return s, 0, corrupt(fmtTimestamps, 0, "row count out of range [1, MaxRows]")
	}
	off := k
	start, k := binary.Varint(src[off:])
	if k <= 0 {
		return s, 0, corrupt(fmtTimestamps, off, "bad start varint")
	}
	off += k
	interval, k := binary.Varint(src[off:])
	if k <= 0 {
		return s, 0, corrupt(fmtTimestamps, off, "bad interval varint")
	}
	off += k
	if off >= len(src) {
		return s, 0, corrupt(fmtTimestamps, off, "missing diff width byte")
	}
	w := int(src[off])
	switch w {
	case 0, 1, 2, 4, 8:
	default:
		return s, 0, corrupt(fmtTimestamps, off, "diff width not one of 0, 1, 2, 4, 8")
	}
	off++
	if w > 0 && int(n) > (len(src)-off)/w {
		return s, 0, corrupt(fmtTimestamps, off, "diffs truncated")
	}
	end := off + int(n)*w
	s = ScaledTimestamps{n: int(n), start: start, interval: interval, w: w, hdr: off, diffs: src[off:end:end]}
	return s, end, nil
}

// Len returns the number of timestamps.
func (s *ScaledTimestamps) Len() int { return s.n }

// Start, Interval and Width return the header fields, for inspection tools.
func (s *ScaledTimestamps) Start() int64    { return s.start }
func (s *ScaledTimestamps) Interval() int64 { return s.interval }
func (s *ScaledTimestamps) Width() int      { return s.w }

// At returns timestamp i, 0 ≤ i < Len().
func (s *ScaledTimestamps) At(i int) int64 {
	t := s.start + int64(i)*s.interval
	switch s.w {
	case 0:
		return t
	case 1:
		return t + int64(int8(s.diffs[i]))
	case 2:
		return t + int64(int16(binary.LittleEndian.Uint16(s.diffs[2*i:])))
	case 4:
		return t + int64(int32(binary.LittleEndian.Uint32(s.diffs[4*i:])))
	}
	return t + int64(binary.LittleEndian.Uint64(s.diffs[8*i:]))
}

// Search returns the smallest i with At(i) ≥ t, or Len() if there is none.
// Diffs make At non-linear in i, but a validated column is increasing, which
// is all binary search needs.
func (s *ScaledTimestamps) Search(t int64) int {
	return sort.Search(s.n, func(i int) bool { return s.At(i) >= t })
}

// AppendAll appends all Len() timestamps to dst.
func (s *ScaledTimestamps) AppendAll(dst []int64) []int64 { return s.AppendRange(dst, 0, s.n) }

// AppendRange appends timestamps i to j−1 to dst, 0 ≤ i ≤ j ≤ Len(), with
// one switch on the width rather than one a timestamp.
func (s *ScaledTimestamps) AppendRange(dst []int64, i, j int) []int64 {
	t := s.start + int64(i)*s.interval
	switch s.w {
	case 0:
		for ; i < j; i++ {
			dst = append(dst, t)
			t += s.interval
		}
	case 1:
		for _, d := range s.diffs[i:j] {
			dst = append(dst, t+int64(int8(d)))
			t += s.interval
		}
	default:
		for ; i < j; i++ {
			dst = append(dst, s.At(i))
		}
	}
	return dst
}

// Validate checks that the timestamps are strictly increasing. It is O(1)
// for a column without diffs and O(n) otherwise, so block readers run it once
// at open.
func (s *ScaledTimestamps) Validate() error {
	if s.n <= 1 {
		return nil
	}
	if s.w == 0 {
		// At(i) = start + i·interval. Flipping the sign bit maps int64 order
		// to uint64 order; the sequence increases iff the step is nonzero and
		// start + (n−1)·interval does not wrap in that unsigned space.
		hi, lo := bits.Mul64(uint64(s.n-1), uint64(s.interval))
		if s.interval == 0 || hi != 0 || lo > math.MaxUint64-(uint64(s.start)^1<<63) {
			return corrupt(fmtTimestamps, 0, "timestamps not strictly increasing")
		}
		return nil
	}
	prev := s.At(0)
	for i := 1; i < s.n; i++ {
		t := s.At(i)
		if t <= prev {
			return corrupt(fmtTimestamps, s.hdr+i*s.w, "timestamps not strictly increasing")
		}
		prev = t
	}
	return nil
}
