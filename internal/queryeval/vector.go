package queryeval

import (
	"context"
	"math"
	"slices"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/schema"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/util/annotations"

	"github.com/aerie-db/aerie/internal/tsdb"
)

// A vector plan is a range query made only of plain vector selectors,
// operators between a selector's vector and a number, and set operators
// (and, or, unless) between two vectors: Grafana's raw panels and
// TSBS' high-cpu. Prometheus' engine evaluates it a step at a time:
// every selector seeks every series at every step, and every operator
// gathers its operands' samples and matches their signatures again at
// every step. A vector plan decodes each series once, finds its value at
// every step in one pass (stepSeries), computes each signature once per
// series, and applies each operator to whole arrays.
type vnode struct {
	kind     vkind
	sel      *parser.VectorSelector // vSelector
	idx      int                    // vSelector: its place in the plan's selectors
	op       parser.ItemType        // vScalar, vSet
	num      float64                // vScalar: the number
	swap     bool                   // vScalar: the number is the left operand
	rbool    bool                   // vScalar: a comparison with bool
	match    *parser.VectorMatching // vSet
	lhs, rhs *vnode
}

type vkind uint8

const (
	vSelector vkind = iota
	vScalar         // a vector and a number
	vSet            // and, or, unless
)

// planVector returns the vector plan of expr and its selectors, or nil
// if expr is not one.
func planVector(expr parser.Expr) (*vnode, []*vnode) {
	var sels []*vnode
	var walk func(e parser.Expr) *vnode
	walk = func(e parser.Expr) *vnode {
		switch n := e.(type) {
		case *parser.ParenExpr:
			return walk(n.Expr)
		case *parser.VectorSelector:
			if !plainSelector(n) {
				return nil
			}
			v := &vnode{kind: vSelector, sel: n, idx: len(sels)}
			sels = append(sels, v)
			return v
		case *parser.BinaryExpr:
			lt, rt := n.LHS.Type(), n.RHS.Type()
			switch {
			case lt == parser.ValueTypeVector && rt == parser.ValueTypeVector:
				if !n.Op.IsSetOperator() || n.VectorMatching == nil || n.VectorMatching.Card != parser.CardManyToMany {
					return nil
				}
				l := walk(n.LHS)
				if l == nil {
					return nil
				}
				r := walk(n.RHS)
				if r == nil {
					return nil
				}
				return &vnode{kind: vSet, op: n.Op, match: n.VectorMatching, lhs: l, rhs: r}
			case lt == parser.ValueTypeVector && rt == parser.ValueTypeScalar:
				x, ok := number(n.RHS)
				if l := walk(n.LHS); ok && l != nil && scalarOp(n.Op) {
					return &vnode{kind: vScalar, op: n.Op, num: x, rbool: n.ReturnBool, lhs: l}
				}
			case lt == parser.ValueTypeScalar && rt == parser.ValueTypeVector:
				x, ok := number(n.LHS)
				if r := walk(n.RHS); ok && r != nil && scalarOp(n.Op) {
					return &vnode{kind: vScalar, op: n.Op, num: x, swap: true, rbool: n.ReturnBool, lhs: r}
				}
			}
		}
		return nil
	}
	root := walk(expr)
	if root == nil {
		return nil, nil
	}
	return root, sels
}

// plainSelector tells a selector without offset, @ or the experimental
// anchored and smoothed forms, and without the synthetic series' labels.
func plainSelector(vs *parser.VectorSelector) bool {
	if vs.Offset != 0 || vs.OriginalOffset != 0 || vs.OriginalOffsetExpr != nil || vs.Timestamp != nil ||
		vs.StartOrEnd != 0 || vs.Anchored || vs.Smoothed {
		return false
	}
	for _, m := range vs.LabelMatchers {
		if m.Name == rollupLabel || m.Name == seriesLabel {
			return false
		}
	}
	return true
}

// number is a number literal's value, in parentheses or not.
func number(e parser.Expr) (float64, bool) {
	for {
		switch n := e.(type) {
		case *parser.ParenExpr:
			e = n.Expr
		case *parser.NumberLiteral:
			return n.Val, true
		default:
			return 0, false
		}
	}
}

// scalarOp tells the operators between a vector and a number a vector
// plan evaluates: every arithmetic and comparison operator.
func scalarOp(op parser.ItemType) bool {
	switch op {
	case parser.ADD, parser.SUB, parser.MUL, parser.DIV, parser.POW, parser.MOD, parser.ATAN2,
		parser.EQLC, parser.NEQ, parser.GTR, parser.LSS, parser.GTE, parser.LTE:
		return true
	}
	return false
}

// stepSeries is a series' value at every step of a range query (f[i] at
// start+i·step where ok[i]).
type stepSeries struct {
	lset labels.Labels
	// dropName: an operator dropped its metric name, at once (lset has
	// none) or, with delayed name removal, at the end of the query.
	dropName bool
	f        []float64
	ok       []bool
}

// vectorEval is the evaluation of one vector plan.
type vectorEval struct {
	start, end, step, lookback int64
	delayed                    bool
	sels                       [][]*stepSeries // by selector
	perStep                    []int64         // selected points by step (query statistics)
}

// steps is the number of steps.
func (ve *vectorEval) steps() int { return int((ve.end-ve.start)/ve.step) + 1 }

// selectAll loads every selector's series (selectSeries), the series of
// all selectors decoded together, in parallel.
func (ve *vectorEval) selectAll(ctx context.Context, q storage.Querier, sels []*vnode, helpers chan struct{}, opts Options) (annotations.Annotations, error) {
	var (
		all   []storage.Series
		owner []int // the selector of each of all
		annos annotations.Annotations
	)
	hints := &storage.SelectHints{Start: ve.start - ve.lookback + 1, End: ve.end, Step: ve.step}
	for i, s := range sels {
		set := q.Select(tsdb.WithEmptySeries(tsdb.WithoutReadAhead(ctx)), false, hints, s.sel.LabelMatchers...)
		for set.Next() {
			all = append(all, set.At())
			owner = append(owner, i)
		}
		if err := set.Err(); err != nil {
			return nil, err
		}
		annos.Merge(set.Warnings())
	}
	n := ve.steps()
	// A point per series and step at most: past MaxSamples, Prometheus'
	// engine decides (it keeps only the points that exist, or fails).
	if len(all) > opts.MaxSamples/n {
		return nil, errFallback
	}
	out := make([]*stepSeries, len(all))
	err := parallel(ctx, helpers, opts.Concurrency, len(all), func() (func(context.Context, int) error, func()) {
		w := workers.Get().(*worker)
		w.raw = true
		return func(ctx context.Context, i int) error {
			s, err := ve.series(ctx, w, all[i])
			out[i] = s
			return err
		}, func() { putWorker(w) }
	})
	if err != nil {
		return nil, err
	}
	ve.sels = make([][]*stepSeries, len(sels))
	ve.perStep = make([]int64, n)
	for i, s := range out {
		if s == nil {
			continue
		}
		ve.sels[owner[i]] = append(ve.sels[owner[i]], s)
		for j, ok := range s.ok {
			if ok {
				ve.perStep[j]++
			}
		}
	}
	return annos, nil
}

// series is s's value at every step, as Prometheus' vector selector has
// it: the last sample in (t−lookback, t], unless that is a stale marker;
// nil if it has none.
func (ve *vectorEval) series(ctx context.Context, w *worker, s storage.Series) (*stepSeries, error) {
	if err := w.loadSeries(ctx, s, ve.start-ve.lookback, ve.end); err != nil {
		return nil, err
	}
	pts := w.pts
	if len(pts) == 0 {
		return nil, nil
	}
	n := ve.steps()
	out := &stepSeries{lset: s.Labels(), f: make([]float64, n), ok: make([]bool, n)}
	some := false
	j := 0 // the first sample after t
	for i, t := 0, ve.start; i < n; i, t = i+1, t+ve.step {
		for j < len(pts) && pts[j].T <= t {
			j++
		}
		if j == 0 || pts[j-1].T <= t-ve.lookback || value.IsStaleNaN(pts[j-1].F) {
			continue
		}
		out.f[i], out.ok[i], some = pts[j-1].F, true, true
	}
	if !some {
		return nil, nil
	}
	return out, nil
}

// eval evaluates the plan under v; errFallback where its answer is not
// certainly Prometheus' (series that collide once names are dropped).
func (ve *vectorEval) eval(v *vnode) ([]*stepSeries, error) {
	switch v.kind {
	case vSelector:
		return ve.sels[v.idx], nil
	case vScalar:
		in, err := ve.eval(v.lhs)
		if err != nil {
			return nil, err
		}
		return ve.scalar(v, in)
	default:
		l, err := ve.eval(v.lhs)
		if err != nil {
			return nil, err
		}
		r, err := ve.eval(v.rhs)
		if err != nil {
			return nil, err
		}
		return ve.set(v, l, r), nil
	}
}

// scalar applies an operator between each series of in (modified) and a
// number, as Prometheus' VectorscalarBinop: a comparison keeps the
// vector's value where it holds (or is 0 or 1 with bool), arithmetic
// and bool drop the metric name.
func (ve *vectorEval) scalar(v *vnode, in []*stepSeries) ([]*stepSeries, error) {
	drop := v.rbool || !v.op.IsComparisonOperator()
	out := in[:0]
	for _, s := range in {
		some := false
		for i, ok := range s.ok {
			if !ok {
				continue
			}
			l, r := s.f[i], v.num
			if v.swap {
				l, r = r, l
			}
			f, keep := elemBinop(v.op, l, r)
			if v.op.IsComparisonOperator() {
				f = s.f[i] // the vector's value, on either side
			}
			if v.rbool {
				f, keep = 0, true
				if cmpHolds(v.op, l, r) {
					f = 1
				}
			}
			s.f[i], s.ok[i] = f, keep
			some = some || keep
		}
		if !some {
			continue
		}
		if drop {
			if !ve.delayed {
				s.lset = s.lset.DropReserved(schema.IsMetadataLabel)
			}
			s.dropName = true
		}
		out = append(out, s)
	}
	if drop && !ve.delayed && collide(out) {
		// Prometheus merges them, or fails if two share a step.
		return nil, errFallback
	}
	return out, nil
}

// elemBinop is Prometheus' operator between two floats: the result, and
// whether a comparison keeps it.
func elemBinop(op parser.ItemType, l, r float64) (float64, bool) {
	switch op {
	case parser.ADD:
		return l + r, true
	case parser.SUB:
		return l - r, true
	case parser.MUL:
		return l * r, true
	case parser.DIV:
		return l / r, true
	case parser.POW:
		return math.Pow(l, r), true
	case parser.MOD:
		return math.Mod(l, r), true
	case parser.ATAN2:
		return math.Atan2(l, r), true
	}
	return l, cmpHolds(op, l, r)
}

// cmpHolds tells whether comparison op holds between l and r.
func cmpHolds(op parser.ItemType, l, r float64) bool {
	switch op {
	case parser.EQLC:
		return l == r
	case parser.NEQ:
		return l != r
	case parser.GTR:
		return l > r
	case parser.LSS:
		return l < r
	case parser.GTE:
		return l >= r
	case parser.LTE:
		return l <= r
	}
	return false
}

// set applies a set operator, as Prometheus' VectorAnd, VectorOr and
// VectorUnless do at each step: each series' signature (its matching
// labels) is computed once, and the other side's presence at each step
// by signature once for all its series.
func (ve *vectorEval) set(v *vnode, l, r []*stepSeries) []*stepSeries {
	sig := signature(v.match)
	n := ve.steps()
	// present: by signature, whether some series of side has a sample
	// at each step.
	present := func(side []*stepSeries) map[string][]bool {
		m := make(map[string][]bool, len(side))
		for _, s := range side {
			k := sig(s.lset)
			p := m[k]
			if p == nil {
				p = make([]bool, n)
				m[k] = p
			}
			for i, ok := range s.ok {
				p[i] = p[i] || ok
			}
		}
		return m
	}
	// mask keeps the steps of s where the other side's presence is want.
	mask := func(s *stepSeries, p []bool, want bool) bool {
		some := false
		for i, ok := range s.ok {
			keep := ok && (p != nil && p[i]) == want
			s.ok[i] = keep
			some = some || keep
		}
		return some
	}
	var out []*stepSeries
	switch v.op {
	case parser.LAND, parser.LUNLESS:
		rp := present(r)
		for _, s := range l {
			if mask(s, rp[sig(s.lset)], v.op == parser.LAND) {
				out = append(out, s)
			}
		}
	case parser.LOR:
		lp := present(l)
		out = append(out, l...)
		for _, s := range r {
			if mask(s, lp[sig(s.lset)], false) {
				out = append(out, s)
			}
		}
	}
	return out
}

// signature returns Prometheus' matching signature of a set operator:
// the `on` labels, or every label but __name__ and the `ignoring` ones.
func signature(m *parser.VectorMatching) func(labels.Labels) string {
	buf := make([]byte, 0, 1024)
	names := slices.Clone(m.MatchingLabels)
	if m.On {
		slices.Sort(names)
		return func(ls labels.Labels) string { return string(ls.BytesWithLabels(buf, names...)) }
	}
	names = append(names, labels.MetricName)
	slices.Sort(names)
	return func(ls labels.Labels) string { return string(ls.BytesWithoutLabels(buf, names...)) }
}

// collide tells whether two series have the same labels.
func collide(ss []*stepSeries) bool {
	seen := make(map[string]struct{}, len(ss))
	for _, s := range ss {
		k := string(s.lset.Bytes(nil))
		if _, dup := seen[k]; dup {
			return true
		}
		seen[k] = struct{}{}
	}
	return false
}

// matrix is the plan's answer as Prometheus' engine gives it: the names
// marked dropped removed (delayed name removal), sorted by labels.
func (ve *vectorEval) matrix(ss []*stepSeries) (promql.Matrix, error) {
	for _, s := range ss {
		if s.dropName && ve.delayed {
			s.lset = s.lset.DropReserved(schema.IsMetadataLabel)
		}
	}
	if collide(ss) {
		return nil, errFallback
	}
	mat := make(promql.Matrix, 0, len(ss))
	for _, s := range ss {
		k := 0
		for _, ok := range s.ok {
			if ok {
				k++
			}
		}
		pts := make([]promql.FPoint, 0, k)
		for i, ok := range s.ok {
			if ok {
				pts = append(pts, promql.FPoint{T: ve.start + int64(i)*ve.step, F: s.f[i]})
			}
		}
		mat = append(mat, promql.Series{Metric: s.lset, Floats: pts, DropName: s.dropName})
	}
	slices.SortFunc(mat, func(a, b promql.Series) int { return labels.Compare(a.Metric, b.Metric) })
	return mat, nil
}
