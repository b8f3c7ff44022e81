package rollup

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseRetentions(t *testing.T) {
	f := func(in string, want []Retention, wantErr string) {
		t.Helper()
		got, err := ParseRetentions(in)
		if wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), wantErr) {
				t.Fatalf("%q: err %v, want %q", in, err, wantErr)
			}
			return
		}
		if err != nil {
			t.Fatalf("%q: %v", in, err)
		}
		if len(got) != len(want) {
			t.Fatalf("%q: %v, want %v", in, got, want)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("%q: %v, want %v", in, got, want)
			}
		}
	}
	const d, y = 24 * time.Hour, 365 * 24 * time.Hour
	f("10s:6h,1m:7d,1h:1y", []Retention{{10 * time.Second, 6 * time.Hour}, {time.Minute, 7 * d}, {time.Hour, y}}, "")
	f("60:1440", []Retention{{time.Minute, d}}, "")
	f("60s:1d", []Retention{{time.Minute, d}}, "")
	f("1min:2days, 5minutes:30days", []Retention{{time.Minute, 2 * d}, {5 * time.Minute, 30 * d}}, "")
	f("", nil, "empty")
	f("10s", nil, "precision:retention")
	f("10x:1d", nil, "archive 1 precision")
	f("10s:1q", nil, "archive 1 retention")
	f("10s:6h,15s:7d", nil, "multiple of the previous")
	f("10s:6h,1m:1h", nil, "keep longer")
	f("1m:30s", nil, "less than one point")
	f("0s:1d", nil, "archive 1 precision")
}

func TestParseConf(t *testing.T) {
	schemas, err := ParseSchemasConf(strings.NewReader(`
# carbon's example
[carbon]
pattern = ^carbon\.
retentions = 60:90d

[collectd]
pattern = ^collectd\.
retentions = 10s:6h,1m:7d
heartbeat = 30s

[default_1min_for_1day]
pattern = .*
retentions = 60s:1d
`), "storage-schemas.conf")
	if err != nil {
		t.Fatal(err)
	}
	aggs, err := ParseAggregationConf(strings.NewReader(`
[min]
pattern = \.min$
xFilesFactor = 0.1
aggregationMethod = min

[sum]
pattern = \.count$
xFilesFactor = 0
aggregationMethod = sum

[default_average]
pattern = .*
`), "storage-aggregation.conf")
	if err != nil {
		t.Fatal(err)
	}
	r := &Rules{Schemas: schemas, Aggregations: aggs}
	for _, c := range []struct {
		name, schema, agg string
		hb                time.Duration
		m                 Method
		xff               float64
	}{
		{"carbon.agents.a.count", "carbon", "sum", time.Minute, Sum, 0},
		{"collectd.host.load.min", "collectd", "min", 30 * time.Second, Min, 0.1},
		{"other.thing", "default_1min_for_1day", "default_average", time.Minute, Average, 0.5},
	} {
		s, a := r.Match(c.name)
		if s.Name != c.schema || a.Name != c.agg || s.Heartbeat != c.hb || a.Method != c.m || a.XFilesFactor != c.xff {
			t.Errorf("%s: schema %s hb %v, aggregation %s %s %v", c.name, s.Name, s.Heartbeat, a.Name, a.Method, a.XFilesFactor)
		}
	}
	lv := r.Levels()
	if len(lv) != 1 || lv[0].Step != time.Minute || lv[0].Duration != 7*24*time.Hour {
		t.Fatalf("levels %v", lv)
	}
	for _, c := range []struct{ conf, err string }{
		{"pattern = x\n", "before any [section]"},
		{"[a\npattern = x\n", "no closing ]"},
		{"[a]\nretentions = 1m:1d\n", "no pattern"},
		{"[a]\npattern = (\nretentions = 1m:1d\n", "pattern"},
		{"[a]\npattern = x\nretentions = 1m:1d\nheartbeat = soon\n", "heartbeat"},
		{"[a]\njunk\n", "want key = value"},
	} {
		if _, err := ParseSchemasConf(strings.NewReader(c.conf), "s.conf"); err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%q: err %v, want %q", c.conf, err, c.err)
		}
	}
	for _, c := range []struct{ conf, err string }{
		{"[a]\npattern = x\nxFilesFactor = 2\n", "must be in [0, 1]"},
		{"[a]\npattern = x\nxFilesFactor = half\n", "not a number"},
		{"[a]\npattern = x\naggregationMethod = median\n", "must be average"},
	} {
		if _, err := ParseAggregationConf(strings.NewReader(c.conf), "a.conf"); err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%q: err %v, want %q", c.conf, err, c.err)
		}
	}
}

func TestConsolidate(t *testing.T) {
	nan := math.NaN()
	eq := func(a, b []float64) bool {
		return slices.EqualFunc(a, b, func(x, y float64) bool { return x == y || math.IsNaN(x) && math.IsNaN(y) })
	}
	// Samples at 0, 10, 15, 40 (ms) with values 1, 2, 4, 8; slots of 10.
	ts := []int64{0, 10, 15, 40}
	vs := []float64{1, 2, 4, 8}
	f := func(m Method, hb int64, want []float64) {
		t.Helper()
		if got := AppendSlots(nil, ts, vs, 0, 10, 5, m, hb); !eq(got, want) {
			t.Errorf("%s hb %d: %v, want %v", m, hb, got, want)
		}
	}
	f(Average, 10, []float64{1, 3, nan, nan, 8})
	f(Sum, 10, []float64{1, 6, nan, nan, 8})
	f(Min, 10, []float64{1, 2, nan, nan, 8})
	f(Max, 10, []float64{1, 4, nan, nan, 8})
	f(Last, 10, []float64{1, 4, nan, nan, 8})
	f(Count, 10, []float64{1, 2, nan, nan, 1})
	// A heartbeat of 15 lets the sample at 15 hold over [20, 30) (it ends
	// 15 after it) but not over [30, 40); count never holds.
	f(Average, 15, []float64{1, 3, 4, nan, 8})
	f(Count, 15, []float64{1, 2, nan, nan, 1})
	// A NaN (stale marker) ends the hold.
	if got := AppendSlots(nil, []int64{0, 5}, []float64{1, nan}, 0, 10, 3, Average, 100); !eq(got, []float64{1, nan, nan}) {
		t.Errorf("stale: %v", got)
	}
	// A sample before the grid holds into it.
	if got := AppendSlots(nil, []int64{-5}, []float64{7}, 0, 10, 2, Average, 15); !eq(got, []float64{7, nan}) {
		t.Errorf("before: %v", got)
	}

	slots := []float64{1, 2, nan, 4, nan, nan, nan, 8}
	g := func(m Method, xff float64, want []float64) {
		t.Helper()
		if got := AppendBuckets(nil, slots, 4, m, xff); !eq(got, want) {
			t.Errorf("%s xff %v: %v, want %v", m, xff, got, want)
		}
	}
	g(Average, 0.5, []float64{7.0 / 3, nan})
	g(Average, 0.25, []float64{7.0 / 3, 8})
	g(Average, 0, []float64{7.0 / 3, 8})
	g(Sum, 0.5, []float64{7, nan})
	g(Count, 0.25, []float64{7, 8})
	g(Min, 0.75, []float64{1, nan})
	g(Max, 0.75, []float64{4, nan})
	g(Last, 0.25, []float64{4, 8})
	g(Average, 1, []float64{nan, nan})
}
