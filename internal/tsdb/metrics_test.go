package tsdb

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/stretchr/testify/require"

	"github.com/aerie-db/aerie/internal/block"
	"github.com/aerie-db/aerie/internal/mathx"
)

// wantMetrics computes block metrics from the samples a query returns,
// independently of the code under test.
func wantMetrics(got map[string][]smp, iv int64) map[string]map[int64]block.IntervalMetrics {
	out := map[string]map[int64]block.IntervalMetrics{}
	for k, ss := range got {
		byIv := map[int64]block.IntervalMetrics{}
		for _, s := range ss { // in time order
			i := s.t / iv
			if s.t < 0 && s.t%iv != 0 {
				i--
			}
			m := byIv[i]
			m.Interval = i
			if !math.IsNaN(s.v) {
				if m.Count == 0 {
					m.Min, m.Max, m.First = s.v, s.v, s.v
				}
				m.Count++
				m.Min, m.Max = math.Min(m.Min, s.v), math.Max(m.Max, s.v)
				m.Sum += s.v
				m.SumSq += s.v * s.v
				m.Last = s.v
			}
			byIv[i] = m
		}
		out[k] = byIv
	}
	return out
}

func checkMetrics(t *testing.T, stage string, db *DB, mint, maxt int64, ms ...*labels.Matcher) MetricsStats {
	t.Helper()
	iv := db.MetricInterval()
	lo, hi := mathx.FloorDiv(mint, iv)*iv, mathx.FloorDiv(maxt, iv)*iv+iv-1
	want := wantMetrics(query(t, db, lo, hi, ms...), iv)
	got, st, err := db.SeriesMetrics(context.Background(), mint, maxt, ms...)
	require.NoError(t, err, stage)
	require.Len(t, got, len(want), stage)
	for _, s := range got {
		w := want[s.Labels.String()]
		require.NotNil(t, w, "%s: %s", stage, s.Labels)
		n := 0
		for _, m := range s.Intervals {
			x, ok := w[m.Interval]
			require.True(t, ok, "%s: %s: interval %d has no samples", stage, s.Labels, m.Interval)
			n++
			require.Equal(t, x.Count, m.Count, "%s: %s interval %d", stage, s.Labels, m.Interval)
			if x.Count == 0 {
				continue
			}
			require.Equal(t, [4]float64{x.Min, x.Max, x.First, x.Last}, [4]float64{m.Min, m.Max, m.First, m.Last}, "%s: %s interval %d", stage, s.Labels, m.Interval)
			require.InEpsilon(t, x.Sum, m.Sum, 1e-9, stage)
			require.InEpsilon(t, x.SumSq, m.SumSq, 1e-9, stage)
		}
		require.Equal(t, len(w), n, "%s: %s", stage, s.Labels)
	}
	return st
}

// TestSeriesMetrics checks block metrics answers against the samples over
// the head, blocks alone (no data read), overlapping writes and deletions.
func TestSeriesMetrics(t *testing.T) {
	opts := &Options{FlushCheckInterval: -1, PartitionRange: 2 * 3600_000, MetricInterval: 1800_000}
	db, dir := openDir(t, opts)
	rng := rand.New(rand.NewPCG(1, 2))
	const step, n = 10_000, 2160 // 6 h
	for i := range int64(n) {
		app := db.RowAppender()
		for s := range 4 {
			v := float64(rng.IntN(1000)) / 8
			if rng.IntN(50) == 0 {
				v = math.NaN()
			}
			require.NoError(t, app.Append(labels.FromStrings("__name__", "sensor", "s", string(rune('a'+s))), 1_000_000+i*step, v))
		}
		require.NoError(t, app.Commit())
	}
	all := labels.MustNewMatcher(labels.MatchEqual, "__name__", "sensor")
	st := checkMetrics(t, "head", db, 0, math.MaxInt64/2, all)
	require.Zero(t, st.Index+st.Data, "head: %+v", st)
	require.Positive(t, st.Head)

	require.NoError(t, db.FlushHead())
	reopen(t, &db, dir, opts)
	defer func() { require.NoError(t, db.Close()) }()
	before := db.BlockDataReads()
	got, st, err := db.SeriesMetrics(context.Background(), 3_000_000, 9_000_000, all)
	require.NoError(t, err)
	require.Len(t, got, 4)
	require.Equal(t, before, db.BlockDataReads(), "value search read data")
	require.Zero(t, st.Head+st.Data, "%+v", st)
	require.Positive(t, st.Index)
	require.Equal(t, int64(1800_000), got[0].Intervals[0].Interval*1800_000, "an interval is answered whole") // 3,000,000 lies in [1,800,000, 3,600,000)
	checkMetrics(t, "blocks", db, 3_000_000, 9_000_000, all)
	checkMetrics(t, "blocks, one series", db, 0, math.MaxInt64/2, all, labels.MustNewMatcher(labels.MatchEqual, "s", "b"))

	// An upload into the middle of a flushed interval: two sources.
	app := db.Appender(context.Background())
	for i := range int64(10) {
		_, err := app.Append(0, labels.FromStrings("__name__", "sensor", "s", "a"), 5_000_000+i*step+5, float64(-i))
		require.NoError(t, err)
	}
	require.NoError(t, app.Commit())
	st = checkMetrics(t, "overlap", db, 0, math.MaxInt64/2, all)
	require.Positive(t, st.Data, "%+v", st)
	checkSharedQuerier(t, db, 3_000_000, 9_000_000, all)

	require.NoError(t, db.Delete(context.Background(), 12_000_000, 14_000_000, labels.MustNewMatcher(labels.MatchEqual, "s", "c")))
	st = checkMetrics(t, "deleted", db, 0, math.MaxInt64/2, all)
	require.Positive(t, st.Data, "%+v", st)
}

// checkSharedQuerier checks that SeriesMetrics, SeriesSets and SeriesBytes
// through one querier over all time answer as the DB's do, each through
// a querier of its own over its range, and that a querier not holding the
// metric intervals of [mint, maxt] refuses SeriesMetrics rather than
// answer part of an interval.
func checkSharedQuerier(t *testing.T, db *DB, mint, maxt int64, ms ...*labels.Matcher) {
	t.Helper()
	ctx := context.Background()
	wantM, wantSt, err := db.SeriesMetrics(ctx, mint, maxt, ms...)
	require.NoError(t, err)
	wantS, err := db.SeriesSets(ctx, mint, maxt, ms...)
	require.NoError(t, err)
	wantI, wantD, err := db.SeriesBytes(context.Background(), ms...)
	require.NoError(t, err)

	opened := db.Stats().Queriers
	q := db.OpenQuerier(math.MinInt64, math.MaxInt64)
	defer q.Close()
	gotM, gotSt, err := q.SeriesMetrics(ctx, mint, maxt, ms...)
	require.NoError(t, err)
	require.Equal(t, wantM, gotM)
	require.Equal(t, wantSt, gotSt)
	gotS, err := q.SeriesSets(ctx, mint, maxt, ms...)
	require.NoError(t, err)
	require.Equal(t, wantS, gotS)
	gotI, gotD, err := q.SeriesBytes(context.Background(), ms...)
	require.NoError(t, err)
	require.Equal(t, [2]int64{wantI, wantD}, [2]int64{gotI, gotD})
	require.Equal(t, opened+1, db.Stats().Queriers)

	narrow := db.OpenQuerier(mint, maxt)
	defer narrow.Close()
	_, _, err = narrow.SeriesMetrics(ctx, mint, maxt, ms...)
	require.ErrorContains(t, err, "reach outside the querier's range")
}

// TestHistoryAppenderNoSplit: series written one after another over more
// than the head's partition window. Through Appender, a later series'
// partition at the head's in-order bound is split between the backfill
// and the head, so an interval has two sources and value search reads
// its data; through HistoryAppender it goes to the backfill whole.
func TestHistoryAppenderNoSplit(t *testing.T) {
	for _, history := range []bool{false, true} {
		db, err := Open(t.TempDir(), &Options{FlushCheckInterval: -1, PartitionRange: 2 * 3600_000})
		require.NoError(t, err)
		t0 := int64(1_700_000_000_000) / 3600_000 * 3600_000
		for _, s := range []string{"s1", "s2", "s3"} {
			l := labels.FromStrings("__name__", s)
			app := db.Appender(context.Background())
			if history {
				app = db.HistoryAppender(context.Background())
			}
			for i := int64(0); i < 3*24*60; i++ {
				_, err := app.Append(0, l, t0+17_000+i*60_000, float64(i))
				require.NoError(t, err)
			}
			require.NoError(t, app.Commit())
		}
		require.NoError(t, db.FlushHead())
		require.NoError(t, db.FlushBackfill())
		all := labels.MustNewMatcher(labels.MatchRegexp, "__name__", ".+")
		st := checkMetrics(t, fmt.Sprintf("history=%v", history), db, math.MinInt64/2, math.MaxInt64/2, all)
		if history {
			require.Zero(t, st.Data, "%+v", st)
		} else {
			require.Positive(t, st.Data, "the split this test guards against no longer happens: %+v", st)
		}
		require.NoError(t, db.Close())
	}
}
