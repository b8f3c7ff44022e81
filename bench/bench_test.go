package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/promql/parser"

	"github.com/aerie-db/aerie/bench/harness"
	"github.com/aerie-db/aerie/bench/tsbs"
)

func TestGoals(t *testing.T) {
	for _, tc := range []struct {
		name, workload string
		ok             bool
		ratio          float64
		met            bool
	}{
		{"insert_throughput", "node", true, 3.1, true},
		{"insert_throughput", "tsbs", true, 2.9, false},
		{"tsbs_1-8-1_disk", "node", true, 0.4, true},
		{"tsbs_1-8-1_disk_p99", "node", false, 0, false},
		{"tsbs_1-8-1_head", "node", false, 0, false},
		{"disk_bytes_per_sample", "node", true, 0.3, true},
		{"disk_bytes_per_sample", "random", false, 0, false},
		{"flush_query_p9999", "tsbs", true, 0.31, false},
		{"head_bytes_per_series", "node", true, 0, false},
	} {
		g, ok := goalOf(tc.name, tc.workload)
		if ok != tc.ok || (ok && g.met(tc.ratio) != tc.met) {
			t.Errorf("goalOf(%s, %s) = %v, %v; met(%v) = %v, want %v, %v", tc.name, tc.workload, g, ok, tc.ratio, g.met(tc.ratio), tc.ok, tc.met)
		}
	}
}

// TestPatternInstances checks that every pattern instance parses, selects
// the right number of hosts and stays inside the data.
func TestPatternInstances(t *testing.T) {
	hosts := []string{"host-000:9100", "host-001:9100", "host-002:9100", "a.b", "x"}
	mint, maxt := int64(1_700_000_000_000), int64(1_700_000_000_000+12*3600_000)
	r := rand.New(rand.NewPCG(1, 2))
	for _, prof := range []tsbs.Profile{tsbs.Node, tsbs.CPU} {
		for _, pt := range tsbs.Heracles {
			for range 50 {
				q := instance(pt, r, prof, hosts, mint, maxt)
				if _, err := parser.ParseExpr(q.expr); err != nil {
					t.Fatalf("%s: %s: %v", pt.Name, q.expr, err)
				}
				if q.instant {
					if q.start.UnixMilli() != maxt {
						t.Fatalf("%s: instant at %v", pt.Name, q.start)
					}
					continue
				}
				// The first step's window may begin before mint only when
				// the data are no longer than the span.
				if q.end.UnixMilli() > maxt || q.start.UnixMilli() < mint {
					t.Fatalf("%s: %v..%v outside the data", pt.Name, q.start, q.end)
				}
				if got := q.end.Sub(q.start) + q.step; got > pt.Span {
					t.Fatalf("%s: covers %v, want at most %v", pt.Name, got, pt.Span)
				}
				want := min(pt.Hosts, len(hosts))
				if got := strings.Count(q.expr, "|") + 1; pt.Hosts > 0 && !strings.HasPrefix(pt.Name, "5-") && got != want {
					t.Fatalf("%s: %d hosts in %s, want %d", pt.Name, got, q.expr, want)
				}
			}
		}
	}
}

// TestRun runs the whole harness on a tiny TSBS dataset (and, without
// -short, on one node_exporter target) and checks that every published
// measurement is there and the report survives JSON and Markdown.
func TestRun(t *testing.T) {
	Scales["test"] = Scale{Name: "test", Series: 20, Duration: 12 * time.Hour, FlushSeries: 20, QueryRuns: 2}
	defer delete(Scales, "test")
	kinds := []string{"tsbs"}
	if !testing.Short() {
		kinds = append(kinds, "node")
	}
	var reps []harness.Report
	for _, kind := range kinds {
		rep, err := Run(Config{Workload: kind, Scale: "test", Dir: t.TempDir(), Seed: 3, Interval: time.Minute})
		if err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		for _, name := range []string{
			"insert_throughput", "disk_bytes_per_sample", "head_bytes_per_series",
			"flush_query_p99", "flush_query_p9999", "flush_query_max",
			"tsbs_1-8-1_head", "tsbs_1-8-1_disk", "tsbs_5-1-1_disk", "tsbs_5-1-12_disk", "tsbs_5-8-1_disk",
			"tsbs_double-groupby-1_disk", "tsbs_lastpoint_disk", "tsbs_lastpoint_disk_p99",
		} {
			res, ok := rep.Result(name)
			if !ok {
				t.Fatalf("%s: no %s", kind, name)
			}
			if res.Aerie <= 0 || res.Prometheus <= 0 || res.Ratio <= 0 {
				t.Errorf("%s: %s = %+v", kind, name, res)
			}
		}
		if len(rep.TupleSizes) != 4 {
			t.Errorf("%s: %d tuple-size rows", kind, len(rep.TupleSizes))
		}
		for _, row := range rep.TupleSizes {
			if row.DiskBytesPerSample <= 0 || row.Query15mDiskMs <= 0 {
				t.Errorf("%s: tuple row %+v", kind, row)
			}
		}
		var buf bytes.Buffer
		if err := rep.WriteJSON(&buf); err != nil {
			t.Fatal(err)
		}
		var back Report
		if err := json.Unmarshal(buf.Bytes(), &back); err != nil {
			t.Fatal(err)
		}
		if len(back.Results) != len(rep.Results) || back.Workload != kind || back.Commit == "" {
			t.Fatalf("JSON round trip: %+v", back)
		}
		buf.Reset()
		if err := rep.WriteTable(&buf); err != nil || !strings.Contains(buf.String(), "insert_throughput") {
			t.Fatalf("table: %v\n%s", err, buf.String())
		}
		reps = append(reps, rep)
	}
	var md bytes.Buffer
	if err := WriteDocument(&md, reps, "make benchmarks", "## Notes\n"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## Goals", "`insert_throughput` | ≥ 3×", "## tsbs (test scale)", "120/chunk", "## Reproduce", "## Notes"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q", want)
		}
	}
}

// TestRunFromFile runs the harness on a real-data file written by the test:
// OpenMetrics text with timestamps, two node_exporter hosts and one other
// target, 12 h at 60 s.
func TestRunFromFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "in.prom")
	var b strings.Builder
	for i := range 12 * 60 {
		ts := int64(1_700_000_000_000) + int64(i)*60_000
		for _, h := range []string{"a:9100", "b:9100"} {
			for k, m := range tsbs.Node.Metrics[:5] {
				fmt.Fprintf(&b, "%s{job=\"node\",instance=%q} %d %d\n", m, h, (i*(k+1))%7, ts)
			}
			fmt.Fprintf(&b, "node_cpu_seconds_total{job=\"node\",instance=%q,cpu=\"0\",mode=\"user\"} %d %d\n", h, i*30, ts)
		}
		// A target without node metrics, as in a real capture: no pattern may pick it.
		fmt.Fprintf(&b, "prometheus_ready{job=\"prometheus\",instance=\"p:9090\"} 1 %d\n", ts)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	Scales["test"] = Scale{Name: "test", QueryRuns: 2}
	defer delete(Scales, "test")
	rep, err := Run(Config{Input: path, Scale: "test", Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := rep.Result("tsbs_double-groupby-1_disk"); !ok || rep.Samples != 12*60*(2*6+1) {
		t.Fatalf("report from file: %d samples, %+v", rep.Samples, rep.Results)
	}
}

// section is another workload's report for WriteDocument.
type section string

func (s section) WriteMarkdown(w io.Writer) error { _, err := io.WriteString(w, string(s)); return err }
func (s section) WriteTable(w io.Writer) error    { return s.WriteMarkdown(w) }
func (s section) WriteJSON(w io.Writer) error     { return nil }

// TestWriteDocumentOrder: the engine reports' sections come first (after
// the goals), the other workloads' in the order given, then how to
// reproduce and the notes.
func TestWriteDocumentOrder(t *testing.T) {
	var b bytes.Buffer
	eng := &Report{Header: harness.Header{Scale: "small"}, Workload: "node", Config: map[string]string{}}
	if err := WriteDocument(&b, []harness.Report{section("## A\n\n"), eng, section("## B\n\n")}, "make benchmarks", "NOTES"); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	g, i, j, k, r := strings.Index(md, "## Goals"), strings.Index(md, "## node (small scale)"), strings.Index(md, "## A"), strings.Index(md, "## B"), strings.Index(md, "## Reproduce")
	if g < 0 || i < g || j < i || k < j || r < k || !strings.HasSuffix(md, "NOTES") {
		t.Fatalf("sections at %d, %d, %d, %d, %d:\n%s", g, i, j, k, r, md)
	}
	if err := WriteDocument(&b, []harness.Report{section("## A\n\n")}, "make benchmarks", ""); err == nil {
		t.Fatal("a document without an engine report")
	}
}

// TestRunRejectsUnknownQueryEngine: --aerie.query-engine takes aerie or
// prometheus only.
func TestRunRejectsUnknownQueryEngine(t *testing.T) {
	_, err := Run(Config{Workload: "tsbs", Scale: "small", AerieQueryEngine: "vm"})
	if err == nil || !strings.Contains(err.Error(), "--aerie.query-engine") {
		t.Fatalf("want an error naming --aerie.query-engine, got %v", err)
	}
}
