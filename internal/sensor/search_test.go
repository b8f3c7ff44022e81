package sensor

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aerie-db/aerie/internal/mathx"
	"github.com/aerie-db/aerie/internal/sensor/cond"
)

// walk returns n points of a random walk at step ms from t0, quantized to
// 0.1, as a CSV body for format 0-1-,.
func walk(rng *rand.Rand, t0, step int64, n int) ([]pt, string) {
	var b strings.Builder
	pts := make([]pt, n)
	v := 100.0
	for i := range pts {
		v += rng.NormFloat64() * 2
		q := math.Round(v*10) / 10
		pts[i] = pt{t0 + int64(i)*step, q}
		fmt.Fprintf(&b, "%d,%g\n", pts[i].t, q)
	}
	return pts, b.String()
}

// wantSearch computes a search answer from raw points, independently of
// the engine: per window of res ms the min, max and mean, the predicate,
// and adjacent matching windows merged.
func wantSearch(pts []pt, res int64, pred func(min, max, avg float64) bool) []Interval {
	type agg struct{ min, max, sum, n float64 }
	by := map[int64]*agg{}
	var keys []int64
	for _, p := range pts {
		w := mathx.FloorDiv(p.t, res)
		a := by[w]
		if a == nil {
			a = &agg{min: math.Inf(1), max: math.Inf(-1)}
			by[w] = a
			keys = append(keys, w)
		}
		a.min, a.max, a.sum, a.n = math.Min(a.min, p.v), math.Max(a.max, p.v), a.sum+p.v, a.n+1
	}
	var out []Interval
	for _, w := range keys { // points are in time order
		a := by[w]
		if !pred(a.min, a.max, a.sum/a.n) {
			continue
		}
		if n := len(out); n > 0 && out[n-1].To == w*res-1 {
			out[n-1].To = w*res + res - 1
			continue
		}
		out = append(out, Interval{w * res, w*res + res - 1})
	}
	return out
}

// TestSearchIndexOnly searches uploaded sensors over the head, local
// blocks and bucket blocks, checks the answers against the raw points and
// that blocks' data were never read.
func TestSearchIndexOnly(t *testing.T) {
	e := newTierEnv(t, Options{})
	rng := rand.New(rand.NewPCG(3, 4))
	data := map[string][]pt{}
	for _, s := range []string{"s1", "s2"} {
		pts, body := walk(rng, t0+17_000, 60_000, 3*24*60) // 3 days at 1 min
		data[s] = pts
		e.upload(s, body)
	}
	const condition = "min lte 95 & max gte 90 | avg gt 110"
	pred := func(mn, mx, avg float64) bool { return mn <= 95 && mx >= 90 || avg > 110 }
	ex, err := cond.Parse(condition)
	require.NoError(t, err)
	from, to := t0, t0+3*24*hour+hour

	check := func(stage string, indexOnly bool) {
		t.Helper()
		reads, gets := e.db.BlockDataReads(), e.tier.Stats.Gets.Load()
		for _, res := range []int64{0, 6 * hour} {
			for s, pts := range data {
				got, st, err := e.svc.Search(context.Background(), Matchers(s), from, to, res, ex)
				require.NoError(t, err, stage)
				r := res
				if r == 0 {
					r = hour
				}
				want := wantSearch(pts, r, pred)
				require.NotEmpty(t, want, "%s: the condition matches nothing; pick another", stage)
				require.Len(t, got, 1, stage)
				require.Equal(t, want, got[0].Intervals, "%s: %s at %d ms", stage, s, r)
				if indexOnly {
					require.Zero(t, st.Data+st.Head, "%s: %+v", stage, st)
				}
			}
		}
		require.Equal(t, reads, e.db.BlockDataReads(), "%s: block data read", stage)
		require.Equal(t, gets, e.tier.Stats.Gets.Load(), "%s: bucket data fetched", stage)
	}
	check("head", false)
	e.reopen(Options{})
	check("local blocks", true)
	// A later point, beyond the largest compacted block, so the searched
	// blocks are old enough for the bucket.
	e.upload("late", fmt.Sprintf("%d,1\n", t0+40*24*hour))
	e.reopen(Options{})
	e.ship()
	check("bucket blocks", true)
	require.Positive(t, e.db.RemoteStats().Blocks)
	e.reopen(Options{})
	check("bucket blocks after restart", true)

	// Percentiles need sketches the index does not keep.
	px, err := cond.Parse("p50 gt 1")
	require.NoError(t, err)
	_, _, err = e.svc.Search(context.Background(), Matchers("s1"), from, to, 0, px)
	require.ErrorIs(t, err, ErrNoSketches)
}
