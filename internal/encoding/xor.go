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
	n := len(xs)
	// The largest tuple costs 255·77 bits < 1<<15, so int16 holds any cost.
	const inf = int16(1<<15 - 1)
	var (
		f    [MaxTupleSize + 2]int16
		prev [MaxTupleSize + 2]uint8
	)
	for k := 1; k <= n+1; k++ {
		f[k] = inf
	}
	for j := 0; j <= n; j++ {
		if f[j] == inf {
			continue // a zero XOR is never written in case 3
		}
		acc := f[j]
		var jlz, jl uint
		if j > 0 {
			jlz, jl = xorWindow(xs[j-1])
		}
		k := j + 1
		for ; k <= n; k++ {
			x := xs[k-1]
			if x == 0 {
				acc++
				continue
			}
			_, l := xorWindow(x)
			if c := acc + case3Overhead + int16(l); c < f[k] {
				f[k], prev[k] = c, uint8(j)
			}
			if j == 0 || !fitsWindow(x, jlz, jl) {
				break
			}
			acc += 2 + int16(jl)
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

// readXOR decodes len(dst) values into dst: the first is ref XOR the first
// decoded XOR, each following one the previous value XOR its decoded XOR. It
// returns a reason string when the stream is invalid; running out of bits is
// left to the reader's sticky flag.
func readXOR(r *bitReader, dst []float64, ref uint64) string {
	var lz, l uint
	for i := range dst {
		if r.readBit() {
			var x uint64
			if r.readBit() {
				hdr := uint(r.readBits(11))
				lz, l = hdr>>6, hdr&63
				if l == 0 {
					l = 64
				}
				if lz+l > 64 {
					return "significant-bits window exceeds 64 bits"
				}
				x = r.readBits(l) << (64 - lz - l)
			} else {
				if l == 0 {
					return "case 2 before any window was set"
				}
				x = r.readBits(l) << (64 - lz - l)
			}
			ref ^= x
		}
		if r.fail {
			return ""
		}
		dst[i] = math.Float64frombits(ref)
	}
	return ""
}
