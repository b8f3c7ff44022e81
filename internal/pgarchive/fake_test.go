package pgarchive

import (
	"context"
	"math"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/prometheus/prometheus/model/labels"
)

// fakeSource is an in-memory Source. Append and SetReady are the ingest
// path: they hold mu only briefly, and Read copies what it needs under mu
// and calls fn without it, so a stuck archiver can never block them.
type fakeSource struct {
	levels []Level
	reads  atomic.Int64 // Read calls

	mu     sync.Mutex // guards following
	ready  map[string]int64
	series map[string]map[string]*fakeSeries // level → labels.String() → series
}

type fakeSeries struct {
	lset labels.Labels
	ts   []int64
	vs   []float64
}

func newFakeSource(levels ...Level) *fakeSource {
	f := &fakeSource{levels: levels, ready: map[string]int64{}, series: map[string]map[string]*fakeSeries{}}
	for _, l := range levels {
		f.series[l.Name] = map[string]*fakeSeries{}
	}
	return f
}

func (f *fakeSource) Levels() []Level { return f.levels }

func (f *fakeSource) Ready(l Level) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ready[l.Name]
}

// Append adds a point; points of a series must come in time order.
func (f *fakeSource) Append(level string, lset labels.Labels, t int64, v float64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := f.series[level]
	s := m[lset.String()]
	if s == nil {
		s = &fakeSeries{lset: lset}
		m[lset.String()] = s
	}
	s.ts = append(s.ts, t)
	s.vs = append(s.vs, v)
}

func (f *fakeSource) SetReady(level string, t int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ready[level] = t
}

func (f *fakeSource) Read(ctx context.Context, l Level, from, to int64, fn func(labels.Labels, []int64, []float64) error) error {
	f.reads.Add(1)
	type snap struct {
		lset labels.Labels
		ts   []int64
		vs   []float64
	}
	var out []snap
	f.mu.Lock()
	for _, s := range f.series[l.Name] {
		lo, _ := slices.BinarySearch(s.ts, from)
		hi, _ := slices.BinarySearch(s.ts, to)
		if lo < hi {
			out = append(out, snap{s.lset, slices.Clone(s.ts[lo:hi]), slices.Clone(s.vs[lo:hi])})
		}
	}
	f.mu.Unlock()
	slices.SortFunc(out, func(a, b snap) int { return labels.Compare(a.lset, b.lset) })
	for _, s := range out {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fn(s.lset, s.ts, s.vs); err != nil {
			return err
		}
	}
	return nil
}

// point is one row of tv: its time (ms) and the bits of its value.
type point struct {
	T    int64
	Bits uint64
}

// expected returns what tv must hold for level l: per series (by
// labels.String()), the last point of each slot in the round-robin window
// that ends at the slot of Ready-1, at the slot's start time.
func (f *fakeSource) expected(l Level) map[string][]point {
	f.mu.Lock()
	defer f.mu.Unlock()
	step, size := l.Step.Milliseconds(), int64(l.Retention/l.Step)
	ready := f.ready[l.Name]
	out := map[string][]point{}
	if ready <= 0 {
		return out
	}
	latest := (ready - 1) / step
	for name, s := range f.series[l.Name] {
		var ps []point
		for k, t := range s.ts {
			slot := t / step
			if t >= ready || slot <= latest-size {
				continue
			}
			p := point{T: slot * step, Bits: math.Float64bits(s.vs[k])}
			if n := len(ps); n > 0 && ps[n-1].T == p.T {
				ps[n-1] = p
			} else {
				ps = append(ps, p)
			}
		}
		if len(ps) > 0 {
			out[name] = ps
		}
	}
	return out
}
