package queryeval

import (
	"cmp"
	"context"
	"math"
	"slices"

	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/aerie-db/aerie/internal/block"
	"github.com/aerie-db/aerie/internal/mathx"
)

// summarizer is a series whose blocks summarize whole metric intervals
// without decoding values, and that appends its samples in a time span
// (Aerie's tsdb series; see AppendSummaries and AppendSpan there).
type summarizer interface {
	storage.Series
	spanAppender
	AppendSummaries(dst []block.IntervalSummary, iv, k0, k1 int64) ([]block.IntervalSummary, bool, error)
}

// summed is the functions a window of whole metric intervals can be
// answered for from block metrics.
var summed = map[string]bool{
	"min_over_time": true, "max_over_time": true, "count_over_time": true,
	"sum_over_time": true, "avg_over_time": true,
}

// stepAnswer is a step's answer from block metrics: unknown (the window's
// samples are decoded), no point, or a point.
type stepAnswer struct {
	state uint8
	v     float64
	p     partial // stepEdge: the aggregate before the sample at the end
}

const (
	stepDecode uint8 = iota
	stepEmpty
	stepPoint
	stepEdge // answered once the sample at the window's end is read
)

// maxExact bounds the magnitude of integer sums a float64 holds exactly.
const maxExact = 1 << 53

// summarize answers the steps of w's rollup over s whose windows are
// whole metric intervals that s's blocks summarize (package doc), into
// w.known, and loads into w.pts the samples of every other step's
// window, without stale markers. false: s answers no step this way and
// w.pts is not loaded (the caller loads the series).
//
// A window (t − R, t] with t and R multiples of the metric interval iv is
// the intervals [t − R, t) less a sample at t − R plus a sample at t:
// with a summary of each, and of the interval starting at t, it is
// answered exactly as Prometheus' function would over its samples:
// count always (no sample is NaN); min and max unless the removed sample
// may have been the only extreme, or the answer is 0 and −0 could be
// among the values (the order of the samples would then decide); sum and
// avg when every value is an integer and n·max|v| < 2⁵³, so that every
// partial sum in any order, and Kahan's compensation, are exact.
func (w *worker) summarize(ctx context.Context, s storage.Series) (bool, error) {
	rq, r := w.rq, w.r
	iv := rq.opts.MetricInterval
	sm, ok := s.(summarizer)
	if !ok || !summed[r.call.Func.Name] || r.rangeMs%iv != 0 || rq.start%iv != 0 || (rq.step != 0 && rq.step%iv != 0) {
		return false, nil
	}
	n := r.rangeMs / iv
	k0, k1 := mathx.FloorDiv(rq.start, iv)-n, mathx.FloorDiv(rq.end, iv)
	sums, ok, err := sm.AppendSummaries(w.sums[:0], iv, k0, k1)
	w.sums = sums
	if err != nil || !ok || len(sums) == 0 {
		return false, err
	}
	// byK[k − k0]: the index of interval k's summary in sums, or −1.
	w.byK = w.byK[:0]
	for range k1 - k0 + 1 {
		w.byK = append(w.byK, -1)
	}
	for i := range sums {
		w.byK[sums[i].Metrics.Interval-k0] = int32(i)
	}
	step := max(rq.step, 1)
	w.known = w.known[:0]
	w.pts, w.spans = w.pts[:0], w.spans[:0]
	for t := rq.start; t <= rq.end; t += step {
		a := w.window(t/iv-k0, n)
		w.known = append(w.known, a)
		switch a.state {
		case stepDecode:
			w.spans = append(w.spans, [2]int64{t - r.rangeMs, t})
		case stepEdge: // only the sample at t, if any, is decoded
			w.spans = append(w.spans, [2]int64{t - 1, t})
		}
	}
	// The spans (lo, hi] to decode, merged where they overlap or touch,
	// in time order: w.pts gets each sample once, in order.
	slices.SortFunc(w.spans, func(a, b [2]int64) int { return cmp.Compare(a[0], b[0]) })
	merged := w.spans[:0]
	for _, sp := range w.spans {
		if l := len(merged) - 1; l >= 0 && sp[0] <= merged[l][1] {
			merged[l][1] = max(merged[l][1], sp[1])
			continue
		}
		merged = append(merged, sp)
	}
	for _, sp := range merged {
		if err := w.loadSpan(ctx, sm, sp[0], sp[1]); err != nil {
			return true, err
		}
	}
	// The windows waiting for the sample at their end.
	answered := 0
	for i, t := 0, rq.start; i < len(w.known); i, t = i+1, t+step {
		a := &w.known[i]
		if a.state == stepEdge {
			k, _ := slices.BinarySearchFunc(w.pts, t, func(p promql.FPoint, t int64) int { return cmp.Compare(p.T, t) })
			at := k < len(w.pts) && w.pts[k].T == t
			if at && !math.IsNaN(w.pts[k].F) {
				a.p.add(w.pts[k].F)
			}
			if *a = w.answer(&a.p); a.state == stepDecode || (at && math.IsNaN(w.pts[k].F)) {
				// Rare (a NaN, which Prometheus' functions treat
				// apart, a value that is not an integer, or an extreme
				// the sample leaves undecided): the whole series is
				// decoded instead.
				w.pts = w.pts[:0]
				return false, nil
			}
		}
		if a.state != stepDecode {
			answered++
		}
	}
	w.fromMetrics += answered
	return true, nil
}

// loadSpan appends the samples of s in (lo, hi] to w.pts (none if hi <
// lo), without stale markers.
func (w *worker) loadSpan(ctx context.Context, s summarizer, lo, hi int64) error {
	if hi < lo {
		return nil
	}
	ts, vs, ok, err := s.AppendSpan(w.ts[:0], w.vs[:0], lo+1, hi)
	if ok {
		w.ts, w.vs = ts, vs
		if err != nil {
			return err
		}
		w.keep(ts, vs, lo, hi)
		return ctx.Err()
	}
	// Not readable source after source after all: its iterator.
	w.it = s.Iterator(w.it)
	for vt := w.it.Seek(lo + 1); vt != chunkenc.ValNone; vt = w.it.Next() {
		if vt != chunkenc.ValFloat {
			return errFallback
		}
		t, v := w.it.At()
		if t > hi {
			break
		}
		if !value.IsStaleNaN(v) {
			w.pts = append(w.pts, promql.FPoint{T: t, F: v})
		}
	}
	if err := w.it.Err(); err != nil {
		return err
	}
	return ctx.Err()
}

// partial is the aggregate of a window's samples known so far.
type partial struct {
	cnt      uint64
	sum      int64 // while integral
	integral bool  // every value counted is an integer (no −0)
	absMax   float64
	mn, mx   float64
	// The first interval without its first sample: its extremes are
	// bounds, not values, when that sample was one of them.
	mnBound, mxBound float64
}

// interval adds the samples of interval s, without its first if
// dropFirst.
func (p *partial) interval(s *block.IntervalSummary, dropFirst bool) {
	m := &s.Metrics
	if m.Count == 0 || (dropFirst && m.Count == 1) {
		return
	}
	p.integral = p.integral && s.Integral
	p.absMax = max(p.absMax, math.Abs(m.Min), math.Abs(m.Max))
	p.cnt += m.Count
	if p.integral {
		p.sum += int64(m.Sum)
	}
	if !dropFirst {
		p.mn, p.mx = min(p.mn, m.Min), max(p.mx, m.Max)
		return
	}
	if m.First == m.Min {
		p.mnBound = m.Min
	} else {
		p.mn = min(p.mn, m.Min)
	}
	if m.First == m.Max {
		p.mxBound = m.Max
	} else {
		p.mx = max(p.mx, m.Max)
	}
	p.cnt--
	if p.integral {
		p.sum -= int64(m.First)
	}
}

// add adds one sample of value v, which is not NaN.
func (p *partial) add(v float64) {
	p.integral = p.integral && v == math.Trunc(v) && math.Abs(v) < maxExact && !(v == 0 && math.Signbit(v))
	p.absMax = max(p.absMax, math.Abs(v))
	p.cnt++
	if p.integral {
		p.sum += int64(v)
	}
	p.mn, p.mx = min(p.mn, v), max(p.mx, v)
}

// window answers the window of n intervals ending before interval e
// (indexes into w.byK) from their summaries and that of interval e;
// stepEdge when interval e has none, the partial aggregate in the answer
// waiting for the sample at the window's end.
func (w *worker) window(e, n int64) stepAnswer {
	if e-n < 0 || e >= int64(len(w.byK)) {
		return stepAnswer{}
	}
	for k := e - n; k < e; k++ {
		if w.byK[k] < 0 {
			return stepAnswer{}
		}
	}
	p := partial{integral: true, mn: math.Inf(1), mx: math.Inf(-1), mnBound: math.Inf(1), mxBound: math.Inf(-1)}
	first := &w.sums[w.byK[e-n]]
	p.interval(first, first.AtStart)
	for k := e - n + 1; k < e; k++ {
		p.interval(&w.sums[w.byK[k]], false)
	}
	if w.byK[e] < 0 {
		// Whether the sample at the end could change the answer is not
		// known before it is read; a window its absence leaves
		// undecided is decoded whole.
		if w.answer(&p).state == stepDecode {
			return stepAnswer{}
		}
		return stepAnswer{state: stepEdge, p: p}
	}
	if last := &w.sums[w.byK[e]]; last.AtStart {
		p.integral = p.integral && last.Integral
		p.add(last.Metrics.First)
	}
	return w.answer(&p)
}

// answer is the window's answer from its aggregate p, as Prometheus'
// function would give it over its samples; stepDecode where p cannot
// tell exactly.
func (w *worker) answer(p *partial) stepAnswer {
	if p.cnt == 0 {
		return stepAnswer{state: stepEmpty}
	}
	var v float64
	switch w.r.call.Func.Name {
	case "count_over_time":
		v = float64(p.cnt)
	case "min_over_time":
		if p.mn > p.mnBound { // the dropped sample may have been the only minimum
			return stepAnswer{}
		}
		v = p.mn
	case "max_over_time":
		if p.mx < p.mxBound {
			return stepAnswer{}
		}
		v = p.mx
	case "sum_over_time", "avg_over_time":
		// cnt+1: the first interval's sum may hold the dropped sample.
		if !p.integral || float64(p.cnt+1)*p.absMax >= maxExact {
			return stepAnswer{}
		}
		v = float64(p.sum)
		if w.r.call.Func.Name == "avg_over_time" {
			v /= float64(p.cnt)
		}
	}
	if v == 0 && !p.integral { // +0 or −0: the samples' order decides
		return stepAnswer{}
	}
	return stepAnswer{state: stepPoint, v: v}
}
