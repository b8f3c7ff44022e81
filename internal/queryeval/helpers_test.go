package queryeval

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/stretchr/testify/require"

	"github.com/aerie-db/aerie/internal/tsdb"
)

// CounterDB opens an Aerie storage for a test (closed at its end) holding
// n counters m_total{s="0".."n-1", a=s%3} of points samples each, every
// 15 s from 0, the value the sample's index. Exported for the package's
// external tests.
func CounterDB(t testing.TB, n, points int) *tsdb.DB {
	t.Helper()
	db, err := tsdb.Open(t.TempDir(), &tsdb.Options{FlushCheckInterval: -1})
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	app := db.Appender(context.Background())
	for s := range n {
		ls := labels.FromStrings("__name__", "m_total", "s", strconv.Itoa(s), "a", strconv.Itoa(s%3))
		for i := range points {
			_, err := app.Append(0, ls, int64(i)*15_000, float64(i))
			require.NoError(t, err)
		}
	}
	require.NoError(t, app.Commit())
	return db
}

// recordingTracker is an active-query tracker that keeps what it is given.
type recordingTracker struct {
	mu      sync.Mutex
	queries []string
}

func (r *recordingTracker) Close() error          { return nil }
func (r *recordingTracker) GetMaxConcurrent() int { return 8 }
func (r *recordingTracker) Delete(int)            {}
func (r *recordingTracker) Insert(_ context.Context, q string) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.queries = append(r.queries, q)
	return len(r.queries), nil
}

// TestHelpersAndTracker: a query's helper goroutines come from the
// engine's pool (a query runs on its own goroutine when the pool is
// empty, and returns its tokens), and the active-query tracker records
// planned queries as asked, and vector plans.
func TestHelpersAndTracker(t *testing.T) {
	db := CounterDB(t, 64, 200)
	tr := &recordingTracker{}
	ng := promql.NewEngine(promql.EngineOpts{MaxSamples: 1e9, Timeout: time.Minute, LookbackDelta: 5 * time.Minute, ActiveQueryTracker: Tracker(tr)})
	e := New(ng, Options{Concurrency: 4, Tracker: Tracker(tr)})
	require.Equal(t, 3, cap(e.helpers))
	const qs = `sum by (a) (rate(m_total[5m]))`
	run := func() promql.Matrix {
		q, err := e.NewRangeQuery(context.Background(), db, nil, qs, time.UnixMilli(0), time.UnixMilli(200*15_000), 15*time.Second)
		require.NoError(t, err)
		defer q.Close()
		res := q.Exec(context.Background())
		require.NoError(t, res.Err)
		return res.Value.(promql.Matrix)
	}
	want := run()
	require.Len(t, want, 3)
	require.Zero(t, len(e.helpers), "tokens returned")

	// Every token taken (other queries' helpers): the query still
	// answers, alone on its goroutine.
	for range cap(e.helpers) {
		e.helpers <- struct{}{}
	}
	require.Equal(t, want.String(), run().String())
	for range cap(e.helpers) {
		<-e.helpers
	}
	require.Equal(t, int64(2), e.Stats.Rollups.Load())
	require.Equal(t, []string{qs, qs, qs, qs}, tr.queries, "parsed and run, twice")

	// A vector plan waits for its place in the tracker too.
	const vqs = `m_total > 5`
	q, err := e.NewRangeQuery(context.Background(), db, nil, vqs, time.UnixMilli(0), time.UnixMilli(200*15_000), 15*time.Second)
	require.NoError(t, err)
	defer q.Close()
	require.NoError(t, q.Exec(context.Background()).Err)
	require.Equal(t, int64(1), e.Stats.Vectors.Load())
	require.Equal(t, vqs, tr.queries[len(tr.queries)-1])
	require.Zero(t, len(e.helpers), "tokens returned")
}

// TestSeriesInterfaces: Aerie's series take the paths that read them
// without an iterator (spanAppender) and from block metrics
// (summarizer); a renamed method would silently send every rollup
// through the iterator.
func TestSeriesInterfaces(t *testing.T) {
	db := CounterDB(t, 2, 10)
	q, err := db.Querier(0, 1_000_000)
	require.NoError(t, err)
	defer q.Close()
	ss := q.Select(context.Background(), false, nil, labels.MustNewMatcher(labels.MatchEqual, "__name__", "m_total"))
	require.True(t, ss.Next())
	_, ok := ss.At().(spanAppender)
	require.True(t, ok, "%T is not a spanAppender", ss.At())
	_, ok = ss.At().(summarizer)
	require.True(t, ok, "%T is not a summarizer", ss.At())
}

// TestWithParsed: a query made with its parse in the context (WithParsed)
// is made from that parse, not parsed again, and only for the same query
// string. The parse given here differs from the string's on purpose, so
// the answer tells which one the engine used.
func TestWithParsed(t *testing.T) {
	db := CounterDB(t, 4, 100)
	ng := New(promql.NewEngine(promql.EngineOpts{MaxSamples: 1e6, Timeout: time.Minute}), Options{})
	ctx := context.Background()
	const qs = `sum(rate(m_total[1m]))`
	other, err := parser.ParseExpr(`sum(rate(m_total[1m])) * 10`)
	require.NoError(t, err)
	answer := func(ctx context.Context, qs string) float64 {
		t.Helper()
		q, err := ng.NewInstantQuery(ctx, db, nil, qs, time.UnixMilli(90*15_000))
		require.NoError(t, err)
		defer q.Close()
		v, err := q.Exec(ctx).Vector()
		require.NoError(t, err)
		require.Len(t, v, 1)
		return v[0].F
	}
	plain := answer(ctx, qs)
	require.InDelta(t, 4.0/15, plain, 1e-9)
	require.Equal(t, 10*plain, answer(WithParsed(ctx, qs, other), qs), "the parse given is used")
	require.Equal(t, plain, answer(WithParsed(ctx, "another query", other), qs), "a parse of another string is not")
	require.Equal(t, plain, answer(WithParsed(ctx, qs, nil), qs))
}
