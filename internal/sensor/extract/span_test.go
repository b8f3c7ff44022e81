package extract

import (
	"math"
	"slices"
	"testing"
)

func TestMergeIntervals(t *testing.T) {
	f := func(starts []int64, length int64, want ...Span) {
		t.Helper()
		got := MergeIntervals(nil, starts, length)
		if !slices.Equal(got, want) {
			t.Fatalf("MergeIntervals(%v, %d) = %v, want %v", starts, length, got, want)
		}
	}
	f(nil, 10)
	f([]int64{0}, 10, Span{0, 10})
	f([]int64{0, 10, 20, 40}, 10, Span{0, 30}, Span{40, 50})
	f([]int64{-20, -10, 10}, 10, Span{-20, 0}, Span{10, 20})
	f([]int64{0, 30, 60}, 10, Span{0, 10}, Span{30, 40}, Span{60, 70})
	f([]int64{0, 5, 5, 12}, 10, Span{0, 22}) // overlapping and repeated starts join
	f([]int64{3_600_000, 7_200_000, 14_400_000}, 3_600_000, Span{3_600_000, 10_800_000}, Span{14_400_000, 18_000_000})
	f([]int64{math.MaxInt64 - 5}, 10, Span{math.MaxInt64 - 5, math.MaxInt64})

	// dst's contents are kept and never joined with.
	got := MergeIntervals([]Span{{0, 10}}, []int64{10}, 10)
	if !slices.Equal(got, []Span{{0, 10}, {10, 20}}) {
		t.Fatalf("appending to dst: %v", got)
	}
}

func TestMergeIntervalsPanics(t *testing.T) {
	f := func(starts []int64, length int64) {
		t.Helper()
		defer func() {
			if recover() == nil {
				t.Fatalf("MergeIntervals(%v, %d) did not panic", starts, length)
			}
		}()
		MergeIntervals(nil, starts, length)
	}
	f([]int64{10, 0}, 10)
	f([]int64{0}, 0)
	f([]int64{0}, -1)
}
