package thanosstore

import (
	"slices"
	"testing"
)

func TestPartition(t *testing.T) {
	const gap = 10
	tests := []struct {
		name   string
		ranges [][2]int64
		want   []part
	}{
		{"none", nil, nil},
		{"one", [][2]int64{{5, 9}}, []part{{5, 9, 0, 1}}},
		{"adjacent", [][2]int64{{0, 4}, {4, 8}}, []part{{0, 8, 0, 2}}},
		{"gap of exactly max", [][2]int64{{0, 4}, {14, 20}}, []part{{0, 20, 0, 2}}},
		{"gap one past max", [][2]int64{{0, 4}, {15, 20}}, []part{{0, 4, 0, 1}, {15, 20, 1, 2}}},
		{"contained range keeps the end", [][2]int64{{0, 50}, {10, 20}, {55, 60}}, []part{{0, 60, 0, 3}}},
		{"gap measured from the furthest end", [][2]int64{{0, 50}, {10, 20}, {61, 70}}, []part{{0, 50, 0, 2}, {61, 70, 2, 3}}},
		{"three parts", [][2]int64{{0, 1}, {100, 101}, {105, 110}, {300, 301}}, []part{{0, 1, 0, 1}, {100, 110, 1, 3}, {300, 301, 3, 4}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := partition(len(tt.ranges), gap, func(i int) (int64, int64) { return tt.ranges[i][0], tt.ranges[i][1] })
			if !slices.Equal(got, tt.want) {
				t.Errorf("partition(%v) = %v, want %v", tt.ranges, got, tt.want)
			}
		})
	}
}
