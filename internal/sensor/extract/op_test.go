package extract

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/aerie-db/aerie/internal/sensor/cond"
)

// randParams returns a random range with an interval that often does not
// divide it, including 0, 1 and intervals longer than the range.
func randParams(rng *rand.Rand) Params {
	from := rng.Int64N(2_000_000) - 1_000_000
	to := from + rng.Int64N(5000)
	if rng.IntN(8) == 0 {
		to = from // one millisecond
	}
	var interval int64
	switch rng.IntN(6) {
	case 0:
		interval = 0
	case 1:
		interval = 1
	case 2:
		interval = to - from + 1 + rng.Int64N(100) // one window, longer than the range
	default:
		interval = 1 + rng.Int64N(700)
	}
	return Params{From: from, To: to, Interval: interval}
}

// randLen returns a point count: often 0, 1 or 2.
func randLen(rng *rand.Rand) int {
	switch rng.IntN(5) {
	case 0:
		return rng.IntN(3)
	case 1:
		return 1
	}
	return rng.IntN(800)
}

func mustParseFunc(t testing.TB, s string) Func {
	t.Helper()
	f, err := ParseFunc(s)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// run pushes ps through a new operator for p and closes it.
func run(t testing.TB, p Params, ps []pt) *collector {
	t.Helper()
	c := &collector{}
	op, err := New(p, c)
	if err != nil {
		t.Fatalf("New(%+v): %v", p, err)
	}
	for _, x := range ps {
		if err := op.Push(x.t, x.v); err != nil {
			t.Fatalf("Push(%d, %v): %v", x.t, x.v, err)
		}
	}
	if err := op.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	return c
}

// samePoints compares points: times exactly, NaN bit for bit, other
// values within tol relative to max(1, |want|).
func samePoints(t *testing.T, what string, got, want []pt, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d points, want %d\ngot  %v\nwant %v", what, len(got), len(want), head(got), head(want))
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.t != w.t {
			t.Fatalf("%s: point %d at %d, want %d", what, i, g.t, w.t)
		}
		if math.IsNaN(w.v) {
			if math.Float64bits(g.v) != math.Float64bits(w.v) {
				t.Fatalf("%s: point %d at %d = %x, want NaN bits %x", what, i, g.t, math.Float64bits(g.v), math.Float64bits(w.v))
			}
			continue
		}
		if !close(g.v, w.v, tol) {
			t.Fatalf("%s: point %d at %d = %v, want %v", what, i, g.t, g.v, w.v)
		}
	}
}

func head(ps []pt) []pt { return ps[:min(len(ps), 8)] }

func close(got, want, tol float64) bool {
	if got == want {
		return true
	}
	return math.Abs(got-want) <= tol*math.Max(1, math.Abs(want))
}

func TestFull(t *testing.T) {
	f := func(seed uint64) {
		t.Helper()
		rng := rand.New(rand.NewPCG(seed, 1))
		p := randParams(rng)
		p.Interval = 0
		ps := genSeries(rng, p.From, p.To, randLen(rng), 0.1, false)
		if p.Mode() != ModeFull {
			t.Fatalf("mode %v, want full", p.Mode())
		}
		samePoints(t, fmt.Sprintf("seed %d", seed), run(t, p, ps).points, ps, 0)
	}
	for seed := range uint64(200) {
		f(seed)
	}
}

func TestSampling(t *testing.T) {
	f := func(seed uint64) {
		t.Helper()
		rng := rand.New(rand.NewPCG(seed, 2))
		p := randParams(rng)
		if p.Interval == 0 {
			p.Interval = 1 + rng.Int64N(300)
		}
		ps := genSeries(rng, p.From, p.To, randLen(rng), 0.2, false)
		if p.Mode() != ModeSampling {
			t.Fatalf("mode %v, want sampling", p.Mode())
		}
		samePoints(t, fmt.Sprintf("seed %d %+v", seed, p), run(t, p, ps).points, refSample(p.From, p.To, p.Interval, ps), 0)
	}
	for seed := range uint64(300) {
		f(seed)
	}
}

var aggFuncs = []string{
	"count", "min,max", "avg,sum,stddev", "first,last", "p50,p90,p99",
	"count,min,max,avg,sum,stddev,first,last,p50,p90,p99",
	"last,first,p99,count", "stddev",
}

// checkRows compares aggregation rows with the ground truth: count, min,
// max, first and last exactly, sums within tol, quantiles within the
// sketch's relative accuracy of an element at rank ⌊q(n−1)⌋ or ⌈q(n−1)⌉.
func checkRows(t *testing.T, what string, f Func, got []row, want []refWindow, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d rows, want %d", what, len(got), len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.t != w.t || len(g.vals) != len(f.Metrics()) {
			t.Fatalf("%s: row %d at %d with %d values, want at %d with %d", what, i, g.t, len(g.vals), w.t, len(f.Metrics()))
		}
		// The spread of the window's values scales the tolerance of
		// sums and stddev.
		scale := 0.0
		for _, x := range w.vs {
			scale = math.Max(scale, math.Abs(x))
		}
		scale *= float64(len(w.vs))
		for j, m := range f.Metrics() {
			v, alt := refMetric(m, w.vs)
			gv := g.vals[j]
			ok := false
			switch m {
			case cond.Count, cond.Min, cond.Max, cond.First, cond.Last:
				ok = gv == v
			case cond.Sum, cond.Avg, cond.Stddev:
				ok = math.Abs(gv-v) <= tol*math.Max(1, scale)
			default:
				const acc = SketchRelativeAccuracy * 1.001
				ok = math.Abs(gv-v) <= acc*math.Abs(v)+1e-300 || math.Abs(gv-alt) <= acc*math.Abs(alt)+1e-300
			}
			if !ok {
				t.Fatalf("%s: row %d at %d: %s = %v, want %v (or %v); %d values", what, i, g.t, m, gv, v, alt, len(w.vs))
			}
		}
	}
}

// randFuncCase draws case seed of a property test from stream: random
// params with one of funcs, which must make them of mode, and a series.
func randFuncCase(t *testing.T, seed, stream uint64, funcs []string, mode Mode) (Params, []pt) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, stream))
	p := randParams(rng)
	p.Func = mustParseFunc(t, funcs[rng.IntN(len(funcs))])
	ps := genSeries(rng, p.From, p.To, randLen(rng), 0.1, false)
	if p.Mode() != mode {
		t.Fatalf("mode %v, want %v", p.Mode(), mode)
	}
	return p, ps
}

func TestAggregation(t *testing.T) {
	f := func(seed uint64) {
		t.Helper()
		p, ps := randFuncCase(t, seed, 3, aggFuncs, ModeAggregation)
		what := fmt.Sprintf("seed %d %+v", seed, p)
		checkRows(t, what, p.Func, run(t, p, ps).rows, refAggRows(p.From, p.To, p.Interval, ps), 1e-9)
	}
	for seed := range uint64(300) {
		f(seed)
	}
}

var transformFuncs = []string{
	"abs", "diff", "cumsum", "sub:3.5", "mul:-2", "movavg:1", "movavg:5", "movavg:200",
	"diff,abs", "cumsum,diff", "sub:100,abs,movavg:3", "diff,diff", "mul:0.5,cumsum,movavg:17",
}

func TestTransformation(t *testing.T) {
	f := func(seed uint64) {
		t.Helper()
		p, ps := randFuncCase(t, seed, 4, transformFuncs, ModeTransformation)
		input := ps
		if p.Interval > 0 {
			input = refSample(p.From, p.To, p.Interval, ps)
		}
		what := fmt.Sprintf("seed %d %+v", seed, p)
		samePoints(t, what, run(t, p, ps).points, refTransform(p.Func, input), 1e-9)
	}
	for seed := range uint64(400) {
		f(seed)
	}
}

func TestTransformationExamples(t *testing.T) {
	nan := math.NaN()
	f := func(fn string, in, want []float64) {
		t.Helper()
		p := Params{From: 0, To: 100, Func: mustParseFunc(t, fn)}
		var ps, wps []pt
		for i, v := range in {
			ps = append(ps, pt{int64(i), v})
		}
		c := run(t, p, ps)
		// want lists outputs in order; their times are those of the
		// inputs that produced them, the last len(want) non-dropped.
		if len(c.points) != len(want) {
			t.Fatalf("%s(%v) = %v, want %v", fn, in, c.points, want)
		}
		for i, w := range want {
			wps = append(wps, pt{c.points[i].t, w})
		}
		samePoints(t, fn, c.points, wps, 1e-12)
	}
	f("abs", []float64{-1, 2, -0.5}, []float64{1, 2, 0.5})
	f("sub:1.5", []float64{1, 2}, []float64{-0.5, 0.5})
	f("mul:-2", []float64{1, 2}, []float64{-2, -4})
	f("cumsum", []float64{1, 2, 3}, []float64{1, 3, 6})
	f("diff", []float64{1, 4, 9, 16}, []float64{3, 5, 7})
	f("diff", []float64{5}, nil)
	f("diff,diff", []float64{1, 4, 9, 16}, []float64{2, 2})
	f("movavg:3", []float64{3, 6, 9, 12, 15}, []float64{3, 4.5, 6, 9, 12})
	f("movavg:1", []float64{3, 6}, []float64{3, 6})
	// NaN passes through and leaves the state alone.
	f("cumsum", []float64{1, nan, 2}, []float64{1, nan, 3})
	f("diff", []float64{nan, 1, nan, 4}, []float64{nan, nan, 3})
	f("movavg:2", []float64{2, nan, 4, 6}, []float64{2, nan, 3, 5})
	f("abs,cumsum", []float64{-1, staleNaN, -2}, []float64{1, staleNaN, 3})
	// Infinities in the moving window, and out of it again.
	inf := math.Inf(1)
	f("movavg:2", []float64{1, inf, 3, 5, -inf, inf, 7, 9}, []float64{1, inf, inf, 4, -inf, nan, inf, 8})
	// mul:0 of Inf makes a NaN (of the CPU's making) that cumsum passes
	// over.
	c := run(t, Params{From: 0, To: 2, Func: mustParseFunc(t, "mul:0,cumsum")}, []pt{{0, 1}, {1, inf}, {2, 2}})
	if len(c.points) != 3 || c.points[0].v != 0 || !math.IsNaN(c.points[1].v) || c.points[2].v != 0 {
		t.Fatalf("mul:0,cumsum of 1, Inf, 2 = %v, want 0, NaN, 0", c.points)
	}
	// Huge values: the moving sum does not overflow.
	f("movavg:2", []float64{math.MaxFloat64, math.MaxFloat64, 1}, []float64{math.MaxFloat64, math.MaxFloat64, math.MaxFloat64 / 2})
}

func TestMovavgLongSeries(t *testing.T) {
	// A million points with a large level and a 1000-point window: the
	// running sum must not drift from the directly computed mean.
	const n, w = 1_000_000, 1000
	p := Params{From: 0, To: n, Func: mustParseFunc(t, fmt.Sprintf("movavg:%d", w))}
	rng := rand.New(rand.NewPCG(5, 5))
	vs := make([]float64, n)
	for i := range vs {
		vs[i] = 1e6 + rng.NormFloat64()
	}
	c := &collector{}
	op, _ := New(p, c)
	for i, v := range vs {
		if err := op.Push(int64(i), v); err != nil {
			t.Fatal(err)
		}
	}
	if err := op.Close(); err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{0, 999, 1000, 123_456, n - 1} {
		sum := 0.0
		lo := max(0, i-w+1)
		for _, v := range vs[lo : i+1] {
			sum += v
		}
		want := sum / float64(i+1-lo)
		if got := c.points[i].v; math.Abs(got-want) > 1e-13*want {
			t.Errorf("movavg at %d = %.12f, want %.12f", i, got, want)
		}
	}
}

// aggsOf computes the aggregate of the points in [s, e) with plain loops.
func aggsOf(ps []pt, s, e int64) Agg {
	var a Agg
	for _, p := range ps {
		if p.t < s || p.t >= e || math.IsNaN(p.v) {
			continue
		}
		if a.Count == 0 {
			a.Min, a.Max, a.First = p.v, p.v, p.v
		}
		a.Count++
		a.Min, a.Max, a.Last = math.Min(a.Min, p.v), math.Max(a.Max, p.v), p.v
		a.Sum += p.v
		a.SumSq += p.v * p.v
	}
	return a
}

// TestAggregationFromMetrics feeds block-metric-like aggregates of metric
// intervals (aligned to the epoch, as the engine's) wherever they fit in
// one window, and points elsewhere, and checks the rows against the ground
// truth: invariant 2.
func TestAggregationFromMetrics(t *testing.T) {
	f := func(seed uint64, integer bool) {
		t.Helper()
		rng := rand.New(rand.NewPCG(seed, 6))
		mi := int64(1 + rng.IntN(60)) // metric interval
		p := Params{
			From:     mi*rng.Int64N(1000) - mi*500,
			Interval: mi * (1 + rng.Int64N(5)),
			Func:     mustParseFunc(t, "count,min,max,first,last,sum,avg,stddev"),
		}
		switch rng.IntN(4) {
		case 0:
			p.Interval = 0
		case 1:
			p.From += rng.Int64N(mi) // unaligned: edges from data
		case 2:
			p.Interval += rng.Int64N(mi) // windows split metric intervals
		}
		p.To = p.From + rng.Int64N(50*mi)
		ps := genSeries(rng, p.From, p.To, randLen(rng), 0.1, integer)

		c := &collector{}
		a, err := NewAggregator(p, c)
		if err != nil {
			t.Fatal(err)
		}
		spans := 0
		first := p.From - ((p.From%mi)+mi)%mi // epoch-aligned metric interval holding From
		i := 0
		for s := first; s <= p.To; s += mi {
			e := s + mi
			if p.WindowContains(s, e) && rng.IntN(4) != 0 {
				if err := a.PushAgg(s, e, aggsOf(ps, s, e)); err != nil {
					t.Fatalf("PushAgg(%d, %d): %v", s, e, err)
				}
				spans++
				for i < len(ps) && ps[i].t < e {
					i++
				}
				continue
			}
			for ; i < len(ps) && ps[i].t < e; i++ {
				if err := a.Push(ps[i].t, ps[i].v); err != nil {
					t.Fatalf("Push(%d): %v", ps[i].t, err)
				}
			}
		}
		if err := a.Close(); err != nil {
			t.Fatal(err)
		}
		what := fmt.Sprintf("seed %d, metric interval %d, %d spans, %+v", seed, mi, spans, p)
		checkRows(t, what, p.Func, c.rows, refAggRows(p.From, p.To, p.Interval, ps), 1e-9)
		if integer {
			// Invariant 2: with integer values, rows from metrics
			// equal rows from data exactly.
			d := run(t, p, ps)
			for k := range d.rows {
				for j := range d.rows[k].vals {
					if d.rows[k].vals[j] != c.rows[k].vals[j] {
						t.Fatalf("%s: row %d column %s: %v from metrics, %v from data", what, k, p.Func.Columns()[j], c.rows[k].vals[j], d.rows[k].vals[j])
					}
				}
			}
		}
	}
	for seed := range uint64(300) {
		f(seed, seed%2 == 0)
	}
}

func TestAggregationQuantilesFromSketchedSpans(t *testing.T) {
	// Spans with sketches (aggregated from data elsewhere) merge into
	// windows like block metrics do.
	rng := rand.New(rand.NewPCG(7, 7))
	p := Params{From: 0, To: 9999, Interval: 1000, Func: mustParseFunc(t, "p50,p90,p99,count")}
	ps := genSeries(rng, p.From, p.To, 5000, 0.05, false)
	c := &collector{}
	a, _ := NewAggregator(p, c)
	for s := int64(0); s < 10000; s += 100 {
		agg := NewAgg(WithSketch())
		for _, x := range ps {
			if x.t >= s && x.t < s+100 {
				agg.Add(x.v)
			}
		}
		if err := a.PushAgg(s, s+100, agg); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	checkRows(t, "sketched spans", p.Func, c.rows, refAggRows(p.From, p.To, p.Interval, ps), 0)
}

func TestInputErrors(t *testing.T) {
	agg := mustParseFunc(t, "min")
	f := func(name string, p Params, do func(op Op) error, want string) {
		t.Helper()
		op, err := New(p, &collector{})
		if err == nil {
			err = do(op)
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("%s: error %v, want %q", name, err, want)
		}
		// The operator stays stopped.
		if op != nil {
			if err := op.Push(p.From, 1); err == nil {
				t.Fatalf("%s: Push after an error succeeded", name)
			}
		}
	}
	p := Params{From: 100, To: 200, Interval: 10}
	f("from after to", Params{From: 2, To: 1}, nil, "from 2 is after to 1")
	f("to at MaxInt64", Params{From: 0, To: math.MaxInt64}, nil, "must be below")
	f("range overflows", Params{From: math.MinInt64, To: 1}, nil, "is longer than")
	f("negative interval", Params{From: 0, To: 1, Interval: -1}, nil, "negative interval -1")
	for _, fn := range []string{"none", "min", "abs"} {
		p.Func = mustParseFunc(t, fn)
		f(fn+": before from", p, func(op Op) error { return op.Push(99, 1) }, "point at 99 outside [100, 200]")
		f(fn+": after to", p, func(op Op) error { return op.Push(201, 1) }, "point at 201 outside [100, 200]")
		f(fn+": out of order", p, func(op Op) error {
			op.Push(150, 1)
			return op.Push(149, 1)
		}, "point at 149 before 150: points must arrive in time order")
		f(fn+": after close", p, func(op Op) error {
			op.Close()
			return op.Push(150, 1)
		}, "after Close")
		f(fn+": close twice", p, func(op Op) error {
			op.Close()
			return op.Close()
		}, "after Close")
	}
	p.Func = agg
	pushAgg := func(s, e int64, a Agg) func(Op) error {
		return func(op Op) error { return op.(*Aggregator).PushAgg(s, e, a) }
	}
	one := Agg{Count: 1, Min: 1, Max: 1, Sum: 1, SumSq: 1, First: 1, Last: 1}
	f("span straddles windows", p, pushAgg(105, 115, one), "span [105, 115) is not inside one window of [100, 200] by 10 ms")
	f("span before from", p, pushAgg(90, 100, one), "not inside one window")
	f("span after to", p, pushAgg(200, 202, one), "not inside one window")
	f("empty span", p, pushAgg(110, 110, one), "not inside one window")
	f("span after point", p, func(op Op) error {
		op.Push(112, 1)
		return op.(*Aggregator).PushAgg(110, 120, one)
	}, "span [110, 120) starts before 113")
	f("point inside pushed span", p, func(op Op) error {
		op.(*Aggregator).PushAgg(110, 120, one)
		return op.Push(119, 1)
	}, "point at 119 before 120")
	p.Func = mustParseFunc(t, "p50")
	f("span without sketch", p, pushAgg(110, 120, one), "span [110, 120) has no sketch for p50")
	if _, err := NewAggregator(Params{From: 0, To: 1}, &collector{}); err == nil || !strings.Contains(err.Error(), `function "none" is not an aggregation`) {
		t.Fatalf("NewAggregator(none): %v", err)
	}
}

func TestEmitterError(t *testing.T) {
	f := func(fn string, interval int64) {
		t.Helper()
		c := &collector{failAfter: 2}
		op, err := New(Params{From: 0, To: 100, Interval: interval, Func: mustParseFunc(t, fn)}, c)
		if err != nil {
			t.Fatal(err)
		}
		var got error
		for i := int64(0); i <= 100 && got == nil; i++ {
			got = op.Push(i, 1)
		}
		if got == nil {
			got = op.Close()
		}
		if !errors.Is(got, errEmit) {
			t.Fatalf("%s/%d: error %v, want the emitter's", fn, interval, got)
		}
		if err := op.Push(100, 1); err == nil {
			t.Fatalf("%s/%d: Push after emitter error succeeded", fn, interval)
		}
	}
	f("none", 0)
	f("none", 10)
	f("abs", 0)
	f("count", 10)
}

func TestModes(t *testing.T) {
	f := func(interval int64, fn string, want Mode) {
		t.Helper()
		p := Params{From: 0, To: 10, Interval: interval, Func: mustParseFunc(t, fn)}
		if got := p.Mode(); got != want {
			t.Fatalf("interval %d func %s: mode %v, want %v", interval, fn, got, want)
		}
	}
	f(0, "none", ModeFull)
	f(5, "none", ModeSampling)
	f(0, "min", ModeAggregation)
	f(5, "min,max", ModeAggregation)
	f(0, "abs", ModeTransformation)
	f(5, "movavg:3", ModeTransformation)
	if (Params{}).Mode() != ModeFull {
		t.Fatal("zero Params is not a full extraction")
	}
}

func TestWindow(t *testing.T) {
	f := func(p Params, ts int64, ws, we int64) {
		t.Helper()
		s, e := p.Window(ts)
		if s != ws || e != we {
			t.Fatalf("%+v.Window(%d) = [%d, %d), want [%d, %d)", p, ts, s, e, ws, we)
		}
	}
	p := Params{From: -25, To: 9, Interval: 10}
	f(p, -25, -25, -15)
	f(p, -16, -25, -15)
	f(p, -15, -15, -5)
	f(p, 5, 5, 10) // clipped at to
	f(p, 9, 5, 10)
	f(Params{From: 3, To: 7}, 5, 3, 8)
	f(Params{From: 0, To: math.MaxInt64 - 1, Interval: math.MaxInt64}, 5, 0, math.MaxInt64)
	f(Params{From: 10, To: math.MaxInt64 - 1, Interval: math.MaxInt64 - 5}, math.MaxInt64-2, 10, math.MaxInt64)
}
