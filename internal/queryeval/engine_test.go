package queryeval_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/prometheus/promql"
	"github.com/stretchr/testify/require"

	"github.com/aerie-db/aerie/internal/difftest"
	"github.com/aerie-db/aerie/internal/difftest/smith"
	"github.com/aerie-db/aerie/internal/queryeval"
	"github.com/aerie-db/aerie/internal/tsdb"
)

type aerieEngine struct{ *tsdb.DB }

func (e aerieEngine) NewAppender() difftest.Appender { return e.DB.RowAppender() }

// engines wraps difftest's Prometheus engines and keeps the wrappers.
type engines []*queryeval.Engine

// wrap returns the wrapper of an engine that removes names late (as aerie
// serve does by default) or not.
func (es *engines) wrap(delayed bool) func(*promql.Engine) promql.QueryEngine {
	return func(ng *promql.Engine) promql.QueryEngine {
		e := queryeval.New(ng, queryeval.Options{DelayedNameRemoval: delayed})
		*es = append(*es, e)
		return e
	}
}

func (es engines) rollups() (planned, rollups, fallbacks, vectors int64) {
	for _, e := range es {
		vectors += e.Stats.Vectors.Load()
		planned += e.Stats.Planned.Load()
		rollups += e.Stats.Rollups.Load()
		fallbacks += e.Stats.Fallbacks.Load()
	}
	return
}

// TestSameAnswers runs the differential suite's expressions through
// Prometheus' engine and through queryeval's over the same storage —
// Aerie's head, its blocks, and prometheus/tsdb — and requires the same
// answers bit for bit, with the same annotations and errors.
func TestSameAnswers(t *testing.T) {
	cfg := difftest.Full()
	if testing.Short() {
		cfg = difftest.Small()
	}
	w := difftest.Generate(cfg)
	prom, err := difftest.OpenProm(t.TempDir(), cfg.OOOWindow)
	require.NoError(t, err)
	defer prom.Close()
	w.Write(t, prom)
	db, err := tsdb.Open(t.TempDir(), &tsdb.Options{OOOWindow: cfg.OOOWindow, FlushCheckInterval: -1})
	require.NoError(t, err)
	defer db.Close()
	w.Write(t, aerieEngine{db})

	var es engines
	t.Run("prometheus-tsdb", func(t *testing.T) { difftest.CompareEngines(t, w, prom, true, es.wrap(true)) })
	t.Run("prometheus-tsdb-names-at-once", func(t *testing.T) { difftest.CompareEngines(t, w, prom, false, es.wrap(false)) })
	t.Run("head", func(t *testing.T) { difftest.CompareEngines(t, w, db, true, es.wrap(true)) })
	require.NoError(t, db.FlushHead())
	t.Run("blocks", func(t *testing.T) { difftest.CompareEngines(t, w, db, true, es.wrap(true)) })
	planned, rollups, fallbacks, vectors := es.rollups()
	t.Logf("%d queries planned, %d rollups evaluated, %d vector plans, %d fallbacks", planned, rollups, vectors, fallbacks)
	require.Positive(t, rollups)
	require.Positive(t, vectors)
}

// TestStops: a planned query whose context is done stops with
// Prometheus' error for it.
func TestStops(t *testing.T) {
	db := queryeval.CounterDB(t, 20, 2000)
	ng := promql.NewEngine(promql.EngineOpts{MaxSamples: 1e9, Timeout: time.Minute, LookbackDelta: 5 * time.Minute})
	e := queryeval.New(ng, queryeval.Options{})
	run := func(ctx context.Context) *promql.Result {
		q, err := e.NewRangeQuery(ctx, db, nil, `sum by (a) (rate(m_total[5m]))`, time.UnixMilli(0), time.UnixMilli(2000*15_000), 15*time.Second)
		require.NoError(t, err)
		defer q.Close()
		return q.Exec(ctx)
	}
	res := run(context.Background())
	require.NoError(t, res.Err)
	require.Len(t, res.Value.(promql.Matrix), 3)
	require.Equal(t, int64(1), e.Stats.Rollups.Load())

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res = run(ctx)
	var canceled promql.ErrQueryCanceled
	require.ErrorAs(t, res.Err, &canceled)

	// A vector plan too, and one past its timeout.
	vector := func(e *queryeval.Engine, ctx context.Context) error {
		q, err := e.NewRangeQuery(ctx, db, nil, `m_total > 5`, time.UnixMilli(0), time.UnixMilli(2000*15_000), 15*time.Second)
		require.NoError(t, err)
		defer q.Close()
		return q.Exec(ctx).Err
	}
	require.ErrorAs(t, vector(e, ctx), &canceled)
	late := queryeval.New(ng, queryeval.Options{Timeout: time.Nanosecond})
	var timeout promql.ErrQueryTimeout
	require.ErrorAs(t, vector(late, context.Background()), &timeout)
	require.NoError(t, vector(e, context.Background()))
	require.Equal(t, int64(1), e.Stats.Vectors.Load())

	small := queryeval.New(ng, queryeval.Options{MaxSamples: 100})
	q, err := small.NewRangeQuery(context.Background(), db, nil, `sum by (a) (rate(m_total[5m]))`, time.UnixMilli(0), time.UnixMilli(2000*15_000), 15*time.Second)
	require.NoError(t, err)
	defer q.Close()
	var tooMany promql.ErrTooManySamples
	require.ErrorAs(t, q.Exec(context.Background()).Err, &tooMany)

	// A vector plan whose series × steps pass MaxSamples is Prometheus'
	// engine's to answer (or refuse, with its own limit): here, 20 series
	// × 2001 steps against 100, and the wrapped engine's 1e9 answers.
	want, err := ng.NewRangeQuery(context.Background(), db, nil, `m_total > 5`, time.UnixMilli(0), time.UnixMilli(2000*15_000), 15*time.Second)
	require.NoError(t, err)
	defer want.Close()
	q, err = small.NewRangeQuery(context.Background(), db, nil, `m_total > 5`, time.UnixMilli(0), time.UnixMilli(2000*15_000), 15*time.Second)
	require.NoError(t, err)
	defer q.Close()
	got := q.Exec(context.Background())
	require.NoError(t, got.Err)
	require.Equal(t, want.Exec(context.Background()).Value.String(), got.Value.String())
	require.Equal(t, int64(1), small.Stats.Fallbacks.Load())
	require.Zero(t, small.Stats.Vectors.Load())
}

// smallWorkload is difftest's small workload written to an Aerie head
// (closed at the test's end).
func smallWorkload(t *testing.T) (*difftest.Workload, *tsdb.DB) {
	cfg := difftest.Small()
	w := difftest.Generate(cfg)
	db, err := tsdb.Open(t.TempDir(), &tsdb.Options{OOOWindow: cfg.OOOWindow, FlushCheckInterval: -1})
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	w.Write(t, aerieEngine{db})
	return w, db
}

// TestRandomQueries compares both engines on expressions promqlsmith
// generates over the workload's series and queryeval plans, on Aerie's
// head and then its blocks: a general mix and one leaning on rollups.
// AERIE_SMITH_SEED picks another seed (the test logs the one it used),
// AERIE_SMITH_N another number of expressions per mix.
func TestRandomQueries(t *testing.T) {
	w, db := smallWorkload(t)

	seed, n := int64(1), 500
	switch {
	case testing.Short() && raceEnabled: // CI runs 200 per mix without the race detector too (scripts/test.sh)
		n = 50
	case testing.Short():
		n = 200
	}
	var err error
	if s := os.Getenv("AERIE_SMITH_SEED"); s != "" {
		seed, err = strconv.ParseInt(s, 10, 64)
		require.NoError(t, err)
	}
	if s := os.Getenv("AERIE_SMITH_N"); s != "" {
		n, err = strconv.Atoi(s)
		require.NoError(t, err)
	}
	t.Logf("seed %d, %d expressions per mix", seed, n)
	mixes := []struct {
		name string
		mix  smith.Mix
	}{{"general", smith.General}, {"rollups", smith.Rollups}}
	var es engines
	for _, where := range []string{"head", "blocks"} {
		if where == "blocks" {
			require.NoError(t, db.FlushHead())
		}
		for _, mix := range mixes {
			t.Run(where+"-"+mix.name, func(t *testing.T) {
				// Only what queryeval plans: the rest runs on Prometheus'
				// engine on both sides.
				exprs := smith.Expressions(w, mix.mix, seed, n, func(qs string) bool { return queryeval.Plans(qs, true) })
				require.Len(t, exprs, n)
				st := difftest.CompareEngineExprs(t, w, exprs, db, true, es.wrap(true))
				// Prometheus' own answer varies for a few (ties, sum
				// order); many more would mean the check compares little.
				require.LessOrEqual(t, st.Unstable, n/20)
			})
		}
	}
	planned, rollups, fallbacks, vectors := es.rollups()
	t.Logf("%d queries planned, %d rollups evaluated, %d vector plans, %d fallbacks", planned, rollups, vectors, fallbacks)
	require.Positive(t, rollups)
	require.Positive(t, vectors)
}

// TestVectorPlans compares both engines on what a vector plan evaluates
// alone, every operator it takes on either side of a number, and set
// operators with each kind of matching, over gauges with stale markers,
// NaN and infinities, sparse scrapes and churn: on the head and on
// blocks, names removed late and at once.
func TestVectorPlans(t *testing.T) {
	w, db := smallWorkload(t)
	var exprs []string
	for _, m := range []string{"node_load1", "node_systemd_unit_state", "node_weird_value", "node_textfile_scrape_error", "{__name__=~\"node_load.*\"}"} {
		exprs = append(exprs, m)
		for _, op := range []string{"+", "-", "*", "/", "%", "^", "atan2", "==", "!=", ">", "<", ">=", "<=", "> bool", "== bool"} {
			exprs = append(exprs, fmt.Sprintf("%s %s 0.5", m, op), fmt.Sprintf("(0.5) %s %s", op, m))
		}
	}
	exprs = append(exprs,
		`node_load1 and on (instance) (node_load5 > 0.5)`,
		`{__name__=~"node_load.*"} and on (instance) (node_load1 > 0.5)`,
		`{__name__=~"node_load.*"} unless on (instance) (node_load1 > 0.5)`,
		`node_load1 or node_load5`,
		`node_load1 > 0.7 or on (instance) node_load5`,
		`node_load1 > 0.7 or on () node_load5 * 2`,
		`node_systemd_unit_state unless ignoring (state) (node_systemd_unit_state == 0)`,
		`node_systemd_unit_state and ignoring (name) node_systemd_unit_state`,
		`(node_load1 + 1) and node_load5`, // names dropped: collide at once, not late
		`node_load1 * 2 or node_load5 * 3`,
		`{__name__=~"node_load.*"} * 2`, // collide once names are dropped
		// Collide at once (an error), gone by the end.
		`({__name__=~"node_load.*"} * 1) unless on (instance) node_load1`,
		`{__name__=~"node_load.*"} > bool 0.5`,
		`node_weird_value != node_weird_value`, // not planned: vector-vector comparison
	)
	var es engines
	for _, where := range []string{"head", "blocks"} {
		if where == "blocks" {
			require.NoError(t, db.FlushHead())
		}
		t.Run(where, func(t *testing.T) {
			difftest.CompareEngineExprs(t, w, exprs, db, true, es.wrap(true))
			difftest.CompareEngineExprs(t, w, exprs, db, false, es.wrap(false))
		})
	}
	_, _, fallbacks, vectors := es.rollups()
	t.Logf("%d vector plans, %d fallbacks", vectors, fallbacks)
	require.Positive(t, vectors)
	require.Positive(t, fallbacks, "names that collide are Prometheus' to merge")
}
