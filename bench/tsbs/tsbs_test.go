package tsbs

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/promql/parser"

	"github.com/aerie-db/aerie/bench/workload"
)

// TestInstancesGolden: the instances of every pattern, in both dialects,
// over real and made-up hosts and data shorter than a span, are those of
// testdata/instances.txt, which the two generators this package replaced
// wrote (bench/patterns.go's for Prometheus, bench/httpbench/query.go's
// for VictoriaMetrics, both seeded as their runs seed them): the reports'
// queries do not change.
func TestInstancesGolden(t *testing.T) {
	made := []string{"host-000:9100", "host-001:9100", "host-002:9100", "a.b", "x"}
	const t0 = 1_700_000_000_000
	type data struct {
		name, kind string
		w          workload.Workload // nil: made-up hosts over [mint, maxt]
		mint, maxt int64
	}
	mk := func(kind string, spec workload.Spec) workload.Workload {
		w, err := workload.New(kind, spec)
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	ds := []data{
		{name: "tsbs50", kind: "tsbs", w: mk("tsbs", workload.Spec{Targets: 50, Duration: 12 * time.Hour, Seed: 1, Jitter: -1})},
		{name: "node3", kind: "node", w: mk("node", workload.Spec{Targets: 3, Duration: 12 * time.Hour, Seed: 1})},
		{name: "synth12h", kind: "tsbs", mint: t0, maxt: t0 + 12*3600_000 - 1},
		{name: "synth12hn", kind: "node", mint: t0, maxt: t0 + 12*3600_000 - 1},
		{name: "synth30m", kind: "node", mint: t0 + 123, maxt: t0 + 123 + 30*60_000},
	}
	var sb strings.Builder
	for _, dialect := range []Dialect{Prometheus, VictoriaMetrics} {
		for _, d := range ds {
			g := Gen{Profile: map[string]Profile{"tsbs": CPU, "node": Node}[d.kind], Dialect: dialect, Hosts: made, MinT: d.mint, MaxT: d.maxt}
			if d.w != nil {
				g.Hosts, g.MinT, g.MaxT = Hosts(d.w, g.Profile), d.w.MinTime(), d.w.MaxTime()
			}
			ps, name := Heracles, "prometheus"
			if dialect == VictoriaMetrics {
				ps, name, g.Interval = Patterns(g.Profile), "victoriametrics", 10*time.Second
			}
			for _, seed := range []int64{1, 2, 42} {
				for _, pt := range ps {
					r := Rand(seed, pt.Name)
					for i := range 4 {
						q := g.Instance(pt, r)
						fmt.Fprintf(&sb, "%s %s %s %d %s %d\t%s\t%d %d %v %v\n", name, d.kind, d.name, seed, pt.Name, i, q.Expr, q.Start, q.End, q.Step, q.Instant)
					}
				}
			}
		}
	}
	want, err := os.ReadFile("testdata/instances.txt")
	if err != nil {
		t.Fatal(err)
	}
	got, wantLines := strings.Split(sb.String(), "\n"), strings.Split(string(want), "\n")
	if len(got) != len(wantLines) {
		t.Fatalf("%d instances, want %d", len(got), len(wantLines))
	}
	for i := range got {
		if got[i] != wantLines[i] {
			t.Fatalf("instance %d:\n got %s\nwant %s", i, got[i], wantLines[i])
		}
	}
}

// TestInstances: every instance parses as PromQL, selects the right
// number of hosts, and lies on whole steps inside the data, covering the
// span less one step.
func TestInstances(t *testing.T) {
	hosts := []string{"host_0", "host_1", "host_2", "a.b", "host-000:9100"}
	mint, maxt := int64(1_700_000_000_000), int64(1_700_000_000_000+12*3600_000-1)
	r := Rand(1, "test")
	for _, d := range []Dialect{Prometheus, VictoriaMetrics} {
		for _, prof := range []Profile{CPU, Node} {
			ps := Patterns(prof)
			if want := map[bool]int{true: 10, false: 6}[prof.TSBS]; len(ps) != want {
				t.Fatalf("%d patterns for %s, want %d", len(ps), prof.Host, want)
			}
			g := Gen{Profile: prof, Dialect: d, Hosts: hosts, MinT: mint, MaxT: maxt, Interval: 10 * time.Second}
			for _, pt := range ps {
				for range 30 {
					q := g.Instance(pt, r)
					if _, err := parser.ParseExpr(q.Expr); err != nil {
						t.Fatalf("%s: %s: %v", pt.Name, q.Expr, err)
					}
					if pt.Hosts > 0 {
						n := strings.Count(q.Expr, `host_`) + strings.Count(q.Expr, `a\\.b`) + strings.Count(q.Expr, `host-`)
						if per := strings.Count(q.Expr, prof.Host+"="); n != min(pt.Hosts, len(hosts))*per {
							t.Fatalf("%s: %s selects %d hosts in %d matchers", pt.Name, q.Expr, n, per)
						}
					}
					if q.Instant {
						if q.Start != maxt || q.End != maxt {
							t.Fatalf("%s: instant at %d", pt.Name, q.Start)
						}
						continue
					}
					step := q.Step.Milliseconds()
					if q.Start%step != 0 || q.End%step != 0 || q.Start < mint || q.End > maxt || q.End < q.Start {
						t.Fatalf("%s: [%d, %d] step %v over data [%d, %d]", pt.Name, q.Start, q.End, q.Step, mint, maxt)
					}
					if d := time.Duration(q.End-q.Start) * time.Millisecond; d != pt.Span-q.Step {
						t.Fatalf("%s: evaluates over %v, want %v", pt.Name, d, pt.Span-q.Step)
					}
				}
			}
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
		if got := NameRegexp(tc.names); got != tc.want {
			t.Errorf("NameRegexp(%v) = %q, want %q", tc.names, got, tc.want)
		}
	}
}

func TestProfileOf(t *testing.T) {
	for kind, want := range map[string]Profile{"tsbs": CPU, "node": Node} {
		w, err := workload.New(kind, workload.Spec{Targets: 2, Duration: time.Minute, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		p, err := ProfileOf(w)
		if err != nil || p.Host != want.Host {
			t.Errorf("%s: ProfileOf = %v, %v; want the %s profile", kind, p.Host, err, want.Host)
		}
		if hs := Hosts(w, p); len(hs) != 2 {
			t.Errorf("%s: hosts %v, want 2", kind, hs)
		}
	}
}
