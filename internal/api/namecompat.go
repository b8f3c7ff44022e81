package api

import (
	"context"
	"strings"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/util/stats"

	"github.com/aerie-db/aerie/internal/positive"
	"github.com/aerie-db/aerie/internal/queryeval"
	"github.com/aerie-db/aerie/internal/queryparse"
)

// VictoriaMetrics-style metric names.
//
// Prometheus drops __name__ from the result of every function but a few
// (last_over_time, sort, label_replace, …), so a query over several metric
// names that keeps their other labels fails with "vector cannot contain
// metrics with the same labelset": TSBS's
//
//	max(max_over_time({__name__=~"cpu_(usage_user|usage_system)", hostname="host_4"}[1m])) by (__name__)
//
// VictoriaMetrics keeps the name for the rollups and transforms of
// keepNameFuncs (measured with its binary in ../shared/peers: it answers
// the query above per name), and answers it.
//
// Aerie answers every query that Prometheus 3 answers exactly as Prometheus
// 3 with delayed name removal does, and only a query that fails with that
// collision is evaluated once more, with the name kept through the
// functions of keepNameFuncs; if that answers, its answer is returned,
// otherwise the original error. So the queries above answer as in
// VictoriaMetrics. Functions VictoriaMetrics drops names for as Prometheus
// does (rate, sum_over_time, abs, …) still collide in both.
//
// Evaluating a query twice doubles its cost, and the collision is found
// only once the whole call is evaluated. So before evaluating, the
// selectors read by calls of keepNameFuncs whose metric name is not a
// single equality are looked up (labels only, over the range the call
// reads): when two of one selector's series differ only in __name__, the
// query is evaluated with the names kept first, and as written only if
// that fails. The one answer this changes from Prometheus' is that of
// series differing only in __name__ that never hold samples at the same
// step (a renamed metric): Prometheus answers them as one nameless series,
// Aerie as VictoriaMetrics does, one series per name.

// keepNameFuncs are the PromQL functions whose result keeps __name__ in
// VictoriaMetrics and loses it in Prometheus.
var keepNameFuncs = map[string]bool{
	"avg_over_time":                true,
	"min_over_time":                true,
	"max_over_time":                true,
	"quantile_over_time":           true,
	"predict_linear":               true,
	"double_exponential_smoothing": true,
	"ceil":                         true,
	"floor":                        true,
	"round":                        true,
	"clamp":                        true,
	"clamp_min":                    true,
	"clamp_max":                    true,
}

// errCollision is the engine's error for series that lost their names and
// collide.
const errCollision = "vector cannot contain metrics with the same labelset"

// NameCompatEngine wraps ng (which must have delayed name removal on) so
// that a query failing with the name collision is retried with the names
// kept as VictoriaMetrics keeps them (see above). lookback is ng's lookback
// delta (≤ 0: Prometheus' 5 minutes).
func NameCompatEngine(ng promql.QueryEngine, lookback time.Duration) promql.QueryEngine {
	lookback = positive.Or(lookback, 5*time.Minute)
	return nameCompat{ng: ng, lookback: lookback}
}

type nameCompat struct {
	ng       promql.QueryEngine
	lookback time.Duration
}

func (e nameCompat) NewInstantQuery(ctx context.Context, q storage.Queryable, opts promql.QueryOpts, qs string, ts time.Time) (promql.Query, error) {
	return e.newQuery(ctx, q, opts, qs, ts, ts, func(s string, expr parser.Expr) (promql.Query, error) {
		return e.ng.NewInstantQuery(queryeval.WithParsed(ctx, s, expr), q, opts, s, ts)
	})
}

func (e nameCompat) NewRangeQuery(ctx context.Context, q storage.Queryable, opts promql.QueryOpts, qs string, start, end time.Time, interval time.Duration) (promql.Query, error) {
	return e.newQuery(ctx, q, opts, qs, start, end, func(s string, expr parser.Expr) (promql.Query, error) {
		return e.ng.NewRangeQuery(queryeval.WithParsed(ctx, s, expr), q, opts, s, start, end, interval)
	})
}

// newQuery makes the query qs with mk. Where names are known to collide
// (collides), it makes the query with them kept instead, and the query as
// written only if that one fails (Exec): qs is parsed once here (and its
// parse handed to the engine through mk, which may modify it), and an
// engine query that is not run is not made.
func (e nameCompat) newQuery(ctx context.Context, q storage.Queryable, opts promql.QueryOpts, qs string, start, end time.Time, mk func(string, parser.Expr) (promql.Query, error)) (promql.Query, error) {
	c := &compatQuery{qs: qs, q: q, start: start, end: end, lookback: e.lookbackOf(opts), mk: mk}
	expr, err := queryparse.ParseExpr(qs)
	if err != nil {
		expr = nil // the engine gives the error
	} else if c.collides(ctx, expr) {
		// collides found a call to rewrite; the rewrite of the parse is
		// handed on as the parse of its string.
		altExpr, alt, _ := keepNamesExpr(expr)
		expr = nil
		if aq, err := mk(alt, altExpr); err == nil {
			// The query as written builds wherever its rewrite does.
			c.alt, c.answered = aq, aq
			return c, nil
		}
	}
	qry, err := mk(qs, expr)
	if err != nil {
		return nil, err
	}
	c.orig, c.answered = qry, qry
	return c, nil
}

// compatQuery is a query with its retry: orig is the query as written,
// alt the one with names kept; either is made only when it runs (one is
// made with the query). Exec, Close and Cancel are called by one goroutine
// at a time, as promql.Query's are; Cancel may race with Exec only
// through the queries' own Cancel.
type compatQuery struct {
	qs         string
	q          storage.Queryable
	start, end time.Time
	lookback   time.Duration
	mk         func(string, parser.Expr) (promql.Query, error) // the query of a string (and its parse, if not nil)
	orig, alt  promql.Query
	answered   promql.Query // the one whose result Exec returns (or will)
}

func (c *compatQuery) Exec(ctx context.Context) *promql.Result {
	if c.alt != nil && c.orig == nil { // names known to collide: kept first
		if ares := c.alt.Exec(ctx); ares.Err == nil {
			return ares
		}
		orig, err := c.mk(c.qs, nil)
		if err != nil {
			return &promql.Result{Err: err}
		}
		c.orig, c.answered = orig, orig
		return orig.Exec(ctx)
	}
	res := c.orig.Exec(ctx)
	if res.Err == nil || !strings.Contains(res.Err.Error(), errCollision) {
		return res
	}
	alt, ok := keepNames(c.qs)
	if !ok {
		return res
	}
	aq, err := c.mk(alt, nil)
	if err != nil {
		return res
	}
	c.alt = aq
	if ares := aq.Exec(ctx); ares.Err == nil {
		c.answered = aq
		return ares
	}
	return res
}

// lookbackOf is the lookback a query with opts evaluates with.
func (e nameCompat) lookbackOf(opts promql.QueryOpts) time.Duration {
	if opts != nil && opts.LookbackDelta() > 0 {
		return opts.LookbackDelta()
	}
	return e.lookback
}

// collides reports whether a call of keepNameFuncs reads, through a
// selector whose metric name is not a single equality, two series that
// differ only in __name__ in the range the selector reads. It looks up
// labels only; any error or a subquery inside such a call answers false
// (the query then takes the retry path).
func (c *compatQuery) collides(ctx context.Context, expr parser.Expr) bool {
	found := false
	parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
		call, ok := n.(*parser.Call)
		if found || !ok || !keepNameFuncs[call.Func.Name] {
			return nil
		}
		for _, a := range call.Args {
			if c.argCollides(ctx, a) {
				found = true
				return nil
			}
		}
		return nil
	})
	return found
}

func (c *compatQuery) argCollides(ctx context.Context, a parser.Expr) bool {
	for {
		p, ok := a.(*parser.ParenExpr)
		if !ok {
			break
		}
		a = p.Expr
	}
	rng := c.lookback
	if m, ok := a.(*parser.MatrixSelector); ok {
		rng, a = m.Range, m.VectorSelector
	}
	vs, ok := a.(*parser.VectorSelector)
	if !ok || queryeval.SingleName(vs.LabelMatchers) {
		return false
	}
	start, end := c.start, c.end
	if vs.Timestamp != nil {
		start = time.UnixMilli(*vs.Timestamp)
		end = start
	}
	mint := start.Add(-vs.OriginalOffset - rng).UnixMilli()
	maxt := end.Add(-vs.OriginalOffset).UnixMilli()
	qr, err := c.q.Querier(mint, maxt)
	if err != nil {
		return false
	}
	defer qr.Close()
	ss := qr.Select(ctx, false, &storage.SelectHints{Start: mint, End: maxt, Func: "series"}, vs.LabelMatchers...)
	seen := map[uint64][]labels.Labels{}
	for ss.Next() {
		l := ss.At().Labels()
		if l.Get(labels.MetricName) == "" {
			continue
		}
		rest := labels.NewBuilder(l).Del(labels.MetricName).Labels()
		h := rest.Hash()
		for _, o := range seen[h] {
			if labels.Equal(o, rest) {
				return true
			}
		}
		seen[h] = append(seen[h], rest)
	}
	return false
}

func (c *compatQuery) Close() {
	for _, q := range []promql.Query{c.alt, c.orig} {
		if q != nil {
			q.Close()
		}
	}
}

func (c *compatQuery) Cancel() {
	for _, q := range []promql.Query{c.orig, c.alt} {
		if q != nil {
			q.Cancel()
		}
	}
}

func (c *compatQuery) Stats() *stats.Statistics { return c.answered.Stats() }

func (c *compatQuery) Statement() parser.Statement { return c.answered.Statement() }

// String is the query as it was asked.
func (c *compatQuery) String() string { return c.qs }

// keepNames rewrites qs so that the calls of keepNameFuncs keep __name__:
// each becomes label_replace(call, "__name__", "$1", "__name__", "(.+)"),
// which, with delayed name removal, keeps the name of its result. It
// returns false when qs has no such call.
func keepNames(qs string) (string, bool) {
	expr, err := queryparse.ParseExpr(qs)
	if err != nil {
		return "", false
	}
	_, alt, ok := keepNamesExpr(expr)
	return alt, ok
}

// keepNamesExpr is keepNames on a parsed expression, which it rewrites:
// it returns the rewritten expression and its string.
func keepNamesExpr(expr parser.Expr) (parser.Expr, string, bool) {
	n := 0
	expr = rewriteKeepNames(expr, &n)
	if n == 0 {
		return nil, "", false
	}
	return expr, expr.String(), true
}

func rewriteKeepNames(e parser.Expr, n *int) parser.Expr {
	switch x := e.(type) {
	case *parser.AggregateExpr:
		x.Expr = rewriteKeepNames(x.Expr, n)
		if x.Param != nil {
			x.Param = rewriteKeepNames(x.Param, n)
		}
	case *parser.BinaryExpr:
		x.LHS = rewriteKeepNames(x.LHS, n)
		x.RHS = rewriteKeepNames(x.RHS, n)
	case *parser.ParenExpr:
		x.Expr = rewriteKeepNames(x.Expr, n)
	case *parser.UnaryExpr:
		x.Expr = rewriteKeepNames(x.Expr, n)
	case *parser.SubqueryExpr:
		x.Expr = rewriteKeepNames(x.Expr, n)
	case *parser.StepInvariantExpr:
		x.Expr = rewriteKeepNames(x.Expr, n)
	case *parser.Call:
		for i, a := range x.Args {
			x.Args[i] = rewriteKeepNames(a, n)
		}
		if keepNameFuncs[x.Func.Name] && x.Type() == parser.ValueTypeVector {
			*n++
			str := func(s string) parser.Expr { return &parser.StringLiteral{Val: s} }
			return &parser.Call{
				Func: parser.Functions["label_replace"],
				Args: parser.Expressions{x, str(labels.MetricName), str("$1"), str(labels.MetricName), str("(.+)")},
			}
		}
	}
	return e
}
