package queryeval

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/util/annotations"
	"github.com/prometheus/prometheus/util/stats"
)

// vectorQuery is a range query evaluated as a vector plan (vector.go),
// without the wrapped engine unless the plan meets what it cannot answer
// exactly (errFallback): it then runs as the wrapped engine's query. As
// the wrapped engine's queries, it waits for a place in the active-query
// tracker (--query.max-concurrency), stops at Options.Timeout or when
// its context is done, and counts its timers and samples for stats=all.
//
// Locking: Exec, Close and Stats are called by one goroutine, as
// promql.Query's are; Cancel by any (mu guards cancel).
type vectorQuery struct {
	e        *Engine
	q        storage.Queryable
	qs       string
	expr     parser.Expr
	root     *vnode
	sels     []*vnode
	ve       vectorEval
	interval time.Duration
	stats    *stats.Statistics
	querier  storage.Querier
	redo     func() (promql.Query, error)
	fallback promql.Query // the wrapped engine's query, once run

	mu     sync.Mutex
	cancel context.CancelFunc
}

// newVectorQuery returns the vector plan's query, or nil if it is not
// one: an instant query, or an expression planVector does not take.
func (e *Engine) newVectorQuery(q storage.Queryable, opts promql.QueryOpts, qs string, expr parser.Expr, start, end time.Time, step time.Duration, redo func() (promql.Query, error)) *vectorQuery {
	if step <= 0 {
		return nil
	}
	root, sels := planVector(expr)
	if root == nil {
		return nil
	}
	lookback := e.opts.LookbackDelta
	perStep := false
	if opts != nil {
		if d := opts.LookbackDelta(); d > 0 {
			lookback = d
		}
		perStep = opts.EnablePerStepStats()
	}
	vq := &vectorQuery{
		e: e, q: q, qs: qs, expr: expr, root: root, sels: sels, interval: step, redo: redo,
		ve: vectorEval{
			start: start.UnixMilli(), end: end.UnixMilli(), step: step.Milliseconds(),
			lookback: lookback.Milliseconds(), delayed: e.opts.DelayedNameRemoval,
		},
		stats: &stats.Statistics{Timers: stats.NewQueryTimers(), Samples: stats.NewQuerySamples(perStep)},
	}
	vq.stats.Samples.InitStepTracking(vq.ve.start, vq.ve.end, vq.ve.step)
	return vq
}

func (vq *vectorQuery) Exec(ctx context.Context) *promql.Result {
	mat, annos, err := vq.exec(ctx)
	if errors.Is(err, errFallback) {
		vq.e.Stats.Fallbacks.Add(1)
		if vq.querier != nil {
			vq.querier.Close()
			vq.querier = nil
		}
		orig, err := vq.redo()
		if err != nil {
			return &promql.Result{Err: err}
		}
		vq.fallback = orig
		return orig.Exec(ctx)
	}
	if err != nil {
		return &promql.Result{Err: err, Warnings: annos}
	}
	vq.e.Stats.Vectors.Add(1)
	return &promql.Result{Value: mat, Warnings: annos}
}

// exec evaluates the plan as the wrapped engine's exec does a query: its
// timeout, its place in the tracker, then the evaluation.
func (vq *vectorQuery) exec(ctx context.Context) (promql.Matrix, annotations.Annotations, error) {
	ctx, cancel := context.WithTimeout(ctx, vq.e.opts.Timeout)
	defer cancel()
	vq.mu.Lock()
	vq.cancel = cancel
	vq.mu.Unlock()
	execTimer, ctx := vq.stats.Timers.GetSpanTimer(ctx, stats.ExecTotalTime)
	defer execTimer.Finish()
	if t := vq.e.opts.Tracker; t != nil {
		queueTimer, _ := vq.stats.Timers.GetSpanTimer(ctx, stats.ExecQueueTime)
		id, err := t.Insert(ctx, vq.qs)
		queueTimer.Finish()
		if err != nil {
			return nil, nil, contextErr(err)
		}
		defer t.Delete(id)
	}
	evalTimer, ctx := vq.stats.Timers.GetSpanTimer(ctx, stats.EvalTotalTime)
	defer evalTimer.Finish()

	prepTimer, _ := vq.stats.Timers.GetSpanTimer(ctx, stats.QueryPreparationTime)
	querier, err := vq.q.Querier(vq.ve.start-vq.ve.lookback+1, vq.ve.end)
	if err != nil {
		prepTimer.Finish()
		return nil, nil, err
	}
	vq.querier = querier
	annos, err := vq.ve.selectAll(ctx, querier, vq.sels, vq.e.helpers, vq.e.opts)
	prepTimer.Finish()
	if err != nil {
		return nil, annos, contextErr(err)
	}
	var total int64
	for i, n := range vq.ve.perStep {
		vq.stats.Samples.IncrementSamplesAtStep(i, n)
		total += n
	}
	vq.stats.Samples.UpdatePeak(int(total))

	innerTimer, _ := vq.stats.Timers.GetSpanTimer(ctx, stats.InnerEvalTime)
	ss, err := vq.ve.eval(vq.root)
	var mat promql.Matrix
	if err == nil {
		mat, err = vq.ve.matrix(ss)
	}
	innerTimer.Finish()
	if err != nil {
		return nil, annos, err
	}
	if err := ctx.Err(); err != nil {
		return nil, annos, contextErr(err)
	}
	return mat, annos, nil
}

func (vq *vectorQuery) Close() {
	if vq.querier != nil {
		vq.querier.Close()
	}
	if vq.fallback != nil {
		vq.fallback.Close()
	}
}

func (vq *vectorQuery) Statement() parser.Statement {
	return &parser.EvalStmt{
		Expr: vq.expr, Start: time.UnixMilli(vq.ve.start), End: time.UnixMilli(vq.ve.end),
		Interval: vq.interval, LookbackDelta: time.Duration(vq.ve.lookback) * time.Millisecond,
	}
}

func (vq *vectorQuery) Stats() *stats.Statistics {
	if vq.fallback != nil {
		return vq.fallback.Stats()
	}
	return vq.stats
}

func (vq *vectorQuery) Cancel() {
	vq.mu.Lock()
	defer vq.mu.Unlock()
	if vq.cancel != nil {
		vq.cancel()
	}
}

// String is the query as it was asked.
func (vq *vectorQuery) String() string { return vq.qs }
