package cond

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
)

// vals is a metric vector for Eval; a metric absent from the map cannot be
// supplied.
type vals map[Metric]float64

func (v vals) get(m Metric) (float64, bool) {
	x, ok := v[m]
	return x, ok
}

func TestParseCanonical(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"paper example", "min lte 200 & max gte 50 | avg eq 75", "((min lte 200 & max gte 50) | avg eq 75)"},
		{"paper benchmark", "min lte 500 & max gte -200", "(min lte 500 & max gte -200)"},
		{"and binds tighter on the right", "avg eq 75 | min lte 200 & max gte 50", "(avg eq 75 | (min lte 200 & max gte 50))"},
		{"parentheses override", "min lte 200 & (max gte 50 | avg eq 75)", "(min lte 200 & (max gte 50 | avg eq 75))"},
		{"single comparison", "count gt 0", "count gt 0"},
		{"redundant parentheses vanish", "((((count gt 0))))", "count gt 0"},
		{"and flattens left", "(min lt 1 & max lt 2) & sum lt 3", "(min lt 1 & max lt 2 & sum lt 3)"},
		{"and flattens right", "min lt 1 & (max lt 2 & sum lt 3)", "(min lt 1 & max lt 2 & sum lt 3)"},
		{"or flattens", "(min lt 1 | max lt 2) | (sum lt 3 | p50 lt 4)", "(min lt 1 | max lt 2 | sum lt 3 | p50 lt 4)"},
		{"mixed chain", "min lt 1 | max lt 2 & sum lt 3 | first lt 4 & last lt 5 & p90 lt 6",
			"(min lt 1 | (max lt 2 & sum lt 3) | (first lt 4 & last lt 5 & p90 lt 6))"},
		{"no spaces around punctuation", "(min lt 1)&(max gt 2)|(p99 ne 3)", "((min lt 1 & max gt 2) | p99 ne 3)"},
		{"tabs and newlines", "\tmin\nlte\r\n200\t&\tmax gte 50 ", "(min lte 200 & max gte 50)"},
		{"every op", "count lt 1 & min lte 2 & max gt 3 & avg gte 4 & sum eq 5 & stddev ne 6",
			"(count lt 1 & min lte 2 & max gt 3 & avg gte 4 & sum eq 5 & stddev ne 6)"},
		{"every metric", "count eq 0 | min eq 0 | max eq 0 | avg eq 0 | sum eq 0 | stddev eq 0 | first eq 0 | last eq 0 | p50 eq 0 | p90 eq 0 | p99 eq 0",
			"(count eq 0 | min eq 0 | max eq 0 | avg eq 0 | sum eq 0 | stddev eq 0 | first eq 0 | last eq 0 | p50 eq 0 | p90 eq 0 | p99 eq 0)"},
		{"negative exponent", "avg lt -1.5e3", "avg lt -1500"},
		{"plus sign", "avg lt +2", "avg lt 2"},
		{"leading dot", "avg lt .5", "avg lt 0.5"},
		{"trailing dot", "avg lt 5.", "avg lt 5"},
		{"big exponent", "sum gt 1e300", "sum gt 1e+300"},
		{"underflow to zero", "sum gt 1e-400", "sum gt 0"},
		{"negative zero", "sum gt -0", "sum gt -0"},
		{"hex float", "sum gt 0x1p-2", "sum gt 0.25"},
		{"max float", "sum lt 1.7976931348623157e308", "sum lt 1.7976931348623157e+308"},
		{"shortest round trip", "avg eq 0.1", "avg eq 0.1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := Parse(tt.in)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.in, err)
			}
			if got := e.String(); got != tt.want {
				t.Fatalf("Parse(%q).String() = %q, want %q", tt.in, got, tt.want)
			}
			e2, err := Parse(e.String())
			if err != nil {
				t.Fatalf("Parse(canonical %q): %v", e.String(), err)
			}
			if e2.String() != tt.want {
				t.Fatalf("canonical form is not stable: %q -> %q", tt.want, e2.String())
			}
		})
	}
}

func TestEval(t *testing.T) {
	nan := math.NaN()
	tenth, fifth := 0.1, 0.2 // variables: constant 0.1 + 0.2 is exactly 0.3
	tests := []struct {
		cond string
		v    vals
		want bool
	}{
		// Precedence: (min <= 200 && max >= 50) || avg == 75.
		{"min lte 200 & max gte 50 | avg eq 75", vals{Min: 200, Max: 50, Avg: 0}, true},
		{"min lte 200 & max gte 50 | avg eq 75", vals{Min: 201, Max: 50, Avg: 75}, true},
		{"min lte 200 & max gte 50 | avg eq 75", vals{Min: 201, Max: 50, Avg: 74}, false},
		{"min lte 200 & max gte 50 | avg eq 75", vals{Min: 100, Max: 49, Avg: 74}, false},
		{"min lte 200 & (max gte 50 | avg eq 75)", vals{Min: 201, Max: 50, Avg: 75}, false},
		{"min lte 200 & (max gte 50 | avg eq 75)", vals{Min: 200, Max: 0, Avg: 75}, true},
		// Every operator below, at and above the constant.
		{"avg lt 5", vals{Avg: 4}, true},
		{"avg lt 5", vals{Avg: 5}, false},
		{"avg lt 5", vals{Avg: 6}, false},
		{"avg lte 5", vals{Avg: 4}, true},
		{"avg lte 5", vals{Avg: 5}, true},
		{"avg lte 5", vals{Avg: 6}, false},
		{"avg gt 5", vals{Avg: 4}, false},
		{"avg gt 5", vals{Avg: 5}, false},
		{"avg gt 5", vals{Avg: 6}, true},
		{"avg gte 5", vals{Avg: 4}, false},
		{"avg gte 5", vals{Avg: 5}, true},
		{"avg gte 5", vals{Avg: 6}, true},
		{"avg eq 5", vals{Avg: 4}, false},
		{"avg eq 5", vals{Avg: 5}, true},
		{"avg eq 5", vals{Avg: 6}, false},
		{"avg ne 5", vals{Avg: 4}, true},
		{"avg ne 5", vals{Avg: 5}, false},
		{"avg ne 5", vals{Avg: 6}, true},
		// eq is exact.
		{"avg eq 0.3", vals{Avg: tenth + fifth}, false},
		{"avg eq 0.30000000000000004", vals{Avg: tenth + fifth}, true},
		{"avg eq 0", vals{Avg: math.Copysign(0, -1)}, true},
		// NaN: false except ne.
		{"avg lt 5", vals{Avg: nan}, false},
		{"avg lte 5", vals{Avg: nan}, false},
		{"avg gt 5", vals{Avg: nan}, false},
		{"avg gte 5", vals{Avg: nan}, false},
		{"avg eq 5", vals{Avg: nan}, false},
		{"avg ne 5", vals{Avg: nan}, true},
		// Infinite metric values compare as IEEE says.
		{"sum gt 1e308", vals{Sum: math.Inf(1)}, true},
		{"sum lt -1e308", vals{Sum: math.Inf(-1)}, true},
		// A metric the caller cannot supply: false, ne included.
		{"p50 lt 5", vals{Avg: 1}, false},
		{"p50 ne 5", vals{Avg: 1}, false},
		{"p50 ne 5 | avg eq 1", vals{Avg: 1}, true},
		{"p50 ne 5 & avg eq 1", vals{Avg: 1}, false},
	}
	for _, tt := range tests {
		e, err := Parse(tt.cond)
		if err != nil {
			t.Fatalf("Parse(%q): %v", tt.cond, err)
		}
		if got := e.Eval(tt.v.get); got != tt.want {
			t.Errorf("Parse(%q).Eval(%v) = %v, want %v", tt.cond, tt.v, got, tt.want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	deep := strings.Repeat("(", MaxDepth+1) + "min lt 1" + strings.Repeat(")", MaxDepth+1)
	// Each level alternates | inside & inside |, so 33 parentheses give an
	// &/| tree 66 deep.
	var alt strings.Builder
	for range 33 {
		alt.WriteString("min lt 1 | max lt 2 & (")
	}
	alt.WriteString("min lt 1")
	alt.WriteString(strings.Repeat(")", 33))
	tests := []struct {
		name, in string
		off      int
		msg      string
	}{
		{"empty", "", 0, "empty condition"},
		{"blank", "   \t", 4, "empty condition"},
		{"symbolic operator", "min lte 200 & max <= 50", 18, `expected operator (lt, lte, gt, gte, eq, ne), found "<="`},
		{"symbolic operator glued", "min<200", 3, `expected operator (lt, lte, gt, gte, eq, ne), found "<"`},
		{"unknown operator", "min le 200", 4, `expected operator (lt, lte, gt, gte, eq, ne), found "le"`},
		{"missing operator", "min", 3, "expected operator (lt, lte, gt, gte, eq, ne), found end of condition"},
		{"unknown metric", "mean gt 3", 0, `unknown metric "mean" (valid metrics: count, min, max, avg, sum, stddev, first, last, p50, p90, p99)`},
		{"upper-case metric", "MIN gt 3", 0, `unknown metric "MIN" (metric names are lower case: "min")`},
		{"upper-case operator", "min GT 3", 4, `expected operator (lt, lte, gt, gte, eq, ne), found "GT"`},
		{"missing value", "min gt", 6, `expected value after "gt", found end of condition`},
		{"missing value before and", "min gt & max lt 3", 7, `expected value after "gt", found "&"`},
		{"bad value", "min gt abc", 7, `invalid value "abc": want a number`},
		{"two numbers", "min gt 5-3", 7, `invalid value "5-3"`},
		{"NaN", "min gt NaN", 7, `value "NaN" is not allowed: NaN and Inf`},
		{"Inf", "min gt -Inf", 7, `value "-Inf" is not allowed: NaN and Inf`},
		{"infinity", "min gt infinity", 7, `value "infinity" is not allowed`},
		{"out of range", "min gt 1e400", 7, `value "1e400" is out of the range of float64`},
		{"trailing garbage", "min gt 3 max lt 4", 9, `expected "&", "|" or end of condition, found "max"`},
		{"trailing junk", "min gt 3;", 8, `expected "&", "|" or end of condition, found ";"`},
		{"dangling and", "min gt 3 &", 10, `expected metric or "(", found end of condition`},
		{"dangling or", "min gt 3 | ", 11, `expected metric or "(", found end of condition`},
		{"leading and", "& min gt 3", 0, `expected metric or "(", found "&"`},
		{"double and", "min gt 3 && max lt 4", 10, `expected metric or "(", found "&"`},
		{"empty parentheses", "()", 1, `expected metric or "(", found ")"`},
		{"unclosed", "(min gt 3", 9, `missing ")" to close "(" at byte 0`},
		{"unclosed inner", "(min gt 3 & (max lt 4)", 22, `missing ")" to close "(" at byte 0`},
		{"unmatched close", "min gt 3)", 8, `unmatched ")"`},
		{"junk inside parentheses", "(min gt 3 !)", 10, `expected "&", "|" or ")", found "!"`},
		{"value as metric", "3 gt min", 0, `unknown metric "3"`},
		{"non-UTF-8", "min gt 3 & \xff\xfe", 11, `expected metric or "(", found "\xff\xfe"`},
		{"long token cut", "min gt 3 & " + strings.Repeat("x", 100), 11, `unknown metric "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"… (valid`},
		{"too long", "min gt 3" + strings.Repeat(" ", MaxLen), MaxLen, "condition is 4104 bytes long; the limit is 4096"},
		{"parentheses too deep", deep, MaxDepth, "parentheses nest more than 64 deep"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := Parse(tt.in)
			if err == nil {
				t.Fatalf("Parse(%q) = %v, want error", tt.in, e)
			}
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("Parse(%q) error %T %v, want *SyntaxError", tt.in, err, err)
			}
			if se.Offset != tt.off || !strings.Contains(se.Msg, tt.msg) {
				t.Fatalf("Parse(%q) = byte %d: %s\nwant byte %d: %s…", tt.in, se.Offset, se.Msg, tt.off, tt.msg)
			}
			if se.Offset < 0 || se.Offset > len(tt.in) {
				t.Fatalf("offset %d outside the condition (%d bytes)", se.Offset, len(tt.in))
			}
		})
	}
	t.Run("groups too deep", func(t *testing.T) {
		_, err := Parse(alt.String())
		var se *SyntaxError
		if !errors.As(err, &se) || !strings.Contains(se.Msg, `"&" and "|" groups nest more than 64 deep`) {
			t.Fatalf("Parse(33 alternating levels) = %v, want groups too deep", err)
		}
	})
}

func TestSyntaxErrorFormat(t *testing.T) {
	_, err := Parse("min lte 200 & max <= 50")
	want := `condition: byte 18: expected operator (lt, lte, gt, gte, eq, ne), found "<="`
	if err == nil || err.Error() != want {
		t.Fatalf("error = %v, want %s", err, want)
	}
}

func TestLimits(t *testing.T) {
	// Exactly MaxLen bytes parses.
	s := "min gt 3" + strings.Repeat(" ", MaxLen-8)
	if _, err := Parse(s); err != nil {
		t.Fatalf("condition of MaxLen bytes: %v", err)
	}
	// MaxDepth parentheses parse, and the canonical form drops them.
	s = strings.Repeat("(", MaxDepth) + "min lt 1" + strings.Repeat(")", MaxDepth)
	if e, err := Parse(s); err != nil || e.String() != "min lt 1" {
		t.Fatalf("MaxDepth parentheses: %v, %v", e, err)
	}
	// A tree exactly MaxDepth deep parses and its canonical form, MaxDepth
	// parentheses deep, parses again.
	var b strings.Builder
	for i := range MaxDepth - 1 {
		if i%2 == 0 {
			b.WriteString("min lt 1 | (")
		} else {
			b.WriteString("max lt 1 & (")
		}
	}
	b.WriteString("sum lt 1 & sum gt 0")
	b.WriteString(strings.Repeat(")", MaxDepth-1))
	e, err := Parse(b.String())
	if err != nil {
		t.Fatalf("tree MaxDepth deep: %v", err)
	}
	if e.height != MaxDepth {
		t.Fatalf("height %d, want %d", e.height, MaxDepth)
	}
	if _, err := Parse(e.String()); err != nil {
		t.Fatalf("canonical form of a tree MaxDepth deep: %v", err)
	}
}

func TestMetrics(t *testing.T) {
	e, err := Parse("p50 gt 1 & min lt 3 | (max gt 2 & p50 lt 9) | min eq 0")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := e.Metrics(), []Metric{P50, Min, Max}; !slices.Equal(got, want) {
		t.Fatalf("Metrics() = %v, want %v", got, want)
	}
}

func TestMetricNames(t *testing.T) {
	all := AllMetrics()
	if len(all) != 11 {
		t.Fatalf("AllMetrics() has %d metrics, want 11", len(all))
	}
	for _, m := range all {
		got, err := ParseMetric(m.String())
		if err != nil || got != m {
			t.Errorf("ParseMetric(%q) = %v, %v", m.String(), got, err)
		}
		_, isQ := m.Quantile()
		if isQ != strings.HasPrefix(m.String(), "p") {
			t.Errorf("%v.Quantile() ok = %v", m, isQ)
		}
	}
	if s := Metric(0).String(); s != "Metric(0)" {
		t.Errorf("Metric(0).String() = %q", s)
	}
	if Metric(12).Valid() || Metric(0).Valid() {
		t.Error("invalid metrics report Valid")
	}
	if q, ok := P99.Quantile(); !ok || q != 0.99 {
		t.Errorf("P99.Quantile() = %v, %v", q, ok)
	}
	if _, err := ParseMetric("avg "); err == nil {
		t.Error(`ParseMetric("avg ") succeeded`)
	}
}

func TestEvalShortCircuitIsPure(t *testing.T) {
	// Eval must not depend on call order or state: the same Expr gives
	// the same answers in any order and from many goroutines.
	e, err := Parse("min lte 200 & max gte 50 | avg eq 75")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan bool)
	for i := range 4 {
		go func() {
			ok := true
			for j := range 1000 {
				v := vals{Min: float64(100 + (i+j)%200), Max: 60, Avg: 75}
				ok = ok && e.Eval(v.get)
			}
			done <- ok
		}()
	}
	for range 4 {
		if !<-done {
			t.Error("concurrent Eval disagreed")
		}
	}
}
