package encoding

import (
	"math"
	"math/bits"
)

// XOR value coding shared by the head value tuple and the on-disk column.
//
// Each XOR x of a value with its reference is written as
//
//	case 1, x == 0:  '0'
//	case 2:          '10' + the L bits of x inside the current window (LZ, L)
//	case 3:          '11' + LZ <5 bits> + L <6 bits, 64 as 0> + the L bits, and (LZ, L) becomes the window
//
// Case 2 is only possible when a window exists and x has no set bit outside
// it. Which nonzero XORs use case 3 is chosen by planXOR for the whole tuple
// at once (the tuple-end re-check of Heracles, made exact).

const (
	case3Overhead = 2 + 5 + 6 // control bits + LZ + L
	maxLZ         = 31        // LZ is 5 bits; larger leading-zero counts are capped
)

// xorWindow returns the significant-bits window case 3 writes for x ≠ 0.
func xorWindow(x uint64) (lz, l uint) {
	lz = uint(bits.LeadingZeros64(x))
	if lz > maxLZ {
		lz = maxLZ
	}
	return lz, 64 - lz - uint(bits.TrailingZeros64(x))
}

// fitsWindow reports whether x can be written in case 2 with window (lz, l).
func fitsWindow(x uint64, lz, l uint) bool {
	return uint(bits.LeadingZeros64(x)) >= lz && uint(bits.TrailingZeros64(x)) >= 64-lz-l
}

// xorPlan is the set of XORs of a tuple written in case 3, a bitset over
// positions 0..MaxTupleSize−1.
type xorPlan struct{ case3 [4]uint64 }

func (p *xorPlan) set(i int)          { p.case3[i>>6] |= 1 << (i & 63) }
func (p *xorPlan) isCase3(i int) bool { return p.case3[i>>6]&(1<<(i&63)) != 0 }

// planXOR chooses, for xs (len ≤ MaxTupleSize), which nonzero XORs are
// written in case 3 so that the total number of bits is minimal, stores the
// choice in p and returns that number of bits.
//
// The window in force at any value is the one set by the last case-3 value,
// so a coding is determined by the set of case-3 positions. f[k] is the least
// cost of xs[:k] given that xs[k-1] is written in case 3 (f[0] = 0: start,
// no window). From each reachable j the values after it are pushed forward:
// zeros cost 1 bit, nonzero values may become the next case 3 (relaxing f[k])
// and continue in case 2 while they fit window j. Position n+1 is the end of
// the tuple. Ties keep the earlier predecessor, so the plan is deterministic.
// Time is O(n·r) where r is how far windows reach, at most O(n²); the arrays
// are small (≤ 2·257 + 257 bytes) so planning does not allocate.
func planXOR(xs []uint64, p *xorPlan) int {
	// The arrays are on the stack and zeroed at every call: head tuples
	// (8 values) take the small ones.
	if len(xs) <= smallPlan {
		var (
			f    [smallPlan + 2]int16
			prev [smallPlan + 2]uint8
			lz   [smallPlan]uint8
			tz   [smallPlan]uint8
		)
		return planXORInto(xs, p, f[:], prev[:], lz[:], tz[:])
	}
	var (
		f    [MaxTupleSize + 2]int16
		prev [MaxTupleSize + 2]uint8
		lz   [MaxTupleSize]uint8
		tz   [MaxTupleSize]uint8
	)
	return planXORInto(xs, p, f[:], prev[:], lz[:], tz[:])
}

// smallPlan is the largest tuple planned with small arrays.
const smallPlan = 16

// planXORInto is planXOR with its arrays given: f and prev of at least
// len(xs)+2, lz and tz of len(xs) (each XOR's window: leading zeros capped
// at maxLZ, trailing zeros, computed once instead of once per
// predecessor).
func planXORInto(xs []uint64, p *xorPlan, f []int16, prev []uint8, lz, tz []uint8) int {
	n := len(xs)
	// The largest tuple costs 255·77 bits < 1<<15, so int16 holds any cost.
	const inf = int16(1<<15 - 1)
	for k, x := range xs {
		wlz, wl := xorWindow(x)
		lz[k], tz[k] = uint8(wlz), uint8(64-wlz-wl)
	}
	for k := 1; k <= n+1; k++ {
		f[k] = inf
	}
	for j := 0; j <= n; j++ {
		if f[j] == inf {
			continue // a zero XOR is never written in case 3
		}
		acc := f[j]
		var jlz, jtz uint8
		var jl int16
		if j > 0 {
			jlz, jtz = lz[j-1], tz[j-1]
			jl = 64 - int16(jlz) - int16(jtz)
		}
		k := j + 1
		for ; k <= n; k++ {
			if xs[k-1] == 0 {
				acc++
				continue
			}
			if c := acc + case3Overhead + 64 - int16(lz[k-1]) - int16(tz[k-1]); c < f[k] {
				f[k], prev[k] = c, uint8(j)
			}
			// Case 2 in window j: as fitsWindow, on the computed windows.
			if j == 0 || lz[k-1] < jlz || tz[k-1] < jtz {
				break
			}
			acc += 2 + jl
		}
		if k == n+1 && acc < f[n+1] {
			f[n+1], prev[n+1] = acc, uint8(j)
		}
	}
	*p = xorPlan{}
	for k := int(prev[n+1]); k > 0; k = int(prev[k]) {
		p.set(k - 1)
	}
	return int(f[n+1])
}

// planGreedy is the Gorilla/Prometheus choice: case 2 whenever the value fits
// the current window. It exists to measure what planXOR saves.
func planGreedy(xs []uint64, p *xorPlan) int {
	*p = xorPlan{}
	total := 0
	var lz, l uint
	for i, x := range xs {
		switch {
		case x == 0:
			total++
		case l != 0 && fitsWindow(x, lz, l):
			total += 2 + int(l)
		default:
			p.set(i)
			lz, l = xorWindow(x)
			total += case3Overhead + int(l)
		}
	}
	return total
}

// writeXOR writes xs following plan p.
func writeXOR(w *bitWriter, xs []uint64, p *xorPlan) {
	var lz, l uint
	for i, x := range xs {
		switch {
		case x == 0:
			w.writeBits(0, 1)
		case p.isCase3(i):
			lz, l = xorWindow(x)
			w.writeBits(0b11<<11|uint64(lz)<<6|uint64(l&63), case3Overhead)
			w.writeBits(x>>(64-lz-l), l)
		default:
			w.writeBits(0b10, 2)
			w.writeBits(x>>(64-lz-l), l)
		}
	}
}

// ctrlBits is the number of control and header bits of an XOR by the first
// two bits of its coding: '0' (case 1), '10' (case 2), '11' + LZ + L (case 3).
var ctrlBits = [4]uint{1, 1, 2, case3Overhead}

// readXOR decodes len(dst) values into dst: the first is ref XOR the first
// decoded XOR, each following one the previous value XOR its decoded XOR. It
// returns a reason string when the stream is invalid; running out of bits is
// left to the reader's sticky flag.
//
// Each XOR is decoded from one peek at the reader's buffer, without a branch
// on its case: the first two bits give the number of control bits through
// ctrlBits and two masks, one selecting the 11 header bits that follow as
// the new window (case 3), one the window's value bits (cases 2 and 3; case
// 1 has none). When the rest of the tuple is case 1 (at least as many zero
// bits as values left), it is filled at once. Branches are left for that,
// for errors, and for an XOR longer than the buffer holds, read in steps.
//
// The buffer lives in locals, not in r, so that it stays in registers; r is
// brought up to date before any of its methods runs and before returning.
// Past the end of the input the buffer reads as zeros and every consuming
// read fails there as the bit-at-a-time decoder's did
// (TestReadXORMatchesModel holds readXOR to that model, errors included).
func readXOR(r *bitReader, dst []float64, ref uint64) string {
	src, pos, acc, n := r.src, r.pos, r.acc, r.n
	var l, shift uint // window in force: l value bits shifted left by shift; l == 0: none yet
	for i := 0; i < len(dst); {
		pos, acc, n = fill(src, pos, acc, n)
		if acc>>62 == 0 { // a run of case 1: fill it at once
			z := min(uint(bits.LeadingZeros64(acc)), n, uint(len(dst)-i))
			if z == 0 {
				r.pos, r.acc, r.n = pos, acc, n
				r.setFail()
				return ""
			}
			v := math.Float64frombits(ref)
			for end := i + int(z); i < end; i++ {
				dst[i] = v
			}
			acc <<= z
			n -= z
			continue
		}
		top := uint(acc >> 62)
		if l == 0 && top == 0b10 {
			r.pos, r.acc, r.n = pos, acc, n
			r.skip(2)
			return "case 2 before any window was set"
		}
		ctrl := ctrlBits[top]
		hdr := uint(acc>>(64-case3Overhead)) & (1<<11 - 1)
		hlz, hl := hdr>>6, (hdr-1)&63+1 // L is 6 bits, 0 meaning 64
		isCase3 := -(top >> 1 & top)    // all ones for '11'
		if (hlz+hl)&isCase3 > 64 {
			r.pos, r.acc, r.n = pos, acc, n
			r.skip(ctrl) // or fail first, if the header itself is cut short
			if r.fail {
				return ""
			}
			return "significant-bits window exceeds 64 bits"
		}
		l = l&^isCase3 | hl&isCase3
		shift = shift&^isCase3 | (64-hlz-hl)&isCase3
		vb := l & -(top >> 1)         // value bits: none for case 1
		if ctrl+vb > n && ctrl <= n { // the value crosses the buffer's end: refill after the control bits
			acc <<= ctrl
			n -= ctrl
			ctrl = 0
			pos, acc, n = fill(src, pos, acc, n)
		}
		var x uint64
		if need := ctrl + vb; need <= n {
			x = acc << ctrl >> (64 - vb)
			acc <<= need
			n -= need
		} else {
			r.pos, r.acc, r.n = pos, acc, n
			r.skip(ctrl)
			if x = r.readBits(vb); r.fail {
				return ""
			}
			pos, acc, n = r.pos, r.acc, r.n
		}
		ref ^= x << (shift & 63)
		dst[i] = math.Float64frombits(ref)
		i++
	}
	r.pos, r.acc, r.n = pos, acc, n
	return ""
}

// AppendXORValues appends vals (at most MaxTupleSize of them) in the XOR
// value coding, the first XORed with ref and each following one with its
// predecessor, with the fewest bits (planXOR), zero-padded to a whole
// byte. Block format version 3 stores chunks of values that are not
// decimals this way (docs/format/block.md).
func AppendXORValues(dst []byte, vals []float64, ref uint64) []byte {
	if len(vals) > MaxTupleSize {
		panic("encoding: AppendXORValues: more than MaxTupleSize values")
	}
	var xs [MaxTupleSize]uint64
	prev := ref
	for i, v := range vals {
		b := math.Float64bits(v)
		xs[i], prev = b^prev, b
	}
	var p xorPlan
	planXOR(xs[:len(vals)], &p)
	w := bitWriter{b: dst}
	writeXOR(&w, xs[:len(vals)], &p)
	return w.finish()
}

// DecodeXORValues decodes len(dst) values that AppendXORValues wrote with
// ref from the start of src and returns how many bytes they took. An
// invalid or short stream is a *DecodeError at the byte where it failed.
func DecodeXORValues(dst []float64, src []byte, ref uint64) (int, error) {
	r := newBitReader(src)
	reason := readXOR(&r, dst, ref)
	if reason == "" && r.fail {
		reason = "unexpected end of values"
	}
	if reason != "" {
		return 0, corrupt(fmtXORValues, r.bitPos()/8, reason)
	}
	return r.consumed(), nil
}
