package httpbench

import (
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
)

func TestParseResult(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       result
		wantErr    string
		apiErr     bool
	}{
		{name: "matrix",
			body: `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"__name__":"a","h":"x"},"values":[[1700000000,"1"],[1700000000.5,"2.5"]]}]}}`,
			want: result{typ: "matrix", series: []series{{labels: labels.FromStrings("__name__", "a", "h", "x"), points: []point{{1700000000000, 1}, {1700000000500, 2.5}}}}}},
		{name: "vector, no labels, VM's stats",
			body: `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1700000000.123,"NaN"]}]},"stats":{"seriesFetched": "3"}}`,
			want: result{typ: "vector", series: []series{{labels: labels.EmptyLabels(), points: []point{{1700000000123, nan}}}}}},
		{name: "empty", body: `{"status":"success","data":{"resultType":"matrix","result":[]}}`, want: result{typ: "matrix"}},
		{name: "error answer", body: `{"status":"error","errorType":"execution","error":"vector cannot contain metrics with the same labelset"}`,
			wantErr: "execution: vector cannot contain", apiErr: true},
		{name: "not JSON", body: `502 bad gateway`, wantErr: "not a query API answer", apiErr: true},
		{name: "scalar", body: `{"status":"success","data":{"resultType":"scalar","result":[]}}`, wantErr: "result type"},
		{name: "bad value", body: `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"x"]}]}}`, wantErr: "value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseResult([]byte(tc.body))
			if tc.wantErr != "" {
				_, isAPI := err.(*apiError)
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || isAPI != tc.apiErr {
					t.Fatalf("err %v (API error %v), want %q (API error %v)", err, isAPI, tc.wantErr, tc.apiErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if v, msg := compare(got, tc.want); v != agree || got.typ != tc.want.typ || len(got.series) != len(tc.want.series) {
				t.Fatalf("%+v, want %+v (%s %s)", got, tc.want, v, msg)
			}
		})
	}
}

var nan = func() float64 { z := 0.0; return z / z }()

func TestCompare(t *testing.T) {
	s := func(v float64, ls ...string) series {
		return series{labels: labels.FromStrings(ls...), points: []point{{1000, v}, {2000, v + 1}}}
	}
	m := func(ss ...series) result { return result{typ: "matrix", series: ss} }
	for _, tc := range []struct {
		name    string
		a, b    result
		verdict string
		msg     string
	}{
		{"same, other order", m(s(1, "h", "a"), s(2, "h", "b")), m(s(2, "h", "b"), s(1, "h", "a")), agree, ""},
		{"within 1e-9", m(s(1e6, "h", "a")), m(s(1e6*(1+5e-10), "h", "a")), agree, ""},
		{"NaN equals NaN", m(s(nan, "h", "a")), m(s(nan, "h", "a")), agree, ""},
		{"beyond 1e-9", m(s(1, "h", "a")), m(s(1+1e-8, "h", "a")), differ, "point 0"},
		{"name kept by one", m(s(1, "__name__", "cpu_usage_user", "h", "a")), m(s(1, "h", "a")), agreeName, ""},
		{"names kept by both", m(s(1, "__name__", "x", "h", "a"), s(2, "__name__", "y", "h", "a")),
			m(s(2, "__name__", "y", "h", "a"), s(1, "__name__", "x", "h", "a")), agree, ""},
		{"other label", m(s(1, "h", "a")), m(s(1, "h", "b")), differ, "series 0"},
		{"series count", m(s(1, "h", "a")), m(s(1, "h", "a"), s(1, "h", "b")), differ, "1 series vs 2"},
		{"type", m(s(1)), result{typ: "vector", series: []series{s(1)}}, differ, "matrix vs vector"},
		{"timestamps", m(s(1)), m(series{labels: labels.EmptyLabels(), points: []point{{1000, 1}, {3000, 2}}}), differ, "point 1"},
		{"points", m(s(1)), m(series{labels: labels.EmptyLabels(), points: []point{{1000, 1}}}), differ, "2 points vs 1"},
	} {
		v, msg := compare(tc.a, tc.b)
		if v != tc.verdict || !strings.Contains(msg, tc.msg) {
			t.Errorf("%s: compare = %q, %q; want %q, %q", tc.name, v, msg, tc.verdict, tc.msg)
		}
	}
}
