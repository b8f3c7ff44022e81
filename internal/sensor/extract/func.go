package extract

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/aerie-db/aerie/internal/sensor/cond"
	"github.com/aerie-db/aerie/internal/sensor/enum"
)

// Limits on a function (ParseFunc).
const (
	// MaxFuncLen is the longest function ParseFunc accepts, in bytes.
	MaxFuncLen = 1024
	// MaxTransforms is the most transformations one function may chain.
	MaxTransforms = 32
	// MaxMovavg is the largest movavg window, and the most points all
	// movavg steps of one function may hold together.
	MaxMovavg = 100000
)

// FuncKind says what a Func does to the points.
type FuncKind uint8

// The kinds of function. The zero Func is FuncNone.
const (
	FuncNone      FuncKind = 0 // points pass unchanged
	FuncAggregate FuncKind = 1 // one row of metrics per window
	FuncTransform FuncKind = 2 // each point is transformed
)

// String returns "none", "aggregate" or "transform".
func (k FuncKind) String() string { return enum.Name(funcKindNames[:], k, "FuncKind") }

var funcKindNames = [...]string{FuncNone: "none", FuncAggregate: "aggregate", FuncTransform: "transform"}

// Func is a parsed extraction function: none, a list of aggregation
// metrics, or a chain of transformations. The zero Func is none. A Func is
// immutable and may be shared by many operators.
type Func struct {
	kind    FuncKind
	metrics []cond.Metric // FuncAggregate
	steps   []step        // FuncTransform, applied in order
}

type stepKind uint8

const (
	stepAbs    stepKind = 1
	stepDiff   stepKind = 2
	stepCumsum stepKind = 3
	stepSub    stepKind = 4 // v - k
	stepMul    stepKind = 5 // v * k
	stepMovavg stepKind = 6 // mean of the last n points
)

var stepNames = [...]string{stepAbs: "abs", stepDiff: "diff", stepCumsum: "cumsum", stepSub: "sub", stepMul: "mul", stepMovavg: "movavg"}

// step is one transformation of a Func.
type step struct {
	kind stepKind
	k    float64 // stepSub, stepMul
	n    int     // stepMovavg
}

func (s step) String() string {
	switch s.kind {
	case stepSub, stepMul:
		return stepNames[s.kind] + ":" + strconv.FormatFloat(s.k, 'g', -1, 64)
	case stepMovavg:
		return stepNames[s.kind] + ":" + strconv.Itoa(s.n)
	}
	return stepNames[s.kind]
}

// Kind returns what f does.
func (f Func) Kind() FuncKind { return f.kind }

// Metrics returns the aggregation metrics in requested order, or nil if f
// is not an aggregation.
func (f Func) Metrics() []cond.Metric { return slices.Clone(f.metrics) }

// Columns returns the column names of the rows an aggregation emits, in
// order: the metric names ("min", "p50"). It is nil if f is not an
// aggregation.
func (f Func) Columns() []string {
	if f.kind != FuncAggregate {
		return nil
	}
	cols := make([]string, len(f.metrics))
	for i, m := range f.metrics {
		cols[i] = m.String()
	}
	return cols
}

// NeedsSketch reports whether f aggregates a quantile (p50, p90, p99), which
// only data can answer: block metrics hold no sketch.
func (f Func) NeedsSketch() bool {
	for _, m := range f.metrics {
		if _, ok := m.Quantile(); ok {
			return true
		}
	}
	return false
}

// String returns the canonical form of f, which ParseFunc parses back to
// an equal Func: "none", "min,max,avg" or "abs,sub:1.5,movavg:10".
func (f Func) String() string {
	var b strings.Builder
	switch f.kind {
	case FuncAggregate:
		for i, m := range f.metrics {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(m.String())
		}
	case FuncTransform:
		for i, s := range f.steps {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(s.String())
		}
	default:
		return "none"
	}
	return b.String()
}

// SyntaxError reports a function ParseFunc rejects and the byte where the
// problem is.
type SyntaxError struct {
	Offset int    // byte offset in the function; len(function) at its end
	Msg    string // what was wrong, naming the offending item
}

// Error formats e as `function: byte 4: unknown function "mean" (…)`.
func (e *SyntaxError) Error() string {
	return fmt.Sprintf("function: byte %d: %s", e.Offset, e.Msg)
}

const funcHelp = `aggregations: count, min, max, avg, sum, stddev, first, last, p50, p90, p99; transformations: abs, diff, cumsum, sub:k, mul:k, movavg:n; or none`

// ParseFunc parses an extraction function:
//
//	none
//	metric{,metric}         aggregation: count min max avg sum stddev first last p50 p90 p99
//	transform{,transform}   transformations, applied left to right:
//	                        abs, diff, cumsum, sub:k (v−k), mul:k (v·k), movavg:n
//
// k is a finite float as strconv.ParseFloat accepts it, n an integer in
// 1..MaxMovavg. Spaces around items are ignored. Aggregations and
// transformations cannot be mixed, a metric cannot be listed twice, and
// the empty string is an error (callers default a missing parameter to
// "none"). Errors are *SyntaxError naming the item and its byte offset.
func ParseFunc(s string) (Func, error) {
	fail := func(off int, format string, args ...any) (Func, error) {
		return Func{}, &SyntaxError{Offset: off, Msg: fmt.Sprintf(format, args...)}
	}
	if len(s) > MaxFuncLen {
		return fail(MaxFuncLen, "function is %d bytes long; the limit is %d", len(s), MaxFuncLen)
	}
	if strings.TrimSpace(s) == "" {
		return fail(0, `empty function: want "none", aggregations such as "min,max,avg" or transformations such as "abs,movavg:10"`)
	}
	var (
		f        Func
		firstOff int // offset of the item that set f.kind
		movavg   int // points held by movavg steps so far
		seen     [cond.P99 + 1]bool
	)
	for off := 0; off <= len(s); {
		end := strings.IndexByte(s[off:], ',')
		if end < 0 {
			end = len(s)
		} else {
			end += off
		}
		raw := s[off:end]
		item := strings.TrimLeft(raw, " \t")
		at := off + len(raw) - len(item)
		item = strings.TrimRight(item, " \t")
		next := end + 1
		if item == "" {
			return fail(at, "empty item in function list")
		}
		if item == "none" {
			if off != 0 || end != len(s) {
				return fail(at, `"none" cannot be combined with other functions`)
			}
			return Func{}, nil
		}
		name, arg, hasArg := strings.Cut(item, ":")
		if m, err := cond.ParseMetric(name); err == nil {
			if hasArg {
				return fail(at, "aggregation %q takes no argument", name)
			}
			if f.kind == FuncTransform {
				return fail(at, "aggregation %q cannot follow transformation %q at byte %d: a function aggregates or transforms, not both", name, stepNames[f.steps[0].kind], firstOff)
			}
			if seen[m] {
				return fail(at, "metric %q listed twice", name)
			}
			if f.kind == FuncNone {
				f.kind, firstOff = FuncAggregate, at
			}
			seen[m] = true
			f.metrics = append(f.metrics, m)
			off = next
			continue
		}
		st, err := parseStep(name, arg, hasArg, at+len(name)+1)
		if err != nil {
			return Func{}, err
		}
		if st.kind == 0 {
			return fail(at, "unknown function %s (%s)", quote(name), funcHelp)
		}
		if f.kind == FuncAggregate {
			return fail(at, "transformation %q cannot follow aggregation %q at byte %d: a function aggregates or transforms, not both", stepNames[st.kind], f.metrics[0].String(), firstOff)
		}
		if len(f.steps) == MaxTransforms {
			return fail(at, "more than %d transformations", MaxTransforms)
		}
		if st.kind == stepMovavg {
			if movavg += st.n; movavg > MaxMovavg {
				return fail(at, "movavg windows add up to %d points; the limit is %d", movavg, MaxMovavg)
			}
		}
		if f.kind == FuncNone {
			f.kind, firstOff = FuncTransform, at
		}
		f.steps = append(f.steps, st)
		off = next
	}
	return f, nil
}

// parseStep parses transformation name with its argument, which starts at
// byte argOff. It returns a zero step for an unknown name.
func parseStep(name, arg string, hasArg bool, argOff int) (step, error) {
	fail := func(off int, format string, args ...any) (step, error) {
		return step{}, &SyntaxError{Offset: off, Msg: fmt.Sprintf(format, args...)}
	}
	nameOff := argOff - len(name) - 1
	var st step
	st.kind, _ = enum.Parse[stepKind](stepNames[:], name)
	switch st.kind {
	case 0:
		return st, nil
	case stepAbs, stepDiff, stepCumsum:
		if hasArg {
			return fail(nameOff, "transformation %q takes no argument", name)
		}
	case stepSub, stepMul:
		if !hasArg || arg == "" {
			return fail(nameOff, "transformation %q needs a number: %s:k, e.g. %s:1.5", name, name, name)
		}
		k, err := strconv.ParseFloat(arg, 64)
		switch {
		case err == nil && (math.IsNaN(k) || math.IsInf(k, 0)):
			return fail(argOff, "%s:%s: NaN and Inf are not allowed", name, arg)
		case err != nil:
			return fail(argOff, "%s: invalid number %s", name, quote(arg))
		}
		st.k = k
	case stepMovavg:
		if !hasArg || arg == "" {
			return fail(nameOff, "transformation \"movavg\" needs a window: movavg:n with n from 1 to %d points", MaxMovavg)
		}
		n, err := strconv.Atoi(arg)
		if err != nil || n < 1 || n > MaxMovavg {
			return fail(argOff, "movavg:n needs an integer window of 1 to %d points, found %s", MaxMovavg, quote(arg))
		}
		st.n = n
	}
	return st, nil
}

// quote quotes user input for an error message, cut at 32 bytes.
func quote(s string) string {
	const max = 32
	if len(s) > max {
		return fmt.Sprintf("%q…", s[:max])
	}
	return fmt.Sprintf("%q", s)
}
