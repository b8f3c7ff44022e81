package expr

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The reference test compares Eval with graphite-web 1.1.8 itself:
// testdata/graphiteweb/expected.json holds what graphite-web's evaluator
// and functions.py answered for every target of targets.txt over the
// series of store.json, fetched with the same cut of the range as
// fakeFetcher. Regenerate it with Debian's python3 (python3-django,
// python3-pyparsing, python3-tz, python3-six) after
// `apt-get download graphite-web && dpkg -x graphite-web_*.deb gw`:
//
//	/usr/bin/python3 testdata/graphiteweb/gen_expected.py gw/usr/lib/python3/dist-packages testdata/graphiteweb
//
// The smoke reference is made from TestFunctionsSmoke's targets:
//
//	go test -run TestFunctionsSmoke . -args -smoke-out=/tmp/smoke.txt
//	sort -u /tmp/smoke.txt > testdata/graphiteweb/smoke/targets.txt
//	/usr/bin/python3 testdata/graphiteweb/gen_expected.py gw/usr/lib/python3/dist-packages testdata/graphiteweb/smoke
//	gzip -9 testdata/graphiteweb/smoke/expected.json

type refSeries struct {
	Name              *string           `json:"name"` // null for verticalLine without a label
	PathExpression    *string           `json:"pathExpression"`
	Start             float64           `json:"start"`
	Step              float64           `json:"step"` // 1.0 for verticalLine
	Values            []any             `json:"values"`
	Tags              map[string]string `json:"tags"`
	ConsolidationFunc string            `json:"consolidationFunc"`
}

type refCase struct {
	From   int64       `json:"from"`
	Until  int64       `json:"until"`
	Target string      `json:"target"`
	Series []refSeries `json:"series"`
	Error  string      `json:"error"`
}

// refDifferences are the targets where Eval knowingly differs from
// graphite-web, with the reason.
var refDifferences = map[string]string{
	"nonNegativeDerivative(ctr,7)":      "graphite-web compares None > maxValue and fails with a TypeError (500) on a series with a null; Eval gives the null",
	"nonNegativeDerivative(ctr,None,1)": "graphite-web compares None < minValue and fails with a TypeError (500); Eval gives the null",
	"perSecond(ctr,7)":                  "graphite-web compares None > maxValue and fails with a TypeError (500); Eval gives the null",
	"timeSlice(m,'130')":                "endSliceAt 'now' is the wall clock in graphite-web and the request's now in Eval (the same in a live request)",
	"consolidateBy(a.b.c,'foo')":        "graphite-web only logs the invalid option and fails later when consolidating; Eval answers a bad request",
	"transformNull(a.b.d,None)":         "graphite-web formats the explicit None with %g and fails (500); Eval takes None as the default 0",
	"sortByName(a.b.c,'maybe')":         "graphite-web only logs the invalid boolean and treats it as true; Eval answers a bad request",
}

// refDir holds store.json and expected.json; EXPR_REFERENCE_DIR points
// the test at another reference made the same way.
func refDir() string {
	if d := os.Getenv("EXPR_REFERENCE_DIR"); d != "" {
		return d
	}
	return filepath.Join("testdata", "graphiteweb")
}

func refStore(t testing.TB) *fakeFetcher {
	return refStoreIn(t, refDir())
}

func refStoreIn(t testing.TB, dir string) *fakeFetcher {
	b, err := os.ReadFile(filepath.Join(dir, "store.json"))
	if err != nil {
		t.Fatal(err)
	}
	var raw []struct {
		Name   string     `json:"name"`
		Start  int64      `json:"start"`
		Step   int64      `json:"step"`
		Values []*float64 `json:"values"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	f := &fakeFetcher{}
	for _, r := range raw {
		vs := make([]float64, len(r.Values))
		for i, v := range r.Values {
			vs[i] = null
			if v != nil {
				vs[i] = *v
			}
		}
		s := newSeries(r.Name, r.Start, r.Step, vs, 0)
		f.series = append(f.series, s)
	}
	return f
}

func refValue(v any) float64 {
	switch x := v.(type) {
	case nil:
		return null
	case float64:
		return x
	case string:
		switch x {
		case "inf":
			return math.Inf(1)
		case "-inf":
			return math.Inf(-1)
		}
	}
	return math.NaN()
}

// refDifferencePatterns are kinds of targets where Eval knowingly
// differs from graphite-web, with the reason.
var refDifferencePatterns = []struct {
	re  *regexp.Regexp
	why string
}{
	{regexp.MustCompile(`^(nonNegativeDerivative|perSecond)\(.*,`), "with maxValue/minValue graphite-web compares None with them and fails (TypeError, 500) on any series with a null; Eval gives the null"},
	{regexp.MustCompile(`^(timeSlice|linearRegression)\(.*'(now|-)`), "relative times are taken from the wall clock in graphite-web and from the request's now in Eval (the same in a live request)"},
	{regexp.MustCompile(`^(timeSlice|linearRegression)\(.*'(20|10|130)'\)$`), "an omitted end defaults to the wall clock's now in graphite-web, the request's in Eval"},
	{regexp.MustCompile(`^(cactiStyle\(.*'(si|binary|x)'|legendValue\(.*'(si|binary)'\))`), "unit systems (format_units) are not implemented: a bad request"},
	{regexp.MustCompile(`^consolidateBy\(.*'x'\)`), "graphite-web only logs the invalid option and fails later when consolidating; Eval answers a bad request"},
	{regexp.MustCompile(`^seriesByTag\('(%|\^a|x)'`), "an invalid tag expression is a bad request in Eval; graphite-web's tag database raises on it (the reference's stub fetchData matched nothing)"},
}

// refCaseFiles are the references: the hand-written targets, and the
// smoke targets of TestFunctionsSmoke (every function × argument shapes).
var refCaseFiles = []string{"expected.json", filepath.Join("smoke", "expected.json.gz")}

func loadRefCases(t *testing.T, name string) []refCase {
	f, err := os.Open(filepath.Join(refDir(), name))
	if err != nil {
		if os.IsNotExist(err) && name != refCaseFiles[0] {
			return nil
		}
		t.Fatal(err)
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(name, ".gz") {
		zr, err := gzip.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		r = zr
	}
	var cases []refCase
	if err := json.NewDecoder(r).Decode(&cases); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return cases
}

func TestReferenceGraphiteWeb(t *testing.T) {
	total := 0
	for _, name := range refCaseFiles {
		cases := loadRefCases(t, name)
		total += len(cases)
		store := refStoreIn(t, filepath.Join(refDir(), filepath.Dir(name)))
	next:
		for _, rc := range cases {
			if why, ok := refDifferences[rc.Target]; ok {
				t.Logf("%s: skipped: %s", rc.Target, why)
				continue
			}
			for _, d := range refDifferencePatterns {
				if d.re.MatchString(rc.Target) {
					continue next
				}
			}
			e, err := Parse(rc.Target)
			var got []*Series
			if err == nil {
				f := &fakeFetcher{series: store.series}
				got, err = Eval(context.Background(), e, rc.From, rc.Until, rc.Until, f)
			}
			if rc.Error != "" {
				if err == nil {
					t.Errorf("%s: graphite-web fails (%s); Eval returned %d series", rc.Target, rc.Error, len(got))
				}
				continue
			}
			if err != nil {
				t.Errorf("%s: %v", rc.Target, err)
				continue
			}
			if diff := compareRef(got, rc.Series); diff != "" {
				t.Errorf("%s: %s", rc.Target, diff)
			}
		}
	}
	if total < 150 {
		t.Fatalf("%d reference targets; want at least 150", total)
	}
}

func compareRef(got []*Series, want []refSeries) string {
	if len(got) != len(want) {
		var g, w []string
		for _, s := range got {
			g = append(g, s.Name)
		}
		for _, s := range want {
			if s.Name != nil {
				w = append(w, *s.Name)
			}
		}
		return fmt.Sprintf("series %q; graphite-web %q", g, w)
	}
	for i, s := range got {
		x := want[i]
		// Eval names graphite-web's None name "None", as str() does.
		name, path := "None", "None"
		if x.Name != nil {
			name = *x.Name
		}
		if x.PathExpression != nil {
			path = *x.PathExpression
		}
		if s.Name != name {
			return fmt.Sprintf("series %d named %q; graphite-web %q", i, s.Name, name)
		}
		if s.PathExpression != path {
			return fmt.Sprintf("%s: path expression %q; graphite-web %q", s.Name, s.PathExpression, path)
		}
		if float64(s.Start) != x.Start || float64(s.Step) != x.Step {
			return fmt.Sprintf("%s: start/step %d/%d; graphite-web %v/%v", s.Name, s.Start, s.Step, x.Start, x.Step)
		}
		wv := make([]float64, len(x.Values))
		for j, v := range x.Values {
			wv[j] = refValue(v)
		}
		if !sameVals(s.Values, wv) {
			return fmt.Sprintf("%s: values %s; graphite-web %s", s.Name, fmtVals(s.Values), fmtVals(wv))
		}
		if !equalTags(s.Tags, x.Tags) {
			return fmt.Sprintf("%s: tags %v; graphite-web %v", s.Name, s.Tags, x.Tags)
		}
		if s.ConsolidationFunc != x.ConsolidationFunc {
			return fmt.Sprintf("%s: consolidation %q; graphite-web %q", s.Name, s.ConsolidationFunc, x.ConsolidationFunc)
		}
	}
	return ""
}
