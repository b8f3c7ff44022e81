package api

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/promql/promqltest"
	"github.com/prometheus/prometheus/storage"
	"github.com/stretchr/testify/require"
)

func TestKeepNames(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`rate(x[5m])`, ""},
		{`max_over_time(x[1m])`, `label_replace(max_over_time(x[1m]), "__name__", "$1", "__name__", "(.+)")`},
		{`max by (__name__) (max_over_time({__name__=~"a|b"}[1m]))`,
			`max by (__name__) (label_replace(max_over_time({__name__=~"a|b"}[1m]), "__name__", "$1", "__name__", "(.+)"))`},
		{`round(avg_over_time(x[5m])) > 1`,
			`label_replace(round(label_replace(avg_over_time(x[5m]), "__name__", "$1", "__name__", "(.+)")), "__name__", "$1", "__name__", "(.+)") > 1`},
		{`quantile_over_time(0.5, x[5m:1m])`, `label_replace(quantile_over_time(0.5, x[5m:1m]), "__name__", "$1", "__name__", "(.+)")`},
		{`-clamp_min(x, 0)`, `-label_replace(clamp_min(x, 0), "__name__", "$1", "__name__", "(.+)")`},
		{`max_over_time(x[1m]`, ""}, // does not parse
	} {
		got, ok := keepNames(tc.in)
		require.Equal(t, tc.want != "", ok, tc.in)
		require.Equal(t, tc.want, got, tc.in)
	}
}

func FuzzKeepNames(f *testing.F) {
	for _, s := range []string{`max_over_time(x[1m])`, `sum by (__name__) (round({__name__=~"a|b"}))`, `rate(x[5m]) / on() group_left clamp(y, 0, 1)`, `{`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, qs string) {
		out, ok := keepNames(qs)
		if !ok {
			return
		}
		if _, err := parser.ParseExpr(out); err != nil {
			t.Fatalf("rewrite of %q does not parse: %q: %v", qs, out, err)
		}
	})
}

// TestNameCompatEngine: queries that collide in Prometheus answer as in
// VictoriaMetrics (values and labels as its binary answered them on the
// same data); queries Prometheus answers are unchanged; with delayed name
// removal off the engine is Prometheus 3's.
func TestNameCompatEngine(t *testing.T) {
	st := promqltest.LoadedStorage(t, `
load 10s
  cpu_usage_user{hostname="h1"}   0+1x30
  cpu_usage_system{hostname="h1"} 0+2x30
  cpu_usage_idle{hostname="h1"}   100-1x30
`)
	newEngine := func(delayed bool) *promql.Engine {
		return promql.NewEngine(promql.EngineOpts{MaxSamples: 1e6, Timeout: time.Minute, LookbackDelta: 5 * time.Minute, EnableDelayedNameRemoval: delayed})
	}
	compat, plain := NameCompatEngine(newEngine(true), 5*time.Minute), newEngine(false)
	at := time.Unix(300, 0)
	instant := func(ng promql.QueryEngine, qs string) *promql.Result {
		q, err := ng.NewInstantQuery(context.Background(), st, nil, qs, at)
		require.NoError(t, err)
		t.Cleanup(q.Close)
		return q.Exec(context.Background())
	}
	for _, tc := range []struct {
		q    string
		want string // the vector's String(), or the error
	}{
		{`max(max_over_time({__name__=~"cpu_usage_(user|system|idle)", hostname="h1"}[1m])) by (__name__)`,
			"{__name__=\"cpu_usage_idle\"} => 75 @[300000]\n{__name__=\"cpu_usage_system\"} => 60 @[300000]\n{__name__=\"cpu_usage_user\"} => 30 @[300000]"},
		{`max_over_time({__name__=~"cpu_usage_(user|system)"}[1m])`,
			"{__name__=\"cpu_usage_system\", hostname=\"h1\"} => 60 @[300000]\n{__name__=\"cpu_usage_user\", hostname=\"h1\"} => 30 @[300000]"},
		// Answered by Prometheus: unchanged (no name).
		{`max_over_time(cpu_usage_user[1m])`, "{hostname=\"h1\"} => 30 @[300000]"},
		{`sum by (hostname) (rate({__name__=~"cpu_usage_(user|system)"}[1m]))`, "{hostname=\"h1\"} => 0.30000000000000004 @[300000]"},
		// Collides in VictoriaMetrics too.
		{`rate({__name__=~"cpu_usage_(user|system)"}[1m])`, "vector cannot contain metrics with the same labelset"},
	} {
		res := instant(compat, tc.q)
		if res.Err != nil {
			require.Equal(t, tc.want, res.Err.Error(), tc.q)
			continue
		}
		v, err := res.Vector()
		require.NoError(t, err)
		require.Equal(t, tc.want, sortedString(v), tc.q)
	}
	// Names collide, but the query with them kept fails too: the answer
	// is the query as written's, and the query reports itself as asked.
	{
		qs := `max_over_time({__name__=~"cpu_usage_(user|system)"}[1m]) + rate({__name__=~"cpu_usage_(user|system)"}[1m])`
		q, err := compat.NewInstantQuery(context.Background(), st, nil, qs, at)
		require.NoError(t, err)
		defer q.Close()
		require.Equal(t, qs, q.String())
		got := q.Exec(context.Background())
		want := instant(newEngine(true), qs)
		require.Error(t, want.Err)
		require.Equal(t, want.Err.Error(), got.Err.Error())
		require.NotNil(t, q.Stats())
		require.Contains(t, q.Statement().String(), qs) // the query as written answered
	}
	res := instant(plain, `max(max_over_time({__name__=~"cpu_usage_(user|system|idle)", hostname="h1"}[1m])) by (__name__)`)
	require.EqualError(t, res.Err, "vector cannot contain metrics with the same labelset")

	// A range query takes the same path.
	q, err := compat.NewRangeQuery(context.Background(), st, nil, `max_over_time({__name__=~"cpu_usage_(user|system)"}[1m])`, time.Unix(100, 0), time.Unix(300, 0), time.Minute)
	require.NoError(t, err)
	defer q.Close()
	rr := q.Exec(context.Background())
	require.NoError(t, rr.Err)
	m, err := rr.Matrix()
	require.NoError(t, err)
	require.Len(t, m, 2)
	require.Equal(t, "cpu_usage_system", m[0].Metric.Get("__name__"))
	require.Len(t, m[0].Floats, 4)
	require.NotNil(t, q.Stats())
}

func sortedString(v promql.Vector) string {
	out := make(promql.Vector, len(v))
	copy(out, v)
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && promqlLess(out[j], out[j-1]); j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out.String()
}

func promqlLess(a, b promql.Sample) bool { return a.Metric.String() < b.Metric.String() }

// countingQueryable counts the Selects that read samples (not the
// labels-only look-ups of the collision check).
type countingQueryable struct {
	storage.Queryable
	reads *atomic.Int64
}

func (c countingQueryable) Querier(mint, maxt int64) (storage.Querier, error) {
	q, err := c.Queryable.Querier(mint, maxt)
	return countingQuerier{Querier: q, reads: c.reads}, err
}

type countingQuerier struct {
	storage.Querier
	reads *atomic.Int64
}

func (c countingQuerier) Select(ctx context.Context, sorted bool, hints *storage.SelectHints, ms ...*labels.Matcher) storage.SeriesSet {
	if hints == nil || hints.Func != "series" {
		c.reads.Add(1)
	}
	return c.Querier.Select(ctx, sorted, hints, ms...)
}

// TestNameCompatCollisionCheck: a query whose keep-name call reads series
// differing only in __name__ is evaluated once, with names kept; one whose
// selector names one metric, or whose series do not collide, as written;
// series of two names that never share a step answer per name (the one
// documented difference from Prometheus).
func TestNameCompatCollisionCheck(t *testing.T) {
	st := promqltest.LoadedStorage(t, `
load 10s
  cpu_usage_user{hostname="h1"}   0+1x30
  cpu_usage_system{hostname="h1"} 0+2x30
  cpu_usage_user{hostname="h2"}   0+1x30
  old_name{hostname="h1"}         1+0x10
  new_name{hostname="h1"}         _x20 2+0x10
`)
	ng := promql.NewEngine(promql.EngineOpts{MaxSamples: 1e6, Timeout: time.Minute, LookbackDelta: 5 * time.Minute, EnableDelayedNameRemoval: true})
	var reads atomic.Int64
	compat := NameCompatEngine(ng, time.Minute)
	q := countingQueryable{Queryable: st, reads: &reads}
	for _, tc := range []struct {
		q     string
		reads int64 // Selects that read samples
		names int   // series of the answer with a __name__
	}{
		{`max(max_over_time({__name__=~"cpu_usage_(user|system)", hostname="h1"}[1m])) by (__name__)`, 1, 2},
		{`max_over_time({__name__=~"cpu_usage_.*"}[1m])`, 1, 3},
		{`max_over_time(cpu_usage_user[1m])`, 1, 0},
		{`max_over_time({__name__=~"cpu_usage_user"}[1m])`, 1, 0},
		{`max_over_time({__name__=~"cpu_usage_.*", hostname="h2"}[1m])`, 1, 0},
		{`sum by (hostname) (rate({__name__=~"cpu_usage_(user|system)"}[1m]))`, 1, 0},
		// Apart in time: Prometheus answers one nameless series; Aerie, per name.
		{`max_over_time({__name__=~"(old|new)_name"}[30s])`, 1, 2},
	} {
		reads.Store(0)
		qry, err := compat.NewRangeQuery(context.Background(), q, nil, tc.q, time.Unix(0, 0), time.Unix(300, 0), 30*time.Second)
		require.NoError(t, err)
		res := qry.Exec(context.Background())
		require.NoError(t, res.Err, tc.q)
		m, err := res.Matrix()
		require.NoError(t, err)
		names := 0
		for _, s := range m {
			if s.Metric.Has(labels.MetricName) {
				names++
			}
		}
		require.Equal(t, tc.reads, reads.Load(), tc.q)
		require.Equal(t, tc.names, names, tc.q)
		qry.Close()
	}
	plain, err := ng.NewRangeQuery(context.Background(), st, nil, `max_over_time({__name__=~"(old|new)_name"}[30s])`, time.Unix(0, 0), time.Unix(300, 0), 30*time.Second)
	require.NoError(t, err)
	defer plain.Close()
	m, err := plain.Exec(context.Background()).Matrix()
	require.NoError(t, err)
	require.Len(t, m, 1)
}
