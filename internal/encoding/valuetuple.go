package encoding

import (
	"math"
	"slices"
)

// AppendValueTuple appends the head value tuple of vals to dst and returns the
// extended buffer. The first value is XORed with base (the first value of the
// series in the partition), each following value with its predecessor, and
// the XORs are written with cases 1–3 as planned by the tuple-end re-check;
// the bit stream is zero-padded to a whole byte. vals must hold 1 to
// MaxTupleSize values; otherwise nothing is appended.
func AppendValueTuple(dst []byte, base float64, vals []float64) []byte {
	if len(vals) == 0 || len(vals) > MaxTupleSize {
		return dst
	}
	var x []uint64
	if len(vals) <= smallPlan {
		var xs [smallPlan]uint64 // zeroed at every call: head tuples take these
		x = xs[:len(vals)]
	} else {
		var xs [MaxTupleSize]uint64
		x = xs[:len(vals)]
	}
	valueXORs(x, math.Float64bits(base), vals)
	var p xorPlan
	planXOR(x, &p)
	w := bitWriter{b: dst}
	writeXOR(&w, x, &p)
	return w.finish()
}

// ValueTupleBits returns the number of bits AppendValueTuple writes for vals
// before padding, or 0 if vals is empty or longer than MaxTupleSize.
func ValueTupleBits(base float64, vals []float64) int {
	if len(vals) == 0 || len(vals) > MaxTupleSize {
		return 0
	}
	var xs [MaxTupleSize]uint64
	var p xorPlan
	return planXOR(valueXORs(xs[:len(vals)], math.Float64bits(base), vals), &p)
}

func valueXORs(xs []uint64, ref uint64, vals []float64) []uint64 {
	for i, v := range vals {
		b := math.Float64bits(v)
		xs[i] = b ^ ref
		ref = b
	}
	return xs
}

// DecodeValueTuple decodes the n values (1 ≤ n ≤ MaxTupleSize) of the value
// tuple at the start of src, appends them to dst, and returns dst and the
// number of bytes the tuple occupies. base must be the base the tuple was
// encoded with.
func DecodeValueTuple(dst []float64, src []byte, base float64, n int) ([]float64, int, error) {
	if n < 1 || n > MaxTupleSize {
		return dst, 0, argErr(fmtValueTuple, "value count out of range [1, 255]")
	}
	// Every value takes at least one bit: a short src cannot make us allocate.
	if n > len(src)*8 {
		return dst, 0, corrupt(fmtValueTuple, len(src), "input too short for the value count")
	}
	dst = slices.Grow(dst, n)
	out := dst[len(dst) : len(dst)+n]
	r := newBitReader(src)
	if reason := readXOR(&r, out, math.Float64bits(base)); reason != "" {
		return dst, 0, corrupt(fmtValueTuple, r.bitPos()/8, reason)
	}
	if r.fail {
		return dst, 0, corrupt(fmtValueTuple, len(src), "unexpected end of input")
	}
	return dst[:len(dst)+n], r.consumed(), nil
}
