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
// order, from memory or through runs merged in several passes.
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
	for _, runBytes := range []int64{1 << 30, 1 << 14, 1 << 10} {
		s := newRunSorter(t.TempDir(), runBytes)
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
				require.LessOrEqual(t, p.t, x.t, "by time")
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
		require.Equal(t, fmt.Sprint(want), fmt.Sprint(got), "run bytes %d", runBytes)
	}
}
