package graphite

import (
	"context"
	"fmt"
	"math"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
)

// QueryableStore is a Store over a storage.Queryable with one archive of
// a fixed step: each interval [t, t+Step) of the grid holds the last
// float sample in it, null if none. It serves the Graphite API where no
// rollup rules exist; rollup.Store replaces it where they do.
// Histogram samples and staleness markers are nulls.
type QueryableStore struct {
	q    storage.Queryable
	opts QueryableOptions
}

// QueryableOptions configure a QueryableStore.
type QueryableOptions struct {
	Step         int64   // seconds (default 60)
	Method       string  // the series' consolidation for maxDataPoints (default "average")
	XFilesFactor float64 // Points.XFilesFactor (default 0; the render API uses the request's, as graphite-web)
	// MaxPoints bounds the grid of one Points call (default 10,000,000):
	// a longer range is a *LimitError, not an allocation.
	MaxPoints int
}

var (
	_ Store    = (*QueryableStore)(nil)
	_ TagIndex = (*QueryableStore)(nil)
)

// NewQueryableStore returns a Store over q.
func NewQueryableStore(q storage.Queryable, opts QueryableOptions) *QueryableStore {
	if opts.Step <= 0 {
		opts.Step = 60
	}
	if opts.Method == "" {
		opts.Method = "average"
	}
	if opts.MaxPoints <= 0 {
		opts.MaxPoints = 10_000_000
	}
	return &QueryableStore{q: q, opts: opts}
}

// Series returns the label sets of the series matching ms with samples in
// [from, until] (milliseconds), sorted.
func (s *QueryableStore) Series(ctx context.Context, from, until int64, ms ...*labels.Matcher) ([]labels.Labels, error) {
	q, err := s.q.Querier(from, until)
	if err != nil {
		return nil, fmt.Errorf("querier: %w", err)
	}
	defer q.Close()
	hints := &storage.SelectHints{Start: from, End: until, Func: "series"}
	ss := q.Select(ctx, true, hints, ms...)
	var out []labels.Labels
	for ss.Next() {
		out = append(out, ss.At().Labels())
	}
	if err := ss.Err(); err != nil {
		return nil, fmt.Errorf("select series: %w", err)
	}
	return out, nil
}

// Points returns lset's values on the step grid over [from, until)
// (seconds) as whisper's fetch lays it out: until clamped to now, from and
// until each moved to the step boundary after them, at least one
// interval; from after now is no values.
func (s *QueryableStore) Points(ctx context.Context, lset labels.Labels, from, until, now int64) (Points, error) {
	step := s.opts.Step
	until = min(until, now)
	start := from - mod(from, step) + step
	if from > until {
		return Points{Start: start, Step: step, Method: s.opts.Method, XFilesFactor: s.opts.XFilesFactor}, nil
	}
	end := until - mod(until, step) + step
	if end == start {
		end += step
	}
	n64 := (end - start) / step
	if n64 > int64(s.opts.MaxPoints) {
		return Points{}, &LimitError{What: "points per series", Limit: s.opts.MaxPoints}
	}
	n := int(n64)
	p := Points{Start: start, Step: step, Values: make([]float64, n), Method: s.opts.Method, XFilesFactor: s.opts.XFilesFactor}
	for i := range p.Values {
		p.Values[i] = math.NaN()
	}
	mint, maxt := start*1000, (start+n64*step)*1000-1
	q, err := s.q.Querier(mint, maxt)
	if err != nil {
		return Points{}, fmt.Errorf("querier: %w", err)
	}
	defer q.Close()
	ms := make([]*labels.Matcher, 0, lset.Len())
	lset.Range(func(l labels.Label) {
		ms = append(ms, labels.MustNewMatcher(labels.MatchEqual, l.Name, l.Value))
	})
	ss := q.Select(ctx, false, &storage.SelectHints{Start: mint, End: maxt}, ms...)
	var it chunkenc.Iterator
	stepMs := step * 1000
	for ss.Next() {
		ser := ss.At()
		if !labels.Equal(ser.Labels(), lset) {
			continue
		}
		it = ser.Iterator(it)
		for vt := it.Seek(mint); vt != chunkenc.ValNone; vt = it.Next() {
			if vt != chunkenc.ValFloat {
				t := it.AtT()
				if t > maxt {
					break
				}
				continue
			}
			t, v := it.At()
			if t > maxt {
				break
			}
			if t < mint {
				continue
			}
			i := (t - mint) / stepMs
			if value.IsStaleNaN(v) {
				v = math.NaN()
			}
			p.Values[i] = v
		}
		if err := it.Err(); err != nil {
			return Points{}, fmt.Errorf("read %s: %w", lset, err)
		}
	}
	if err := ss.Err(); err != nil {
		return Points{}, fmt.Errorf("select %s: %w", lset, err)
	}
	return p, nil
}

// LabelNames returns the label names of the series matching ms, sorted.
func (s *QueryableStore) LabelNames(ctx context.Context, ms ...*labels.Matcher) ([]string, error) {
	q, err := s.q.Querier(math.MinInt64, math.MaxInt64)
	if err != nil {
		return nil, fmt.Errorf("querier: %w", err)
	}
	defer q.Close()
	names, _, err := q.LabelNames(ctx, nil, ms...)
	if err != nil {
		return nil, fmt.Errorf("label names: %w", err)
	}
	return names, nil
}

// LabelValues returns the values of label name over the series matching
// ms, sorted.
func (s *QueryableStore) LabelValues(ctx context.Context, name string, ms ...*labels.Matcher) ([]string, error) {
	q, err := s.q.Querier(math.MinInt64, math.MaxInt64)
	if err != nil {
		return nil, fmt.Errorf("querier: %w", err)
	}
	defer q.Close()
	vals, _, err := q.LabelValues(ctx, name, nil, ms...)
	if err != nil {
		return nil, fmt.Errorf("label values of %s: %w", name, err)
	}
	return vals, nil
}
