package expr

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
)

const N = -1e308 // marks None in expected values

func vals(vs ...float64) []float64 {
	out := make([]float64, len(vs))
	for i, v := range vs {
		if v == N {
			out[i] = math.NaN()
		} else {
			out[i] = v
		}
	}
	return out
}

// mk makes a stored series starting at 0 with the given step.
func mk(name string, step int64, vs ...float64) *Series {
	s := newSeries(name, 0, step, vals(vs...), 0)
	s.PathExpression = name
	return s
}

// testStore: 6 points of 10 s from 0 to 60 in the request range [0, 60).
func testStore() *fakeFetcher {
	return &fakeFetcher{series: []*Series{
		mk("a.b.c", 10, 1, 2, 3, 4, 5, 6),
		mk("a.b.d", 10, 2, N, 6, 8, N, 12),
		mk("a.x.c", 10, N, N, N, N, N, N),
		mk("a.y.c", 10, 10, 0, -10, 5, 5, 1),
		mk("b.c", 20, 7, 8, 9),
		mk("ctr", 10, 1, 3, 7, 2, 4, N),
		mk("zero", 10, 0, 0, 0, 0, 0, 0),
	}}
}

func fmtVals(vs []float64) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		if isNull(v) {
			parts[i] = "None"
		} else {
			parts[i] = fmt.Sprint(v)
		}
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func sameVals(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if isNull(a[i]) != isNull(b[i]) || (!isNull(a[i]) && math.Abs(a[i]-b[i]) > 1e-9*math.Max(1, math.Abs(b[i]))) {
			return false
		}
	}
	return true
}

type want struct {
	name   string
	start  int64
	step   int64
	values []float64
}

func w(name string, vs ...float64) want { return want{name: name, step: 10, values: vals(vs...)} }

// ws sets start and step.
func (x want) at(start, step int64) want { x.start, x.step = start, step; return x }

func evalTarget(t *testing.T, f *fakeFetcher, target string, from, until int64) ([]*Series, error) {
	t.Helper()
	e, err := Parse(target)
	if err != nil {
		t.Fatalf("Parse(%q): %v", target, err)
	}
	return Eval(context.Background(), e, from, until, until, f)
}

func checkSeries(t *testing.T, target string, got []*Series, wants []want) {
	t.Helper()
	if len(got) != len(wants) {
		var names []string
		for _, s := range got {
			names = append(names, s.Name)
		}
		t.Errorf("%s: %d series %q; want %d", target, len(got), names, len(wants))
		return
	}
	for i, s := range got {
		x := wants[i]
		if s.Name != x.name {
			t.Errorf("%s: series %d named %q; want %q", target, i, s.Name, x.name)
		}
		if s.Start != x.start || s.Step != x.step {
			t.Errorf("%s: %s start/step %d/%d; want %d/%d", target, s.Name, s.Start, s.Step, x.start, x.step)
		}
		if !sameVals(s.Values, x.values) {
			t.Errorf("%s: %s values %s; want %s", target, s.Name, fmtVals(s.Values), fmtVals(x.values))
		}
		if s.End != s.Start+int64(len(s.Values))*s.Step {
			t.Errorf("%s: %s End %d != Start %d + %d values × Step %d", target, s.Name, s.End, s.Start, len(s.Values), s.Step)
		}
	}
}

func TestEvalFunctions(t *testing.T) {
	for _, tc := range []struct {
		target string
		want   []want
	}{
		{"a.b.c", []want{w("a.b.c", 1, 2, 3, 4, 5, 6)}},
		{"a.b.*", []want{w("a.b.c", 1, 2, 3, 4, 5, 6), w("a.b.d", 2, N, 6, 8, N, 12)}},
		{"sumSeries(a.b.*)", []want{w("sumSeries(a.b.*)", 3, 2, 9, 12, 5, 18)}},
		{"sum(a.b.c,a.b.d)", []want{w("sumSeries(a.b.c,a.b.d)", 3, 2, 9, 12, 5, 18)}},
		{"sumSeries(a.x.c)", []want{w("sumSeries(a.x.c)", N, N, N, N, N, N)}},
		{"sumSeries(nothing.*)", nil},
		{"averageSeries(a.b.*)", []want{w("averageSeries(a.b.*)", 1.5, 2, 4.5, 6, 5, 9)}},
		{"avg(a.b.*)", []want{w("averageSeries(a.b.*)", 1.5, 2, 4.5, 6, 5, 9)}},
		{"maxSeries(a.b.*)", []want{w("maxSeries(a.b.*)", 2, 2, 6, 8, 5, 12)}},
		{"minSeries(a.b.*)", []want{w("minSeries(a.b.*)", 1, 2, 3, 4, 5, 6)}},
		{"diffSeries(a.b.d,a.b.c)", []want{w("diffSeries(a.b.d,a.b.c)", 1, 2, 3, 4, 5, 6)}},
		{"multiplySeries(a.b.*)", []want{w("multiplySeries(a.b.*)", 2, N, 18, 32, N, 72)}},
		{"multiplySeries(a.b.c)", []want{w("a.b.c", 1, 2, 3, 4, 5, 6)}},
		{"rangeOfSeries(a.b.*)", []want{w("rangeOfSeries(a.b.*)", 1, 0, 3, 4, 0, 6)}},
		{"stddevSeries(a.b.*)", []want{w("stddevSeries(a.b.*)", 0.5, 0, 1.5, 2, 0, 3)}},
		{"countSeries(a.b.*)", []want{w("countSeries(a.b.*)", 2, 2, 2, 2, 2, 2)}},
		{"aggregate(a.b.*,'sum',0.6)", []want{w("sumSeries(a.b.*)", 3, N, 9, 12, N, 18)}},
		{"aggregate(a.b.*,'avg')", []want{w("avgSeries(a.b.*)", 1.5, 2, 4.5, 6, 5, 9)}},
		// b.c has step 20: a.b.c is consolidated (average) to 20 s first.
		{"sumSeries(a.b.c,b.c)", []want{w("sumSeries(a.b.c,b.c)", 8.5, 11.5, 14.5).at(0, 20)}},
		{"divideSeries(a.b.*,a.b.c)", []want{w("divideSeries(a.b.c,a.b.c)", 1, 1, 1, 1, 1, 1), w("divideSeries(a.b.d,a.b.c)", 2, N, 2, 2, N, 2)}},
		{"divideSeries(a.b.c,zero)", []want{w("divideSeries(a.b.c,zero)", N, N, N, N, N, N)}},
		{"divideSeries(a.b.c,nothing)", []want{w("divideSeries(a.b.c,MISSING)", N, N, N, N, N, N)}},
		{"asPercent(a.b.*)", []want{
			w("asPercent(a.b.c,sumSeries(a.b.*))", 100.0/3, 100, 100.0/3, 100.0/3, 100, 100.0/3),
			w("asPercent(a.b.d,sumSeries(a.b.*))", 200.0/3, N, 200.0/3, 200.0/3, N, 200.0/3)}},
		{"asPercent(a.b.c,10)", []want{w("asPercent(a.b.c,10)", 10, 20, 30, 40, 50, 60)}},
		{"asPercent(a.b.d,a.b.c)", []want{w("asPercent(a.b.d,a.b.c)", 200, N, 200, 200, N, 200)}},
		{"scale(a.b.d,2)", []want{w("scale(a.b.d,2)", 4, N, 12, 16, N, 24)}},
		{"scale(a.b.c,0.5)", []want{w("scale(a.b.c,0.5)", 0.5, 1, 1.5, 2, 2.5, 3)}},
		{"a.b.c|scale(2)", []want{w("scale(a.b.c,2)", 2, 4, 6, 8, 10, 12)}},
		{"offset(a.b.d,-1)", []want{w("offset(a.b.d,-1)", 1, N, 5, 7, N, 11)}},
		{"absolute(a.y.c)", []want{w("absolute(a.y.c)", 10, 0, 10, 5, 5, 1)}},
		{"invert(a.y.c)", []want{w("invert(a.y.c)", 0.1, N, -0.1, 0.2, 0.2, 1)}},
		{"pow(a.b.c,2)", []want{w("pow(a.b.c,2)", 1, 4, 9, 16, 25, 36)}},
		{"squareRoot(a.y.c)", []want{w("squareRoot(a.y.c)", math.Sqrt(10), 0, N, math.Sqrt(5), math.Sqrt(5), 1)}},
		{"log(a.y.c)", []want{w("log(a.y.c, 10)", 1, N, N, math.Log10(5), math.Log10(5), 0)}},
		{"isNonNull(a.b.d)", []want{w("isNonNull(a.b.d)", 1, 0, 1, 1, 0, 1)}},
		{"derivative(a.b.d)", []want{w("derivative(a.b.d)", N, N, N, 2, N, N)}},
		{"nonNegativeDerivative(ctr)", []want{w("nonNegativeDerivative(ctr)", N, 2, 4, N, 2, N)}},
		{"nonNegativeDerivative(ctr,7)", []want{w("nonNegativeDerivative(ctr)", N, 2, 4, 3, 2, N)}},
		{"perSecond(ctr)", []want{w("perSecond(ctr)", N, 0.2, 0.4, N, 0.2, N)}},
		{"integral(a.b.d)", []want{w("integral(a.b.d)", 2, N, 8, 16, N, 28)}},
		{"delay(a.b.c,2)", []want{w("delay(a.b.c,2)", N, N, 1, 2, 3, 4)}},
		{"delay(a.b.c,-2)", []want{w("delay(a.b.c,-2)", 3, 4, 5, 6, N, N)}},
		{"keepLastValue(a.b.d)", []want{w("keepLastValue(a.b.d)", 2, 2, 6, 8, 8, 12)}},
		{"transformNull(a.b.d)", []want{w("transformNull(a.b.d,0)", 2, 0, 6, 8, 0, 12)}},
		{"transformNull(a.b.d,-1.5)", []want{w("transformNull(a.b.d,-1.5)", 2, -1.5, 6, 8, -1.5, 12)}},
		{"transformNull(a.x.c,1,a.b.d)", []want{w("transformNull(a.x.c,1,referenceSeries)", 1, N, 1, 1, N, 1)}},
		{"changed(a.y.c)", []want{w("changed(a.y.c)", 0, 1, 1, 1, 0, 1)}},
		{"alias(a.b.c,'x y')", []want{w("x y", 1, 2, 3, 4, 5, 6)}},
		{"aliasByNode(a.b.*,1,2)", []want{w("b.c", 1, 2, 3, 4, 5, 6), w("b.d", 2, N, 6, 8, N, 12)}},
		{"aliasByNode(scale(a.b.c,2),-1)", []want{w("c", 2, 4, 6, 8, 10, 12)}},
		{`aliasSub(a.b.*,'^a\.(\w)\.(\w)$','\2-\1')`, []want{w("c-b", 1, 2, 3, 4, 5, 6), w("d-b", 2, N, 6, 8, N, 12)}},
		{"aliasByMetric(scale(a.b.c,2))", []want{w("c", 2, 4, 6, 8, 10, 12)}},
		{"groupByNode(a.*.c,2,'sum')", []want{w("c", 11, 2, -7, 9, 10, 7)}},
		{"groupByNode(a.*.*,1)", []want{w("b", 1.5, 2, 4.5, 6, 5, 9), w("x", N, N, N, N, N, N), w("y", 10, 0, -10, 5, 5, 1)}},
		{"groupByNodes(a.*.*,'maxSeries',0,2)", []want{w("a.c", 10, 2, 3, 5, 5, 6), w("a.d", 2, N, 6, 8, N, 12)}},
		{"highestCurrent(a.*.c,1)", []want{w("a.b.c", 1, 2, 3, 4, 5, 6)}},
		{"highestMax(a.*.*,2)", []want{w("a.b.d", 2, N, 6, 8, N, 12), w("a.y.c", 10, 0, -10, 5, 5, 1)}},
		{"highestAverage(a.*.*,1)", []want{w("a.b.d", 2, N, 6, 8, N, 12)}},
		{"lowestCurrent(a.*.*,2)", []want{w("a.x.c", N, N, N, N, N, N), w("a.y.c", 10, 0, -10, 5, 5, 1)}},
		{"lowestAverage(a.b.*,1)", []want{w("a.b.c", 1, 2, 3, 4, 5, 6)}},
		{"currentAbove(a.*.*,5)", []want{w("a.b.c", 1, 2, 3, 4, 5, 6), w("a.b.d", 2, N, 6, 8, N, 12)}},
		{"currentBelow(a.*.*,5)", []want{w("a.x.c", N, N, N, N, N, N), w("a.y.c", 10, 0, -10, 5, 5, 1)}},
		{"averageAbove(a.*.*,3.5)", []want{w("a.b.d", 2, N, 6, 8, N, 12)}},
		{"averageBelow(a.*.*,3.5)", []want{w("a.b.c", 1, 2, 3, 4, 5, 6), w("a.x.c", N, N, N, N, N, N), w("a.y.c", 10, 0, -10, 5, 5, 1)}},
		{"maximumAbove(a.*.*,9)", []want{w("a.b.d", 2, N, 6, 8, N, 12), w("a.y.c", 10, 0, -10, 5, 5, 1)}},
		{"minimumAbove(a.*.*,0)", []want{w("a.b.c", 1, 2, 3, 4, 5, 6), w("a.b.d", 2, N, 6, 8, N, 12)}},
		{"sortByName(group(a.y.c,a.b.c))", []want{w("a.b.c", 1, 2, 3, 4, 5, 6), w("a.y.c", 10, 0, -10, 5, 5, 1)}},
		{"sortByMaxima(a.b.*)", []want{w("a.b.d", 2, N, 6, 8, N, 12), w("a.b.c", 1, 2, 3, 4, 5, 6)}},
		{"sortByMinima(a.*.*)", []want{w("a.y.c", 10, 0, -10, 5, 5, 1), w("a.b.c", 1, 2, 3, 4, 5, 6), w("a.b.d", 2, N, 6, 8, N, 12)}},
		{"sortByTotal(a.b.*)", []want{w("a.b.d", 2, N, 6, 8, N, 12), w("a.b.c", 1, 2, 3, 4, 5, 6)}},
		{"limit(a.*.*,1)", []want{w("a.b.c", 1, 2, 3, 4, 5, 6)}},
		{"exclude(a.*.*,'[bx]')", []want{w("a.y.c", 10, 0, -10, 5, 5, 1)}},
		{"grep(a.*.*,'d$')", []want{w("a.b.d", 2, N, 6, 8, N, 12)}},
		{"removeEmptySeries(a.*.c)", []want{w("a.b.c", 1, 2, 3, 4, 5, 6), w("a.y.c", 10, 0, -10, 5, 5, 1)}},
		{"removeAboveValue(a.b.c,3)", []want{w("removeAboveValue(a.b.c, 3)", 1, 2, 3, N, N, N)}},
		{"removeBelowValue(a.b.d,6)", []want{w("removeBelowValue(a.b.d, 6)", N, N, 6, 8, N, 12)}},
		// 50th percentile of 1..6: rank ceil(0.5*7)=4 -> 4.
		{"removeAbovePercentile(a.b.c,50)", []want{w("removeAbovePercentile(a.b.c, 50)", 1, 2, 3, 4, N, N)}},
		{"removeBelowPercentile(a.b.c,50)", []want{w("removeBelowPercentile(a.b.c, 50)", N, N, N, 4, 5, 6)}},
		// 50th of [2 6 8 12]: rank ceil(0.5*5)=3 -> 8.
		{"nPercentile(a.b.d,50)", []want{w("nPercentile(a.b.d, 50)", 8, 8, 8, 8, 8, 8)}},
		{"percentileOfSeries(a.*.*,50)", []want{w("percentileOfSeries(a.*.*,50)", 2, 2, 3, 5, 5, 6)}},
		{"mostDeviant(a.*.*,1)", []want{w("a.y.c", 10, 0, -10, 5, 5, 1)}},
		{"stdev(a.b.c,2)", []want{w("stdev(a.b.c,2)", 0, 0.5, 0.5, 0.5, 0.5, 0.5)}},
		{"consolidateBy(a.b.c,'max')", []want{w(`consolidateBy(a.b.c,"max")`, 1, 2, 3, 4, 5, 6)}},
		{"group(a.b.c,b.c)", []want{w("a.b.c", 1, 2, 3, 4, 5, 6), w("b.c", 7, 8, 9).at(0, 20)}},
		{"constantLine(42)", []want{w("42.0", 42, 42, 42).at(0, 30)}},
		{"threshold(1.5,'limit')", []want{w("limit", 1.5, 1.5, 1.5).at(0, 30)}},
		{"color(lineWidth(a.b.c,2),'red')", []want{w("a.b.c", 1, 2, 3, 4, 5, 6)}},
		{"dashed(a.b.c)", []want{w("dashed(a.b.c, 5)", 1, 2, 3, 4, 5, 6)}},
		// graphite-web's summarize ends one bucket past the aligned end.
		{"summarize(a.b.c,'30s')", []want{w(`summarize(a.b.c, "30s", "sum")`, 6, 15, N).at(0, 30)}},
		{"summarize(a.b.d,'30s','max')", []want{w(`summarize(a.b.d, "30s", "max")`, 6, 12, N).at(0, 30)}},
		{"summarize(a.b.c,'20s','avg',true)", []want{w(`summarize(a.b.c, "20s", "avg", true)`, 1.5, 3.5, 5.5).at(0, 20)}},
		{"smartSummarize(a.b.c,'30s','sum')", []want{w(`smartSummarize(a.b.c, "30s", "sum")`, 6, 15).at(0, 30)}},
		{"hitcount(a.b.c,'30s')", []want{w(`hitcount(a.b.c, "30s")`, 60, 150).at(0, 30)}},
		{"sumSeriesWithWildcards(a.*.c,1)", []want{w("a.c", 11, 2, -7, 9, 10, 7)}},
		{"offsetToZero(a.b.c)", []want{w("offsetToZero(a.b.c)", 0, 1, 2, 3, 4, 5)}},
		{"scaleToSeconds(a.b.c,1)", []want{w("scaleToSeconds(a.b.c,1)", 0.1, 0.2, 0.3, 0.4, 0.5, 0.6)}},
		{"unique(a.b.c,a.b.*)", []want{w("a.b.c", 1, 2, 3, 4, 5, 6), w("a.b.d", 2, N, 6, 8, N, 12)}},
		{"legendValue(a.b.c,'avg','last')", []want{w("a.b.c (avg: 3.5) (last: 6.0)", 1, 2, 3, 4, 5, 6)}},
		{"aggregateLine(a.b.c)", []want{w("aggregateLine(a.b.c, 3.5)", 3.5, 3.5, 3.5).at(0, 30)}},
		{"cumulative(a.b.c)", []want{w(`consolidateBy(a.b.c,"sum")`, 1, 2, 3, 4, 5, 6)}},
		{"secondYAxis(a.b.c)", []want{w("secondYAxis(a.b.c)", 1, 2, 3, 4, 5, 6)}},
	} {
		got, err := evalTarget(t, testStore(), tc.target, 0, 60)
		if err != nil {
			t.Errorf("%s: %v", tc.target, err)
			continue
		}
		checkSeries(t, tc.target, got, tc.want)
	}
}

func TestConsolidate(t *testing.T) {
	s := mk("x", 10, 1, N, 3, 4, N, N, 7)
	for _, tc := range []struct {
		fn   string
		xff  float64
		n    int64
		want []float64
	}{
		{"average", 0, 2, vals(1, 3.5, N, 7)},
		{"", 0, 3, vals(2, 4, 7)},
		{"sum", 0, 3, vals(4, 4, 7)},
		{"max", 0, 2, vals(1, 4, N, 7)},
		{"min", 0, 7, vals(1)},
		{"first", 0, 3, vals(1, 4, 7)},
		{"last", 0, 3, vals(3, 4, 7)},
		{"avg_zero", 0, 2, vals(0.5, 3.5, N, 7)},
		{"average", 0.6, 2, vals(N, 3.5, N, N)}, // the short last group counts over n
		{"average", 0, 1, vals(1, N, 3, 4, N, N, 7)},
	} {
		c := *s
		c.ConsolidationFunc, c.XFilesFactor = tc.fn, tc.xff
		if got := Consolidate(&c, tc.n); !sameVals(got, tc.want) {
			t.Errorf("Consolidate(%s, xff %v, %d) = %s; want %s", tc.fn, tc.xff, tc.n, fmtVals(got), fmtVals(tc.want))
		}
	}
	c := *s
	got := Consolidate(&c, 1)
	got[0] = 99
	if s.Values[0] != 1 {
		t.Error("Consolidate(s, 1) shares the series' values")
	}
}
