package graphite

import (
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/aerie-db/aerie/internal/graphite/expr"
)

var nan = math.NaN()

// TestConsolidate checks maxDataPoints consolidation against numbers
// worked by hand from graphite-web 1.1.8's renderViewJson and
// TimeSeries.__consolidatingGenerator (and confirmed by running them).
func TestConsolidate(t *testing.T) {
	seq := func(n int) []float64 {
		v := make([]float64, n)
		for i := range v {
			v[i] = float64(i)
		}
		return v
	}
	type pt struct {
		v  float64
		ts int64
	}
	for _, tc := range []struct {
		name          string
		start, step   int64
		values        []float64
		maxDataPoints int
		fn            string
		xff           float64
		want          []pt
	}{
		// 10 values, 3 points: valuesPerPoint 4, step 240; the nudge moves
		// start from 600 to 720 and drops 1 value (graphite-web drops
		// nudge/step - 1): [2 3 4 5] [6 7 8 9] [10].
		{"average", 600, 60, []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 3, "average", 0,
			[]pt{{3.5, 720}, {7.5, 960}, {10, 1200}}},
		// [null 3 null null] has 1/4 < 0.5 non-null; [10] counts over 4 too.
		{"sum xff", 600, 60, []float64{1, nan, 3, nan, nan, 6, 7, 8, 9, 10}, 3, "sum", 0.5,
			[]pt{{nan, 720}, {30, 960}, {nan, 1200}}},
		{"max", 600, 60, []float64{1, nan, 3, 4, 5, 6, 7, 8, 9, 10}, 3, "max", 0,
			[]pt{{5, 720}, {9, 960}, {10, 1200}}},
		{"min", 600, 60, []float64{1, nan, 3, 4, 5, 6, 7, 8, 9, 10}, 3, "min", 0,
			[]pt{{3, 720}, {6, 960}, {10, 1200}}},
		{"first", 600, 60, []float64{1, nan, 3, 4, 5, 6, 7, 8, 9, 10}, 3, "first", 0,
			[]pt{{3, 720}, {6, 960}, {10, 1200}}},
		{"last", 600, 60, []float64{1, nan, 3, 4, 5, 6, 7, 8, 9, nan}, 3, "last", 0,
			[]pt{{5, 720}, {9, 960}, {nan, 1200}}},
		{"avg_zero", 600, 60, []float64{1, nan, 3, 4, 5, 6, 7, 8, nan, 10}, 3, "avg_zero", 0,
			[]pt{{3, 720}, {5.25, 960}, {10, 1200}}},
		{"one point", 600, 60, []float64{1, 2, 3, 4}, 1, "average", 0, []pt{{2.5, 600}}},
		// 100 values, 7 points: valuesPerPoint 15; 14 values dropped.
		{"hundred", 0, 10, seq(100), 7, "average", 0,
			[]pt{{21, 150}, {36, 300}, {51, 450}, {66, 600}, {81, 750}, {94, 900}}},
		// start off the new step: nudge 50 + 5 - 5.
		{"unaligned", 5, 10, seq(20), 4, "average", 0,
			[]pt{{6, 55}, {11, 105}, {16, 155}, {19, 205}}},
		{"enough points", 600, 60, []float64{1, 2, 3}, 3, "average", 0,
			[]pt{{1, 600}, {2, 660}, {3, 720}}},
	} {
		s := &expr.Series{Name: "x", Start: tc.start, Step: tc.step, Values: tc.values,
			End: tc.start + int64(len(tc.values))*tc.step, ConsolidationFunc: tc.fn, XFilesFactor: tc.xff}
		got := string(AppendRenderJSON(nil, []*expr.Series{s}, tc.maxDataPoints, false))
		var b []byte
		b = append(b, `[{"target": "x", "tags": {}, "datapoints": [`...)
		for i, p := range tc.want {
			if i > 0 {
				b = append(b, ", "...)
			}
			b = append(b, '[')
			b = appendJSONValue(b, p.v)
			b = append(b, ", "...)
			b = strconv.AppendInt(b, p.ts, 10)
			b = append(b, ']')
		}
		b = append(b, "]}]"...)
		if got != string(b) {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, b)
		}
	}
}

func TestAppendPyFloat(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		want string
	}{
		{1, "1.0"}, {0, "0.0"}, {math.Copysign(0, -1), "-0.0"}, {-2.5, "-2.5"}, {0.1, "0.1"},
		{1e15, "1000000000000000.0"}, {1e16, "1e+16"}, {1.5e16, "1.5e+16"}, {123456789012345680, "1.2345678901234568e+17"},
		{0.0001, "0.0001"}, {0.00001, "1e-05"}, {1.25e-7, "1.25e-07"}, {1e300, "1e+300"},
		{math.NaN(), "nan"}, {math.Inf(1), "inf"}, {math.Inf(-1), "-inf"}, {1.0 / 3, "0.3333333333333333"},
	} {
		if got := string(AppendPyFloat(nil, tc.v)); got != tc.want {
			t.Errorf("AppendPyFloat(%v) = %q, want %q", tc.v, got, tc.want)
		}
	}
}

func TestAppendPyJSONString(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"a.b", `"a.b"`},
		{`q"b\`, `"q\"b\\"`},
		{"tab\tnl\n\x01\x7f", `"tab\tnl\n\u0001\u007f"`},
		{"héllo", `"h\u00e9llo"`},
		{"😀", `"\ud83d\ude00"`},
		{"<&>", `"<&>"`},
	} {
		if got := string(appendPyJSONString(nil, tc.in)); got != tc.want {
			t.Errorf("appendPyJSONString(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

// TestAppendPyFloatBounds compares the fast path with the exponent rule
// around the bounds of positional notation.
func TestAppendPyFloatBounds(t *testing.T) {
	for _, c := range []float64{1e-4, 1e16} {
		for _, f := range []float64{0.998, 0.999, 0.9999999999, 1, 1.0000000001, 1.001, 1.002} {
			for _, v := range []float64{c * f, -c * f, math.Nextafter(c, 0), math.Nextafter(c, 2*c)} {
				e := strconv.FormatFloat(v, 'e', -1, 64)
				exp, _ := strconv.Atoi(e[strings.IndexByte(e, 'e')+1:])
				got := string(AppendPyFloat(nil, v))
				if positional := !strings.Contains(got, "e"); positional != (exp >= -4 && exp < 16) {
					t.Errorf("AppendPyFloat(%v) = %s, but its shortest digits have exponent %d", v, got, exp)
				}
			}
		}
	}
}
