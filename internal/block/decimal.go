package block

import "math"

// maxDigits is the most decimal digits a value's mantissa may have after
// the point: 10^22 is the largest power of ten exact in a float64, so
// m / 10^k is one correctly rounded division for every k ≤ maxDigits.
const maxDigits = 22

// pow10[k] is 10^k, exact.
var pow10 = [maxDigits + 1]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

const (
	maxExactInt = 1 << 53 // every integer of magnitude ≤ 2^53 is a float64
	// maxSquareMantissa is the largest m with m² ≤ 2^53.
	maxSquareMantissa = 94906265
)

// decimalAt returns the integer m with float64(m)/10^k == v (compared as
// numbers, so −0 is 0) and |m| ≤ 2^53, if there is one: v is then the
// float64 nearest to the decimal m·10^−k, the value a decimal k digits after
// the point parses to.
func decimalAt(v float64, k int) (int64, bool) {
	r := math.Round(v * pow10[k])
	if !(math.Abs(r) <= maxExactInt) { // also NaN and ±Inf
		return 0, false
	}
	if r/pow10[k] != v {
		return 0, false
	}
	return int64(r), true
}

// mantissaAt is the codec's decimalAt: the integer m whose toDecimal(m, k)
// is v bit for bit. For k = 0 any integral v below 2^63 in magnitude has
// one (large counters); −0 has none.
func mantissaAt(v float64, k int) (int64, bool) {
	if k == 0 {
		if !(v >= -(1<<63) && v < 1<<63) || v != math.Trunc(v) {
			return 0, false
		}
		m := int64(v)
		return m, math.Float64bits(float64(m)) == math.Float64bits(v)
	}
	m, ok := decimalAt(v, k)
	return m, ok && math.Float64bits(toDecimal(m, k)) == math.Float64bits(v)
}

// toDecimal returns the float64 nearest to m·10^−k: m (as the encoder
// checked) and 10^k are exact, so one IEEE division rounds once, the same
// on every platform. (A product by 1/10^k corrected by an FMA gives the
// same floats but decoded 10% slower on the machine measured.)
func toDecimal(m int64, k int) float64 {
	if k == 0 {
		return float64(m)
	}
	return float64(m) / pow10[k]
}

// digitsOf returns the least k ≤ maxDigits at which v has a mantissa
// (mantissaAt), or -1.
func digitsOf(v float64) int {
	for k := 0; k <= maxDigits; k++ {
		if _, ok := mantissaAt(v, k); ok {
			return k
		}
		if k > 0 && !(math.Abs(v*pow10[k]) <= maxExactInt) {
			return -1 // more digits only make the mantissa larger
		}
	}
	return -1
}

// ordered maps float bits to integers in the order of the floats they
// stand for (−0 just below +0, NaNs beyond the infinities); it is a
// bijection of all 2^64 bit patterns, so any value round-trips.
func ordered(v float64) int64 {
	b := math.Float64bits(v)
	if b>>63 == 0 {
		return int64(b)
	}
	return ^int64(b &^ (1 << 63))
}

// fromOrdered inverts ordered.
func fromOrdered(o int64) float64 {
	if o >= 0 {
		return math.Float64frombits(uint64(o))
	}
	return math.Float64frombits(uint64(^o) | 1<<63)
}

func zigzag(x int64) uint64   { return uint64(x<<1) ^ uint64(x>>63) }
func unzigzag(u uint64) int64 { return int64(u>>1) ^ -int64(u&1) }
