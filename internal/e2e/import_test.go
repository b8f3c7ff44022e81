package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestPrometheusTextImport posts the Prometheus text format to
// VictoriaMetrics' /api/v1/import/prometheus: explicit timestamps are kept,
// samples without one get the receipt time, extra_label is added, and a bad
// line is a 400 that names it while the good lines are stored.
func TestPrometheusTextImport(t *testing.T) {
	g := newTestGroup(t)
	_, base := startTestAerie(t, g, "aerie", g.dataDir(t, "aerie"))
	ms := (time.Now().Unix() - 60) * 1000
	body := fmt.Sprintf(`# HELP e2e_import_total Requests.
# TYPE e2e_import_total counter
e2e_import_total{path="/a"} 10 %d
e2e_import_total{path="/b"} 20 %d
# TYPE e2e_import_gauge gauge
e2e_import_gauge 1.5 %d
e2e_import_nots 3
`, ms, ms, ms+500)
	before := time.Now().UnixMilli()
	code, msg, err := post(base, "/api/v1/import/prometheus?extra_label=src=e2e", []byte(body), map[string]string{"Content-Type": "text/plain; version=0.0.4"})
	if err != nil {
		t.Fatal(err)
	}
	after := time.Now().UnixMilli()
	if code/100 != 2 {
		t.Fatalf("import: HTTP %d %q", code, msg)
	}
	expectSamples(t, base, `e2e_import_total{path="/a",src="e2e"}`, []point{{ms, "10"}})
	expectSamples(t, base, `e2e_import_total{path="/b",src="e2e"}`, []point{{ms, "20"}})
	expectSamples(t, base, `e2e_import_gauge{src="e2e"}`, []point{{ms + 500, "1.5"}})
	now := time.Now().UnixMilli()
	got, err := rawSamples(base, `e2e_import_nots{src="e2e"}`, now-3_600_000, now)
	if err != nil {
		t.Fatal(err)
	}
	for k, ps := range got {
		if len(ps) != 1 || ps[0].V != "3" || ps[0].T < before-1000 || ps[0].T > after+1000 {
			t.Errorf("%s: %v, want 3 at the time of the import (%s..%s)", k, ps, fmtTime(before), fmtTime(after))
		}
	}
	if len(got) != 1 {
		t.Errorf("e2e_import_nots: %d series, want 1", len(got))
	}

	bad := fmt.Sprintf("e2e_import_partial{case=\"good\"} 1 %d\ne2e_import_partial{case=\"bad\" 2 %d\n", ms, ms)
	code, msg, err = post(base, "/api/v1/import/prometheus", []byte(bad), nil)
	if err != nil {
		t.Fatal(err)
	}
	if code != http.StatusBadRequest {
		t.Errorf("bad line: HTTP %d %q, want 400", code, msg)
	} else if !strings.Contains(msg, "line 2") {
		t.Errorf("bad line: the 400's body %q does not name line 2", msg)
	}
	expectSamples(t, base, `e2e_import_partial{case="good"}`, []point{{ms, "1"}})
}
