package extract

import (
	"fmt"
	"math"
)

// Span is the half-open time range [From, To) in milliseconds, as search
// by value answers it.
type Span struct {
	From, To int64
}

// MergeIntervals appends to dst the spans covered by metric intervals of
// the given length starting at starts, joining intervals that touch or
// overlap: starts 0, 10, 20, 40 with length 10 give [0, 30) and [40, 50).
// starts must be in increasing order; MergeIntervals panics otherwise, and
// if length is not positive. An interval reaching past MaxInt64 ends there.
func MergeIntervals(dst []Span, starts []int64, length int64) []Span {
	if length <= 0 {
		panic(fmt.Sprintf("extract: MergeIntervals with interval length %d", length))
	}
	for i, s := range starts {
		if i > 0 && s < starts[i-1] {
			panic(fmt.Sprintf("extract: MergeIntervals: start %d at index %d is before start %d", s, i, starts[i-1]))
		}
		end := s + length
		if end < s {
			end = math.MaxInt64
		}
		if n := len(dst); i > 0 && s <= dst[n-1].To {
			dst[n-1].To = max(dst[n-1].To, end)
			continue
		}
		dst = append(dst, Span{From: s, To: end})
	}
	return dst
}
