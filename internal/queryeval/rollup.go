package queryeval

import (
	"cmp"
	"context"
	"errors"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/aerie-db/aerie/internal/block"
	"github.com/aerie-db/aerie/internal/tsdb"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/schema"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/util/annotations"
)

// rollupQueryable answers the rollups' synthetic selectors and passes
// every other selector to the storage.
type rollupQueryable struct {
	storage.Queryable
	rollups          []*rollup
	opts             Options
	helpers          chan struct{} // the engine's pool of helper tokens
	stats            *Stats        // the engine's
	start, end, step int64         // ms; step 0: an instant query at start
	mu               sync.Mutex    // guards results
	results          []*result
}

// result is a rollup's output: one synthetic series per input series
// that has a point at some step, in the storage's order.
type result struct {
	series []*synthSeries
	annos  annotations.Annotations
}

func (rq *rollupQueryable) Querier(mint, maxt int64) (storage.Querier, error) {
	return &rollupQuerier{rq: rq, mint: mint, maxt: maxt}, nil
}

// rollupQuerier opens the storage's querier only when a selector other
// than a rollup's asks for it: a query made of rollups alone opens one
// querier per rollup and no other.
//
// Locking: the engine calls a querier from one goroutine.
type rollupQuerier struct {
	rq         *rollupQueryable
	mint, maxt int64
	inner      storage.Querier
}

func (q *rollupQuerier) storage() (storage.Querier, error) {
	if q.inner == nil {
		in, err := q.rq.Queryable.Querier(q.mint, q.maxt)
		if err != nil {
			return nil, err
		}
		q.inner = in
	}
	return q.inner, nil
}

func (q *rollupQuerier) Select(ctx context.Context, sortSeries bool, hints *storage.SelectHints, ms ...*labels.Matcher) storage.SeriesSet {
	for _, m := range ms {
		if m.Name != rollupLabel {
			continue
		}
		i, err := strconv.Atoi(m.Value)
		if err != nil || i < 0 || i >= len(q.rq.rollups) || len(ms) != 1 {
			return storage.ErrSeriesSet(errors.New("queryeval: bad rollup selector"))
		}
		res, err := q.rq.result(ctx, i)
		if err != nil {
			return storage.ErrSeriesSet(err)
		}
		return &synthSet{series: res.series, i: -1}
	}
	in, err := q.storage()
	if err != nil {
		return storage.ErrSeriesSet(err)
	}
	return in.Select(ctx, sortSeries, hints, ms...)
}

func (q *rollupQuerier) LabelValues(ctx context.Context, name string, hints *storage.LabelHints, ms ...*labels.Matcher) ([]string, annotations.Annotations, error) {
	in, err := q.storage()
	if err != nil {
		return nil, nil, err
	}
	return in.LabelValues(ctx, name, hints, ms...)
}

func (q *rollupQuerier) LabelNames(ctx context.Context, hints *storage.LabelHints, ms ...*labels.Matcher) ([]string, annotations.Annotations, error) {
	in, err := q.storage()
	if err != nil {
		return nil, nil, err
	}
	return in.LabelNames(ctx, hints, ms...)
}

func (q *rollupQuerier) Close() error {
	if q.inner == nil {
		return nil
	}
	return q.inner.Close()
}

// result evaluates rollup i once.
func (rq *rollupQueryable) result(ctx context.Context, i int) (*result, error) {
	rq.mu.Lock()
	defer rq.mu.Unlock()
	if rq.results[i] != nil {
		return rq.results[i], nil
	}
	res, err := rq.evaluate(ctx, rq.rollups[i])
	if err != nil {
		return nil, err
	}
	rq.results[i] = res
	return res, nil
}

// contextErr is Prometheus' error for a query whose context is done.
func contextErr(err error) error {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return promql.ErrQueryTimeout("expression evaluation")
	case errors.Is(err, context.Canceled):
		return promql.ErrQueryCanceled("expression evaluation")
	}
	return err
}

// evaluate runs one rollup over every series its selector selects.
func (rq *rollupQueryable) evaluate(ctx context.Context, r *rollup) (*result, error) {
	mint := rq.start - r.rangeMs // exclusive, as the windows
	q, err := rq.Queryable.Querier(mint+1, rq.end)
	if err != nil {
		return nil, err
	}
	defer q.Close()
	hints := &storage.SelectHints{Start: mint + 1, End: rq.end, Step: rq.step, Func: r.call.Func.Name, Range: r.rangeMs}
	// The workers decode the series, each its own, on every core; a
	// series without samples in range yields nothing, so the storage need
	// not read it to leave it out.
	set := q.Select(tsdb.WithEmptySeries(tsdb.WithoutReadAhead(ctx)), false, hints, r.sel.LabelMatchers...)

	var all []storage.Series
	for set.Next() {
		all = append(all, set.At())
	}
	if err := set.Err(); err != nil {
		return nil, contextErr(err)
	}
	var (
		mu     sync.Mutex // guards out, annos, points
		out    []*synthSeries
		annos  annotations.Annotations
		points int
	)
	fn := promql.FunctionCalls[r.call.Func.Name]
	err = parallel(ctx, rq.helpers, rq.opts.Concurrency, len(all), func() (func(context.Context, int) error, func()) {
		w := getWorker(rq, r, fn)
		return func(ctx context.Context, i int) error {
			s, a, err := w.series(ctx, all[i])
			mu.Lock()
			defer mu.Unlock()
			annos.Merge(a)
			if err != nil || s == nil {
				return err
			}
			s.order = i
			out = append(out, s)
			if points += len(s.t); points > rq.opts.MaxSamples {
				return promql.ErrTooManySamples("query execution")
			}
			return nil
		}, func() { putWorker(w) }
	})
	if err != nil {
		return nil, contextErr(err)
	}
	annos.Merge(set.Warnings())
	sortByOrder(out)
	if !r.keepName || r.restored {
		// Names dropped at once (or the metadata labels of series
		// without one): if two series collide, Prometheus' engine gives
		// the answer (its error or their merge), aggregated or not.
		seen := make(map[string]struct{}, len(out))
		for _, s := range out {
			k := s.lset.String()
			if _, dup := seen[k]; dup {
				return nil, errFallback
			}
			seen[k] = struct{}{}
		}
	}
	if !r.top {
		for i, s := range out {
			b := labels.NewBuilder(s.lset)
			b.Set(seriesLabel, strconv.Itoa(i))
			s.lset = b.Labels()
		}
	}
	return &result{series: out, annos: annos}, nil
}

// seriesPerWorker is the fewest series a worker goroutine is started for.
const seriesPerWorker = 4

// parallel calls do(ctx, i) for every i in [0, n), on the calling
// goroutine and on helpers: each goroutine gets its do, and its done,
// called when it ends, from start. The first error cancels the rest and
// is returned (else ctx's error, if done). A few items are not worth a
// goroutine: the goroutines share the items out, at least
// seriesPerWorker each. Helpers take a token of the engine's pool and
// are not started without one: however many queries run
// (--query.max-concurrency bounds those), at most Options.Concurrency−1
// helpers run beside them (helpers is the engine's pool).
func parallel(ctx context.Context, helpers chan struct{}, concurrency, n int, start func() (do func(context.Context, int) error, done func())) error {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu      sync.Mutex // guards firstEr
		firstEr error
		next    atomic.Int64 // the next item to take
	)
	work := func() {
		do, done := start()
		defer done()
		for {
			i := int(next.Add(1) - 1)
			if i >= n || wctx.Err() != nil {
				return
			}
			if err := do(wctx, i); err != nil {
				mu.Lock()
				firstEr = cmp.Or(firstEr, err)
				mu.Unlock()
				cancel()
			}
		}
	}
	var wg sync.WaitGroup
	for range min(concurrency, n/seriesPerWorker) - 1 {
		select {
		case helpers <- struct{}{}:
			wg.Go(func() {
				defer func() { <-helpers }()
				work()
			})
		default:
		}
	}
	work()
	wg.Wait()
	if firstEr != nil {
		return firstEr
	}
	return ctx.Err()
}

// worker evaluates a rollup series by series; its buffers are reused.
type worker struct {
	rq     *rollupQueryable
	r      *rollup
	fn     promql.FunctionCall
	kernel kernel // computes fn's windows, if not kernelNone
	pts    []promql.FPoint
	ts     []int64   // a bulk iterator's samples
	vs     []float64 // (their values)
	it     chunkenc.Iterator
	enh    promql.EvalNodeHelper
	matrix promql.Matrix
	// Answers from block metrics (summarize): the summaries, their
	// index by interval, each step's answer, and how many steps were
	// answered so (added to Stats.MetricWindows when the worker is put).
	sums        []block.IntervalSummary
	byK         []int32
	known       []stepAnswer
	spans       [][2]int64
	fromMetrics int
	// raw: load keeps stale markers (a vector selector's lookback
	// stops at one, vectorQuery).
	raw bool
}

// workers keeps workers with their buffers between rollups: a query's
// arrays would otherwise be grown from nothing by every rollup, the most
// of what it allocates.
var workers = sync.Pool{New: func() any { return new(worker) }}

// maxPooledPoints bounds the window buffer a pooled worker keeps (16 B a
// point): a rollup over a long range does not pin its arrays.
const maxPooledPoints = 1 << 16

func getWorker(rq *rollupQueryable, r *rollup, fn promql.FunctionCall) *worker {
	w := workers.Get().(*worker)
	w.rq, w.r, w.fn = rq, r, fn
	w.kernel = kernels[r.call.Func.Name]
	return w
}

// kernel is a range function the worker computes over a window itself,
// as Prometheus' function does it, without a call per window or per
// sample; kernelNone: call the function.
type kernel uint8

const (
	kernelNone kernel = iota
	kernelMax
	kernelMin
	kernelCount
)

// kernels are the range functions with a kernel: over float samples
// (the rollup's windows hold no histograms and no stale markers) each is
// one comparison or none a sample.
var kernels = map[string]kernel{"max_over_time": kernelMax, "min_over_time": kernelMin, "count_over_time": kernelCount}

// kernelValue is the value of w's kernel over the window pts (not empty):
// max_over_time and min_over_time take the first sample, then any that
// compares above (below) it or any after a NaN, as Prometheus'
// compareOverTime; count_over_time is the number of samples.
func (w *worker) kernelValue(pts []promql.FPoint) float64 {
	switch w.kernel {
	case kernelMax:
		v := pts[0].F
		for _, p := range pts {
			if p.F > v || math.IsNaN(v) {
				v = p.F
			}
		}
		return v
	case kernelMin:
		v := pts[0].F
		for _, p := range pts {
			if p.F < v || math.IsNaN(v) {
				v = p.F
			}
		}
		return v
	}
	return float64(len(pts))
}

func putWorker(w *worker) {
	if w.rq != nil {
		w.rq.stats.MetricWindows.Add(int64(w.fromMetrics))
	}
	w.fromMetrics, w.raw = 0, false
	if cap(w.known) > keptSamples || cap(w.byK) > keptSamples || cap(w.spans) > keptSamples {
		w.known, w.byK, w.sums, w.spans = nil, nil, nil, nil
	}
	if cap(w.pts) > maxPooledPoints {
		w.pts = nil
	}
	if w.matrix != nil {
		w.matrix[0] = promql.Series{}
	}
	// No series, rollup or iterator outlives its query.
	w.rq, w.r, w.fn, w.it = nil, nil, nil, nil
	w.pts, w.ts, w.vs = w.pts[:0], w.ts[:0], w.vs[:0]
	if cap(w.ts) > keptSamples { // a long series: not kept in the pool
		w.pts, w.ts, w.vs = nil, nil, nil
	}
	w.enh = promql.EvalNodeHelper{Out: w.enh.Out[:0]}
	workers.Put(w)
}

// bulk is an iterator that appends its samples to arrays without a call
// per sample (Aerie's plain series iterator, seriesiter.Iterator).
type bulk interface {
	AppendSamples(ts []int64, vs []float64, max int) ([]int64, []float64, bool)
}

// bulkSamples is how many samples a bulk iterator appends per call.
const bulkSamples = 1024

// keptSamples bounds the arrays a pooled worker keeps: those grown for a
// longer series are dropped with it.
const keptSamples = 1 << 16

// batcher is an iterator that hands over its samples a batch at a time
// (Aerie's prefetched series, tsdb.batchIterator.NextBatch).
type batcher interface {
	NextBatch() ([]int64, []float64)
}

// spanAppender is a series that appends its samples in a time span to
// arrays at once (Aerie's tsdb series, when its sources do not overlap in
// time); ok false: read its Iterator instead.
type spanAppender interface {
	AppendSpan(ts []int64, vs []float64, mint, maxt int64) (_ []int64, _ []float64, ok bool, err error)
}

// loadSeries reads s's float samples in (mint, maxt] into w.pts, without
// stale markers unless w.raw: all at once where s can (spanAppender), else through its
// iterator (load).
func (w *worker) loadSeries(ctx context.Context, s storage.Series, mint, maxt int64) error {
	if a, ok := s.(spanAppender); ok {
		ts, vs, ok, err := a.AppendSpan(w.ts[:0], w.vs[:0], mint+1, maxt)
		if ok {
			w.ts, w.vs, w.pts = ts, vs, w.pts[:0]
			if err != nil {
				return err
			}
			w.keep(ts, vs, mint, maxt)
			return ctx.Err()
		}
	}
	w.it = s.Iterator(w.it)
	return w.load(ctx, mint, maxt)
}

// load reads w.it's float samples in (mint, maxt] into w.pts, without
// stale markers; errFallback if it meets a histogram.
func (w *worker) load(ctx context.Context, mint, maxt int64) error {
	w.pts = w.pts[:0]
	if b, ok := w.it.(bulk); ok {
		more := true
		for more {
			w.ts, w.vs, more = b.AppendSamples(w.ts[:0], w.vs[:0], bulkSamples)
			if !w.keep(w.ts, w.vs, mint, maxt) {
				return w.it.Err()
			}
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		return w.it.Err()
	}
	if b, ok := w.it.(batcher); ok {
		for {
			ts, vs := b.NextBatch()
			if ts == nil {
				break
			}
			if !w.keep(ts, vs, mint, maxt) {
				return nil
			}
			if err := ctx.Err(); err != nil {
				return err
			}
		}
	}
	for vt := w.it.Next(); vt != chunkenc.ValNone; vt = w.it.Next() {
		if vt != chunkenc.ValFloat {
			return errFallback
		}
		t, v := w.it.At()
		if t <= mint || (!w.raw && value.IsStaleNaN(v)) {
			continue
		}
		if t > maxt {
			break
		}
		w.pts = append(w.pts, promql.FPoint{T: t, F: v})
		if len(w.pts)%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
	}
	return w.it.Err()
}

// keep appends the samples in (mint, maxt] that are not stale markers
// (unless w.raw) to w.pts; false once a sample is past maxt.
func (w *worker) keep(ts []int64, vs []float64, mint, maxt int64) bool {
	for i, t := range ts {
		if t <= mint || (!w.raw && value.IsStaleNaN(vs[i])) {
			continue
		}
		if t > maxt {
			return false
		}
		w.pts = append(w.pts, promql.FPoint{T: t, F: vs[i]})
	}
	return true
}

// series decodes one series and evaluates the function at every step.
func (w *worker) series(ctx context.Context, s storage.Series) (*synthSeries, annotations.Annotations, error) {
	rq, r := w.rq, w.r
	mint := rq.start - r.rangeMs
	summed, err := w.summarize(ctx, s)
	if err != nil {
		return nil, nil, err
	}
	if !summed {
		w.known = w.known[:0]
		if err := w.loadSeries(ctx, s, mint, rq.end); err != nil {
			return nil, nil, err
		}
		if len(w.pts) == 0 {
			return nil, nil, nil
		}
	}
	ls := s.Labels()
	if w.matrix == nil {
		w.matrix = make(promql.Matrix, 1)
	}
	w.matrix[0] = promql.Series{Metric: ls}
	var (
		out    synthSeries
		annos  annotations.Annotations
		lo, hi int
		open   bool // the last step emitted a point
	)
	step := rq.step
	if step <= 0 {
		step = 1 // an instant query has one step
	}
	for j, t := 0, rq.start; t <= rq.end; j, t = j+1, t+step {
		var (
			v     float64
			point bool
		)
		if j < len(w.known) && w.known[j].state != stepDecode {
			v, point = w.known[j].v, w.known[j].state == stepPoint
		} else {
			for hi < len(w.pts) && w.pts[hi].T <= t {
				hi++
			}
			for lo < hi && w.pts[lo].T <= t-r.rangeMs {
				lo++
			}
			switch {
			case lo < hi && w.kernel != kernelNone:
				v, point = w.kernelValue(w.pts[lo:hi]), true
			case lo < hi:
				w.matrix[0].Floats = w.pts[lo:hi]
				w.enh.Ts, w.enh.Out = t, w.enh.Out[:0]
				vec, a := w.fn(nil, w.matrix, r.call.Args, &w.enh)
				annos.Merge(a)
				w.enh.Out = vec[:0]
				if len(vec) > 0 {
					v, point = vec[0].F, true
				}
			}
		}
		if !point {
			if open {
				out.t, out.f = append(out.t, t), append(out.f, math.Float64frombits(value.StaleNaN))
				open = false
			}
			continue
		}
		if out.t == nil { // sized once: a point per step at most, and a stale marker
			n := (rq.end-t)/step + 2
			out.t, out.f = make([]int64, 0, n), make([]float64, 0, n)
		}
		out.t, out.f = append(out.t, t), append(out.f, v)
		open = true
	}
	if len(out.t) == 0 {
		return nil, annos, nil
	}
	// As Prometheus' engine: rate and increase of a metric whose name does
	// not say counter get an annotation.
	if name := ls.Get(labels.MetricName); name != "" && (r.call.Func.Name == "rate" || r.call.Func.Name == "increase") &&
		!strings.HasSuffix(name, "_total") && !strings.HasSuffix(name, "_sum") &&
		!strings.HasSuffix(name, "_count") && !strings.HasSuffix(name, "_bucket") {
		annos.Add(annotations.NewPossibleNonCounterInfo(name, r.call.Args[0].PositionRange()))
	}
	if !r.keepName || (r.restored && !ls.Has(labels.MetricName)) {
		ls = ls.DropReserved(schema.IsMetadataLabel)
	}
	out.lset = ls
	return &out, annos, nil
}
