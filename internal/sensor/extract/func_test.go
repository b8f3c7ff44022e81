package extract

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestParseFunc(t *testing.T) {
	f := func(in string, kind FuncKind, canonical string, cols ...string) {
		t.Helper()
		fn, err := ParseFunc(in)
		if err != nil {
			t.Fatalf("ParseFunc(%q): %v", in, err)
		}
		if fn.Kind() != kind || fn.String() != canonical || !slices.Equal(fn.Columns(), cols) {
			t.Fatalf("ParseFunc(%q) = %v %q columns %q, want %v %q columns %q", in, fn.Kind(), fn.String(), fn.Columns(), kind, canonical, cols)
		}
		again, err := ParseFunc(fn.String())
		if err != nil || again.String() != canonical {
			t.Fatalf("ParseFunc(%q) = %v, %v", canonical, again, err)
		}
	}
	f("none", FuncNone, "none")
	f(" none ", FuncNone, "none")
	f("min", FuncAggregate, "min", "min")
	f("min,max,avg", FuncAggregate, "min,max,avg", "min", "max", "avg")
	f("p99, count ,\tstddev", FuncAggregate, "p99,count,stddev", "p99", "count", "stddev")
	f("count,min,max,avg,sum,stddev,first,last,p50,p90,p99", FuncAggregate,
		"count,min,max,avg,sum,stddev,first,last,p50,p90,p99",
		"count", "min", "max", "avg", "sum", "stddev", "first", "last", "p50", "p90", "p99")
	f("abs", FuncTransform, "abs")
	f("diff,abs,cumsum", FuncTransform, "diff,abs,cumsum")
	f("sub:1.50,mul:-2e3,movavg:10", FuncTransform, "sub:1.5,mul:-2000,movavg:10")
	f("sub:+.5", FuncTransform, "sub:0.5")
	f("mul:0x1p-2", FuncTransform, "mul:0.25")
	f("movavg:1", FuncTransform, "movavg:1")
	f("movavg:100000", FuncTransform, "movavg:100000")
	f("abs,abs", FuncTransform, "abs,abs")
	if (Func{}).String() != "none" || (Func{}).Kind() != FuncNone {
		t.Fatal("zero Func is not none")
	}
}

func TestParseFuncNeedsSketch(t *testing.T) {
	for in, want := range map[string]bool{"min,max": false, "count,p90": true, "p50": true, "abs": false, "none": false} {
		if got := mustParseFunc(t, in).NeedsSketch(); got != want {
			t.Errorf("ParseFunc(%q).NeedsSketch() = %v", in, got)
		}
	}
}

func TestParseFuncErrors(t *testing.T) {
	f := func(in string, off int, msg string) {
		t.Helper()
		fn, err := ParseFunc(in)
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Fatalf("ParseFunc(%q) = %v, %v; want *SyntaxError", in, fn, err)
		}
		if se.Offset != off || !strings.Contains(se.Msg, msg) {
			t.Fatalf("ParseFunc(%q) = byte %d: %s\nwant byte %d: %s…", in, se.Offset, se.Msg, off, msg)
		}
		if !strings.HasPrefix(err.Error(), "function: byte ") {
			t.Fatalf("error %q lacks the prefix", err)
		}
	}
	f("", 0, "empty function")
	f("  ", 0, "empty function")
	f("mean", 0, `unknown function "mean" (aggregations: count, min`)
	f("min,mean", 4, `unknown function "mean"`)
	f("min,,max", 4, "empty item")
	f("min,", 4, "empty item")
	f(",min", 0, "empty item")
	f("min,abs", 4, `transformation "abs" cannot follow aggregation "min" at byte 0`)
	f("abs, min", 5, `aggregation "min" cannot follow transformation "abs" at byte 0`)
	f("min,none", 4, `"none" cannot be combined`)
	f("none,min", 0, `"none" cannot be combined`)
	f("min,max,min", 8, `metric "min" listed twice`)
	f("min:3", 0, `aggregation "min" takes no argument`)
	f("abs:3", 0, `transformation "abs" takes no argument`)
	f("diff:", 0, `transformation "diff" takes no argument`)
	f("sub", 0, `transformation "sub" needs a number: sub:k`)
	f("abs,mul:", 4, `transformation "mul" needs a number`)
	f("sub:x", 4, `sub: invalid number "x"`)
	f("abs, mul:1e999", 9, `mul: invalid number "1e999"`)
	f("sub:NaN", 4, "sub:NaN: NaN and Inf are not allowed")
	f("mul:-inf", 4, "mul:-inf: NaN and Inf are not allowed")
	f("movavg", 0, `transformation "movavg" needs a window: movavg:n with n from 1 to 100000`)
	f("movavg:0", 7, `movavg:n needs an integer window of 1 to 100000 points, found "0"`)
	f("movavg:100001", 7, `found "100001"`)
	f("movavg:2.5", 7, `found "2.5"`)
	f("movavg:-3", 7, `found "-3"`)
	f("movavg:60000,movavg:50000", 13, "movavg windows add up to 110000 points; the limit is 100000")
	f("MIN", 0, `unknown function "MIN"`)
	f(strings.Repeat("abs,", 32)+"abs", 128, "more than 32 transformations")
	f(strings.Repeat(" ", 1025), 1024, "function is 1025 bytes long; the limit is 1024")
}
