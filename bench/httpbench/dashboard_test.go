package httpbench

import (
	"bytes"
	"compress/gzip"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/aerie-db/aerie/bench/harness"
	"github.com/aerie-db/aerie/bench/tsbs"
	"github.com/aerie-db/aerie/bench/workload"
)

// TestDashboardPanels: 20 panels, each parses, and every metric they
// select is one the node workload writes.
func TestDashboardPanels(t *testing.T) {
	w, err := workload.New("node", workload.Spec{Targets: 1, Duration: time.Minute, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, ls := range w.Series(0) {
		names[ls.Get(labels.MetricName)] = true
	}
	panels := dashboardPanels()
	if len(panels) != 20 {
		t.Fatalf("%d panels, want 20", len(panels))
	}
	for _, p := range panels {
		expr, err := parser.ParseExpr(p.Expr)
		if err != nil {
			t.Errorf("panel %q: %v", p.Title, err)
			continue
		}
		for _, vs := range parser.ExtractSelectors(expr) {
			for _, m := range vs {
				if m.Name == labels.MetricName && !names[m.Value] {
					t.Errorf("panel %q selects %s, which the node workload does not write", p.Title, m.Value)
				}
			}
		}
	}
}

// TestRefreshEnds: refreshes 30 s apart, the last at the newest data
// time floored to the step, every range [end − 6 h, end] on the step.
func TestRefreshEnds(t *testing.T) {
	const dataEnd = 1_700_000_012_345
	ends := refreshEnds(dataEnd, 4)
	if want := int64(1_700_000_010_000); ends[3] != want {
		t.Fatalf("last end %d, want %d", ends[3], want)
	}
	for k, e := range ends {
		if k > 0 && e-ends[k-1] != dashRefresh.Milliseconds() {
			t.Errorf("refresh %d ends %d ms after the one before", k+1, e-ends[k-1])
		}
		for _, q := range refreshQueries(dashboardPanels(), e) {
			if q.End != e || q.End-q.Start != dashRange.Milliseconds() || q.Start%dashStep.Milliseconds() != 0 || !q.gzip || q.Instant {
				t.Fatalf("refresh %d: query %+v", k+1, q)
			}
		}
	}
}

// TestPromQueryGzip: a compressed answer comes back decompressed.
func TestPromQueryGzip(t *testing.T) {
	s := fakeServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Accept-Encoding") != "gzip" {
			w.Write([]byte("plain"))
			return
		}
		w.Header().Set("Content-Encoding", "gzip")
		zw := gzip.NewWriter(w)
		zw.Write([]byte("unzipped"))
		zw.Close()
	})
	ctx := context.Background()
	for _, tc := range []struct {
		gzip bool
		want string
	}{{false, "plain"}, {true, "unzipped"}} {
		b, _, err := promQuery(ctx, s, query{Query: tsbs.Query{Expr: "up", Step: time.Second}, gzip: tc.gzip})
		if err != nil || string(b) != tc.want {
			t.Errorf("gzip=%v: %q, %v; want %q", tc.gzip, b, err, tc.want)
		}
	}
}

func TestCompareBytes(t *testing.T) {
	if msg := compareBytes([]byte("abc"), []byte("abc")); msg != "" {
		t.Fatal(msg)
	}
	msg := compareBytes([]byte(`{"v":"1.5"}`), []byte(`{"v":"1.25"}`))
	if !strings.Contains(msg, "at byte 8") || !strings.Contains(msg, "(11 bytes)") || !strings.Contains(msg, "(12 bytes)") {
		t.Fatal(msg)
	}
}

func TestDashboardConfigCheck(t *testing.T) {
	for _, tc := range []struct {
		cfg  DashboardConfig
		want string
	}{
		{DashboardConfig{Options: harness.Options{Scale: "large"}}, `--scale="large"`},
		{DashboardConfig{Options: harness.Options{Scale: "small"}, Refreshes: -1}, "--refreshes=-1"},
	} {
		if _, err := tc.cfg.check(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error containing %q", tc.cfg, err, tc.want)
		}
	}
	cfg := DashboardConfig{Options: harness.Options{Scale: "small"}, Refreshes: 7}
	sc, err := cfg.check()
	if err != nil || sc.Refreshes != 7 || cfg.Seed != 1 {
		t.Fatalf("%+v %+v %v", sc, cfg, err)
	}
}

func sampleDashboardReport() *DashboardReport {
	rep := &DashboardReport{
		Header: harness.Header{Kind: DashboardKind, Machine: &harness.Machine{CPU: "Test CPU", Cores: 2, GOMAXPROCS: 2, MemoryGiB: 8, OS: "linux/amd64", Go: "go1.26"},
			Commit: "0123456789ab", Date: "2026-11-24T00:00:00Z", Scale: "small"},
		Series: 1034, Samples: 1_500_000,
		Config: map[string]string{"targets": "2", "interval": "15s", "span": "6h11m30s", "refreshes": "3", "range": "6h0m0s",
			"refresh": "30s", "step": "30s", "clients": "6", "replay_start_lag": "40s", "replay_end_lag": "45s"},
		Peers:    []Peer{{Name: aerieOff}, {Name: aerieOn}, {Name: vm, Version: "victoria-metrics-test"}},
		Panels:   []DashboardPanel{{Title: "a|b", Expr: "up", AerieSeries: 2, VMSeries: 2}},
		Compared: 60,
		Systems: []DashboardSystem{
			{Peer: aerieOff, Queries: 60, CPUSeconds: 2, FirstCPUSeconds: 0.5, SteadyCPUSeconds: 1.5, P50Ms: 10, P99Ms: 40},
			{Peer: aerieOn, Queries: 60, CPUSeconds: 1, FirstCPUSeconds: 0.7, SteadyCPUSeconds: 0.3, P50Ms: 5, P99Ms: 50,
				Counters: map[string]float64{"aerie_results_cache_hits_total": 80, "aerie_results_cache_misses_total": 40}},
			{Peer: vm, Queries: 60, CPUSeconds: 0.5, SteadyCPUSeconds: 0.25, P50Ms: 4, P99Ms: 20,
				Counters: map[string]float64{"vm_rollup_result_cache_partial_hits_total": 55}},
		},
	}
	return rep
}

func TestDashboardReport(t *testing.T) {
	rep := sampleDashboardReport()
	var b bytes.Buffer
	if err := rep.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	got, err := Dashboard.Read("dashboard.json", b.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := HTTP.Read("dashboard.json", b.Bytes()); err == nil {
		t.Fatal("a dashboard report was read as an http report")
	}
	var md1, md2 bytes.Buffer
	rep.WriteMarkdown(&md1)
	got.WriteMarkdown(&md2)
	if md1.String() != md2.String() {
		t.Fatal("the report read back renders differently")
	}
	md := md1.String()
	for _, s := range []string{
		"## Results cache: a dashboard replay (small scale)",
		"| aerie-off | 60 | 2.000 | 0.5000 | 1.500 |",
		"| CPU s, whole replay | aerie-on ÷ aerie-off | 0.500 |",
		"| CPU s, steady state | aerie-on ÷ aerie-off | 0.200 |",
		"| CPU s, whole replay | aerie-on ÷ vm | 2.000 |",
		"hits 80, partial_hits 0, misses 40",
		"partial hits 55",
		"all 60 answers of aerie-on byte-identical",
		`| a\|b | ` + "`up`" + ` | 2 | 2 |`,
	} {
		if !strings.Contains(md, s) {
			t.Errorf("markdown lacks %q:\n%s", s, md)
		}
	}
	rep.Mismatches, rep.MismatchExamples = 1, []string{"refresh 2, panel \"x\": up"}
	var tb bytes.Buffer
	if err := rep.WriteTable(&tb); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"MISMATCH: 1 of 60", `panel "x"`, "aerie-on ÷ vm"} {
		if !strings.Contains(tb.String(), s) {
			t.Errorf("table lacks %q:\n%s", s, tb.String())
		}
	}
}
