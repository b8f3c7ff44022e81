package server

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// BenchmarkSmallQuery measures what a small query costs over HTTP beyond
// its data: TSBS's 5-1-12 (max of 5 metrics of one host over 12 h at
// 1 m steps) and lastpoint (an instant query of one series) against a
// server holding 10 hosts × 12 h of 10 s rows, one client, with the
// request and the answer as a Grafana panel sends and reads them (gzip).
//
//	go test -run XXX -bench SmallQuery ./internal/server/
func BenchmarkSmallQuery(b *testing.B) {
	_, srv := serveForTest(b, Options{DataDir: b.TempDir(), Logger: slog.New(slog.DiscardHandler)})
	end := time.Now().Add(-time.Minute).Truncate(10 * time.Second).UnixMilli()
	start := end - 12*3600_000
	fields := []string{"usage_user", "usage_system", "usage_idle", "usage_nice", "usage_iowait", "usage_irq", "usage_softirq", "usage_steal", "usage_guest", "usage_guest_nice"}
	var sb strings.Builder
	for t := start; t <= end; t += 10_000 {
		for h := range 10 {
			fmt.Fprintf(&sb, "cpu,hostname=host_%d ", h)
			for i, f := range fields {
				if i > 0 {
					sb.WriteByte(',')
				}
				fmt.Fprintf(&sb, "%s=%d", f, (t/10_000*int64(i+h))%100)
			}
			fmt.Fprintf(&sb, " %d\n", t)
		}
		if sb.Len() > 1<<20 || t+10_000 > end {
			postInflux(b, srv.URL, "ms", sb.String())
			sb.Reset()
		}
	}
	for _, bc := range []struct {
		name, path string
		q          url.Values
	}{
		{"5-1-12", "/api/v1/query_range", url.Values{
			"query": {`max(max_over_time({__name__=~"cpu_(usage_user|usage_system|usage_idle|usage_nice|usage_iowait)",hostname=~"host_1"}[1m])) by (__name__)`},
			"start": {fmt.Sprint(start / 1000)}, "end": {fmt.Sprint(end / 1000)}, "step": {"60"},
		}},
		{"lastpoint", "/api/v1/query", url.Values{"query": {`cpu_usage_user{hostname="host_1"}`}, "time": {fmt.Sprint(end / 1000)}}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			client := &http.Client{}
			body := bc.q.Encode()
			for range b.N {
				req, err := http.NewRequest(http.MethodPost, srv.URL+bc.path, strings.NewReader(body))
				require.NoError(b, err)
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				resp, err := client.Do(req)
				require.NoError(b, err)
				_, err = io.Copy(io.Discard, resp.Body)
				require.NoError(b, err)
				resp.Body.Close()
				require.Equal(b, http.StatusOK, resp.StatusCode)
			}
		})
	}
}
