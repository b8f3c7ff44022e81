package queryeval

import (
	"context"
	"math"

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
	AppendSummaries(dst []block.IntervalSummary, iv, k0, k1 int64) ([]block.IntervalSummary, bool, error)
	AppendSpan(ts []int64, vs []float64, mint, maxt int64) ([]int64, []float64, bool, error)
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
}

const (
	stepDecode uint8 = iota
	stepEmpty
	stepPoint
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
	answered := 0
	var spanLo, spanHi int64 // the span of windows to decode, (lo, hi]; hi < lo: none
	spanLo, spanHi = 0, -1
	w.pts = w.pts[:0]
	for t := rq.start; t <= rq.end; t += step {
		a := w.window(t/iv-k0, n)
		w.known = append(w.known, a)
		if a.state != stepDecode {
			answered++
			continue
		}
		if lo := t - r.rangeMs; spanLo <= spanHi && lo <= spanHi {
			spanHi = t // overlaps or touches the span: extend it
			continue
		}
		if err := w.loadSpan(ctx, sm, spanLo, spanHi); err != nil {
			return true, err
		}
		spanLo, spanHi = t-r.rangeMs, t
	}
	if err := w.loadSpan(ctx, sm, spanLo, spanHi); err != nil {
		return true, err
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

// window answers the window of n intervals ending before interval e
// (indexes into w.byK) from their summaries and that of interval e.
func (w *worker) window(e, n int64) stepAnswer {
	if e-n < 0 || e >= int64(len(w.byK)) {
		return stepAnswer{}
	}
	for k := e - n; k <= e; k++ {
		if w.byK[k] < 0 {
			return stepAnswer{}
		}
	}
	var (
		cnt      uint64
		sum      int64 // while integral
		integral = true
		absMax   float64
		mn, mx   = math.Inf(1), math.Inf(-1)
		// The first interval without its first sample: its extremes
		// are bounds, not values, when that sample was one of them.
		mnBound, mxBound = math.Inf(1), math.Inf(-1)
	)
	add := func(s *block.IntervalSummary, dropFirst bool) {
		m := &s.Metrics
		if m.Count == 0 || (dropFirst && m.Count == 1) {
			return
		}
		integral = integral && s.Integral
		absMax = max(absMax, math.Abs(m.Min), math.Abs(m.Max))
		cnt += m.Count
		if integral {
			sum += int64(m.Sum)
		}
		if !dropFirst {
			mn, mx = min(mn, m.Min), max(mx, m.Max)
			return
		}
		if m.First == m.Min {
			mnBound = m.Min
		} else {
			mn = min(mn, m.Min)
		}
		if m.First == m.Max {
			mxBound = m.Max
		} else {
			mx = max(mx, m.Max)
		}
		cnt--
		if integral {
			sum -= int64(m.First)
		}
	}
	first := &w.sums[w.byK[e-n]]
	add(first, first.AtStart)
	for k := e - n + 1; k < e; k++ {
		add(&w.sums[w.byK[k]], false)
	}
	if last := &w.sums[w.byK[e]]; last.AtStart {
		m := &last.Metrics
		integral = integral && last.Integral
		absMax = max(absMax, math.Abs(m.First))
		cnt++
		sum += int64(m.First)
		mn, mx = min(mn, m.First), max(mx, m.First)
	}
	if cnt == 0 {
		return stepAnswer{state: stepEmpty}
	}
	var v float64
	switch w.r.call.Func.Name {
	case "count_over_time":
		v = float64(cnt)
	case "min_over_time":
		if mn > mnBound { // the dropped sample may have been the only minimum
			return stepAnswer{}
		}
		v = mn
	case "max_over_time":
		if mx < mxBound {
			return stepAnswer{}
		}
		v = mx
	case "sum_over_time", "avg_over_time":
		if !integral || float64(cnt+1)*absMax >= maxExact { // cnt+1: the first interval's sum may hold the dropped sample
			return stepAnswer{}
		}
		v = float64(sum)
		if w.r.call.Func.Name == "avg_over_time" {
			v /= float64(cnt)
		}
	}
	if v == 0 && !integral { // +0 or −0: the samples' order decides
		return stepAnswer{}
	}
	return stepAnswer{state: stepPoint, v: v}
}
