package httpbench

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/promql/parser"
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
			want: result{typ: "matrix", series: []series{{labels: map[string]string{"__name__": "a", "h": "x"}, points: []point{{1700000000000, 1}, {1700000000500, 2.5}}}}}},
		{name: "vector, no labels, VM's stats",
			body: `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1700000000.123,"NaN"]}]},"stats":{"seriesFetched": "3"}}`,
			want: result{typ: "vector", series: []series{{labels: map[string]string{}, points: []point{{1700000000123, nan}}}}}},
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
		m := map[string]string{}
		for i := 0; i+1 < len(ls); i += 2 {
			m[ls[i]] = ls[i+1]
		}
		return series{labels: m, points: []point{{1000, v}, {2000, v + 1}}}
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
		{"timestamps", m(s(1)), m(series{labels: map[string]string{}, points: []point{{1000, 1}, {3000, 2}}}), differ, "point 1"},
		{"points", m(s(1)), m(series{labels: map[string]string{}, points: []point{{1000, 1}}}), differ, "2 points vs 1"},
	} {
		v, msg := compare(tc.a, tc.b)
		if v != tc.verdict || !strings.Contains(msg, tc.msg) {
			t.Errorf("%s: compare = %q, %q; want %q, %q", tc.name, v, msg, tc.verdict, tc.msg)
		}
	}
}

func TestNameRegexp(t *testing.T) {
	for _, tc := range []struct {
		names []string
		want  string
	}{
		{[]string{"cpu_usage_user", "cpu_usage_system"}, `cpu_(usage_user|usage_system)`},
		{[]string{"node_load1", "node_memory_MemAvailable_bytes"}, `node_(load1|memory_MemAvailable_bytes)`},
		{[]string{"node_load1", "up"}, `node_load1|up`},
		{[]string{"a.b_c"}, `a\.b_(c)`},
	} {
		if got := nameRegexp(tc.names); got != tc.want {
			t.Errorf("nameRegexp(%v) = %q, want %q", tc.names, got, tc.want)
		}
	}
}

// TestPatternInstances checks that every instance parses as PromQL,
// selects the right hosts, and lies on whole steps inside the data.
func TestPatternInstances(t *testing.T) {
	hosts := []string{"host_0", "host_1", "host_2", "a.b", "host-000:9100"}
	mint, maxt := int64(1_700_000_000_000), int64(1_700_000_000_000+12*3600_000-1)
	r := rand.New(rand.NewPCG(1, 2))
	for _, prof := range []profile{tsbsProfile, nodeProfile} {
		ps := patternsFor(prof)
		if want := map[bool]int{true: 10, false: 6}[prof.tsbs]; len(ps) != want {
			t.Fatalf("%d patterns for %s, want %d", len(ps), prof.host, want)
		}
		for _, pt := range ps {
			for range 30 {
				q := pt.instance(r, prof, hosts, mint, maxt, 10*time.Second)
				if _, err := parser.ParseExpr(q.expr); err != nil {
					t.Fatalf("%s: %s: %v", pt.name, q.expr, err)
				}
				if pt.hosts > 0 {
					n := strings.Count(q.expr, `host_`) + strings.Count(q.expr, `a\\.b`) + strings.Count(q.expr, `host-`)
					if per := strings.Count(q.expr, prof.host+"="); n != min(pt.hosts, len(hosts))*per {
						t.Fatalf("%s: %s selects %d hosts in %d matchers", pt.name, q.expr, n, per)
					}
				}
				if q.instant {
					if q.start != maxt || q.end != maxt {
						t.Fatalf("%s: instant at %d", pt.name, q.start)
					}
					continue
				}
				step := q.step.Milliseconds()
				if q.start%step != 0 || q.end%step != 0 || q.start < mint || q.end > maxt || q.end < q.start {
					t.Fatalf("%s: [%d, %d] step %v over data [%d, %d]", pt.name, q.start, q.end, q.step, mint, maxt)
				}
				if d := time.Duration(q.end-q.start) * time.Millisecond; d != pt.span-q.step {
					t.Fatalf("%s: evaluates over %v, want %v", pt.name, d, pt.span-q.step)
				}
			}
		}
	}
}

func TestPercentile(t *testing.T) {
	ds := []time.Duration{5, 1, 4, 2, 3, 10, 9, 8, 7, 6}
	for _, tc := range []struct {
		q    float64
		want time.Duration
	}{{0, 1}, {0.1, 1}, {0.5, 5}, {0.55, 6}, {0.99, 10}, {1, 10}} {
		if got := percentile(ds, tc.q); got != tc.want {
			t.Errorf("percentile(%v) = %v, want %v", tc.q, got, tc.want)
		}
	}
	if percentile(nil, 0.5) != 0 || percentile([]time.Duration{7}, 0.99) != 7 {
		t.Error("percentile of nothing or of one")
	}
	if !slices.Equal(ds, []time.Duration{5, 1, 4, 2, 3, 10, 9, 8, 7, 6}) {
		t.Error("percentile reordered its input")
	}
}
