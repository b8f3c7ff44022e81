package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// requiredAerieMetrics must be on /metrics once Aerie has ingested
// something and answered a few requests.
var requiredAerieMetrics = []string{
	"aerie_ingested_samples_total",
	"aerie_wal_fsync_duration_seconds",
	"aerie_head_series",
	"aerie_http_requests_total",
}

func get(url string) (int, string, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return 0, "", err
	}
	return do(req)
}

// getBytes fetches url and returns its status and body.
func getBytes(u string) (int, []byte, error) {
	status, body, err := get(u)
	return status, []byte(body), err
}

// TestMetricsAndHealth checks the operational endpoints: health, readiness,
// Aerie's own metrics in the text format, and pprof.
func TestMetricsAndHealth(t *testing.T) {
	g := newTestGroup(t)
	_, base := startTestAerie(t, g, "aerie", g.dataDir(t, "aerie"))
	for _, path := range []string{"/-/healthy", "/-/ready"} {
		code, body, err := get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		if code != http.StatusOK {
			t.Errorf("GET %s: HTTP %d %q", path, code, body)
		}
	}

	// Something to count: one line, fsync'd by the WAL.
	sec := time.Now().Unix() - 10
	code, msg, err := post(base, "/write?precision=s", []byte(fmt.Sprintf("e2e_health,host=h v=1,w=2 %d\n", sec)), nil)
	if err != nil || code/100 != 2 {
		t.Fatalf("influx write: HTTP %d %q %v", code, msg, err)
	}
	if _, err := apiOK(base, "/api/v1/query", map[string][]string{"query": {"e2e_health_v"}}); err != nil {
		t.Fatal(err)
	}

	code, body, err := get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	if code != http.StatusOK {
		t.Fatalf("GET /metrics: HTTP %d", code)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("/metrics is not the Prometheus text format: %v", err)
	}
	var aerie []string
	for name := range families {
		if strings.HasPrefix(name, "aerie_") {
			aerie = append(aerie, name)
		}
	}
	if len(aerie) == 0 {
		t.Errorf("/metrics has no aerie_ metric")
	}
	for _, name := range requiredAerieMetrics {
		if families[name] == nil {
			t.Errorf("/metrics lacks %s (has %d aerie_ families: %s)", name, len(aerie), summarize(aerie, 30))
		}
	}
	if f := families["aerie_ingested_samples_total"]; f != nil {
		total := 0.0
		for _, m := range f.GetMetric() {
			total += m.GetCounter().GetValue() + m.GetUntyped().GetValue()
		}
		if total < 2 {
			t.Errorf("aerie_ingested_samples_total = %g after writing 2 samples", total)
		}
	}

	for _, path := range []string{"/debug/pprof/", "/debug/pprof/goroutine?debug=1"} {
		code, body, err := get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		if code != http.StatusOK || !strings.Contains(body, "goroutine") {
			t.Errorf("GET %s: HTTP %d, %d bytes without \"goroutine\"", path, code, len(body))
		}
	}
}
