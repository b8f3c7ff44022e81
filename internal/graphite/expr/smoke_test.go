package expr

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
)

// smokeArgs are argument texts to try for each parameter type.
var smokeArgs = map[string][]string{
	"seriesList":      {"a.*.*", "nothing", "group(b.*,ctr)", "seriesByTag('name=cpu')"},
	"float":           {"2.5", "0", "-1", "1e300", "inf"},
	"integer":         {"3", "0", "-1", "100"},
	"node":            {"1", "0", "-1", "100"},
	"interval":        {"'1min'", "'-10s'", "'0s'", "'7d'"},
	"intOrInterval":   {"2", "'30s'", "0", "'1y'"},
	"intOrInf":        {"1", "inf", "0"},
	"boolean":         {"true", "false"},
	"string":          {"'x'", "'^a'", "'%'", "'name=cpu'"},
	"nodeOrTag":       {"1", "'dc'", "-1", "9"},
	"tag":             {"'dc'", "'name'"},
	"any":             {"None", "a.b.c", "10"},
	"date":            {"'now'", "'-1min'", "'20'"},
	"aggFunc":         {"'sum'", "'median'", "'count'", "'last'"},
	"aggOrSeriesFunc": {"'sum'", "'sumSeries'", "'asPercent'", "'countSeries'", "'sumSeriesLists'"},
}

// smokeOut, if set (TestMain with -smoke-out), receives the smoke targets
// in targets.txt form, to make a graphite-web reference of them.
var smokeOut io.Writer

// TestFunctionsSmoke calls every function with each candidate of each
// parameter in turn (the others at their first candidate), with and
// without the optional parameters: no panic, and invariant 2 holds.
func TestFunctionsSmoke(t *testing.T) {
	n := 0
	for _, fi := range Functions() {
		for slot := range fi.Params {
			cands := smokeArgs[fi.Params[slot].Type]
			if len(fi.Params[slot].Options) > 0 && fi.Params[slot].Type == "string" {
				cands = nil
				for _, o := range fi.Params[slot].Options {
					if s, ok := o.(string); ok {
						cands = append(cands, "'"+s+"'")
					}
				}
			}
			for _, cand := range cands {
				for _, withOptional := range []bool{false, true} {
					var args []string
					for i, p := range fi.Params {
						if !p.Required && !withOptional && i != slot {
							break
						}
						a := cand
						if i != slot {
							c := smokeArgs[p.Type]
							if len(c) == 0 {
								c = []string{"1"}
							}
							a = c[0]
						}
						args = append(args, a)
						if p.Multiple {
							args = append(args, a)
						}
					}
					target := fmt.Sprintf("%s(%s)", fi.Name, strings.Join(args, ","))
					e, err := Parse(target)
					if err != nil {
						continue
					}
					n++
					if smokeOut != nil {
						fmt.Fprintf(smokeOut, "0 60 %s\n", target)
					}
					rf := &recordingFetcher{inner: refStore(t)}
					got, err := Eval(context.Background(), e, 0, 60, 60, rf)
					if msg := rf.changed(); msg != "" {
						t.Errorf("%s changed a fetched series (invariant 1): %s", target, msg)
					}
					if err != nil {
						continue
					}
					for _, s := range got {
						if s.Step <= 0 || s.End != s.Start+int64(len(s.Values))*s.Step {
							t.Errorf("%s: series %q start %d end %d step %d with %d values", target, s.Name, s.Start, s.End, s.Step, len(s.Values))
						}
					}
				}
			}
		}
	}
	if n < 500 {
		t.Errorf("only %d smoke targets", n)
	}
}

// recordingFetcher keeps a deep copy of every series it hands out, so
// that a test can check Eval wrote to none of them (invariant 1).
type recordingFetcher struct {
	inner  *fakeFetcher
	handed []*Series
	copies []Series
}

func (f *recordingFetcher) record(got []*Series, err error) ([]*Series, error) {
	for _, s := range got {
		c := *s
		c.Values = append([]float64(nil), s.Values...)
		c.Tags = copyTags(s.Tags)
		f.handed = append(f.handed, s)
		f.copies = append(f.copies, c)
	}
	return got, err
}

func (f *recordingFetcher) Fetch(ctx context.Context, pathExpr string, from, until int64) ([]*Series, error) {
	return f.record(f.inner.Fetch(ctx, pathExpr, from, until))
}

func (f *recordingFetcher) FetchTagged(ctx context.Context, exprs []string, from, until int64) ([]*Series, error) {
	return f.record(f.inner.FetchTagged(ctx, exprs, from, until))
}

// changed describes the first handed-out series that differs from its
// copy, or returns "".
func (f *recordingFetcher) changed() string {
	for i, s := range f.handed {
		c := f.copies[i]
		if s.Name != c.Name || s.PathExpression != c.PathExpression || s.Start != c.Start || s.End != c.End ||
			s.Step != c.Step || s.ConsolidationFunc != c.ConsolidationFunc || s.XFilesFactor != c.XFilesFactor ||
			!sameVals(s.Values, c.Values) || !equalTags(s.Tags, c.Tags) {
			return fmt.Sprintf("%s: %+v became %+v", c.Name, c, *s)
		}
	}
	return ""
}
