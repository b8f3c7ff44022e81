package graphite

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/prometheus/prometheus/model/labels"
)

// memStore is an in-memory Store: each series has one archive of its own
// step, values at Start+i*Step.
type memStore struct {
	series []memSeries
}

type memSeries struct {
	lset        labels.Labels
	start, step int64
	values      []float64
	method      string
	xff         float64
}

func (m *memStore) add(lset labels.Labels, start, step int64, values ...float64) {
	m.series = append(m.series, memSeries{lset: lset, start: start, step: step, values: values})
	slices.SortFunc(m.series, func(a, b memSeries) int { return labels.Compare(a.lset, b.lset) })
}

func (m *memStore) Series(_ context.Context, from, until int64, ms ...*labels.Matcher) ([]labels.Labels, error) {
	var out []labels.Labels
	for _, s := range m.series {
		first, last := s.start*1000, (s.start+int64(len(s.values)-1)*s.step)*1000
		if last < from || first > until {
			continue
		}
		ok := true
		for _, mt := range ms {
			if !mt.Matches(s.lset.Get(mt.Name)) {
				ok = false
				break
			}
		}
		if ok {
			out = append(out, s.lset)
		}
	}
	return out, nil
}

func (m *memStore) Points(_ context.Context, lset labels.Labels, from, until, now int64) (Points, error) {
	for _, s := range m.series {
		if !labels.Equal(s.lset, lset) {
			continue
		}
		until = min(until, now)
		start := from - mod(from, s.step) + s.step
		end := until - mod(until, s.step) + s.step
		if end == start {
			end += s.step
		}
		n := max((end-start)/s.step, 0)
		p := Points{Start: start, Step: s.step, Values: make([]float64, n), Method: s.method, XFilesFactor: s.xff}
		for i := range p.Values {
			t := start + int64(i)*s.step
			j := (t - s.start) / s.step
			if t >= s.start && (t-s.start)%s.step == 0 && j < int64(len(s.values)) {
				p.Values[i] = s.values[j]
			} else {
				p.Values[i] = math.NaN()
			}
		}
		return p, nil
	}
	return Points{}, fmt.Errorf("no series %s", lset)
}
