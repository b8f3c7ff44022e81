package queryparse_test

import (
	"reflect"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/stretchr/testify/require"

	"github.com/aerie-db/aerie/internal/difftest"
	"github.com/aerie-db/aerie/internal/difftest/smith"
	"github.com/aerie-db/aerie/internal/queryparse"
)

// TestParseExpr: a parse from the cache is the parse of its string, and
// shares nothing modifiable with the cached parse or with another copy:
// the suite's expressions, random ones and the syntax they miss (@,
// offsets, subqueries, duration arithmetic, vector matching), each
// parsed three times (a miss, then hits), every copy walked field by
// field against the others. A planner modifying a copy in place
// (plan) leaves the next copy as parsed.
func TestParseExpr(t *testing.T) {
	w := difftest.Generate(difftest.Small())
	qs := difftest.Expressions(w)
	qs = append(qs, smith.Expressions(w, smith.General, 1, 200, nil)...)
	qs = append(qs,
		`rate(x[5m] offset 1m @ 100) and on (a) group_left (b) y`,
		`max_over_time(sum by (i) (rate(x[5m]))[30m:1m] @ end())`,
		`x[1h:5m] offset -2m`,
		`sum without (a) (x) / ignoring (b) group_right (c) y`,
		`-x ^ 2 > bool 1`,
		`count_values("v", x)`, `topk(3, x)`,
		`{__name__=~"cpu_(a|b|c)", h!~"x.*"} unless y`,
	)
	// Duration arithmetic is experimental in Prometheus (off by default).
	parser.ExperimentalDurationExpr = true
	defer func() { parser.ExperimentalDurationExpr = false }()
	qs = append(qs, `x[5m+1m:step()] offset 2m`, `x[5m+1m:1m]`, `rate(x[2 * 5m])`)
	for _, q := range qs {
		want, err := parser.ParseExpr(q)
		if err != nil {
			_, err2 := queryparse.ParseExpr(q)
			require.Error(t, err2, q)
			continue
		}
		var copies []parser.Expr
		for range 3 {
			e, err := queryparse.ParseExpr(q)
			require.NoError(t, err, q)
			require.Equal(t, want.String(), e.String(), q)
			walk(t, q, reflect.ValueOf(want), reflect.ValueOf(e), false)
			copies = append(copies, e)
		}
		for i := range copies {
			for j := i + 1; j < len(copies); j++ {
				walk(t, q, reflect.ValueOf(copies[i]), reflect.ValueOf(copies[j]), true)
			}
		}
	}
	// A copy modified in place does not change the next one.
	const q = `max by (__name__) (label_replace(max_over_time({__name__=~"a|b"}[5m]), "__name__", "$1", "__name__", "(.+)"))`
	e, err := queryparse.ParseExpr(q)
	require.NoError(t, err)
	e.(*parser.AggregateExpr).Expr = &parser.NumberLiteral{Val: 1}
	e, err = queryparse.ParseExpr(q)
	require.NoError(t, err)
	require.Equal(t, q, e.String())
}

var (
	matcherType  = reflect.TypeFor[*labels.Matcher]()
	functionType = reflect.TypeFor[*parser.Function]()
)

// walk fails unless a and b (of one type) are equal field by field,
// label matchers by their string, and, if disjoint, reach no common
// pointer or slice array but label matchers and functions.
func walk(t *testing.T, q string, a, b reflect.Value, disjoint bool) {
	t.Helper()
	require.Equal(t, a.Type(), b.Type(), q)
	switch a.Kind() {
	case reflect.Interface:
		require.Equal(t, a.IsNil(), b.IsNil(), q)
		if !a.IsNil() {
			walk(t, q, a.Elem(), b.Elem(), disjoint)
		}
	case reflect.Pointer:
		require.Equal(t, a.IsNil(), b.IsNil(), q)
		if a.IsNil() {
			return
		}
		switch a.Type() {
		case matcherType:
			require.Equal(t, a.Interface().(*labels.Matcher).String(), b.Interface().(*labels.Matcher).String(), q)
			if disjoint {
				require.Equal(t, a.Pointer(), b.Pointer(), "%s: matchers are shared", q)
			}
			return
		case functionType:
			require.Equal(t, a.Pointer(), b.Pointer(), q)
			return
		}
		if disjoint {
			require.NotEqual(t, a.Pointer(), b.Pointer(), "%s: %s shared", q, a.Type())
		}
		walk(t, q, a.Elem(), b.Elem(), disjoint)
	case reflect.Slice:
		require.Equal(t, a.Len(), b.Len(), q)
		if a.Len() == 0 {
			return
		}
		if disjoint {
			require.NotEqual(t, a.Pointer(), b.Pointer(), "%s: %s shared", q, a.Type())
		}
		for i := range a.Len() {
			walk(t, q, a.Index(i), b.Index(i), disjoint)
		}
	case reflect.Struct:
		for i := range a.NumField() {
			walk(t, q, a.Field(i), b.Field(i), disjoint)
		}
	case reflect.Map, reflect.Chan, reflect.Func:
		require.True(t, a.IsNil() && b.IsNil(), "%s: a %s in a parse", q, a.Type())
	default:
		require.True(t, reflect.DeepEqual(a.Interface(), b.Interface()) || a.Equal(b), "%s: %v != %v", q, a, b)
	}
}
