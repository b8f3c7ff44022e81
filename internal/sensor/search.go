package sensor

import (
	"context"
	"errors"
	"fmt"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/aerie-db/aerie/internal/block"
	"github.com/aerie-db/aerie/internal/mathx"
	"github.com/aerie-db/aerie/internal/sensor/cond"
	"github.com/aerie-db/aerie/internal/sensor/extract"
	"github.com/aerie-db/aerie/internal/tsdb"
)

// Interval is a time range in milliseconds, both ends inclusive, so that
// a search answer can be passed to /extract/{sensor}/{from}-{to} as is.
type Interval struct {
	From int64 `json:"from" msgpack:"from"`
	To   int64 `json:"to" msgpack:"to"`
}

// SearchResult is one series' intervals that meet a condition.
type SearchResult struct {
	Labels    labels.Labels
	Intervals []Interval
}

// ErrNoSketches is wrapped when a condition or an aggregation asks the
// index for a percentile: the block metrics keep no quantile sketches.
var ErrNoSketches = errors.New("percentiles (p50, p90, p99) need quantile sketches, which the block metrics do not keep")

// ErrBadRequest is wrapped by errors in a request's parameters.
var ErrBadRequest = errors.New("bad request")

// Search returns, per series matching ms, the intervals of resolution ms
// (0: the metric interval) intersecting [from, to] whose metrics meet e,
// adjacent ones merged. It reads block metrics only, never data (see
// tsdb.DB.SeriesMetrics for the head and the rare intervals it must
// recompute); coarser resolutions combine the metric intervals, which are
// cumulative. Windows are aligned to the Unix epoch and answered whole.
func (s *Service) Search(ctx context.Context, ms []*labels.Matcher, from, to, resolution int64, e *cond.Expr) ([]SearchResult, tsdb.MetricsStats, error) {
	q := s.querier()
	defer q.Close()
	return s.search(ctx, q, ms, from, to, resolution, e)
}

// search is Search through a request's querier q.
func (s *Service) search(ctx context.Context, q *tsdb.Querier, ms []*labels.Matcher, from, to, resolution int64, e *cond.Expr) ([]SearchResult, tsdb.MetricsStats, error) {
	iv := s.db.MetricInterval()
	if resolution == 0 {
		resolution = iv
	}
	if resolution < 0 || resolution%iv != 0 {
		return nil, tsdb.MetricsStats{}, fmt.Errorf("%w: resolution %d ms is not a multiple of the metric interval (%d ms)", ErrBadRequest, resolution, iv)
	}
	for _, m := range e.Metrics() {
		if _, ok := m.Quantile(); ok {
			return nil, tsdb.MetricsStats{}, fmt.Errorf("%w: %w", ErrBadRequest, ErrNoSketches)
		}
	}
	// Whole windows: a coarse one reaching outside [from, to] is judged
	// on all of its metric intervals.
	from = mathx.FloorDiv(from, resolution) * resolution
	to = mathx.FloorDiv(to, resolution)*resolution + resolution - 1
	sms, st, err := q.SeriesMetrics(ctx, from, to, ms...)
	if err != nil {
		return nil, st, err
	}
	s.m.searchIndex.Add(float64(st.Index))
	s.m.searchHead.Add(float64(st.Head))
	s.m.searchData.Add(float64(st.Data))
	if len(sms) > s.opts.MaxSeries {
		return nil, st, fmt.Errorf("%w: %d series match, more than the limit of %d (sensor.max_series)", ErrBadRequest, len(sms), s.opts.MaxSeries)
	}
	out := make([]SearchResult, 0, len(sms))
	for _, sm := range sms {
		r := SearchResult{Labels: sm.Labels}
		var win block.IntervalMetrics
		cur, have := int64(0), false
		flush := func() {
			if !have || !e.Eval(func(m cond.Metric) (float64, bool) { return metricValue(win, m) }) {
				return
			}
			lo, hi := cur*resolution, cur*resolution+resolution-1
			if n := len(r.Intervals); n > 0 && r.Intervals[n-1].To == lo-1 {
				r.Intervals[n-1].To = hi
				return
			}
			r.Intervals = append(r.Intervals, Interval{From: lo, To: hi})
		}
		for _, m := range sm.Intervals {
			w := mathx.FloorDiv(m.Interval*iv, resolution)
			if !have || w != cur {
				flush()
				win, cur, have = block.IntervalMetrics{Interval: w}, w, true
			}
			win.Combine(m)
		}
		flush()
		if len(r.Intervals) > 0 {
			out = append(out, r)
		}
	}
	return out, st, nil
}

// metricValue returns metric m of interval metrics im, as an extraction
// from data computes it (extract.Agg); false where it is undefined (no
// numeric points, or a percentile).
func metricValue(im block.IntervalMetrics, m cond.Metric) (float64, bool) {
	a := extract.Agg{Count: im.Count, Min: im.Min, Max: im.Max, Sum: im.Sum, SumSq: im.SumSq, First: im.First, Last: im.Last}
	return a.Value(m)
}
