package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"testing"

	promtsdb "github.com/prometheus/prometheus/tsdb"
	"github.com/stretchr/testify/require"
)

// apiCase is one request sent to Aerie and to Prometheus.
type apiCase struct {
	method, path string
	params       url.Values
}

func (c apiCase) String() string { return c.method + " " + c.path + "?" + c.params.Encode() }

func compareCases() []apiCase {
	end, mid := sec(at(steps-1)), sec(at(130)+7000)
	start := sec(base)
	instant := func(q, t string) apiCase {
		return apiCase{http.MethodGet, "/api/v1/query", vals("query", q, "time", t)}
	}
	rng := func(method, q, step string) apiCase {
		return apiCase{method, "/api/v1/query_range", vals("query", q, "start", start, "end", end, "step", step)}
	}
	return []apiCase{
		instant("up", end),
		instant("up == 0", mid),
		instant("rate(http_requests_total[5m])", end),
		instant("sum by (job, code) (rate(http_requests_total[5m]))", end),
		instant("histogram_quantile(0.9, sum by (le) (rate(req_duration_seconds_bucket[5m])))", end),
		instant(`http_requests_total{code="500"}[1m]`, end),
		instant(`count({__name__=~".+"})`, end),
		instant("topk(2, node_temp)", mid),
		instant("node_temp offset 10m", end),
		instant("node_temp @ "+mid, end),
		instant("scalar(sum(up))", end),
		instant(`"hello"`, end),
		instant("absent(nonexistent_metric)", end),
		instant("stale_metric", sec(at(79)+1000)),
		instant("stale_metric", sec(at(81))),
		instant("sparse", end),
		instant(`{"utf8.metric"}`, end),
		instant("rate(node_temp[5m])", end), // info annotation: not a counter
		instant("weird", sec(at(13))),
		instant("weird[1m]", sec(at(19))),
		instant(`increase(http_requests_total{instance="b:9090"}[30m])`, end),
		instant(`label_replace(up, "host", "$1", "instance", "(.*):.*")`, end),
		instant("sum(", end),                     // parse error
		instant("up", "yesterday"),               // bad time
		instant("sum_over_time(up[5m:0s])", end), // bad step
		instant(`{__name__=~".*"}`, end),         // empty matcher
		rng(http.MethodGet, "rate(http_requests_total[1m])", "60"),
		rng(http.MethodPost, "sum(node_temp)", "15"),
		rng(http.MethodGet, "max_over_time(node_temp[10m:1m])", "300"),
		rng(http.MethodPost, "stale_metric", "30"),
		rng(http.MethodGet, "node_temp offset -5m", "120"),
		rng(http.MethodGet, "deriv(node_temp[10m])", "200"),
		rng(http.MethodGet, "sparse", "45"),
		rng(http.MethodGet, "up", "0.001"), // too many points
		{http.MethodGet, "/api/v1/series", vals("match[]", "up")},
		{http.MethodPost, "/api/v1/series", vals("match[]", `{job="api"}`, "start", sec(at(200)), "end", end)},
		{http.MethodGet, "/api/v1/series", vals("match[]", "stale_metric", "match[]", "sparse", "start", sec(at(100)), "end", end)},
		{http.MethodGet, "/api/v1/series", vals("match[]", `{job="x"}`, "limit", "2")},
		{http.MethodGet, "/api/v1/series", nil}, // no match[]
		{http.MethodGet, "/api/v1/labels", nil},
		{http.MethodGet, "/api/v1/labels", vals("match[]", "up")},
		{http.MethodPost, "/api/v1/labels", vals("limit", "2")},
		{http.MethodGet, "/api/v1/label/job/values", nil},
		{http.MethodGet, "/api/v1/label/__name__/values", nil},
		{http.MethodGet, "/api/v1/label/instance/values", vals("match[]", "http_requests_total")},
		{http.MethodGet, "/api/v1/label/job/values", vals("start", sec(at(300)), "end", sec(at(400)))},
		{http.MethodGet, "/api/v1/query_exemplars", vals("query", "up", "start", start, "end", end)},
		{http.MethodGet, "/api/v1/status/tsdb", vals("limit", "100")},
		{http.MethodGet, "/api/v1/status/walreplay", nil},
		{http.MethodGet, "/api/v1/rules", nil},
		{http.MethodGet, "/api/v1/alerts", nil},
		{http.MethodGet, "/api/v1/targets", nil},
	}
}

var chunkCount = regexp.MustCompile(`"chunkCount":-?[0-9]+`)

// TestCompareWithPrometheus writes the same samples into Aerie and into
// Prometheus' tsdb, serves both through the same Prometheus API wiring, and
// requires byte-identical responses: raw, or after sorting where
// Prometheus leaves the order unspecified (vector results, cardinality
// ties). It runs on both heads and again on both blocks.
func TestCompareWithPrometheus(t *testing.T) {
	pdb, prom := newProm(t, Options{})
	adb, aerie := newAerie(t, Options{TargetMetadataOnly: true})
	ss := dataset()
	write(t, pdb, ss)
	write(t, adb, ss)

	run := func(t *testing.T, headOnly bool) {
		raw, sorted := 0, 0
		for _, c := range compareCases() {
			if !headOnly && c.path == "/api/v1/status/tsdb" {
				continue // the head is empty once flushed
			}
			pc, pb := do(t, prom, c.method, c.path, c.params)
			ac, ab := do(t, aerie, c.method, c.path, c.params)
			if c.path == "/api/v1/status/tsdb" {
				// Aerie's chunkCount counts its head's group partitions,
				// Prometheus' its head chunks (here int64(NaN): its head has
				// no registerer for prometheus_tsdb_head_chunks); TestStatus
				// checks Aerie's.
				pb, ab = chunkCount.ReplaceAll(pb, []byte(`"chunkCount":0`)), chunkCount.ReplaceAll(ab, []byte(`"chunkCount":0`))
			}
			require.Equal(t, pc, ac, "%s: status\nprometheus: %s\naerie:      %s", c, pb, ab)
			if bytes.Equal(pb, ab) {
				raw++
				continue
			}
			pn, an := normalize(t, pb), normalize(t, ab)
			require.Equal(t, string(pn), string(an), "%s\nprometheus: %s\naerie:      %s", c, pb, ab)
			t.Logf("identical after sorting: %s", c)
			sorted++
		}
		t.Logf("%d responses byte-identical, %d identical after sorting", raw, sorted)
	}
	t.Run("head", func(t *testing.T) { run(t, true) })
	// Flush both heads into blocks covering the same 2h-aligned range (a
	// block answers label queries for its whole range, not just its data).
	require.NoError(t, adb.FlushHead())
	require.Len(t, adb.Blocks(), 1)
	b := adb.Blocks()[0]
	require.NoError(t, pdb.CompactHead(promtsdb.NewRangeHead(pdb.Head(), b.MinTime, b.MaxTime-1)))
	require.Len(t, pdb.Blocks(), 1)
	require.Equal(t, b.MinTime, pdb.Blocks()[0].Meta().MinTime)
	require.Equal(t, b.MaxTime, pdb.Blocks()[0].Meta().MaxTime)
	t.Run("blocks", func(t *testing.T) { run(t, false) })
}

// normalize sorts the parts of a response whose order Prometheus does not
// specify: the series of vector and matrix results, the series of
// /series (Prometheus selects them unsorted when there is one match[], so
// its head returns them in creation order) and the cardinality lists of
// /status/tsdb (ties in any order).
func normalize(t testing.TB, body []byte) []byte {
	t.Helper()
	var m map[string]any
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	require.NoError(t, d.Decode(&m), "%s", body)
	if l, ok := m["data"].([]any); ok { // /series with one match[]: head order in Prometheus
		sortByJSON(l, func(x any) any { return x })
	}
	data, _ := m["data"].(map[string]any)
	if res, ok := data["result"].([]any); ok {
		sortByJSON(res, func(x any) any { return x.(map[string]any)["metric"] })
	}
	for k, v := range data {
		if l, ok := v.([]any); ok && k != "result" {
			sortByJSON(l, func(x any) any { return x })
		}
	}
	out, err := json.Marshal(m)
	require.NoError(t, err)
	return out
}

func sortByJSON(l []any, key func(any) any) {
	s := func(x any) string { b, _ := json.Marshal(key(x)); return fmt.Sprint(string(b)) }
	sort.SliceStable(l, func(i, j int) bool { return s(l[i]) < s(l[j]) })
}
