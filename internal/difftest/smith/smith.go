// Package smith generates random PromQL expressions over a difftest
// workload's series with promqlsmith (github.com/cortexproject/promqlsmith,
// the generator promql-engine's and Cortex's engine fuzz tests use), so that
// two query engines can be compared on the same storage with expressions
// nobody wrote by hand.
//
// It is a package of its own, imported only by tests, because importing
// promqlsmith registers a holt_winters function in Prometheus' parser (its
// init does), which no other test binary should see.
//
// Invariants:
//  1. Expressions is a pure function of its arguments: the same workload,
//     mix, seed and count give the same expressions, so a failure reproduces
//     from the seed the test logs.
//  2. Every expression returned parses with Prometheus' parser, is unique,
//     and selects only series of the workload (promqlsmith builds matchers
//     from w.Series).
//  3. No expression uses the @ modifier with a time outside the workload's
//     span; offsets are at most 5 minutes (promqlsmith's), either sign.
package smith

import (
	"math/rand"

	"github.com/cortexproject/promqlsmith"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/aerie-db/aerie/internal/difftest"
)

// Mix chooses what the generated expressions are made of.
type Mix int

const (
	// General is promqlsmith's defaults: every stable function and
	// aggregation, binary operators with vector matching, subqueries,
	// offsets and @.
	General Mix = iota
	// Rollups leans on what a rollup evaluator plans: range functions
	// over plain selectors, under aggregations by labels, with
	// label_replace/label_join, arithmetic and comparisons around them; no
	// offset or @ (which such evaluators hand back).
	Rollups
)

// rollupFuncs are the functions of the Rollups mix.
var rollupFuncs = []string{
	"rate", "increase", "delta", "irate", "idelta", "deriv", "changes", "resets",
	"avg_over_time", "min_over_time", "max_over_time", "sum_over_time",
	"count_over_time", "stddev_over_time", "stdvar_over_time",
	"last_over_time", "present_over_time", "quantile_over_time",
	"label_replace", "label_join", "abs", "clamp_min", "timestamp", "sort",
	"scalar", "time", "vector", // promqlsmith needs a function of each type it walks
}

func (m Mix) options(w *difftest.Workload) []promqlsmith.Option {
	switch m {
	case Rollups:
		var fns []*parser.Function
		for _, name := range rollupFuncs {
			if f := parser.Functions[name]; f != nil {
				fns = append(fns, f)
			}
		}
		return []promqlsmith.Option{
			promqlsmith.WithEnabledFunctions(fns),
			promqlsmith.WithEnabledExprs([]promqlsmith.ExprType{
				promqlsmith.VectorSelector, promqlsmith.MatrixSelector, promqlsmith.AggregateExpr,
				promqlsmith.BinaryExpr, promqlsmith.CallExpr, promqlsmith.NumberLiteral,
			}),
			promqlsmith.WithEnabledAggrs([]parser.ItemType{
				parser.SUM, parser.AVG, parser.MIN, parser.MAX, parser.COUNT,
				parser.GROUP, parser.STDDEV, parser.STDVAR, parser.TOPK,
			}),
			promqlsmith.WithEnabledBinOps([]parser.ItemType{
				parser.ADD, parser.SUB, parser.MUL, parser.DIV, parser.GTR, parser.LAND,
			}),
			promqlsmith.WithEnableVectorMatching(true),
			promqlsmith.WithMaxDepth(4),
		}
	default:
		return []promqlsmith.Option{
			promqlsmith.WithEnableOffset(true),
			promqlsmith.WithEnableAtModifier(true),
			promqlsmith.WithAtModifierMaxTimestamp(w.MaxT),
			promqlsmith.WithEnableVectorMatching(true),
		}
	}
}

// Expressions returns up to n distinct expressions of the mix over w's
// series for which keep is true (nil keeps all), generated from seed
// (instant-query expressions, which may be range vectors, and range-query
// ones alternately); it gives up after 1000·n tries.
func Expressions(w *difftest.Workload, m Mix, seed int64, n int, keep func(string) bool) []string {
	ps := promqlsmith.New(rand.New(rand.NewSource(seed)), w.Series, m.options(w)...)
	seen := map[string]bool{}
	var out []string
	for tries := 0; len(out) < n && tries < 1000*n; tries++ {
		var e parser.Expr
		if tries%2 == 0 {
			e = ps.WalkRangeQuery()
		} else {
			e = ps.WalkInstantQuery()
		}
		s := e.String()
		if seen[s] {
			continue
		}
		seen[s] = true
		if _, err := parser.ParseExpr(s); err != nil || (keep != nil && !keep(s)) {
			continue
		}
		out = append(out, s)
	}
	return out
}
