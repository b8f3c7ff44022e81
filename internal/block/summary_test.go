package block

import (
	"fmt"
	"math"
	"path/filepath"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/stretchr/testify/require"

	"github.com/aerie-db/aerie/internal/index"
)

// TestAppendSummaries checks invariant 12 against the samples a series
// reads back: a summary for every interval wholly in the block without a
// NaN, and none for the others; its counts, extremes, sum and first value
// those of the samples; AtStart when a sample lies at the interval's
// start; Integral exactly for the integer columns. Columns are full,
// sparse (bitmaps and runs) and empty in some chunks, on and off the
// interval starts.
func TestAppendSummaries(t *testing.T) {
	const iv = 3600_000
	dir := t.TempDir()
	dict, err := index.OpenTagDict(filepath.Join(dir, "tagdict"))
	require.NoError(t, err)
	defer dict.Close()
	w, err := NewWriter(dir, 0, 4*iv, dict, WriterOptions{})
	require.NoError(t, err)
	const rows = 1400 // every 10 s, the last rows past 3 h
	for g, jitter := range []int64{0, 7} {
		ts := make([]int64, rows)
		for i := range ts {
			ts[i] = int64(i)*10_000 + jitter*int64(i%2)
		}
		cols := []struct {
			name  string
			value func(i int) float64
			there func(i int) bool
		}{
			{"ints", func(i int) float64 { return float64(i % 97) }, nil},
			{"decimals", func(i int) float64 { return float64(i%97) / 4 }, nil},
			{"every_third", func(i int) float64 { return float64(i) }, func(i int) bool { return i%3 == 0 }},
			{"runs", func(i int) float64 { return -float64(i % 5) }, func(i int) bool { return i/100%2 == 0 }}, // −0 among them
			{"runs_no_zero", func(i int) float64 { return float64(i%5 + 1) }, func(i int) bool { return i/100%2 == 1 }},
			{"nan_in_hour_2", func(i int) float64 {
				if i == 800 {
					return math.NaN()
				}
				return 3
			}, nil},
		}
		var cs []Column
		for _, c := range cols {
			col := Column{Labels: labels.FromStrings("__name__", c.name, "g", fmt.Sprint(g)), Values: make([]float64, rows), Present: make([]bool, rows)}
			for i := range rows {
				col.Values[i] = c.value(i)
				col.Present[i] = c.there == nil || c.there(i)
			}
			cs = append(cs, col)
		}
		require.NoError(t, w.AddGroup(ts, cs))
	}
	bdir, _, err := w.Finish()
	require.NoError(t, err)
	r, err := Open(bdir, dict, ReaderOptions{})
	require.NoError(t, err)
	defer r.Close()
	if r.mm == nil {
		t.Skip("no mapped files on this platform: blocks give no summaries")
	}
	sel, err := r.Select(math.MinInt64, math.MaxInt64, labels.MustNewMatcher(labels.MatchRegexp, "__name__", ".+"))
	require.NoError(t, err)
	require.Len(t, sel.Series, 12)
	for _, s := range sel.Series {
		ts, vs, err := s.AppendRange(nil, nil, math.MinInt64, math.MaxInt64)
		require.NoError(t, err)
		got, err := s.AppendSummaries(nil, iv, -3, 10)
		require.NoError(t, err)
		name := s.Labels.Get("__name__")
		var want []IntervalSummary
		for k := int64(0); k < 4; k++ {
			var m IntervalMetrics
			m.Interval = k
			nan, atStart, integral := false, false, true
			for i, t := range ts {
				if t < k*iv || t >= (k+1)*iv {
					continue
				}
				if math.IsNaN(vs[i]) {
					nan = true
					continue
				}
				if m.Count == 0 {
					atStart = t == k*iv
					m.Min, m.Max, m.First = vs[i], vs[i], vs[i]
				}
				m.Count++
				m.Min, m.Max, m.Sum = min(m.Min, vs[i]), max(m.Max, vs[i]), m.Sum+vs[i]
				integral = integral && vs[i] == math.Trunc(vs[i]) && !(vs[i] == 0 && math.Signbit(vs[i]))
			}
			if !nan {
				want = append(want, IntervalSummary{Metrics: m, AtStart: atStart, Integral: integral && name != "decimals"})
			}
		}
		require.Len(t, got, len(want), "%s", s.Labels)
		for i, w := range want {
			g := got[i]
			require.Equal(t, w.Metrics.Interval, g.Metrics.Interval, "%s", s.Labels)
			require.Equal(t, w.Metrics.Count, g.Metrics.Count, "%s interval %d", s.Labels, w.Metrics.Interval)
			if w.Metrics.Count == 0 {
				continue
			}
			require.Equal(t, w.AtStart, g.AtStart, "%s interval %d", s.Labels, w.Metrics.Interval)
			require.Equal(t, w.Integral, g.Integral, "%s interval %d", s.Labels, w.Metrics.Interval)
			require.Equal(t, w.Metrics.Min, g.Metrics.Min, "%s interval %d", s.Labels, w.Metrics.Interval)
			require.Equal(t, w.Metrics.Max, g.Metrics.Max, "%s interval %d", s.Labels, w.Metrics.Interval)
			require.Equal(t, w.Metrics.First, g.Metrics.First, "%s interval %d", s.Labels, w.Metrics.Interval)
			require.InDelta(t, w.Metrics.Sum, g.Metrics.Sum, 1e-6, "%s interval %d", s.Labels, w.Metrics.Interval)
		}
	}
	// Another metric interval, or a block read through the file: none.
	got, err := sel.Series[0].AppendSummaries(nil, iv/2, 0, 10)
	require.NoError(t, err)
	require.Empty(t, got)
}
