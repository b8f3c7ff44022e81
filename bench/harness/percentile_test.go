package harness

import (
	"slices"
	"testing"
	"time"
)

// TestPercentileNearestRank: the nearest rank at every quantile, of
// nothing and of one, the input left in its order.
func TestPercentileNearestRank(t *testing.T) {
	ds := []time.Duration{5, 1, 4, 2, 3, 10, 9, 8, 7, 6}
	for _, tc := range []struct {
		q    float64
		want time.Duration
	}{{0, 1}, {0.1, 1}, {0.5, 5}, {0.55, 6}, {0.99, 10}, {1, 10}} {
		if got := Percentile(ds, tc.q); got != tc.want {
			t.Errorf("Percentile(%v) = %v, want %v", tc.q, got, tc.want)
		}
	}
	if Percentile(nil, 0.5) != 0 || Percentile([]time.Duration{7}, 0.99) != 7 {
		t.Error("percentile of nothing or of one")
	}
	if !slices.Equal(ds, []time.Duration{5, 1, 4, 2, 3, 10, 9, 8, 7, 6}) {
		t.Error("percentile reordered its input")
	}
}
