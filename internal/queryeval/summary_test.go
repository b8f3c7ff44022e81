package queryeval_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/stretchr/testify/require"

	"github.com/aerie-db/aerie/internal/queryeval"
	"github.com/aerie-db/aerie/internal/tsdb"
)

// bits renders a query's answer with every value's bits, so that two
// answers are equal only if they are equal bit for bit.
func bits(t *testing.T, v parser.Value) string {
	t.Helper()
	var b strings.Builder
	switch v := v.(type) {
	case promql.Matrix:
		for _, s := range v {
			fmt.Fprintf(&b, "%s:", s.Metric)
			for _, p := range s.Floats {
				fmt.Fprintf(&b, " %d=%#x", p.T, math.Float64bits(p.F))
			}
			b.WriteByte('\n')
		}
	case promql.Vector:
		for _, s := range v {
			fmt.Fprintf(&b, "%s: %d=%#x\n", s.Metric, s.T, math.Float64bits(s.F))
		}
	default:
		t.Fatalf("answer of type %T", v)
	}
	return b.String()
}

// TestMetricWindows: windows of whole metric intervals over blocks are
// answered from block metrics where that is exact, and every answer
// equals Prometheus' engine's over the same storage bit for bit: integer
// walks (sums exact), decimals (min, max, count only), NaNs and stale
// markers in some intervals, −0 and +0 among the values, sums past 2⁵³,
// timestamps on and off the interval starts, gaps, after flushes and
// after compaction.
func TestMetricWindows(t *testing.T) {
	const (
		hour  = int64(3600_000)
		hours = 30
	)
	db, err := tsdb.Open(t.TempDir(), &tsdb.Options{FlushCheckInterval: -1, GroupBy: []string{"grp"}})
	require.NoError(t, err)
	defer db.Close()
	r := rand.New(rand.NewPCG(1, 2))
	type gen struct {
		name string
		step int64                        // ms between samples
		off  func(i int) int64            // a sample's offset from its tick
		val  func(i int, t int64) float64 // NaN-free unless said
	}
	walk := 50.0
	gens := []gen{
		{"int_walk", 10_000, nil, func(int, int64) float64 {
			walk = math.Max(0, math.Min(100, walk+float64(r.IntN(5)-2)))
			return walk
		}},
		{"int_const", 15_000, nil, func(int, int64) float64 { return 7 }},
		{"decimals", 10_000, nil, func(int, int64) float64 { return float64(r.IntN(2000)-1000) / 100 }},
		{"signed_zeros", 30_000, nil, func(i int, t int64) float64 {
			if t/hour%2 == 0 { // zeros of both signs only
				return []float64{0, math.Copysign(0, -1)}[r.IntN(2)]
			}
			return []float64{0, math.Copysign(0, -1), 1, -1}[r.IntN(4)]
		}},
		{"huge", 60_000, nil, func(int, int64) float64 { return float64(1<<50 + r.IntN(1000)) }},
		{"jitter", 10_000, func(int) int64 { return int64(r.IntN(900)) + 1 }, func(i int, _ int64) float64 { return float64(i % 97) }},
		{"nan_hour", 10_000, nil, func(i int, t int64) float64 {
			switch {
			case t/hour == 5 && i%50 == 3:
				return math.NaN()
			case t/hour == 9 && i%70 == 5:
				return math.Float64frombits(value.StaleNaN)
			case t == 28*hour: // at the start of the hot partition
				return math.NaN()
			}
			return float64(i % 13)
		}},
		{"int_then_decimal", 10_000, nil, func(i int, t int64) float64 { // decimals in the newest (hot) partition
			if t >= 28*hour {
				return float64(i%50) + 0.1
			}
			return float64(i % 50)
		}},
		// Two series of one group (grp), the second at every third row
		// only: its column is sparse.
		{"sparse_a", 10_000, nil, func(i int, _ int64) float64 { return float64(i % 17) }},
		{"sparse_b", 30_000, nil, func(i int, _ int64) float64 { return float64(i%23) - 11 }},
		{"gappy", 20_000, nil, func(i int, t int64) float64 { return float64(i%31) - 15 }},
	}
	app := db.Appender(context.Background())
	for g, gn := range gens {
		for h := range 3 {
			ls := labels.FromStrings("__name__", gn.name, "g", gn.name, "h", fmt.Sprint(h))
			if strings.HasPrefix(gn.name, "sparse_") {
				ls = labels.FromStrings("__name__", gn.name, "g", gn.name, "h", fmt.Sprint(h), "grp", fmt.Sprint(h))
			}
			for i := 0; int64(i)*gn.step < hours*hour; i++ {
				ts := int64(i) * gn.step
				if gn.off != nil {
					ts += gn.off(i)
				}
				if gn.name == "gappy" && (ts/hour)%7 == 3 { // whole hours missing
					continue
				}
				_, err := app.Append(0, ls, ts, gn.val(i, ts))
				require.NoError(t, err, "%d", g)
			}
		}
	}
	require.NoError(t, app.Commit())

	ng := promql.NewEngine(promql.EngineOpts{MaxSamples: 1e9, Timeout: time.Minute, LookbackDelta: 5 * time.Minute})
	e := queryeval.New(ng, queryeval.Options{})
	compare := func(t *testing.T) {
		for _, fn := range []string{"min_over_time", "max_over_time", "count_over_time", "sum_over_time", "avg_over_time"} {
			for _, rg := range []string{"1h", "2h", "3h", "90m"} {
				for _, st := range []struct{ start, end, step int64 }{
					{hour, hours * hour, hour},
					{3 * hour, 25 * hour, 2 * hour},
					{hour + 1000, 20 * hour, hour}, // not on an interval start
					{10 * hour, 10 * hour, 0},      // instant
					{hours * hour, hours * hour, 0},
				} {
					for _, qs := range []string{
						fmt.Sprintf(`%s({__name__=~".+"}[%s])`, fn, rg),
						fmt.Sprintf(`avg by (__name__) (%s({__name__=~".+"}[%s]))`, fn, rg),
					} {
						run := func(eng promql.QueryEngine) string {
							var q promql.Query
							var err error
							if st.step == 0 {
								q, err = eng.NewInstantQuery(context.Background(), db, nil, qs, time.UnixMilli(st.start))
							} else {
								q, err = eng.NewRangeQuery(context.Background(), db, nil, qs, time.UnixMilli(st.start), time.UnixMilli(st.end), time.Duration(st.step)*time.Millisecond)
							}
							require.NoError(t, err)
							defer q.Close()
							res := q.Exec(context.Background())
							require.NoError(t, res.Err, qs)
							return bits(t, res.Value)
						}
						want := run(ng)
						require.NotEmpty(t, want, qs)
						require.Equal(t, want, run(e), "%s over %v", qs, st)
					}
				}
			}
		}
	}
	t.Run("head", compare)
	require.Zero(t, e.Stats.MetricWindows.Load(), "the head has no block metrics")
	require.NoError(t, db.FlushHead())
	t.Run("flushed", compare)
	flushed := e.Stats.MetricWindows.Load()
	require.Positive(t, flushed)
	require.NoError(t, db.Compact())
	t.Run("compacted", compare)
	require.Greater(t, e.Stats.MetricWindows.Load(), flushed+flushed/2, "compacted blocks answer as many")
	// Deleted samples, and samples written back into the blocks' time:
	// those series' windows are decoded.
	require.NoError(t, db.Delete(context.Background(), 7*hour+500, 8*hour+200_000, labels.MustNewMatcher(labels.MatchEqual, "g", "int_walk"), labels.MustNewMatcher(labels.MatchEqual, "h", "1")))
	app = db.Appender(context.Background())
	_, err = app.Append(0, labels.FromStrings("__name__", "int_walk", "g", "int_walk", "h", "2"), 12*hour+5_000, 1000)
	require.NoError(t, err)
	require.NoError(t, app.Commit())
	t.Run("deleted-and-backfilled", compare)
	// The backfilled sample flushed into a block of its own, which
	// overlaps the compacted one only around it.
	require.NoError(t, db.FlushBackfill())
	backfilled := 0
	for _, b := range db.Blocks() {
		if b.Backfill > 0 {
			backfilled++
		}
	}
	require.Equal(t, 1, backfilled, "the backfill generation is a block")
	before := e.Stats.MetricWindows.Load()
	t.Run("backfill-flushed", compare)
	require.Positive(t, e.Stats.MetricWindows.Load()-before)
	t.Logf("%d windows answered from block metrics", e.Stats.MetricWindows.Load())
}

// TestRestoredNames: label_replace restoring the names of a rollup's
// series, which the engine folds into the rollup, answers as Prometheus'
// engine with delayed name removal: named series keep their names and
// metadata labels, and series without a name lose their metadata labels
// at the end (two of them then collide, an error in both).
func TestRestoredNames(t *testing.T) {
	db, err := tsdb.Open(t.TempDir(), &tsdb.Options{FlushCheckInterval: -1})
	require.NoError(t, err)
	defer db.Close()
	app := db.Appender(context.Background())
	for _, ls := range []labels.Labels{
		labels.FromStrings("__name__", "a", "__type__", "gauge", "h", "1"),
		labels.FromStrings("__name__", "b", "__type__", "gauge", "h", "1"),
		labels.FromStrings("__type__", "gauge", "h", "1", "nameless", "x"),
		labels.FromStrings("__type__", "gauge", "h", "2", "nameless", "y"),
		labels.FromStrings("__type__", "counter", "h", "2", "nameless", "y"),
	} {
		for i := range 100 {
			_, err := app.Append(0, ls, int64(i)*10_000, float64(i%7))
			require.NoError(t, err)
		}
	}
	require.NoError(t, app.Commit())
	opts := promql.EngineOpts{MaxSamples: 1e9, Timeout: time.Minute, LookbackDelta: 5 * time.Minute, EnableDelayedNameRemoval: true}
	ng := promql.NewEngine(opts)
	e := queryeval.New(promql.NewEngine(opts), queryeval.Options{DelayedNameRemoval: true})
	for _, q := range []string{
		`label_replace(max_over_time({h="1"}[1m]), "__name__", "$1", "__name__", "(.+)")`,
		`label_replace(max_over_time({h=~"1|2"}[1m]), "__name__", "$1", "__name__", "(.+)")`,
		`max by (__name__, nameless) (label_replace(max_over_time({h=~".+"}[1m]), "__name__", "$1", "__name__", "(.+)"))`,
	} {
		for _, inst := range []bool{true, false} {
			var want, got *promql.Result
			for i, eng := range []promql.QueryEngine{ng, e} {
				var qry promql.Query
				if inst {
					qry, err = eng.NewInstantQuery(context.Background(), db, nil, q, time.UnixMilli(500_000))
				} else {
					qry, err = eng.NewRangeQuery(context.Background(), db, nil, q, time.UnixMilli(0), time.UnixMilli(990_000), 30*time.Second)
				}
				require.NoError(t, err)
				res := qry.Exec(context.Background())
				if i == 0 {
					want = res
				} else {
					got = res
				}
			}
			if want.Err != nil {
				require.EqualError(t, got.Err, want.Err.Error(), q)
				continue
			}
			require.NoError(t, got.Err, q)
			require.Equal(t, bits(t, want.Value), bits(t, got.Value), q)
		}
	}
	require.Positive(t, e.Stats.Rollups.Load())
}
