package extract

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/aerie-db/aerie/internal/sensor/cond"
)

func TestAggValue(t *testing.T) {
	f := func(name string, vs []float64, m cond.Metric, want float64) {
		t.Helper()
		a := NewAgg(WithSketch())
		for _, v := range vs {
			a.Add(v)
		}
		got, ok := a.Value(m)
		if !ok || (got != want && !(math.IsNaN(got) && math.IsNaN(want))) {
			t.Fatalf("%s: %s of %v = %v, %v; want %v", name, m, vs, got, ok, want)
		}
	}
	nan := math.NaN()
	f("count skips NaN", []float64{1, nan, staleNaN, 2}, cond.Count, 2)
	f("first skips NaN", []float64{nan, 3, 4}, cond.First, 3)
	f("last skips NaN", []float64{3, 4, staleNaN}, cond.Last, 4)
	f("min", []float64{3, -4, 5}, cond.Min, -4)
	f("max", []float64{3, -4, 5}, cond.Max, 5)
	f("sum", []float64{3, -4, 5}, cond.Sum, 4)
	f("avg", []float64{3, -4, 7}, cond.Avg, 2)
	f("stddev", []float64{2, 4, 4, 4, 5, 5, 7, 9}, cond.Stddev, 2)
	f("stddev of one value", []float64{1e300}, cond.Stddev, 0)
	// A constant series has stddev 0 exactly, though SumSq/n − mean²
	// rounds to a positive number for 0.1.
	f("stddev of a constant", []float64{0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1}, cond.Stddev, 0)
	f("stddev of a huge range", []float64{-math.MaxFloat64, math.MaxFloat64}, cond.Stddev, math.MaxFloat64)
	f("stddev with Inf is infinite", []float64{1, math.Inf(1)}, cond.Stddev, math.Inf(1))
	f("p50 of one value", []float64{42}, cond.P50, 42)
	f("p50 of a constant is exact", []float64{0.3, 0.3, 0.3}, cond.P50, 0.3)
	f("p50 of Inf is clamped to max", []float64{math.Inf(1), math.Inf(1)}, cond.P50, math.Inf(1))
	f("p50 of huge values", []float64{math.MaxFloat64, math.MaxFloat64}, cond.P50, math.MaxFloat64)
	f("p50 of -Inf", []float64{math.Inf(-1)}, cond.P50, math.Inf(-1))
}

func TestAggStddevBounds(t *testing.T) {
	// On a large level SumSq's rounding (its ulp is 512 below) swamps the
	// spread; the naive formula gives 0 or some tens. The answer stays
	// within the bounds Min and Max imply: [1/sqrt(2n), 1/2].
	f := func(vs ...float64) {
		t.Helper()
		var a Agg
		for _, v := range vs {
			a.Add(v)
		}
		got, _ := a.Value(cond.Stddev)
		lo, hi := (a.Max-a.Min)/math.Sqrt(2*float64(len(vs))), (a.Max-a.Min)/2
		if got < lo || got > hi {
			t.Fatalf("stddev of %v = %v, outside [%v, %v]", vs, got, lo, hi)
		}
	}
	f(1e9, 1e9+1, 1e9, 1e9+1)
	f(1e9, 1e9+1, 1e9+1, 1e9+1, 1e9+1)
	f(1e15, 1e15+2, 1e15+4)
	f(3, 5)
}

func TestAggEmpty(t *testing.T) {
	for _, a := range []Agg{{}, NewAgg(WithSketch())} {
		for _, m := range cond.AllMetrics() {
			if v, ok := a.Value(m); ok {
				t.Errorf("empty Agg: %s = %v, want no value", m, v)
			}
		}
		a.Add(math.NaN())
		if a.Count != 0 {
			t.Errorf("NaN counted")
		}
	}
}

func TestAggQuantileNeedsSketch(t *testing.T) {
	var a Agg
	a.Add(1)
	for _, m := range []cond.Metric{cond.P50, cond.P90, cond.P99} {
		if _, ok := a.Value(m); ok {
			t.Errorf("%s without sketch has a value", m)
		}
	}
	if _, ok := a.Value(cond.Metric(0)); ok {
		t.Error("invalid metric has a value")
	}
}

func TestAggMerge(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	f := func(n1, n2 int) {
		t.Helper()
		var vs []float64
		a, b, all := NewAgg(WithSketch()), NewAgg(WithSketch()), NewAgg(WithSketch())
		for i := range n1 + n2 {
			v := rng.NormFloat64() * 100
			vs = append(vs, v)
			if i < n1 {
				a.Add(v)
			} else {
				b.Add(v)
			}
			all.Add(v)
		}
		a.Merge(b)
		for _, m := range cond.AllMetrics() {
			got, ok1 := a.Value(m)
			want, ok2 := all.Value(m)
			if ok1 != ok2 {
				t.Fatalf("%d+%d: %s ok %v after Merge, %v adding all", n1, n2, m, ok1, ok2)
			}
			if !ok1 {
				continue
			}
			ref, _ := refMetric(m, vs)
			if math.Abs(got-want) > 1e-9*math.Max(1, math.Abs(want)) {
				t.Fatalf("%d+%d: %s = %v after Merge, %v adding all (truth %v)", n1, n2, m, got, want, ref)
			}
		}
	}
	f(0, 0)
	f(0, 5)
	f(5, 0)
	f(1, 1)
	f(100, 37)
}

func TestAggMergeDropsSketch(t *testing.T) {
	a := NewAgg(WithSketch())
	a.Add(1)
	a.Merge(Agg{}) // empty: sketch kept
	if !a.HasSketch() {
		t.Fatal("merging an empty Agg dropped the sketch")
	}
	a.Merge(Agg{Count: 1, Min: 5, Max: 5, Sum: 5, SumSq: 25, First: 5, Last: 5})
	if a.HasSketch() {
		t.Fatal("merging values without a sketch kept a sketch that misses them")
	}
	if v, _ := a.Value(cond.Last); v != 5 {
		t.Fatalf("last = %v, want 5", v)
	}
}

func TestAggCloneReset(t *testing.T) {
	a := NewAgg(WithSketch())
	a.Add(1)
	c := a.Clone()
	for range 100 {
		a.Add(1000)
	}
	if v, _ := c.Value(cond.P99); v != 1 {
		t.Fatalf("clone's p99 = %v after adding to the original, want 1", v)
	}
	a.Reset()
	if a.Count != 0 || !a.HasSketch() {
		t.Fatalf("Reset: count %d, sketch %v", a.Count, a.HasSketch())
	}
	a.Add(7)
	if v, _ := a.Value(cond.P50); v != 7 {
		t.Fatalf("p50 after Reset and Add(7) = %v", v)
	}
}
