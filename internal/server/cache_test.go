package server

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// cpuLines are Influx lines of cpu_usage for hosts h0, h1 and h2 at every
// minute from start to end, in a unit of which a minute is minute: the
// value at time ts of host hN is (ts/minute)%97 + N.
func cpuLines(start, end, minute int64) string {
	var b strings.Builder
	for ts := start; ts <= end; ts += minute {
		for h := range 3 {
			fmt.Fprintf(&b, "cpu,host=h%d usage=%d %d\n", h, (ts/minute)%97+int64(h), ts)
		}
	}
	return b.String()
}

// getTwice gets url twice, wants the same 200 answer both times (the
// second may come from a cache), and returns it and base's /metrics after.
func getTwice(t *testing.T, base, url string) (body, metrics string) {
	t.Helper()
	code, body := get(t, url)
	require.Equal(t, http.StatusOK, code, body)
	_, again := get(t, url)
	require.Equal(t, body, again)
	_, metrics = get(t, base+"/metrics")
	return body, metrics
}

// TestServeResultsCache: query_range goes through the results cache; a
// repeated request is a hit, and a sample written later into the cached
// range (through the backfill) is in the next answer.
func TestServeResultsCache(t *testing.T) {
	dir := t.TempDir()
	_, srv := serveForTest(t, Options{DataDir: filepath.Join(dir, "data"), Logger: slog.New(slog.DiscardHandler)})
	base := srv.URL

	end := time.Now().Add(-2*time.Hour).UnixMilli() / 60_000 * 60_000
	start := end - 6*3600_000
	write := func(body string) { postInflux(t, base, "ms", body) }
	write(cpuLines(start, end, 60_000))

	q := url.Values{"query": {`max(cpu_usage)`}, "start": {strconv.FormatInt(start/1000, 10)}, "end": {strconv.FormatInt(end/1000, 10)}, "step": {"60"}}
	rangeURL := base + "/api/v1/query_range?" + q.Encode()
	_, metrics := getTwice(t, base, rangeURL)
	require.Regexp(t, `\naerie_results_cache_hits_total [12]\n`, metrics, "one or two parts (the range may cross midnight)")
	require.Regexp(t, `\naerie_cache_hits_total\{cache="results"\} [12]\n`, metrics)

	write(fmt.Sprintf("cpu,host=h9 usage=100000 %d\n", start+3600_000))
	_, after := get(t, rangeURL)
	require.Contains(t, after, `"100000"`, "the backfilled sample is in the answer")
	_, metrics = get(t, base+"/metrics")
	require.NotContains(t, metrics, "\naerie_results_cache_invalidations_total 0\n")
}

// TestServeRenderCache: /render reads through the render cache (on by
// default); a repeated render hits it, and a sample written later into
// the cached range (through the backfill) is in the next render. With the
// cache off the metrics are absent.
func TestServeRenderCache(t *testing.T) {
	for _, on := range []bool{true, false} {
		t.Run(fmt.Sprintf("on=%v", on), func(t *testing.T) {
			dir := t.TempDir()
			opts := Options{DataDir: filepath.Join(dir, "data"), Logger: slog.New(slog.DiscardHandler)}
			if !on {
				opts.ConfigFile = writeFile(t, dir, "aerie.yml", "aerie:\n  cache:\n    render: {enabled: false}\n")
			}
			_, srv := serveForTest(t, opts)
			base := srv.URL

			end := time.Now().Add(-2*time.Hour).Unix() / 60 * 60
			start := end - 6*3600
			write := func(body string) { postInflux(t, base, "s", body) }
			write(cpuLines(start, end, 60))
			q := url.Values{"target": {"sumSeries(seriesByTag('name=cpu_usage'))"}, "format": {"json"},
				"from": {strconv.FormatInt(start, 10)}, "until": {strconv.FormatInt(end, 10)}}
			renderURL := base + "/render?" + q.Encode()
			first, metrics := getTwice(t, base, renderURL)
			if !on {
				require.NotContains(t, metrics, "aerie_render_cache_hits_total")
				return
			}
			require.Contains(t, metrics, "\naerie_render_cache_hits_total 3\n")
			require.Contains(t, metrics, "\naerie_render_cache_misses_total 3\n")
			require.Regexp(t, `\naerie_cache_hits_total\{cache="render"\} 3\n`, metrics)

			write(fmt.Sprintf("cpu,host=h0 usage=100000 %d\n", start+3600+30))
			_, after := get(t, renderURL)
			require.Regexp(t, `\[5\d{4}(\.\d+)?, `, after, "the backfilled sample is in the answer")
			require.NotEqual(t, first, after)
			_, metrics = get(t, base+"/metrics")
			require.Contains(t, metrics, "\naerie_render_cache_invalidations_total 1\n")
		})
	}
}

// TestRenderCacheConfig: aerie.cache.render is read and checked.
func TestRenderCacheConfig(t *testing.T) {
	for _, tc := range []struct {
		yaml, err string
		size      int64
		fresh     time.Duration
		off       bool
	}{
		{yaml: "aerie:\n  cache:\n    render: {size: 64MiB, max_freshness: 5m}\n", size: 64 << 20, fresh: 5 * time.Minute},
		{yaml: "aerie:\n  cache:\n    render: {enabled: false}\n", off: true},
		{yaml: "aerie:\n  cache:\n    render: {size: 1MiB}\n", err: "cache.render.size 1MiB: must be at least 4MiB"},
	} {
		path := writeFile(t, t.TempDir(), "aerie.yml", tc.yaml)
		cfg, err := LoadConfig(path, slog.New(slog.DiscardHandler))
		if tc.err != "" {
			require.ErrorContains(t, err, tc.err)
			continue
		}
		require.NoError(t, err)
		r := cfg.Aerie.Cache.Render
		require.Equal(t, tc.size, int64(r.Size))
		require.Equal(t, tc.fresh, time.Duration(r.MaxFreshness))
		require.Equal(t, tc.off, r.Enabled != nil && !*r.Enabled)
	}
}
