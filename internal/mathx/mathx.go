// Package mathx holds integer arithmetic that Go's operators round the
// other way: division that rounds towards negative infinity, as time
// bucketing needs for timestamps before 1970 (Go's / truncates towards
// zero, so -1 / 60 is 0 where the bucket of -1 ms starts at -60).
package mathx

// FloorDiv returns ⌊a/b⌋, for b of either sign; b must not be 0.
func FloorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// FloorMod returns a - FloorDiv(a, b)·b, which has the sign of b (or is
// 0); b must not be 0.
func FloorMod(a, b int64) int64 {
	m := a % b
	if m != 0 && (m < 0) != (b < 0) {
		m += b
	}
	return m
}
