package queryeval

import (
	"slices"
	"strconv"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/promql/parser/posrange"
	"github.com/prometheus/prometheus/schema"

	"github.com/aerie-db/aerie/internal/queryparse"
)

// Labels of the synthetic series. They never reach a result: a rollup is
// planned only under an aggregation that keeps its `by` labels alone.
const (
	rollupLabel = "__aerie_rollup__" // matcher of a rollup's selector: its index
	seriesLabel = "__aerie_series__" // a series' index in its rollup: no two collide
)

// rollupFuncs are the range functions a rollup evaluates: those whose only
// argument is the matrix, with Prometheus' handling of the metric name
// (keepName: the function keeps it).
var rollupFuncs = map[string]struct{ keepName bool }{
	"avg_over_time": {}, "min_over_time": {}, "max_over_time": {}, "sum_over_time": {},
	"count_over_time": {}, "stddev_over_time": {}, "stdvar_over_time": {},
	"present_over_time": {}, "last_over_time": {keepName: true}, "first_over_time": {keepName: true},
	"changes": {}, "resets": {}, "deriv": {},
	"rate": {}, "increase": {}, "delta": {}, "irate": {}, "idelta": {},
}

// keepsByLabels are the aggregations whose output series carry their
// grouping labels and nothing else.
var keepsByLabels = map[parser.ItemType]bool{
	parser.SUM: true, parser.AVG: true, parser.MIN: true, parser.MAX: true, parser.COUNT: true,
	parser.GROUP: true, parser.STDDEV: true, parser.STDVAR: true,
}

// rollup is one planned range-function call.
type rollup struct {
	call     *parser.Call // the original call (its args give annotations their positions)
	sel      *parser.VectorSelector
	rangeMs  int64
	keepName bool // the synthetic series keep __name__
	// restored: the call's names restored by label_replace (planRestored);
	// a series without __name__ loses its metadata labels.
	restored bool
	// top: the call's answer is the query's answer: the synthetic series
	// carry exactly the labels Prometheus answers with. Wherever names
	// are dropped at once (!keepName), no two may collide: Prometheus'
	// engine then reports the error.
	top bool
}

// below is what the nearest ancestor of an expression that is not a
// parenthesis (nor a label function passed through) lets a rollup there
// be.
type below int

const (
	belowOther below = iota // no rollup: its series' labels reach the answer
	belowAgg                // an aggregation keeping its `by` labels alone
	// belowNamedAgg: such an aggregation whose `by` labels hold __name__,
	// with delayed name removal. The range function's result keeps its
	// name until the end of the query, flagged to be dropped; the
	// synthetic series cannot carry that flag. A rollup is planned there
	// only under label_replace(…, "__name__", "$1", "__name__", "(.+)"),
	// which sets the name again and clears the flag in Prometheus' engine
	// as on the synthetic series (the form in which the name
	// compatibility asks such queries, internal/api/namecompat.go).
	belowNamedAgg
	// belowNamedTop: belowNamedAgg that is the query's answer (alone or
	// in arithmetic with a number, which reads no name). The end of
	// the query drops the names it groups by, so a rollup directly under
	// it that reads one metric name (an equality on __name__) is planned
	// with the name dropped at once: its groups are the same, and nothing
	// reads the name before the end (double-groupby-1 in VictoriaMetrics'
	// dialect: avg(avg_over_time(x[1h])) by (__name__, hostname)).
	belowNamedTop
)

// plan finds the rollups of expr and replaces each, in expr, by the vector
// selector of its synthetic series; it returns the new root (expr itself
// unless expr is a rollup). expr must be the caller's own copy.
// delayed says whether the engine removes names late (label_replace and
// label_join may then see __name__ after a range function).
func plan(expr parser.Expr, delayed bool) (parser.Expr, []*rollup) {
	var rs []*rollup
	var walk func(e parser.Expr, b below, labelFns bool) parser.Expr
	top := true // e is the query's answer (the root, or in its parentheses)
	// walk returns what replaces e. labelFns: label functions may stand
	// between e and the aggregation b names.
	walk = func(e parser.Expr, b below, labelFns bool) parser.Expr {
		isTop := top
		if _, paren := e.(*parser.ParenExpr); !paren {
			top = false
		}
		switch n := e.(type) {
		case *parser.AggregateExpr:
			nb := belowOther
			if keepsByLabels[n.Op] && !n.Without && n.Param == nil && !slices.ContainsFunc(n.Grouping, reservedLabel) {
				nb = belowAgg
				if delayed && slices.Contains(n.Grouping, labels.MetricName) {
					nb = belowNamedAgg
					if isTop {
						nb = belowNamedTop
					}
				}
			}
			n.Expr = walk(n.Expr, nb, nb != belowOther)
		case *parser.ParenExpr:
			n.Expr = walk(n.Expr, b, labelFns)
		case *parser.Call:
			if r := planRestored(n, delayed); r != nil && (isTop || b != belowOther) {
				// label_replace restoring the names of a rollup that
				// keeps them is the rollup itself: Prometheus' engine
				// is spared the label_replace.
				r.top = isTop
				rs = append(rs, r)
				return rollupSelector(len(rs)-1, n.PosRange)
			}
			r := planCall(n, delayed)
			if r != nil && b == belowNamedTop && SingleName(r.sel.LabelMatchers) {
				r.keepName = rollupFuncs[n.Func.Name].keepName
				b = belowAgg
			}
			if r != nil && (b == belowAgg || isTop) {
				if b != belowAgg {
					r.top, r.keepName = true, rollupFuncs[n.Func.Name].keepName
				}
				rs = append(rs, r)
				return rollupSelector(len(rs)-1, n.PosRange)
			}
			through := delayed && labelFns && (n.Func.Name == "label_replace" || n.Func.Name == "label_join")
			nb := b
			switch {
			case b == belowNamedTop || b == belowNamedAgg:
				nb = belowNamedAgg
				if restoresName(n) {
					nb = belowAgg
				}
			}
			for i, a := range n.Args {
				if through && i == 0 {
					n.Args[i] = walk(a, nb, true)
				} else {
					n.Args[i] = walk(a, belowOther, false)
				}
			}
		case *parser.BinaryExpr:
			// The query's answer as arithmetic between a number and one
			// side (`rate(x[5m]) * 8`): that side's labels reach the
			// answer as they are, so it is the answer as far as a rollup
			// is concerned.
			arith := isTop && n.Op.IsOperator() && !n.Op.IsComparisonOperator() && !n.Op.IsSetOperator()
			top = arith && isNumber(n.RHS)
			n.LHS = walk(n.LHS, belowOther, false)
			top = arith && isNumber(n.LHS)
			n.RHS = walk(n.RHS, belowOther, false)
		case *parser.UnaryExpr:
			n.Expr = walk(n.Expr, belowOther, false)
		case *parser.StepInvariantExpr:
			n.Expr = walk(n.Expr, belowOther, false)
		case *parser.SubqueryExpr, *parser.MatrixSelector, *parser.VectorSelector,
			*parser.NumberLiteral, *parser.StringLiteral:
			// A subquery steps at its own times: nothing below it is planned.
		}
		return e
	}
	root := walk(expr, belowOther, false)
	return root, rs
}

// rollupSelector is the vector selector of rollup i's synthetic series.
func rollupSelector(i int, pos posrange.PositionRange) *parser.VectorSelector {
	return &parser.VectorSelector{
		LabelMatchers: []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, rollupLabel, strconv.Itoa(i))},
		PosRange:      pos,
	}
}

// planRestored returns the rollup of a label_replace restoring the names
// (restoresName) of a rollup call, with delayed name removal, or nil. Its
// series are the rollup's with their names kept, as label_replace leaves
// them, and no drop mark (label_replace clears it); a series without a
// name keeps its mark, so its metadata labels are dropped at the end, as
// the rollup does for it (rollup.restored).
func planRestored(c *parser.Call, delayed bool) *rollup {
	if !delayed || !restoresName(c) {
		return nil
	}
	inner, ok := unparen(c.Args[0]).(*parser.Call)
	if !ok {
		return nil
	}
	r := planCall(inner, delayed)
	if r != nil {
		r.keepName, r.restored = true, true
	}
	return r
}

// unparen is e without the parentheses around it.
func unparen(e parser.Expr) parser.Expr {
	for {
		p, ok := e.(*parser.ParenExpr)
		if !ok {
			return e
		}
		e = p.Expr
	}
}

// isNumber tells a number literal, in parentheses or not.
func isNumber(e parser.Expr) bool {
	for {
		switch n := e.(type) {
		case *parser.ParenExpr:
			e = n.Expr
		case *parser.NumberLiteral:
			return true
		default:
			return false
		}
	}
}

// SingleName reports whether ms select one metric name by equality.
func SingleName(ms []*labels.Matcher) bool {
	for _, m := range ms {
		if m.Name == labels.MetricName && m.Type == labels.MatchEqual {
			return true
		}
	}
	return false
}

// reservedLabel tells the labels an aggregation may not group a rollup by:
// the synthetic series' own, and the metadata labels other than __name__
// that the end of a query drops with it (__type__, __unit__).
func reservedLabel(name string) bool {
	return name == rollupLabel || name == seriesLabel || (name != labels.MetricName && schema.IsMetadataLabel(name))
}

// restoresName tells label_replace(v, "__name__", "$1", "__name__", "(.+)"),
// which sets every named series' name to itself.
func restoresName(c *parser.Call) bool {
	if c.Func.Name != "label_replace" || len(c.Args) != 5 {
		return false
	}
	want := []string{labels.MetricName, "$1", labels.MetricName, "(.+)"}
	for i, w := range want {
		s, ok := c.Args[i+1].(*parser.StringLiteral)
		if !ok || s.Val != w {
			return false
		}
	}
	return true
}

// planCall returns the rollup of a call, or nil if it is not one.
func planCall(c *parser.Call, delayed bool) *rollup {
	f, ok := rollupFuncs[c.Func.Name]
	if !ok || len(c.Args) != 1 {
		return nil
	}
	ms, ok := c.Args[0].(*parser.MatrixSelector)
	if !ok {
		return nil
	}
	vs, ok := ms.VectorSelector.(*parser.VectorSelector)
	if !ok || vs.Offset != 0 || vs.OriginalOffset != 0 || vs.Timestamp != nil || vs.StartOrEnd != 0 || vs.Anchored || vs.Smoothed {
		return nil
	}
	for _, m := range vs.LabelMatchers {
		if m.Name == rollupLabel || m.Name == seriesLabel {
			return nil
		}
	}
	return &rollup{call: c, sel: vs, rangeMs: ms.Range.Milliseconds(), keepName: f.keepName || delayed}
}

// Plans tells whether an Engine would evaluate some of the query's range
// functions itself (with delayed name removal on or off), or, asked as a
// range query, all of it (a vector plan), rather than hand it all to the
// wrapped engine.
func Plans(qs string, delayedNameRemoval bool) bool {
	expr, err := queryparse.ParseExpr(qs)
	if err != nil {
		return false
	}
	if root, _ := planVector(expr); root != nil {
		return true
	}
	_, rs := plan(expr, delayedNameRemoval)
	return len(rs) > 0
}
