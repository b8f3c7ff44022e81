package server

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestServeGraphite: lines sent to aerie serve's carbon listener and
// statsd come back through /render, from the raw archive or a rollup
// level as graphite-web picks them, and through PromQL, raw and with
// rollup=1m.
func TestServeGraphite(t *testing.T) {
	dir := t.TempDir()
	cfg := writeFile(t, dir, "aerie.yml", `
aerie:
  graphite: {plaintext_tcp: "127.0.0.1:0", plaintext_udp: "", pickle_tcp: ""}
  statsd: {udp: "127.0.0.1:0", tcp: "", flush_interval: 1h}
  rollup:
    schemas:
      - {name: app, pattern: '^app\.', retentions: '10s:1h,1m:1d'}
    aggregations:
      - {name: avg, pattern: '.*', x_files_factor: 0.5}
`)
	s, srv := serveForTest(t, Options{DataDir: filepath.Join(dir, "data"), ConfigFile: cfg, Logger: slog.New(slog.DiscardHandler)})
	base := srv.URL

	// Three hours of app.web.latency at 10 s, value = minutes since start.
	now := time.Now().Unix() / 600 * 600
	start := now - 3*3600
	conn, err := net.Dial("tcp", s.carbon.PlaintextTCPAddr().String())
	require.NoError(t, err)
	var b strings.Builder
	for ts := start; ts < now; ts += 10 {
		fmt.Fprintf(&b, "app.web.latency %d %d\n", (ts-start)/60, ts)
	}
	_, err = conn.Write([]byte(b.String()))
	require.NoError(t, err)
	require.NoError(t, conn.Close())
	n := int((now - start) / 10)
	require.Eventually(t, func() bool {
		_, body := get(t, fmt.Sprintf("%s/api/v1/query?query=%s&time=%d", base, url.QueryEscape(`count_over_time({"app.web.latency"}[4h])`), now))
		return strings.Contains(body, fmt.Sprintf(`"%d"`, n))
	}, 10*time.Second, 50*time.Millisecond)

	require.NoError(t, s.rollups.RunOnce(t.Context()))
	require.NotEqual(t, int64(0), s.rollups.Done("1m"))

	type series struct {
		Target     string        `json:"target"`
		Datapoints [][2]*float64 `json:"datapoints"`
	}
	render := func(q string) []series {
		t.Helper()
		code, body := get(t, base+"/render?format=json&"+q)
		require.Equal(t, 200, code, body)
		var out []series
		require.NoError(t, json.Unmarshal([]byte(body), &out), body)
		return out
	}
	// The last 30 minutes: the raw archive, 10 s.
	out := render(fmt.Sprintf("target=app.web.latency&from=%d&until=%d", now-1800, now))
	require.Len(t, out, 1)
	require.Equal(t, "app.web.latency", out[0].Target)
	dp := out[0].Datapoints
	require.Len(t, dp, 180)
	require.Equal(t, float64(now-1800+10), *dp[0][1])
	require.Equal(t, float64((now-1800+10-start)/60), *dp[0][0])
	// Two to three hours ago: beyond the raw archive's hour, the 1m level,
	// each minute the mean of its six equal points.
	out = render(fmt.Sprintf("target=app.web.latency&from=%d&until=%d", now-3*3600, now-2*3600))
	require.Len(t, out, 1)
	dp = out[0].Datapoints
	require.Len(t, dp, 60)
	require.Equal(t, float64(now-3*3600+60), *dp[0][1])
	require.NotNil(t, dp[0][0], "%v", dp)
	require.Equal(t, float64(1), *dp[0][0])
	// A function over it, and find.
	out = render(fmt.Sprintf("target=scale(app.web.latency,2)&from=%d&until=%d", now-3*3600, now-2*3600))
	require.Equal(t, "scale(app.web.latency,2)", out[0].Target)
	require.Equal(t, float64(2), *out[0].Datapoints[0][0])
	code, body := get(t, base+"/metrics/find?query=app.*")
	require.Equal(t, 200, code, body)
	require.Contains(t, body, `"web"`)

	// PromQL: raw data, and the 1m level with rollup=1m.
	q := url.QueryEscape(`{"app.web.latency"}`)
	code, body = get(t, fmt.Sprintf("%s/api/v1/query?query=%s&time=%d&rollup=1m", base, q, now-3*3600+60))
	require.Equal(t, 200, code, body)
	require.Contains(t, body, `"1"]`)
	code, body = get(t, fmt.Sprintf("%s/api/v1/query?query=%s&time=%d&rollup=5m", base, q, now))
	require.Equal(t, 400, code, body)
	require.Contains(t, body, `no rollup level \"5m\"`)

	// statsd: a counter with a sample rate, flushed.
	uc, err := net.Dial("udp", s.statsd.UDPAddr().String())
	require.NoError(t, err)
	_, err = uc.Write([]byte("hits:1|c|@0.1\n"))
	require.NoError(t, err)
	uc.Close()
	require.Eventually(t, func() bool {
		require.NoError(t, s.statsd.Flush())
		_, body := get(t, fmt.Sprintf("%s/api/v1/query?query=%s", base, url.QueryEscape(`{"stats.counters.hits.count"}`)))
		return strings.Contains(body, `"10"]`)
	}, 10*time.Second, 100*time.Millisecond)
}
