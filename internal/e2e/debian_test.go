package e2e

import (
	"fmt"
	"testing"
	"time"
)

// promOnly starts node_exporter and a Prometheus scraping it (job node) and
// itself (job prometheus), without remote write, and waits for up == 1.
func promOnly(t *testing.T) (prom string, t0 int64) {
	t.Helper()
	requireDebian(t)
	g := newTestGroup(t)
	nodePort, err := startNodeExporter(g, "node_exporter")
	if err != nil {
		t.Fatal(err)
	}
	promPort := mustFreePort(t)
	if _, err := startPrometheus(g, "prometheus", g.logDir, promPort, prometheusConfig(nodePort, promPort, 0)); err != nil {
		t.Fatal(err)
	}
	prom = fmt.Sprintf("http://127.0.0.1:%d", promPort)
	t0 = time.Now().UnixMilli()
	if err := waitQuery(prom, `count(up{job=~"node|prometheus"} == 1)`, "2", 30*time.Second); err != nil {
		t.Fatal(err)
	}
	return prom, t0
}

// TestDebianPrometheusRuns checks the harness on Debian's binaries alone:
// node_exporter and Prometheus start on free ports, Prometheus scrapes both
// targets, answers the query API, and both stop on SIGTERM.
func TestDebianPrometheusRuns(t *testing.T) {
	start := time.Now()
	prom, _ := promOnly(t)
	d, err := query(prom, `node_cpu_seconds_total{job="node",mode="idle"}`, time.Now().UnixMilli())
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Series) == 0 {
		t.Fatalf("no node_cpu_seconds_total from node_exporter")
	}
	r, err := apiOK(prom, "/api/v1/status/buildinfo", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Prometheus %s: up == 1 for jobs node and prometheus after %s", r.Data, time.Since(start).Round(time.Millisecond))
}

// TestPromQLTableOnPrometheus checks the PromQL table against Prometheus
// alone, so that the table is known to be meaningful (errors where errors
// are meant, data where data is meant) before Aerie answers it too.
func TestPromQLTableOnPrometheus(t *testing.T) {
	requireLong(t)
	requireDebian(t)
	t.Parallel() // overlaps its minute of data collection with the shared stack's
	prom, t0 := promOnly(t)
	waitRun(t, t0)
	w, err := settledWindow(prom, t0, time.Now().UnixMilli())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("window (%s, %s], T's milliseconds %d", fmtTime(w.Start), fmtTime(w.T), w.Delta)
	for _, c := range promqlCases(w) {
		r, err := c.run(prom)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if msg := c.checkPrometheus(r); msg != "" {
			t.Errorf("%s: %s\n  query: %s", c.name, msg, c.query)
		}
	}
}
