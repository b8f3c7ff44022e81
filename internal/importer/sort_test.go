package importer

import (
	"fmt"
	"math/rand"
	"slices"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/stretchr/testify/require"
)

// The sorter gives every sample back once, in (time, series, input place)
// order, or with bySeries in (series, time, input place) order, from
// memory or through runs merged in several passes.
func TestRunSorter(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	type in struct {
		t    int64
		l    labels.Labels
		v    float64
		line int64
	}
	var samples []in
	for i := range 5000 {
		samples = append(samples, in{int64(rng.Intn(300)), labels.FromStrings("__name__", fmt.Sprintf("s%d", rng.Intn(20))), rng.NormFloat64(), int64(i + 1)})
	}
	for _, c := range []struct {
		runBytes int64
		bySeries bool
	}{{1 << 30, false}, {1 << 14, false}, {1 << 10, false}, {1 << 30, true}, {1 << 14, true}, {1 << 10, true}} {
		runBytes := c.runBytes
		s := newRunSorter(t.TempDir(), runBytes, c.bySeries)
		for _, x := range samples {
			s.add(x.l, x.t, x.v, 0, x.line)
		}
		require.NoError(t, s.err)
		if runBytes == 1<<10 {
			require.Greater(t, len(s.runs), mergeFanIn)
		}
		var got []in
		var sb labels.ScratchBuilder
		require.NoError(t, s.merge(func(r *sortedSample) error {
			x := in{r.t, labelsOf(r.lset, &sb), r.v, r.line}
			if n := len(got); n > 0 {
				p := got[n-1]
				if c.bySeries {
					seen := slices.ContainsFunc(got[:n-1], func(y in) bool { return labels.Equal(y.l, x.l) })
					require.False(t, !labels.Equal(p.l, x.l) && seen, "a series' samples one after another")
					if labels.Equal(p.l, x.l) {
						require.LessOrEqual(t, p.t, x.t, "a series by time")
					}
				} else {
					require.LessOrEqual(t, p.t, x.t, "by time")
				}
				if p.t == x.t && labels.Equal(p.l, x.l) {
					require.Less(t, p.line, x.line, "of one series at one time, the first read first")
				}
			}
			got = append(got, x)
			return nil
		}))
		key := func(a, b in) int {
			if a.t != b.t {
				return int(a.t - b.t)
			}
			if c := labels.Compare(a.l, b.l); c != 0 {
				return c
			}
			return int(a.line - b.line)
		}
		want := slices.Clone(samples)
		slices.SortFunc(want, key)
		slices.SortFunc(got, key)
		require.Equal(t, fmt.Sprint(want), fmt.Sprint(got), "run bytes %d, by series %v", runBytes, c.bySeries)
	}
}
