package server

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// BenchmarkSmallQuery measures what a small query costs over HTTP beyond
// its data: TSBS's 5-1-12 (max of 5 metrics of one host over 12 h at
// 1 m steps, in VictoriaMetrics' dialect as aerie bench http asks it),
// lastpoint (an instant query of one series) and high-cpu-1 (every
// reading of one host's 10 metrics over 12 h where one is above 90) and,
// restarted, cpu-max-all-1, against a server holding 10 hosts
// (-small.hosts) × 12 h of 10 s rows, one client, with the request and the answer
// as a Grafana panel sends and reads them (gzip); with the results cache
// on (its default: repeats are answered from it) and off.
//
//	go test -run XXX -bench SmallQuery ./internal/server/
//	go test -run XXX -bench 'SmallQuery/cache-off/restarted' ./internal/server/ -args -small.hosts=250
func BenchmarkSmallQuery(b *testing.B) {
	for _, cache := range []string{"cache-on", "cache-off"} {
		b.Run(cache, func(b *testing.B) {
			dir := b.TempDir()
			opts := Options{DataDir: filepath.Join(dir, "data"), Logger: slog.New(slog.DiscardHandler)}
			if cache == "cache-off" {
				opts.ConfigFile = filepath.Join(dir, "aerie.yml")
				require.NoError(b, os.WriteFile(opts.ConfigFile, []byte(resultsCacheOff), 0o644))
			}
			s, srv := serveForTest(b, opts)
			start, end := loadCPU(b, srv.URL, *smallHosts)
			queries := []struct {
				name, path string
				q          url.Values
			}{
				{"5-1-12", "/api/v1/query_range", url.Values{
					"query": {`max(max_over_time({__name__=~"cpu_(usage_user|usage_system|usage_idle|usage_nice|usage_iowait)",hostname=~"host_1"}[1m])) by (__name__)`},
					"start": {fmt.Sprint(start / 1000)}, "end": {fmt.Sprint(end / 1000)}, "step": {"60"},
				}},
				{"lastpoint", "/api/v1/query", url.Values{"query": {`cpu_usage_user{hostname="host_1"}`}, "time": {fmt.Sprint(end / 1000)}}},
				{"high-cpu-1", "/api/v1/query_range", url.Values{
					"query": {`{__name__=~"cpu_(usage_user|usage_system|usage_idle|usage_nice|usage_iowait|usage_irq|usage_softirq|usage_steal|usage_guest|usage_guest_nice)",hostname="host_1"} and on (hostname) (cpu_usage_user{hostname="host_1"} > 90)`},
					"start": {fmt.Sprint(start / 1000)}, "end": {fmt.Sprint(end / 1000)}, "step": {"10"},
				}},
			}
			for _, bc := range queries {
				b.Run(bc.name, func(b *testing.B) { benchQuery(b, srv.URL+bc.path, bc.q) })
			}
			if cache == "cache-on" {
				return
			}
			// As aerie bench http asks them, of a server restarted over
			// its data (as BenchmarkHeavyQuery's restarted): 5 m windows
			// at 5 m steps, most of the 12 h in blocks.
			require.NoError(b, s.db.Compact())
			srv.Stop()
			_, srv = serveForTest(b, opts)
			q := queries[0].q
			q.Set("query", strings.ReplaceAll(q.Get("query"), "[1m]", "[5m]"))
			q.Set("step", "300")
			// TSBS cpu-max-all-1: hour windows at hour steps over the last
			// 8 h, aligned as Grafana asks them (block metrics answer the
			// hours in blocks; the head's are decoded).
			const hour = 3600_000
			queries = append(queries, struct {
				name, path string
				q          url.Values
			}{"cpu-max-all-1", "/api/v1/query_range", url.Values{
				"query": {`max(max_over_time({__name__=~"cpu_(usage_user|usage_system|usage_idle|usage_nice|usage_iowait|usage_irq|usage_softirq|usage_steal|usage_guest|usage_guest_nice)",hostname="host_1"}[1h])) by (__name__)`},
				"start": {fmt.Sprint((end/hour*hour - 7*hour) / 1000)}, "end": {fmt.Sprint(end / hour * hour / 1000)}, "step": {"3600"},
			}})
			for _, bc := range queries {
				b.Run("restarted/"+bc.name, func(b *testing.B) { benchQuery(b, srv.URL+bc.path, bc.q) })
			}
		})
	}
}

// resultsCacheOff is a configuration file turning the results cache off.
const resultsCacheOff = "aerie:\n  cache:\n    results: {enabled: false}\n"

// BenchmarkHeavyQuery measures TSBS's double-groupby-all as `aerie bench
// http` asks it (VictoriaMetrics' dialect, through the name compatibility)
// over 50 hosts × 12 h of 10 s rows (2.16 M samples; -heavy.hosts=250 is
// the size aerie bench http queries at medium scale), with the results
// cache off: every run reads every sample, from the head or (blocks) after
// flushing it. Reports the samples read per second.
//
//	go test -run XXX -bench HeavyQuery -cpuprofile cpu.pprof ./internal/server/
//	go test -run XXX -bench 'HeavyQuery/.*/blocks' -benchtime=20x ./internal/server/ -args -heavy.hosts=250
func BenchmarkHeavyQuery(b *testing.B) {
	dir := b.TempDir()
	cfg := filepath.Join(dir, "aerie.yml")
	require.NoError(b, os.WriteFile(cfg, []byte(resultsCacheOff), 0o644))
	opts := Options{DataDir: filepath.Join(dir, "data"), ConfigFile: cfg, Logger: slog.New(slog.DiscardHandler)}
	s, srv := serveForTest(b, opts)
	hosts := *heavyHosts
	start, end := loadCPU(b, srv.URL, hosts)
	// As Grafana asks it: the range aligned to the step.
	const hour = 3600_000
	start, end = (start+hour-1)/hour*hour, end/hour*hour
	q := url.Values{
		"query": {`avg(avg_over_time({__name__=~"cpu_(usage_user|usage_system|usage_idle|usage_nice|usage_iowait|usage_irq|usage_softirq|usage_steal|usage_guest|usage_guest_nice)"}[1h])) by (__name__, hostname)`},
		"start": {fmt.Sprint(start / 1000)}, "end": {fmt.Sprint(end / 1000)}, "step": {"3600"},
	}
	samples := float64(hosts*len(cpuFields)) * float64((end-start)/10_000+1)
	run := func(b *testing.B) {
		benchQuery(b, srv.URL+"/api/v1/query_range", q)
		b.ReportMetric(samples*float64(b.N)/b.Elapsed().Seconds(), "samples/s")
	}
	b.Run("double-groupby-all/head", run)
	// As a server restarted over its data answers (the state aerie bench
	// http queries): the partitions that can take no more samples
	// flushed and compacted, the newest replayed from the WAL.
	require.NoError(b, s.db.Compact())
	srv.Stop()
	s, srv = serveForTest(b, opts)
	b.Run("double-groupby-all/restarted", run)
	// Blocks as the server settles them: flushed, then compacted (else a
	// background compaction may run during the timed queries).
	require.NoError(b, s.db.FlushHead())
	require.NoError(b, s.db.CompactBlocks())
	b.Run("double-groupby-all/blocks", run)
}

var smallHosts = flag.Int("small.hosts", 10, "hosts BenchmarkSmallQuery loads (250: as aerie bench http at medium scale)")

var heavyHosts = flag.Int("heavy.hosts", 50, "hosts BenchmarkHeavyQuery loads (10 series each, 12 h at 10 s)")

// cpuFields are the TSBS cpu measurement's fields.
var cpuFields = []string{"usage_user", "usage_system", "usage_idle", "usage_nice", "usage_iowait", "usage_irq", "usage_softirq", "usage_steal", "usage_guest", "usage_guest_nice"}

// loadCPU writes hosts TSBS cpu rows every 10 s over the 12 h before the
// last minute into the server at url, and returns their first and last
// times (ms).
func loadCPU(b *testing.B, url string, hosts int) (start, end int64) {
	end = time.Now().Add(-time.Minute).Truncate(10 * time.Second).UnixMilli()
	start = end - 12*3600_000
	var sb strings.Builder
	for t := start; t <= end; t += 10_000 {
		for h := range hosts {
			fmt.Fprintf(&sb, "cpu,hostname=host_%d ", h)
			for i, f := range cpuFields {
				if i > 0 {
					sb.WriteByte(',')
				}
				fmt.Fprintf(&sb, "%s=%d", f, (t/10_000*int64(i+h))%100)
			}
			fmt.Fprintf(&sb, " %d\n", t)
		}
		if sb.Len() > 1<<20 || t+10_000 > end {
			postInflux(b, url, "ms", sb.String())
			sb.Reset()
		}
	}
	return start, end
}

// benchQuery posts q to url b.N times, reading each answer as a Grafana
// panel does (gzip).
func benchQuery(b *testing.B, url string, q url.Values) {
	client := &http.Client{}
	body := q.Encode()
	for b.Loop() {
		req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		require.NoError(b, err)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		resp, err := client.Do(req)
		require.NoError(b, err)
		_, err = io.Copy(io.Discard, resp.Body)
		require.NoError(b, err)
		resp.Body.Close()
		require.Equal(b, http.StatusOK, resp.StatusCode)
	}
}
