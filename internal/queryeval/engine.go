package queryeval

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/util/annotations"

	"github.com/aerie-db/aerie/internal/block"
	"github.com/aerie-db/aerie/internal/queryparse"
)

// Options configure an Engine.
type Options struct {
	// MaxSamples bounds the points a rollup may produce (the engine's
	// own limit; promql.ErrTooManySamples past it) [50,000,000].
	MaxSamples int
	// DelayedNameRemoval must be what the wrapped engine does.
	DelayedNameRemoval bool
	// Concurrency is the number of series a query's rollups evaluate at
	// once when the engine is otherwise idle [GOMAXPROCS]: each query's
	// own goroutine and up to Concurrency−1 helpers, drawn from one pool
	// of Concurrency−1 shared by all the engine's queries.
	Concurrency int
	// MetricInterval is the metric interval (ms) of the storage's block
	// metrics [block.DefaultMetricInterval]: windows of whole intervals
	// are answered from the metrics where they can be (summarize).
	MetricInterval int64
	// LookbackDelta is the wrapped engine's lookback delta [5m] (a
	// query's own, if it has one, wins): a vector plan's selectors look
	// back as far.
	LookbackDelta time.Duration
	// Timeout is the wrapped engine's query timeout [2m]: a vector plan
	// stops there as its queries do.
	Timeout time.Duration
	// Tracker is the wrapped engine's active-query tracker (nil: none):
	// a vector plan waits there for a place, as its queries do, so that
	// --query.max-concurrency bounds both.
	Tracker promql.QueryTracker
	// Stats is where the Engine counts its queries, shared by the
	// engines of one server (its API's and its rules'); nil: its own.
	Stats *Stats
}

// Engine evaluates range functions itself and the rest of each query
// through the engine it wraps (see the package comment).
//
// Locking: an Engine is immutable and safe for concurrent use; each query
// owns its state.
type Engine struct {
	next    promql.QueryEngine
	opts    Options
	helpers chan struct{} // tokens of the helper goroutines running
	// Stats count the queries by how they ran (Options.Stats).
	Stats *Stats
}

// Stats count an Engine's queries.
type Stats struct {
	Planned   atomic.Int64 // queries with at least one rollup
	Rollups   atomic.Int64 // rollups evaluated
	Fallbacks atomic.Int64 // planned queries run again by the wrapped engine (native histograms)
	Vectors   atomic.Int64 // queries answered as vector plans (vectorQuery)
	// MetricWindows counts the windows (a series at a step) answered
	// from block metrics without decoding their samples.
	MetricWindows atomic.Int64
}

var _ promql.QueryEngine = (*Engine)(nil)

// New returns an Engine over next, which runs what is not a rollup and
// every query the planner cannot take.
func New(next promql.QueryEngine, opts Options) *Engine {
	if opts.MaxSamples <= 0 {
		opts.MaxSamples = 50_000_000
	}
	if opts.MetricInterval <= 0 {
		opts.MetricInterval = block.DefaultMetricInterval
	}
	if opts.LookbackDelta <= 0 {
		opts.LookbackDelta = 5 * time.Minute
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 2 * time.Minute
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = runtime.GOMAXPROCS(0)
	}
	if opts.Stats == nil {
		opts.Stats = new(Stats)
	}
	return &Engine{next: next, opts: opts, helpers: make(chan struct{}, opts.Concurrency-1), Stats: opts.Stats}
}

// NewInstantQuery implements promql.QueryEngine.
func (e *Engine) NewInstantQuery(ctx context.Context, q storage.Queryable, opts promql.QueryOpts, qs string, ts time.Time) (promql.Query, error) {
	return e.newQuery(ctx, q, opts, qs, ts, ts, 0)
}

// NewRangeQuery implements promql.QueryEngine.
func (e *Engine) NewRangeQuery(ctx context.Context, q storage.Queryable, opts promql.QueryOpts, qs string, start, end time.Time, step time.Duration) (promql.Query, error) {
	return e.newQuery(ctx, q, opts, qs, start, end, step)
}

// original makes the query as the wrapped engine alone would.
func (e *Engine) original(ctx context.Context, q storage.Queryable, opts promql.QueryOpts, qs string, start, end time.Time, step time.Duration) (promql.Query, error) {
	if step == 0 {
		return e.next.NewInstantQuery(ctx, q, opts, qs, start)
	}
	return e.next.NewRangeQuery(ctx, q, opts, qs, start, end, step)
}

// WithParsed returns ctx carrying expr, the parse of qs (nil: ctx), for
// an Engine's query of qs made with it: a caller that parsed the query
// already (internal/api's name compatibility) spares the Engine a parse.
// The Engine may modify expr.
func WithParsed(ctx context.Context, qs string, expr parser.Expr) context.Context {
	if expr == nil {
		return ctx
	}
	return context.WithValue(ctx, parsedKey{}, parsed{qs, expr})
}

type parsedKey struct{}

type parsed struct {
	qs   string
	expr parser.Expr
}

func (e *Engine) newQuery(ctx context.Context, q storage.Queryable, opts promql.QueryOpts, qs string, start, end time.Time, step time.Duration) (promql.Query, error) {
	var expr parser.Expr
	if p, ok := ctx.Value(parsedKey{}).(parsed); ok && p.qs == qs {
		expr = p.expr
	} else {
		var err error
		if expr, err = queryparse.ParseExpr(qs); err != nil {
			return e.original(ctx, q, opts, qs, start, end, step)
		}
	}
	redo := func() (promql.Query, error) { return e.original(ctx, q, opts, qs, start, end, step) }
	if vq := e.newVectorQuery(q, opts, qs, expr, start, end, step, redo); vq != nil {
		return vq, nil
	}
	expr, rs := plan(expr, e.opts.DelayedNameRemoval)
	if len(rs) == 0 {
		return e.original(ctx, q, opts, qs, start, end, step)
	}
	rq := &rollupQueryable{
		Queryable: q, rollups: rs, opts: e.opts, helpers: e.helpers, stats: e.Stats,
		start: start.UnixMilli(), end: end.UnixMilli(), step: step.Milliseconds(),
		results: make([]*result, len(rs)),
	}
	// The wrapped engine records the query in its tracker while parsing
	// it too.
	inner, err := e.original(context.WithValue(ctx, askedKey{}, qs), rq, opts, expr.String(), start, end, step)
	if err != nil {
		// The rewritten query should parse wherever the original did;
		// if it does not, the original is the answer.
		return e.original(ctx, q, opts, qs, start, end, step)
	}
	e.Stats.Planned.Add(1)
	return &query{Query: inner, qs: qs, rq: rq, stats: e.Stats, redo: redo}, nil
}

// errFallback marks data a rollup cannot evaluate exactly (native
// histograms): the query is run again by the wrapped engine alone.
var errFallback = errors.New("queryeval: run by Prometheus' engine")

// query is a planned query: the wrapped engine's query of the rewritten
// expression, with the rollups' annotations added to its result.
type query struct {
	promql.Query
	qs    string
	rq    *rollupQueryable
	stats *Stats
	redo  func() (promql.Query, error)
}

func (q *query) Exec(ctx context.Context) *promql.Result {
	ctx = context.WithValue(ctx, askedKey{}, q.qs)
	res := q.Query.Exec(ctx)
	if res.Err != nil && errors.Is(res.Err, errFallback) {
		q.stats.Fallbacks.Add(1)
		orig, err := q.redo()
		if err != nil {
			return &promql.Result{Err: err}
		}
		q.Query.Close()
		q.Query = orig
		return orig.Exec(ctx)
	}
	if res.Err == nil {
		var annos annotations.Annotations
		for _, r := range q.rq.results {
			if r != nil {
				annos.Merge(r.annos)
				q.stats.Rollups.Add(1)
			}
		}
		res.Warnings = res.Warnings.Merge(annos)
	}
	return res
}

// String is the query as it was asked.
func (q *query) String() string { return q.qs }

// askedKey carries, in a planned query's context, the query as it was
// asked, for Tracker.
type askedKey struct{}

// Tracker wraps the wrapped engine's active-query tracker (Prometheus'
// queries.active file) so that a planned query is recorded as it was
// asked, not as the rewritten expression the wrapped engine runs.
func Tracker(t promql.QueryTracker) promql.QueryTracker { return tracker{t} }

type tracker struct{ promql.QueryTracker }

func (t tracker) Insert(ctx context.Context, query string) (int, error) {
	if asked, ok := ctx.Value(askedKey{}).(string); ok {
		query = asked
	}
	return t.QueryTracker.Insert(ctx, query)
}
