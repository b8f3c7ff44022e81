package server

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aerie-db/aerie/internal/server/servertest"
)

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// writeFile writes content to dir/name and returns the file's path.
func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
	return path
}

// postInflux posts Influx lines to base's /write with the precision given
// and wants them all stored.
func postInflux(t testing.TB, base, precision, body string) {
	t.Helper()
	resp, err := http.Post(base+"/write?precision="+precision, "text/plain", strings.NewReader(body))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
}

// TestServeScrapesAndAnswers runs the whole server: it scrapes itself,
// takes Influx lines, answers PromQL, exports aerie_ metrics, shuts down
// gracefully and keeps the data across a restart.
func TestServeScrapesAndAnswers(t *testing.T) {
	if testing.Short() {
		t.Skip("short: waits for the scrape manager's first reload (5 s)")
	}
	dir := t.TempDir()
	addr := servertest.FreeAddr(t)
	// The same target found three ways: static, file and HTTP discovery.
	writeFile(t, dir, "targets.json", fmt.Sprintf(`[{"targets": [%q], "labels": {"sd": "file"}}]`, addr))
	sd := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `[{"targets": [%q], "labels": {"sd": "http"}}]`, addr)
	}))
	defer sd.Close()
	cfg := writeFile(t, dir, "prometheus.yml", fmt.Sprintf(`
global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: aerie
    static_configs:
      - targets: [%q]
  - job_name: aerie-file
    file_sd_configs:
      - files: [targets.json]
        refresh_interval: 1s
  - job_name: aerie-http
    http_sd_configs:
      - url: %s
        refresh_interval: 1s
rule_files: [rules.yml]
remote_write:
  - url: http://example.invalid/
aerie:
  ooo_window: 10m
  wal:
    sync: batch
`, addr, sd.URL))
	writeFile(t, dir, "rules.yml", `
groups:
  - name: g
    rules:
      - record: job:up:sum
        expr: sum by (job) (up)
`)
	opts := Options{DataDir: filepath.Join(dir, "data"), HTTPAddr: addr, ConfigFile: cfg, Logger: slog.New(slog.DiscardHandler)}
	_, srv := serveForTest(t, opts)
	base := srv.URL
	code, body := get(t, base+"/-/healthy")
	require.Equal(t, 200, code, body)

	postInflux(t, base, "ms", fmt.Sprintf("weather,city=x temp=21.5 %d\n", time.Now().UnixMilli()))

	value := func(q string) string {
		_, body := get(t, base+"/api/v1/query?query="+url.QueryEscape(q))
		var r struct {
			Status string
			Data   struct {
				Result []struct {
					Value [2]interface{}
				}
			}
		}
		require.NoError(t, json.Unmarshal([]byte(body), &r), body)
		if len(r.Data.Result) == 0 {
			return ""
		}
		return r.Data.Result[0].Value[1].(string)
	}
	require.Equal(t, "21.5", value("weather_temp"))
	require.Eventually(t, func() bool { return value(`up{job="aerie"}`) == "1" }, 20*time.Second, 200*time.Millisecond, "self-scrape")
	require.Eventually(t, func() bool { return value(`up{job="aerie-file",sd="file"}`) == "1" }, 20*time.Second, 200*time.Millisecond, "file_sd")
	require.Eventually(t, func() bool { return value(`up{job="aerie-http",sd="http"}`) == "1" }, 20*time.Second, 200*time.Millisecond, "http_sd")
	require.Eventually(t, func() bool { return value(`job:up:sum{job="aerie"}`) == "1" }, 20*time.Second, 200*time.Millisecond, "recording rule")
	// The targets API knows the server's own address: a healthy target has
	// no error, and the self-scrape's global URL is the server's.
	_, body = get(t, base+"/api/v1/targets")
	var targets struct {
		Data struct {
			ActiveTargets []struct {
				ScrapePool, ScrapeURL, GlobalURL, LastError, Health string
			}
		}
	}
	require.NoError(t, json.Unmarshal([]byte(body), &targets), body)
	require.NotEmpty(t, targets.Data.ActiveTargets, body)
	for _, tg := range targets.Data.ActiveTargets {
		if tg.Health == "up" {
			require.Empty(t, tg.LastError, "%s", body)
		}
		require.NotContains(t, tg.LastError, "missing port", "%s", body)
		if tg.ScrapePool == "aerie" {
			require.Equal(t, "http://"+addr+"/metrics", tg.GlobalURL)
		}
	}
	_, body = get(t, base+"/metrics")
	for _, m := range []string{"aerie_ingested_samples_total", "aerie_wal_fsync_duration_seconds", "aerie_head_series", "aerie_head_bytes", "aerie_http_requests_total", "aerie_go_goroutines",
		`aerie_memory_blocks{area="live"}`, `aerie_memory_blocks{area="cooling"}`, `aerie_memory_partitions{area="hot"}`, "aerie_memory_epoch", "aerie_memory_readers",
		"aerie_memory_reclaimed_blocks_total", "aerie_memory_limit_bytes", "aerie_head_hot_partitions", "aerie_query_hot_reads_total", "aerie_flush_groups_done"} {
		require.Contains(t, body, m)
	}
	require.NotContains(t, body, "\ngo_goroutines", "every metric is prefixed aerie_")
	code, _ = get(t, base+"/debug/pprof/")
	require.Equal(t, 200, code)

	srv.Stop()
	serveForTest(t, opts) // the same address: base is its URL too
	require.Equal(t, "21.5", value("weather_temp"), "data survive a graceful restart")
}

func TestGlobalURLOptions(t *testing.T) {
	host, err := os.Hostname()
	require.NoError(t, err)
	for _, tc := range []struct{ listen, host string }{
		{"127.0.0.1:9201", "127.0.0.1:9201"},
		{":9201", net.JoinHostPort(host, "9201")},
		{"0.0.0.0:9201", net.JoinHostPort(host, "9201")},
		{"[::]:9201", net.JoinHostPort(host, "9201")},
		{"[::1]:9201", "[::1]:9201"},
		{"aerie.example:80", "aerie.example:80"},
	} {
		o := globalURLOptions(tc.listen)
		require.Equal(t, tc.listen, o.ListenAddress, tc.listen)
		require.Equal(t, tc.host, o.Host, tc.listen)
		require.Equal(t, "http", o.Scheme)
	}
}

func TestParseConfig(t *testing.T) {
	c, err := ParseConfig([]byte(`
scrape_configs:
  - job_name: a
    static_configs: [{targets: ["127.0.0.1:1"]}]
aerie:
  retention: 15d
  partition_range: 1h
  group_by: [job]
  ooo_window: 0s
  wal: {sync: interval, sync_interval: 2s}
  limits: {max_series: 1000, max_group_width: 50}
  flush: {cpu_budget: 0.5}
  memory: {limit: 2GiB, hot_partitions: 0, block_size: 128B, reclaim_split: [0.5, 0.5], reclaim_interval: 250ms}
`), nil)
	require.NoError(t, err)
	o := c.Aerie.EngineOptions()
	require.Equal(t, int64(15*24*3600_000), o.Retention)
	require.Equal(t, int64(3600_000), o.PartitionRange)
	require.True(t, o.NoOOO)
	require.Equal(t, 1000, o.MaxSeries)
	require.Equal(t, []string{"job"}, o.GroupBy)
	require.Equal(t, 0.5, o.FlushCPUBudget)
	require.Equal(t, int64(2<<30), o.Memory.Limit)
	require.Equal(t, 128, o.Memory.BlockSize)
	require.Equal(t, []float64{0.5, 0.5}, o.Memory.ReclaimSplit)
	require.Equal(t, -1, o.HotPartitions, "0 in the file: none kept")
	require.Equal(t, 250*time.Millisecond, o.ReclaimInterval)
	require.Len(t, c.Prom.ScrapeConfigs, 1)

	_, err = ParseConfig([]byte("aerie:\n  retension: 1d\n"), nil)
	require.ErrorContains(t, err, "retension", "unknown keys are named")
	_, err = ParseConfig([]byte("aerie:\n  wal: {sync: always}\n"), nil)
	require.ErrorContains(t, err, "wal.sync")
	_, err = ParseConfig([]byte("aerie:\n  flush: {cpu_budget: 2}\n"), nil)
	require.ErrorContains(t, err, "flush.cpu_budget")
	for doc, want := range map[string]string{
		"block_size: 64B":      "memory.block_size",
		"limit: 1KiB":          "limit",
		"reclaim_split: [-1]":  "reclaim split",
		"reclaim_threshold: 2": "reclaim threshold",
		"hot_partitions: -2":   "memory.hot_partitions",
		"limit: lots":          "lots",
		"page_size: 1000B":     "page size",
	} {
		_, err = ParseConfig([]byte("aerie:\n  memory: {"+doc+"}\n"), nil)
		require.ErrorContains(t, err, want, doc)
	}
	_, err = ParseConfig([]byte("scrape_configs: 7\n"), nil)
	require.Error(t, err)
	c, err = ParseConfig(nil, nil)
	require.NoError(t, err)
	require.Empty(t, c.Warnings)
}

// TestVictoriaMetricsStyleQuery: TSBS's VictoriaMetrics query answers one
// series per metric name, and fails as in Prometheus 3 with
// --query.delayed-name-removal=false.
func TestVictoriaMetricsStyleQuery(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		off  bool
		want string
	}{{false, `"status":"success"`}, {true, "vector cannot contain metrics with the same labelset"}} {
		_, srv := serveForTest(t, Options{DataDir: dir, NoDelayedNameRemoval: tc.off, Logger: slog.New(slog.DiscardHandler)})
		base := srv.URL
		now := time.Now().UnixMilli()
		if !tc.off {
			var sb strings.Builder
			for i := int64(0); i < 6; i++ {
				fmt.Fprintf(&sb, "cpu,hostname=host_4 usage_user=%d,usage_system=%d,usage_idle=%d %d\n", i, 2*i, 100-i, now-60_000+i*10_000)
			}
			postInflux(t, base, "ms", sb.String())
		}
		q := `max(max_over_time({__name__=~"cpu_(usage_user|usage_system|usage_idle)", hostname="host_4"}[1m])) by (__name__)`
		code, body := get(t, fmt.Sprintf("%s/api/v1/query?time=%.3f&query=%s", base, float64(now)/1000, url.QueryEscape(q)))
		require.Contains(t, body, tc.want)
		if !tc.off {
			require.Equal(t, 200, code)
			// [1m] is left-open: idle's 100 at now-1m is out.
			for _, want := range []string{`{"__name__":"cpu_usage_user"},"value":[`, `"5"]`, `{"__name__":"cpu_usage_system"}`, `"10"]`, `{"__name__":"cpu_usage_idle"}`, `"99"]`} {
				require.Contains(t, body, want)
			}
		} else {
			require.Equal(t, 422, code)
		}
		srv.Stop() // the next case opens the same directory
	}
}

// TestQueryMetrics: /metrics counts what Aerie's evaluator did: a range
// query over hours that are in blocks plans a rollup, and its windows of
// whole hours are answered from the blocks' metrics.
func TestQueryMetrics(t *testing.T) {
	s, srv := serveForTest(t, Options{DataDir: t.TempDir(), Logger: slog.New(slog.DiscardHandler)})
	const hour = 3600_000
	end := time.Now().Add(-3*time.Hour).UnixMilli() / hour * hour
	start := end - 6*hour
	var sb strings.Builder
	for ts := start - hour; ts <= end; ts += 10_000 {
		fmt.Fprintf(&sb, "cpu,hostname=h%d usage_user=%d %d\n", ts/10_000%3, ts/10_000%100, ts)
	}
	postInflux(t, srv.URL, "ms", sb.String())
	require.NoError(t, s.db.FlushHead())
	counter := func(name string) float64 {
		t.Helper()
		_, body := get(t, srv.URL+"/metrics")
		for line := range strings.Lines(body) {
			if v, ok := strings.CutPrefix(line, name+" "); ok {
				f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
				require.NoError(t, err)
				return f
			}
		}
		t.Fatalf("no %s in /metrics", name)
		return 0
	}
	require.Zero(t, counter("aerie_query_rollups_total"))
	q := url.Values{"query": {`avg by (hostname) (avg_over_time(cpu_usage_user[1h]))`},
		"start": {strconv.FormatInt(start/1000, 10)}, "end": {strconv.FormatInt(end/1000, 10)}, "step": {"3600"}}
	code, body := get(t, srv.URL+"/api/v1/query_range?"+q.Encode())
	require.Equal(t, 200, code, body)
	require.Equal(t, 1.0, counter("aerie_query_planned_total"))
	require.Equal(t, 1.0, counter("aerie_query_rollups_total"))
	require.Zero(t, counter("aerie_query_fallbacks_total"))
	require.Positive(t, counter("aerie_query_metric_windows_total"), body)

	// A raw range query is a vector plan, answered through the server's
	// engine (its tracker included) and counted.
	require.Zero(t, counter("aerie_query_vector_plans_total"))
	q.Set("query", `cpu_usage_user > 0`)
	code, body = get(t, srv.URL+"/api/v1/query_range?"+q.Encode())
	require.Equal(t, 200, code, body)
	require.Equal(t, 1.0, counter("aerie_query_vector_plans_total"))
	require.Zero(t, counter("aerie_query_fallbacks_total"))
}
