package expr

import (
	"errors"
	"math"
	"reflect"
	"testing"
)

// stripPos zeroes positions so expressions parsed from different texts
// compare equal.
func stripPos(e Expr) Expr {
	switch e := e.(type) {
	case *PathExpr:
		c := *e
		c.At = 0
		return &c
	case *StringExpr:
		c := *e
		c.At = 0
		return &c
	case *NumberExpr:
		c := *e
		c.At = 0
		return &c
	case *BoolExpr:
		c := *e
		c.At = 0
		return &c
	case *NoneExpr:
		return &NoneExpr{}
	case *CallExpr:
		c := &CallExpr{Name: e.Name} // Raw and At dropped
		for _, a := range e.Args {
			c.Args = append(c.Args, stripPos(a))
		}
		for _, kw := range e.Kwargs {
			c.Kwargs = append(c.Kwargs, Kwarg{Name: kw.Name, Value: stripPos(kw.Value)})
		}
		return c
	}
	return e
}

func TestParse(t *testing.T) {
	path := func(p string) Expr { return &PathExpr{Path: p} }
	num := func(text string, v float64, isInt bool) Expr { return &NumberExpr{Text: text, Value: v, IsInt: isInt} }
	call := func(name string, args ...Expr) *CallExpr { return &CallExpr{Name: name, Args: args} }
	str := func(s string, q byte) Expr { return &StringExpr{Value: s, Quote: q} }
	for _, tc := range []struct {
		in   string
		want Expr
		str  string // String(), if not in
	}{
		{"a.b.c", path("a.b.c"), ""},
		{"a.*.c?.[a-z]d.{x,y}z", path("a.*.c?.[a-z]d.{x,y}z"), ""},
		{"a.b;dc=x;env=prod", path("a.b;dc=x;env=prod"), ""},
		{"1.2", path("1.2"), ""},
		{`a\(b\).c`, path("a(b).c"), `a\(b\)\.c`},
		{"sumSeries(a.*)", call("sumSeries", path("a.*")), ""},
		{" sumSeries ( a.* , b ) ", call("sumSeries", path("a.*"), path("b")), "sumSeries(a.*,b)"},
		{"scale(a.b,2)", call("scale", path("a.b"), num("2", 2, true)), ""},
		{"scale(a.b,-2.5)", call("scale", path("a.b"), num("-2.5", -2.5, false)), ""},
		{"scale(a.b,1e3)", call("scale", path("a.b"), num("1e3", 1000, false)), ""},
		{"scale(a.b,1.5e-3)", call("scale", path("a.b"), num("1.5e-3", 0.0015, false)), ""},
		{"movingAverage(a.b,'1min')", call("movingAverage", path("a.b"), str("1min", '\'')), ""},
		{`alias(a.b,"x y")`, call("alias", path("a.b"), str("x y", '"')), ""},
		{`alias(a.b,'it\'s')`, call("alias", path("a.b"), str(`it\'s`, '\'')), ""},
		{"f(TRUE,false,None,inf)", call("f", &BoolExpr{Value: true}, &BoolExpr{}, &NoneExpr{}, num("inf", math.Inf(1), false)), "f(true,false,None,inf)"},
		{"f(trueish)", call("f", path("trueish")), ""},
		{"f(1.x)", call("f", path("1.x")), ""},
		{"f(-1h)", call("f", path("-1h")), ""},
		{"f()", call("f"), ""},
		{"a.b|sumSeries()|alias('x')", call("alias", call("sumSeries", path("a.b")), str("x", '\'')), "alias(sumSeries(a.b),'x')"},
		{"1|scale(2)", call("scale", path("1"), num("2", 2, true)), ""},
		{"seriesByTag('name=a.b','dc=~x.*')", call("seriesByTag", str("name=a.b", '\''), str("dc=~x.*", '\'')), ""},
		{"f(a.b, 1, x=2, y='z')", &CallExpr{Name: "f", Args: []Expr{path("a.b"), num("1", 1, true)},
			Kwargs: []Kwarg{{"x", num("2", 2, true)}, {"y", str("z", '\'')}}}, "f(a.b,1,x=2,y='z')"},
		{"f(x,a==b)", &CallExpr{Name: "f", Args: []Expr{path("x")}, Kwargs: []Kwarg{{"a", path("=b")}}}, ""},
		{`f(a\=b)`, call("f", path("a=b")), ""},
		{"f(g(h(a)))", call("f", call("g", call("h", path("a")))), ""},
	} {
		got, err := Parse(tc.in)
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.in, err)
			continue
		}
		if !reflect.DeepEqual(stripPos(got), tc.want) {
			t.Errorf("Parse(%q) = %#v; want %#v", tc.in, stripPos(got), tc.want)
		}
		want := tc.str
		if want == "" {
			want = tc.in
		}
		if s := got.String(); s != want {
			t.Errorf("Parse(%q).String() = %q; want %q", tc.in, s, want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		in     string
		offset int
	}{
		{"", 0},
		{"sumSeries(", 10},
		{"sumSeries(a.b", 13},
		{"sumSeries(a.b c)", 14},
		{"a..b", 2},
		{"a.", 2},
		{".a", 0},
		{"a.b)", 3},
		{"f('abc)", 7},
		{"f(x=1, a.b)", 2},
		{"f(y,x=1, a.b)", 9},
		{"f(x=1)", 2},
		{"a|f(x=1)", 4},
		{"a|b", 2},
		{"a.{b,}", 5},
		{"a.{b", 4},
		{`a\x`, 2},
		{"f(true.x)", 6},
		{"f(,)", 2},
	} {
		_, err := Parse(tc.in)
		var pe *ParseError
		if !errors.As(err, &pe) {
			t.Errorf("Parse(%q) error = %v; want a ParseError", tc.in, err)
			continue
		}
		if pe.Offset != tc.offset {
			t.Errorf("Parse(%q) error at %d (%v); want at %d", tc.in, pe.Offset, err, tc.offset)
		}
	}
}

func TestParseLimits(t *testing.T) {
	deep := ""
	for i := 0; i <= MaxDepth+1; i++ {
		deep += "f("
	}
	deep += "a"
	for i := 0; i <= MaxDepth+1; i++ {
		deep += ")"
	}
	if _, err := Parse(deep); err == nil {
		t.Errorf("Parse of %d nested calls succeeded", MaxDepth+2)
	}
	many := "f(a"
	for i := 0; i < MaxArgs; i++ {
		many += ",a"
	}
	many += ")"
	if _, err := Parse(many); err == nil {
		t.Errorf("Parse of %d arguments succeeded", MaxArgs+1)
	}
	long := make([]byte, MaxTargetLen+1)
	for i := range long {
		long[i] = 'a'
	}
	if _, err := Parse(string(long)); err == nil {
		t.Errorf("Parse of %d bytes succeeded", len(long))
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"a.b.c", "sumSeries(a.*)", "a.b|scale(2)|alias('x')", "f(1,2.5,1e3,-1,true,None,inf,'s',\"d\")",
		"seriesByTag('name=a','dc!=~x')", "f(x=1,y=a.b)", `a\(b\).{c,d}[0-9]`, "1|f()", "true|f()|g(1)",
		"a=b|f()", "f(x,a==b)", "groupByNode(a.*.b,1,'sum')", "f('it''s')", `f('a\'b')`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e, err := Parse(s)
		e2, err2 := Parse(s)
		if (err == nil) != (err2 == nil) {
			t.Fatalf("Parse(%q) not deterministic: %v vs %v", s, err, err2)
		}
		if err != nil {
			if err.Error() != err2.Error() {
				t.Fatalf("Parse(%q) errors differ: %v vs %v", s, err, err2)
			}
			var pe *ParseError
			if !errors.As(err, &pe) || pe.Offset < 0 || pe.Offset > len(s) {
				t.Fatalf("Parse(%q) error %v: want a ParseError within the target", s, err)
			}
			return
		}
		if e.String() != e2.String() {
			t.Fatalf("Parse(%q) not deterministic: %q vs %q", s, e, e2)
		}
		out := e.String()
		back, err := Parse(out)
		if err != nil {
			t.Fatalf("Parse(%q).String() = %q does not parse: %v", s, out, err)
		}
		if !reflect.DeepEqual(stripPos(back), stripPos(e)) {
			t.Fatalf("Parse(%q).String() = %q reads back as %q", s, out, back.String())
		}
	})
}
