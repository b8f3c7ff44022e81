package extract

import (
	"fmt"
	"math"

	"github.com/DataDog/sketches-go/ddsketch"

	"github.com/aerie-db/aerie/internal/sensor/cond"
)

// Sketch parameters for p50, p90 and p99 (invariant 5).
const (
	// SketchRelativeAccuracy bounds the relative error of a quantile: the
	// value returned for p50 is within 1% of a true median element.
	SketchRelativeAccuracy = 0.01
	// SketchMaxBins caps a sketch's bins per sign. With 1% accuracy 2048
	// bins span values over a ratio of about 6e17 (max/min magnitude);
	// beyond that the lowest bins collapse and only the lowest quantiles
	// lose accuracy.
	SketchMaxBins = 2048
)

// Agg is a running aggregate of one series over one interval: Peregreen's
// Metric module, with the engine's block metrics as fields
// (internal/block.IntervalMetrics has the same names, so converting one is
// a struct literal). NaN values, Prometheus stale markers included, are
// skipped entirely, as the engine's block metrics skip them.
//
// An Agg may carry a DDSketch of its values for p50, p90 and p99
// (WithSketch). The sketch is held by pointer: an Agg with a sketch must
// not be copied and then both copies used; use Clone. The zero Agg is
// empty and has no sketch.
type Agg struct {
	Count    uint64  // values added, NaN not counted
	Min, Max float64 // smallest and largest value
	Sum      float64 // sum of values
	SumSq    float64 // sum of squared values
	First    float64 // first value in time order
	Last     float64 // last value in time order

	sketch *ddsketch.DDSketch // nil without WithSketch
}

// AggOption configures NewAgg.
type AggOption func(*Agg)

// WithSketch makes the Agg keep a DDSketch of its values (relative accuracy
// SketchRelativeAccuracy, at most SketchMaxBins bins per sign), so Value
// answers p50, p90 and p99. It costs up to about 32 KiB per Agg.
func WithSketch() AggOption {
	return func(a *Agg) { a.sketch = newSketch() }
}

func newSketch() *ddsketch.DDSketch {
	s, err := ddsketch.LogCollapsingLowestDenseDDSketch(SketchRelativeAccuracy, SketchMaxBins)
	if err != nil {
		panic(fmt.Sprintf("extract: sketch with accuracy %v: %v", SketchRelativeAccuracy, err))
	}
	return s
}

// NewAgg returns an empty Agg.
func NewAgg(opts ...AggOption) Agg {
	var a Agg
	for _, o := range opts {
		o(&a)
	}
	return a
}

// HasSketch reports whether a can answer p50, p90 and p99.
func (a *Agg) HasSketch() bool { return a.sketch != nil }

// Reset empties a, keeping its sketch (emptied) if it has one.
func (a *Agg) Reset() {
	*a = Agg{sketch: a.sketch}
	if a.sketch != nil {
		a.sketch.Clear()
	}
}

// Clone returns a deep copy of a: the copy's sketch is its own.
func (a *Agg) Clone() Agg {
	c := *a
	if a.sketch != nil {
		c.sketch = a.sketch.Copy()
	}
	return c
}

// Add adds a value; values arrive in time order. NaN is skipped.
func (a *Agg) Add(v float64) {
	if math.IsNaN(v) {
		return
	}
	if a.Count == 0 {
		a.Min, a.Max, a.First = v, v, v
	} else {
		a.Min = math.Min(a.Min, v)
		a.Max = math.Max(a.Max, v)
	}
	a.Last = v
	a.Count++
	a.Sum += v
	a.SumSq += v * v
	if a.sketch != nil {
		addToSketch(a.sketch, v)
	}
}

// addToSketch adds v, clamped to the sketch's indexable range (about
// ±2e290 at 1% accuracy): the sketch rejects larger magnitudes and
// infinities. A quantile that falls on such a value is reported as that
// extreme, then clamped to [Min, Max].
func addToSketch(s *ddsketch.DDSketch, v float64) {
	if hi := s.MaxIndexableValue(); v > hi {
		v = hi
	} else if v < -hi {
		v = -hi
	}
	if err := s.Add(v); err != nil {
		panic(fmt.Sprintf("extract: sketch rejected clamped value %v: %v", v, err))
	}
}

// Merge merges o, the aggregate of a later interval, into a, as the
// engine's IntervalMetrics.Combine does. a keeps its sketch, merged with
// o's, only if o has one or is empty; otherwise a's sketch is dropped, since
// it would no longer describe a's values.
func (a *Agg) Merge(o Agg) {
	if o.Count == 0 {
		return
	}
	if a.sketch != nil {
		if o.sketch == nil {
			a.sketch = nil
		} else if err := a.sketch.MergeWith(o.sketch); err != nil {
			// Only sketches of other parameters fail to merge, and
			// every sketch here is made by newSketch.
			panic(fmt.Sprintf("extract: merge sketches: %v", err))
		}
	}
	if a.Count == 0 {
		a.Count, a.Min, a.Max, a.Sum, a.SumSq, a.First, a.Last = o.Count, o.Min, o.Max, o.Sum, o.SumSq, o.First, o.Last
		return
	}
	a.Count += o.Count
	a.Min = math.Min(a.Min, o.Min)
	a.Max = math.Max(a.Max, o.Max)
	a.Sum += o.Sum
	a.SumSq += o.SumSq
	a.Last = o.Last
}

// Value returns metric m of the aggregate, and false when a is empty or m
// is a quantile and a has no sketch.
//
// avg is Sum/Count. stddev is the population standard deviation
//
//	sqrt(max(0, SumSq/Count − mean²)),  mean = Sum/Count,
//
// with mean² subtracted in one fused multiply-add (one rounding instead of
// two), exactly 0 when Min = Max, and clamped to the bounds Min and Max
// imply for any n values: (Max−Min)/sqrt(2n) ≤ stddev ≤ (Max−Min)/2
// (Popoviciu). The formula cancels catastrophically when the spread is
// below about 1e-8 of the values' magnitude, since SumSq is rounded before
// the subtraction and Sum and SumSq are all the engine keeps; the clamp
// keeps the answer within those bounds then, and keeps a constant series
// at 0, but cannot restore the lost digits.
//
// p50, p90 and p99 are the sketch's quantiles (the value at rank
// ⌊q·(Count−1)⌋ within SketchRelativeAccuracy), clamped to [Min, Max].
func (a *Agg) Value(m cond.Metric) (float64, bool) {
	if a.Count == 0 {
		return 0, false
	}
	n := float64(a.Count)
	switch m {
	case cond.Count:
		return n, true
	case cond.Min:
		return a.Min, true
	case cond.Max:
		return a.Max, true
	case cond.Avg:
		return a.Sum / n, true
	case cond.Sum:
		return a.Sum, true
	case cond.Stddev:
		return a.stddev(), true
	case cond.First:
		return a.First, true
	case cond.Last:
		return a.Last, true
	}
	q, ok := m.Quantile()
	if !ok || a.sketch == nil {
		return 0, false
	}
	v, err := a.sketch.GetValueAtQuantile(q)
	if err != nil {
		return 0, false
	}
	return math.Max(a.Min, math.Min(a.Max, v)), true
}

func (a *Agg) stddev() float64 {
	if a.Min == a.Max {
		return 0
	}
	n := float64(a.Count)
	mean := a.Sum / n
	variance := math.FMA(-mean, mean, a.SumSq/n)
	if variance < 0 {
		variance = 0
	}
	hi := a.Max/2 - a.Min/2 // halves first: Max−Min can overflow
	lo := hi * math.Sqrt(2/n)
	return math.Max(lo, math.Min(hi, math.Sqrt(variance)))
}
