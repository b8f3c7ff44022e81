package extract

import (
	"errors"
	"fmt"
	"math"

	"github.com/aerie-db/aerie/internal/sensor/cond"
	"github.com/aerie-db/aerie/internal/sensor/enum"
)

// Mode is one of Peregreen's four kinds of extraction (paper §3.1), chosen
// by the interval and the function.
type Mode uint8

// The extraction modes.
const (
	ModeFull           Mode = 1 // interval 0, function none: every point
	ModeSampling       Mode = 2 // interval > 0, function none: first point per window
	ModeAggregation    Mode = 3 // aggregation metrics: one row per window
	ModeTransformation Mode = 4 // transformations of every point (interval 0) or of the samples
)

// String returns "full", "sampling", "aggregation" or "transformation".
func (m Mode) String() string { return enum.Name(modeNames[:], m, "Mode") }

var modeNames = [...]string{ModeFull: "full", ModeSampling: "sampling", ModeAggregation: "aggregation", ModeTransformation: "transformation"}

// Params describe one extraction of one series.
type Params struct {
	// From and To bound the extraction in milliseconds since the epoch,
	// both inclusive (Peregreen's from-to).
	From, To int64
	// Interval is the window length in milliseconds, 0 for none. Window
	// i is [From + i·Interval, From + (i+1)·Interval), the last one
	// clipped at To. With Interval 0 there is one window, [From, To].
	Interval int64
	// Func is what to do with the points of each window.
	Func Func
}

// Validate checks that From <= To < MaxInt64, that To − From fits in an
// int64 and that Interval is not negative.
func (p Params) Validate() error {
	switch {
	case p.From > p.To:
		return fmt.Errorf("extract: from %d is after to %d", p.From, p.To)
	case p.To == math.MaxInt64:
		return fmt.Errorf("extract: to %d must be below %d", p.To, int64(math.MaxInt64))
	case p.To-p.From < 0:
		return fmt.Errorf("extract: range from %d to %d is longer than %d ms", p.From, p.To, int64(math.MaxInt64))
	case p.Interval < 0:
		return fmt.Errorf("extract: negative interval %d", p.Interval)
	}
	return nil
}

// Mode returns the kind of extraction p asks for.
func (p Params) Mode() Mode {
	switch p.Func.kind {
	case FuncAggregate:
		return ModeAggregation
	case FuncTransform:
		return ModeTransformation
	}
	if p.Interval == 0 {
		return ModeFull
	}
	return ModeSampling
}

// Window returns the window [start, end) that holds t, which must be in
// [From, To]. end is at most To+1.
func (p Params) Window(t int64) (start, end int64) {
	if p.Interval == 0 {
		return p.From, p.To + 1
	}
	start = p.From + (t-p.From)/p.Interval*p.Interval
	end = start + p.Interval
	if end > p.To+1 || end < start {
		end = p.To + 1
	}
	return start, end
}

// WindowContains reports whether [start, end) is non-empty, lies in
// [From, To] and inside one window: whether an Aggregator accepts an Agg
// summarising it (Aggregator.PushAgg).
func (p Params) WindowContains(start, end int64) bool {
	if start >= end || start < p.From || end-1 > p.To {
		return false
	}
	ws, we := p.Window(start)
	return ws <= start && end <= we
}

// Emitter receives an operator's output. An error it returns stops the
// operator and is returned from Push, PushAgg or Close.
type Emitter interface {
	// Point receives a point of a full, sampling or transformation
	// extraction.
	Point(t int64, v float64) error
	// Row receives the row of an aggregation window starting at t, one
	// value per Func.Columns(). vals is reused after Row returns.
	Row(t int64, vals []float64) error
}

// Op is a streaming extraction operator over one series. Push the series'
// points in time order (equal times allowed), then Close, which emits what
// is still pending. Neither may be called after Close or after an error.
type Op interface {
	// Push adds the point (t, v), t in [From, To] and not before the
	// previous point, and emits what it makes final.
	Push(t int64, v float64) error
	// Close ends the input and emits what is still pending.
	Close() error
}

var errClosed = errors.New("extract: operator used after Close or after an error")

// New returns the operator for p's mode, emitting to out. For
// ModeAggregation it is an *Aggregator.
func New(p Params, out Emitter) (Op, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if out == nil {
		return nil, errors.New("extract: nil Emitter")
	}
	switch p.Mode() {
	case ModeAggregation:
		a, err := NewAggregator(p, out)
		if err != nil {
			return nil, err
		}
		return a, nil
	case ModeFull:
		return &pointOp{order: newOrder(p), out: out}, nil
	}
	return &pointOp{order: newOrder(p), sample: p.Interval > 0, chain: newChain(p.Func.steps), out: out, winEnd: p.From}, nil
}

// order checks that input arrives in time order within [From, To].
type order struct {
	p       Params
	minT    int64 // earliest time the next point may have
	minSpan int64 // earliest start the next Agg may have
	done    bool  // closed or failed
}

func newOrder(p Params) order { return order{p: p, minT: p.From, minSpan: p.From} }

// fail ends the operator if err is not nil: every later call returns
// errClosed. It returns err.
func (o *order) fail(err error) error {
	if err != nil {
		o.done = true
	}
	return err
}

// close ends the operator, or returns errClosed if it had ended.
func (o *order) close() error {
	if o.done {
		return errClosed
	}
	o.done = true
	return nil
}

func (o *order) point(t int64) error {
	if o.done {
		return errClosed
	}
	if t < o.p.From || t > o.p.To {
		return o.fail(fmt.Errorf("extract: point at %d outside [%d, %d]", t, o.p.From, o.p.To))
	}
	if t < o.minT {
		return o.fail(fmt.Errorf("extract: point at %d before %d: points must arrive in time order", t, o.minT))
	}
	o.minT, o.minSpan = t, t+1
	return nil
}

// pointOp runs full, sampling and transformation extractions.
type pointOp struct {
	order
	sample bool  // emit only the first non-NaN point of each window
	chain  chain // transformations
	out    Emitter
	winEnd int64 // end of the window already sampled
}

func (o *pointOp) Push(t int64, v float64) error {
	if err := o.point(t); err != nil {
		return err
	}
	if o.sample {
		if math.IsNaN(v) || t < o.winEnd {
			return nil
		}
		_, o.winEnd = o.p.Window(t)
	}
	v, ok := o.chain.apply(v)
	if !ok {
		return nil
	}
	return o.fail(o.out.Point(t, v))
}

func (o *pointOp) Close() error { return o.close() }

// Aggregator is the operator of ModeAggregation. Besides points it accepts
// pre-computed aggregates of spans inside one window (PushAgg), such as the
// engine's block metrics, so rows come from the same code with data, without
// data, and with both: data for the edges of a range that metric intervals
// do not cover, metrics for the rest.
type Aggregator struct {
	order
	metrics []cond.Metric
	out     Emitter
	sketch  bool  // Func needs quantiles
	cur     Agg   // current window
	win     int64 // start of the current window
	winEnd  int64 // end of the current window; win == winEnd before the first
	row     []float64
}

// NewAggregator returns the operator of an aggregation extraction.
func NewAggregator(p Params, out Emitter) (*Aggregator, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if p.Func.kind != FuncAggregate {
		return nil, fmt.Errorf("extract: function %q is not an aggregation", p.Func.String())
	}
	if out == nil {
		return nil, errors.New("extract: nil Emitter")
	}
	a := &Aggregator{
		order:   newOrder(p),
		metrics: p.Func.metrics,
		out:     out,
		sketch:  p.Func.NeedsSketch(),
		win:     p.From,
		winEnd:  p.From,
		row:     make([]float64, len(p.Func.metrics)),
	}
	if a.sketch {
		a.cur = NewAgg(WithSketch())
	}
	return a, nil
}

// Push adds a point.
func (a *Aggregator) Push(t int64, v float64) error {
	if err := a.point(t); err != nil {
		return err
	}
	if t >= a.winEnd {
		if err := a.enter(t); err != nil {
			return err
		}
	}
	a.cur.Add(v)
	return nil
}

// PushAgg adds the aggregate of the points in [start, end), which must
// satisfy Params.WindowContains and follow every point and span pushed
// before. When the function needs quantiles, a must have a sketch or be
// empty; the engine's block metrics have none, so such aggregations need
// the data.
func (a *Aggregator) PushAgg(start, end int64, agg Agg) error {
	if a.done {
		return errClosed
	}
	if !a.p.WindowContains(start, end) {
		return a.fail(fmt.Errorf("extract: span [%d, %d) is not inside one window of [%d, %d] by %d ms; aggregate its points instead", start, end, a.p.From, a.p.To, a.p.Interval))
	}
	if start < a.minSpan {
		return a.fail(fmt.Errorf("extract: span [%d, %d) starts before %d: spans and points must arrive in time order", start, end, a.minSpan))
	}
	if a.sketch && agg.Count > 0 && agg.sketch == nil {
		return a.fail(fmt.Errorf("extract: span [%d, %d) has no sketch for %s; aggregate its points instead", start, end, a.p.Func.String()))
	}
	a.minT, a.minSpan = end, end
	if start >= a.winEnd {
		if err := a.enter(start); err != nil {
			return err
		}
	}
	a.cur.Merge(agg)
	return nil
}

// enter emits the current window's row and starts the window holding t.
func (a *Aggregator) enter(t int64) error {
	if err := a.flush(); err != nil {
		return err
	}
	a.win, a.winEnd = a.p.Window(t)
	a.cur.Reset()
	return nil
}

// flush emits the current window's row if it has values.
func (a *Aggregator) flush() error {
	if a.cur.Count == 0 {
		return nil
	}
	for i, m := range a.metrics {
		v, ok := a.cur.Value(m)
		if !ok {
			v = math.NaN()
		}
		a.row[i] = v
	}
	return a.fail(a.out.Row(a.win, a.row))
}

// Close emits the last window's row.
func (a *Aggregator) Close() error {
	if err := a.close(); err != nil {
		return err
	}
	return a.flush()
}
