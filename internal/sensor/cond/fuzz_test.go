package cond

import (
	"math"
	"testing"
)

// fuzzVectors are the metric vectors FuzzParse evaluates both the parsed and
// the reparsed expression on: small integers fuzzers like, a NaN, negative
// values, and missing quantiles.
var fuzzVectors = []vals{
	{Count: 0, Min: 0, Max: 0, Avg: 0, Sum: 0, Stddev: 0, First: 0, Last: 0, P50: 0, P90: 0, P99: 0},
	{Count: 3, Min: 1, Max: 9, Avg: 5, Sum: 15, Stddev: 2, First: 1, Last: 9, P50: 5, P90: 8, P99: 9},
	{Count: 10, Min: -200, Max: 500, Avg: 75, Sum: 750, Stddev: 100, First: 50, Last: 200},
	{Count: 1, Min: math.NaN(), Max: 1e300, Avg: -0.5, Sum: -1e-300, Stddev: math.NaN(), First: -1, Last: 2},
	{},
}

// FuzzParse checks that Parse never panics, that errors carry an offset
// inside the condition, and that the canonical form reparses to itself and
// evaluates the same (doc.go invariants 1 and 3).
func FuzzParse(f *testing.F) {
	f.Fuzz(func(t *testing.T, s string) {
		e, err := Parse(s)
		if err != nil {
			se, ok := err.(*SyntaxError)
			if !ok {
				t.Fatalf("Parse(%q) error %T, want *SyntaxError", s, err)
			}
			if se.Offset < 0 || se.Offset > len(s) || se.Msg == "" {
				t.Fatalf("Parse(%q): bad error %+v", s, se)
			}
			return
		}
		c := e.String()
		// The canonical form may outgrow MaxLen; lift the limit then
		// (invariant 3).
		e2, err := parse(c, max(MaxLen, len(c)))
		if err != nil {
			t.Fatalf("Parse(%q) ok but its canonical form %q fails: %v", s, c, err)
		}
		if c2 := e2.String(); c2 != c {
			t.Fatalf("canonical form unstable:\n%q\n%q", c, c2)
		}
		if again, _ := Parse(s); again.String() != c {
			t.Fatalf("Parse(%q) not deterministic: %q then %q", s, c, again.String())
		}
		if len(e.Metrics()) == 0 {
			t.Fatalf("Parse(%q) uses no metric", s)
		}
		for _, v := range fuzzVectors {
			if a, b := e.Eval(v.get), e2.Eval(v.get); a != b {
				t.Fatalf("Eval(%v) of %q = %v but of its canonical form %q = %v", v, s, a, c, b)
			}
		}
	})
}
