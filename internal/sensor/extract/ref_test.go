package extract

import (
	"math"
	"math/rand/v2"
	"slices"
	"sort"

	"github.com/aerie-db/aerie/internal/sensor/cond"
)

// This file holds the tests' ground truth: straightforward loops over a
// slice of points that share no code with the operators.

type pt struct {
	t int64
	v float64
}

type row struct {
	t    int64
	vals []float64
}

// collector is an Emitter that keeps everything; after failAfter outputs
// (if positive) it returns errEmit.
type collector struct {
	points    []pt
	rows      []row
	failAfter int
}

var errEmit = errorString("emitter: client went away")

type errorString string

func (e errorString) Error() string { return string(e) }

func (c *collector) fail() bool {
	if c.failAfter > 0 && len(c.points)+len(c.rows) >= c.failAfter {
		return true
	}
	return false
}

func (c *collector) Point(t int64, v float64) error {
	if c.fail() {
		return errEmit
	}
	c.points = append(c.points, pt{t, v})
	return nil
}

func (c *collector) Row(t int64, vals []float64) error {
	if c.fail() {
		return errEmit
	}
	c.rows = append(c.rows, row{t, slices.Clone(vals)})
	return nil
}

// staleNaN is Prometheus' stale marker.
var staleNaN = math.Float64frombits(0x7ff0000000000002)

// genSeries returns n points in [from, to] in time order (equal times
// possible when the range is short), a nanFrac share of them NaN or stale
// markers. Values are small integers if integer, else normal around a
// random level.
func genSeries(rng *rand.Rand, from, to int64, n int, nanFrac float64, integer bool) []pt {
	ps := make([]pt, n)
	mu, sigma := rng.Float64()*2000-1000, math.Exp(rng.Float64()*8-3)
	for i := range ps {
		ps[i].t = from + rng.Int64N(to-from+1)
		switch {
		case rng.Float64() < nanFrac && rng.IntN(2) == 0:
			ps[i].v = math.NaN()
		case rng.Float64() < nanFrac:
			ps[i].v = staleNaN
		case integer:
			ps[i].v = float64(rng.IntN(201) - 100)
		default:
			ps[i].v = mu + sigma*rng.NormFloat64()
		}
	}
	sort.SliceStable(ps, func(i, j int) bool { return ps[i].t < ps[j].t })
	return ps
}

// refWindows lists the windows of [from, to] as [start, end) pairs.
func refWindows(from, to, interval int64) [][2]int64 {
	if interval == 0 {
		return [][2]int64{{from, to + 1}}
	}
	var ws [][2]int64
	for s := from; s <= to; s += interval {
		ws = append(ws, [2]int64{s, min(s+interval, to+1)})
	}
	return ws
}

// refSample returns the first non-NaN point of every window.
func refSample(from, to, interval int64, ps []pt) []pt {
	var out []pt
	for _, w := range refWindows(from, to, interval) {
		for _, p := range ps {
			if p.t >= w[0] && p.t < w[1] && !math.IsNaN(p.v) {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

// refAggRows returns, per window with a non-NaN value, the window start and
// its values in time order.
func refAggRows(from, to, interval int64, ps []pt) []refWindow {
	var out []refWindow
	for _, w := range refWindows(from, to, interval) {
		var vs []float64
		for _, p := range ps {
			if p.t >= w[0] && p.t < w[1] && !math.IsNaN(p.v) {
				vs = append(vs, p.v)
			}
		}
		if len(vs) > 0 {
			out = append(out, refWindow{w[0], vs})
		}
	}
	return out
}

type refWindow struct {
	t  int64
	vs []float64
}

// refMetric computes metric m of vs (non-empty, in time order). For a
// quantile it returns the two candidate elements, at ranks ⌊q(n−1)⌋ and
// ⌈q(n−1)⌉.
func refMetric(m cond.Metric, vs []float64) (v, alt float64) {
	n := float64(len(vs))
	sum := 0.0
	for _, x := range vs {
		sum += x
	}
	switch m {
	case cond.Count:
		return n, n
	case cond.Min:
		v = vs[0]
		for _, x := range vs {
			v = math.Min(v, x)
		}
		return v, v
	case cond.Max:
		v = vs[0]
		for _, x := range vs {
			v = math.Max(v, x)
		}
		return v, v
	case cond.Sum:
		return sum, sum
	case cond.Avg:
		return sum / n, sum / n
	case cond.Stddev:
		mean, ss := sum/n, 0.0
		for _, x := range vs {
			ss += (x - mean) * (x - mean)
		}
		return math.Sqrt(ss / n), math.Sqrt(ss / n)
	case cond.First:
		return vs[0], vs[0]
	case cond.Last:
		return vs[len(vs)-1], vs[len(vs)-1]
	}
	q, _ := m.Quantile()
	s := slices.Clone(vs)
	slices.Sort(s)
	r := q * (n - 1)
	return s[int(math.Floor(r))], s[int(math.Ceil(r))]
}

// refTransform applies the steps of f to ps in order: a NaN passes through
// unchanged and untouched, diff drops its first value, movavg averages the
// last n non-NaN values.
func refTransform(f Func, ps []pt) []pt {
	out := slices.Clone(ps)
	for _, s := range f.steps {
		var next []pt
		var (
			sum, prev float64
			started   bool
			window    []float64
		)
		for _, p := range out {
			if math.IsNaN(p.v) {
				next = append(next, p)
				continue
			}
			v := p.v
			switch s.kind {
			case stepAbs:
				v = math.Abs(v)
			case stepSub:
				v = v - s.k
			case stepMul:
				v = v * s.k
			case stepCumsum:
				sum += v
				v = sum
			case stepDiff:
				if !started {
					started, prev = true, v
					continue
				}
				v, prev = v-prev, v
			case stepMovavg:
				window = append(window, v)
				if len(window) > s.n {
					window = window[1:]
				}
				t := 0.0
				for _, x := range window {
					t += x
				}
				v = t / float64(len(window))
			}
			next = append(next, pt{p.t, v})
		}
		out = next
	}
	return out
}
