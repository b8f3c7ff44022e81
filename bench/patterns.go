package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/storage"

	"github.com/aerie-db/aerie/bench/tsbs"
)

// The TSBS patterns are bench/tsbs'; the in-process harness runs them in
// Prometheus' dialect.

// query is one instance of a pattern: an expression and its time range.
type query struct {
	expr       string
	start, end time.Time
	step       time.Duration
	instant    bool
}

// instance draws an instance of pt over the data [mint, maxt] for the
// given hosts, with r choosing hosts and the start time (tsbs.Gen).
func instance(pt tsbs.Pattern, r *rand.Rand, p tsbs.Profile, hosts []string, mint, maxt int64) query {
	q := tsbs.Gen{Profile: p, Dialect: tsbs.Prometheus, Hosts: hosts, MinT: mint, MaxT: maxt}.Instance(pt, r)
	return query{expr: q.Expr, start: time.UnixMilli(q.Start), end: time.UnixMilli(q.End), step: q.Step, instant: q.Instant}
}

func (q query) run(eng promql.QueryEngine, st storage.Queryable) (promql.Result, time.Duration, error) {
	ctx := context.Background()
	var (
		pq  promql.Query
		err error
	)
	if q.instant {
		pq, err = eng.NewInstantQuery(ctx, st, nil, q.expr, q.start)
	} else {
		pq, err = eng.NewRangeQuery(ctx, st, nil, q.expr, q.start, q.end, q.step)
	}
	if err != nil {
		return promql.Result{}, 0, fmt.Errorf("%s: %w", q.expr, err)
	}
	defer pq.Close()
	t0 := time.Now()
	res := pq.Exec(ctx)
	d := time.Since(t0)
	if res.Err != nil {
		return promql.Result{}, d, fmt.Errorf("%s: %w", q.expr, res.Err)
	}
	return promql.Result{Value: copyValue(res.Value)}, d, nil
}

func copyValue(v parser.Value) parser.Value {
	switch v := v.(type) {
	case promql.Vector:
		return slices.Clone(v)
	case promql.Matrix:
		m := make(promql.Matrix, len(v))
		for i, s := range v {
			m[i] = promql.Series{Metric: s.Metric, Floats: slices.Clone(s.Floats)}
		}
		return m
	}
	return v
}

// sameResult reports how a and b differ, with a relative float tolerance
// because sums may add series in a different order.
func sameResult(a, b promql.Result) error {
	switch av := a.Value.(type) {
	case promql.Vector:
		bv, ok := b.Value.(promql.Vector)
		if !ok || len(av) != len(bv) {
			return fmt.Errorf("vector of %d samples vs %v", len(av), b.Value.Type())
		}
		as, bs := slices.Clone(av), slices.Clone(bv)
		for _, v := range [][]promql.Sample{as, bs} {
			slices.SortFunc(v, func(x, y promql.Sample) int { return labels.Compare(x.Metric, y.Metric) })
		}
		for i := range as {
			if !labels.Equal(as[i].Metric, bs[i].Metric) || as[i].T != bs[i].T || !tsbs.NearlyEqual(as[i].F, bs[i].F) {
				return fmt.Errorf("sample %d: %s %v@%d vs %s %v@%d", i, as[i].Metric, as[i].F, as[i].T, bs[i].Metric, bs[i].F, bs[i].T)
			}
		}
	case promql.Matrix:
		bm, ok := b.Value.(promql.Matrix)
		if !ok || len(av) != len(bm) {
			return fmt.Errorf("matrix of %d series vs %d", len(av), len(bm))
		}
		as, bs := slices.Clone(av), slices.Clone(bm)
		for _, m := range []promql.Matrix{as, bs} {
			slices.SortFunc(m, func(x, y promql.Series) int { return labels.Compare(x.Metric, y.Metric) })
		}
		for i := range as {
			if !labels.Equal(as[i].Metric, bs[i].Metric) || len(as[i].Floats) != len(bs[i].Floats) {
				return fmt.Errorf("series %d: %s (%d points) vs %s (%d points)", i, as[i].Metric, len(as[i].Floats), bs[i].Metric, len(bs[i].Floats))
			}
			for j, p := range as[i].Floats {
				if q := bs[i].Floats[j]; p.T != q.T || !tsbs.NearlyEqual(p.F, q.F) {
					return fmt.Errorf("series %s point %d: %v@%d vs %v@%d", as[i].Metric, j, p.F, p.T, q.F, q.T)
				}
			}
		}
	default:
		return fmt.Errorf("unexpected result type %v", a.Value.Type())
	}
	return nil
}
