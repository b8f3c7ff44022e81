package expr

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
)

// longStore holds m = 0, 1, … 19 at 10 s from 0, and servers' used/total.
func longStore() *fakeFetcher {
	m := make([]float64, 20)
	for i := range m {
		m[i] = float64(i)
	}
	tagged := func(name string, vs ...float64) *Series {
		s := mk(name, 10, vs...)
		s.Tags = tagsFromName(name)
		return s
	}
	return &fakeFetcher{series: []*Series{
		mk("m", 10, m...),
		mk("srv.a.used", 10, 1, 2, 3, 4, 5, 6),
		mk("srv.a.total", 10, 10, 10, 10, 10, 10, 10),
		mk("srv.b.used", 10, 5, 5, 5, 5, 5, 5),
		mk("srv.b.total", 10, 20, 20, 20, 20, 20, 20),
		tagged("cpu;dc=x;host=h1", 1, 2, 3, 4, 5, 6),
		tagged("cpu;dc=x;host=h2", 10, 20, 30, 40, 50, 60),
		tagged("cpu;dc=y;host=h3", 100, 100, 100, 100, 100, 100),
	}}
}

func TestEvalRefetch(t *testing.T) {
	for _, tc := range []struct {
		target      string
		from, until int64
		want        []want
		fetched     []fetchCall // must appear among the calls
	}{
		{"movingAverage(m,3)", 100, 160, []want{w("movingAverage(m,3)", 8, 9, 10, 11, 12, 13).at(100, 10)}, []fetchCall{{"m", 70, 160}}},
		{"movingAverage(m,'30s')", 100, 160, []want{w(`movingAverage(m,"30s")`, 8, 9, 10, 11, 12, 13).at(100, 10)}, []fetchCall{{"m", 70, 160}}},
		{"movingMedian(m,'20s')", 100, 140, []want{w(`movingMedian(m,"20s")`, 8.5, 9.5, 10.5, 11.5).at(100, 10)}, []fetchCall{{"m", 80, 140}}},
		{"movingSum(m,2)", 100, 130, []want{w("movingSum(m,2)", 17, 19, 21).at(100, 10)}, nil},
		{"movingAverage(m,2,1)", 0, 30, []want{w("movingAverage(m,2)", 0.5).at(20, 10)}, nil},
		{"timeShift(m,'30s')", 100, 160, []want{w(`timeShift(m, "-30s")`, 7, 8, 9, 10, 11, 12).at(100, 10)}, []fetchCall{{"m", 70, 130}}},
		{"timeShift(m,'+30s')", 100, 160, []want{w(`timeShift(m, "+30s")`, 13, 14, 15, 16, 17, 18).at(100, 10)}, []fetchCall{{"m", 130, 190}}},
		{"timeStack(m,'30s',0,2)", 100, 160, []want{
			w("timeShift(m, -30s, 0)", 10, 11, 12, 13, 14, 15).at(100, 10),
			w("timeShift(m, -30s, 1)", 7, 8, 9, 10, 11, 12).at(100, 10)}, []fetchCall{{"m", 70, 130}}},
		{"timeSlice(m,'120','140')", 100, 160, []want{w("timeSlice(m, 120, 140)", N, N, 12, 13, 14, N).at(100, 10)}, nil},
		{"applyByNode(srv.*.used,1,'divideSeries(%.used,%.total)')", 0, 60, []want{
			w("divideSeries(srv.a.used,srv.a.total)", 0.1, 0.2, 0.3, 0.4, 0.5, 0.6),
			w("divideSeries(srv.b.used,srv.b.total)", 0.25, 0.25, 0.25, 0.25, 0.25, 0.25)}, nil},
		{"applyByNode(srv.*.used,1,'sumSeries(%.*)','%.all')", 0, 60, []want{
			w("srv.a.all", 11, 12, 13, 14, 15, 16), w("srv.b.all", 25, 25, 25, 25, 25, 25)}, nil},
		{"asPercent(srv.*.*,None,1)", 0, 20, []want{
			w("asPercent(srv.a.total,sumSeries(srv.*.*))", 10.0/11*100, 10.0/12*100),
			w("asPercent(srv.a.used,sumSeries(srv.*.*))", 1.0/11*100, 2.0/12*100),
			w("asPercent(srv.b.total,sumSeries(srv.*.*))", 80, 80),
			w("asPercent(srv.b.used,sumSeries(srv.*.*))", 20, 20)}, nil},
		{"seriesByTag('name=cpu','dc=x')", 0, 20, []want{w("cpu;dc=x;host=h1", 1, 2), w("cpu;dc=x;host=h2", 10, 20)}, nil},
		{"sumSeries(seriesByTag('name=cpu','dc=x'))", 0, 20, []want{w("sumSeries(seriesByTag('name=cpu','dc=x'))", 11, 22)}, nil},
		{"sumSeries(seriesByTag('name=cpu', \"dc=x\" ))", 0, 20, []want{w(`sumSeries(seriesByTag('name=cpu', "dc=x" ))`, 11, 22)}, nil},
		{"groupByTags(seriesByTag('name=cpu'),'sum','dc')", 0, 20, []want{w("cpu;dc=x", 11, 22), w("cpu;dc=y", 100, 100)}, nil},
		{"aliasByTags(seriesByTag('name=cpu','dc=x'),'host','dc')", 0, 20, []want{w("h1.x", 1, 2), w("h2.x", 10, 20)}, nil},
		{"groupByNode(seriesByTag('name=cpu'),'dc','max')", 0, 20, []want{w("x", 10, 20), w("y", 100, 100)}, nil},
		{"countSeries()", 0, 60, []want{w("0", 0, 0, 0).at(0, 30)}, nil},
	} {
		f := longStore()
		got, err := evalTarget(t, f, tc.target, tc.from, tc.until)
		if err != nil {
			t.Errorf("%s: %v", tc.target, err)
			continue
		}
		checkSeries(t, tc.target, got, tc.want)
		for _, fc := range tc.fetched {
			found := false
			for _, c := range f.calls {
				found = found || c == fc
			}
			if !found {
				t.Errorf("%s: no fetch %+v among %+v", tc.target, fc, f.calls)
			}
		}
	}
}

func TestEvalTags(t *testing.T) {
	got, err := evalTarget(t, longStore(), "sumSeries(seriesByTag('name=cpu','dc=x'))", 0, 20)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"name": "cpu", "dc": "x", "aggregatedBy": "sum"}
	if len(got) != 1 || !equalTags(got[0].Tags, want) {
		t.Errorf("tags %v; want %v", got[0].Tags, want)
	}
	got, err = evalTarget(t, longStore(), "scale(srv.a.used,2)", 0, 20)
	if err != nil {
		t.Fatal(err)
	}
	want = map[string]string{"name": "srv.a.used", "scale": "2.0"}
	if !equalTags(got[0].Tags, want) || got[0].PathExpression != "scale(srv.a.used,2)" {
		t.Errorf("tags %v, path expression %q; want %v and the name", got[0].Tags, got[0].PathExpression, want)
	}
}

func equalTags(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestEvalErrors(t *testing.T) {
	for _, tc := range []struct {
		target string
		fn     string // ArgError.Func, or UnknownFunctionError.Name
		param  string
	}{
		{"nosuchFunction(a.b.c)", "nosuchFunction", ""},
		{"sumSeries(a.b.c)|bogus()", "bogus", ""},
		{"scale(a.b.c)", "scale", "factor"},
		{"scale(a.b.c,'x')", "scale", "factor"},
		{"scale(a.b.c,1,2)", "scale", ""},
		{"scale(1,2)", "scale", "seriesList"},
		{"scale(a.b.c,factor=1,bogus=2)", "scale", ""},
		{"delay(a.b.c,1.5)", "delay", "steps"},
		{"summarize(a.b.c,'1m')", "summarize", "intervalString"},
		{"summarize(a.b.c,'-1h')", "summarize", "intervalString"},
		{"summarize(a.b.c,'1h','nope')", "summarize", "func"},
		{"consolidateBy(a.b.c,'foo')", "consolidateBy", "consolidationFunc"},
		{"aggregate(a.b.c,'nope')", "aggregate", "func"},
		{"divideSeries(a.b.c,a.b.*)", "divideSeries", "divisorSeries"},
		{"grep(a.b.c,'(?<=x)')", "grep", "pattern"},
		{"timeShift(a.b.c,5)", "timeShift", "timeShift"},
		{"sortByName(a.b.c,'maybe')", "sortByName", "natural"},
		{"groupByNode(a.b.c,1,'nope')", "groupByNode", "callback"},
		{"percentileOfSeries(a.b.*,0)", "percentileOfSeries", "n"},
		{"movingAverage(a.b.c,'x')", "movingAverage", "windowSize"},
		{"seriesByTag(a.b)", "seriesByTag", "tagExpressions"},
		{"stdev(a.b.c,-1)", "stdev", "points"},
		{"smartSummarize(a.b.c,'1h','sum','1d')", "smartSummarize", "alignTo"},
		{"asPercent(a.b.*,a.*.*)", "asPercent", "total"},
	} {
		_, err := evalTarget(t, testStore(), tc.target, 0, 60)
		if !IsBadRequest(err) {
			t.Errorf("%s: error %v is not a bad request", tc.target, err)
			continue
		}
		var ue *UnknownFunctionError
		var ae *ArgError
		switch {
		case errors.As(err, &ue):
			if ue.Name != tc.fn || tc.param != "" {
				t.Errorf("%s: unknown function %q; want an error about %s(%s)", tc.target, ue.Name, tc.fn, tc.param)
			}
		case errors.As(err, &ae):
			if ae.Func != tc.fn || ae.Param != tc.param {
				t.Errorf("%s: error about %s(%s): %v; want %s(%s)", tc.target, ae.Func, ae.Param, err, tc.fn, tc.param)
			}
		default:
			t.Errorf("%s: error %v (%T)", tc.target, err, err)
		}
	}
}

func TestEvalKwargs(t *testing.T) {
	got, err := evalTarget(t, testStore(), "movingAverage(a.b.c,windowSize=2)", 0, 60)
	if err != nil {
		t.Fatal(err)
	}
	checkSeries(t, "movingAverage", got, []want{w("movingAverage(a.b.c,2)", 1.5, 2.5, 3.5, 4.5).at(20, 10)})
	got, err = evalTarget(t, testStore(), "scale(a.b.c,factor=3)", 0, 60)
	if err != nil {
		t.Fatal(err)
	}
	checkSeries(t, "scale(a.b.c,factor=3)", got, []want{w("scale(a.b.c,3)", 3, 6, 9, 12, 15, 18)})
}

func TestEvalLimits(t *testing.T) {
	for _, target := range []string{
		"timeStack(m,'1s',0,50000)",
		"summarize(big,'1s')",
		"hitcount(big,'1s')",
	} {
		f := longStore()
		f.series = append(f.series, mk("big", 1<<30, 1, 2))
		_, err := evalTarget(t, f, target, 0, 1<<40)
		if !errors.Is(err, ErrLimit) && !IsBadRequest(err) {
			t.Errorf("%s: error %v; want a limit", target, err)
		}
	}
	if _, err := evalTarget(t, longStore(), "m", 10, 10); !IsBadRequest(err) {
		t.Errorf("empty range: error %v; want a bad request", err)
	}
}

// TestEvalNoMutation checks invariant 1: the Fetcher's series are never
// written to, whatever the target does.
func TestEvalNoMutation(t *testing.T) {
	f := testStore()
	shared := f.series
	before := make([][]float64, len(shared))
	names := make([]string, len(shared))
	for i, s := range shared {
		before[i] = append([]float64(nil), s.Values...)
		names[i] = s.Name
	}
	// The fake hands out copies; make it hand out the stored series.
	g := &sharingFetcher{f}
	for _, target := range []string{
		"scale(a.b.*,2)", "keepLastValue(a.b.d)", "transformNull(a.*.*)", "alias(a.b.c,'x')",
		"consolidateBy(a.b.c,'sum')", "removeAboveValue(a.*.*,1)", "changed(a.y.c)", "sortByName(a.*.*)",
		"divideSeries(a.b.c,nothing)", "sumSeries(a.b.c,b.c)", "setXFilesFactor(a.b.c,0.5)", "delay(a.b.c,1)",
		"aliasByNode(a.b.c,1)", "groupByNode(a.*.*,1,'sum')", "asPercent(a.b.*)", "absolute(a.y.c)",
	} {
		e, err := Parse(target)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Eval(context.Background(), e, 0, 60, 60, g); err != nil {
			t.Fatalf("%s: %v", target, err)
		}
		for i, s := range shared {
			if !sameVals(s.Values, before[i]) || s.Name != names[i] || s.ConsolidationFunc != "average" || s.XFilesFactor != 0 {
				t.Fatalf("%s changed the fetched series %s: %s", target, names[i], fmtVals(s.Values))
			}
		}
	}
}

type sharingFetcher struct{ *fakeFetcher }

func (f *sharingFetcher) Fetch(ctx context.Context, pathExpr string, from, until int64) ([]*Series, error) {
	var out []*Series
	for _, s := range f.series {
		for _, alt := range globAlternatives(pathExpr) {
			if ok, _ := pathMatch(alt, s.Name); ok {
				out = append(out, s)
				break
			}
		}
	}
	return out, nil
}

func pathMatch(pattern, name string) (bool, error) {
	got, err := (&fakeFetcher{series: []*Series{{Name: name, Step: 1}}}).Fetch(context.Background(), pattern, 0, 1)
	return len(got) == 1, err
}

func TestFunctions(t *testing.T) {
	fs := Functions()
	byName := map[string]FuncInfo{}
	for _, f := range fs {
		byName[f.Name] = f
		if f.Group == "" {
			t.Errorf("%s has no group", f.Name)
		}
		for _, p := range f.Params {
			if p.Name == "" || p.Type == "" {
				t.Errorf("%s has a parameter without name or type: %+v", f.Name, p)
			}
		}
	}
	required := strings.Fields(`sumSeries averageSeries maxSeries minSeries diffSeries divideSeries multiplySeries asPercent
		scale offset absolute derivative nonNegativeDerivative perSecond integral movingAverage movingMedian summarize
		smartSummarize hitcount timeShift delay keepLastValue transformNull alias aliasByNode aliasSub aliasByTags
		groupByNode groupByNodes groupByTags applyByNode highestCurrent highestMax highestAverage lowestCurrent
		currentAbove currentBelow averageAbove maximumAbove sortByName sortByMaxima limit exclude grep
		removeAbovePercentile removeBelowValue nPercentile percentileOfSeries stdev countSeries consolidateBy group
		constantLine threshold seriesByTag timeStack timeSlice removeEmptySeries mostDeviant`)
	for _, n := range required {
		if _, ok := byName[n]; !ok {
			t.Errorf("%s is not listed", n)
		}
	}
	if len(fs) < 60 {
		t.Errorf("%d functions; want at least 60", len(fs))
	}
	b, err := json.Marshal(fs)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	if !strings.Contains(string(b), `"default":1e9999`) {
		t.Errorf("keepLastValue's infinite default is not marshalled as 1e9999")
	}
	kl := byName["keepLastValue"]
	if kl.Params[1].Name != "limit" || kl.Params[1].Type != "intOrInf" {
		t.Errorf("keepLastValue params %+v", kl.Params)
	}
	if p := byName["movingAverage"].Params[1]; !p.Required || p.Type != "intOrInterval" {
		t.Errorf("movingAverage windowSize %+v", p)
	}
	_ = math.Inf
}

func TestEvalOptions(t *testing.T) {
	e, err := Parse("sumSeries(a.b.*)")
	if err != nil {
		t.Fatal(err)
	}
	got, err := EvalOptions(context.Background(), e, 0, 60, 60, testStore(), Options{XFilesFactor: 0.6})
	if err != nil {
		t.Fatal(err)
	}
	checkSeries(t, "sumSeries(a.b.*) with xFilesFactor 0.6", got, []want{w("sumSeries(a.b.*)", 3, N, 9, 12, N, 18)})
	if got[0].XFilesFactor != 0.6 {
		t.Errorf("xFilesFactor %v; want 0.6", got[0].XFilesFactor)
	}
	if _, err := EvalOptions(context.Background(), e, 0, 60, 60, testStore(), Options{XFilesFactor: 2}); !IsBadRequest(err) {
		t.Errorf("xFilesFactor 2: error %v; want a bad request", err)
	}
}
