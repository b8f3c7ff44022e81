package server

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/klauspost/compress/snappy"
	"github.com/prometheus/prometheus/prompb"
)

// BenchmarkHTTPIngest measures the ingest rate over HTTP of a running
// server (in-process, loopback, WAL sync=batch so every request is fsync'd
// before its 2xx): remote write 1.0 and Influx line protocol, each request
// carrying one scrape of benchTargets targets × benchSeries series.
//
//	go test -run '^$' -bench BenchmarkHTTPIngest -benchtime 400x ./internal/server/
func BenchmarkHTTPIngest(b *testing.B) {
	const benchTargets, benchSeries = 10, 200
	for _, proto := range []string{"remote_write", "influx"} {
		b.Run("protocol="+proto, func(b *testing.B) {
			_, srv := serveForTest(b, Options{DataDir: b.TempDir(), Logger: slog.New(slog.DiscardHandler)})
			var row atomic.Int64
			base := time.Now().UnixMilli()
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
			b.SetParallelism(4) // 4 × GOMAXPROCS concurrent clients
			b.ResetTimer()
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					ts := base + row.Add(1)*10
					var req *http.Request
					if proto == "remote_write" {
						req = remoteWriteRequest(b, srv.URL, ts, benchTargets, benchSeries)
					} else {
						req = influxRequest(b, srv.URL, ts, benchTargets, benchSeries)
					}
					resp, err := client.Do(req)
					if err != nil {
						b.Error(err)
						return
					}
					body, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					if resp.StatusCode/100 != 2 {
						b.Errorf("%s: %d %s", proto, resp.StatusCode, body)
						return
					}
				}
			})
			el := time.Since(start)
			b.ReportMetric(float64(b.N*benchTargets*benchSeries)/el.Seconds(), "samples/s")
		})
	}
}

func remoteWriteRequest(b *testing.B, base string, ts int64, targets, series int) *http.Request {
	var wr prompb.WriteRequest
	for t := 0; t < targets; t++ {
		for s := 0; s < series; s++ {
			wr.Timeseries = append(wr.Timeseries, prompb.TimeSeries{
				Labels: []prompb.Label{
					{Name: "__name__", Value: fmt.Sprintf("node_metric_%d", s)},
					{Name: "instance", Value: fmt.Sprintf("host-%d:9100", t)},
					{Name: "job", Value: "node"},
				},
				Samples: []prompb.Sample{{Timestamp: ts, Value: float64(ts%1000) + float64(s)}},
			})
		}
	}
	raw, err := wr.Marshal()
	if err != nil {
		b.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, base+"/api/v1/write", bytes.NewReader(snappy.Encode(nil, raw)))
	req.Header.Set("Content-Encoding", "snappy")
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("X-Prometheus-Remote-Write-Version", "0.1.0")
	return req
}

func influxRequest(b *testing.B, base string, ts int64, targets, series int) *http.Request {
	var sb strings.Builder
	for t := 0; t < targets; t++ {
		// One line per 20 fields, as Telegraf groups a plugin's fields.
		for s := 0; s < series; s += 20 {
			fmt.Fprintf(&sb, "node,host=host-%d,part=p%d ", t, s/20)
			for f := 0; f < 20; f++ {
				if f > 0 {
					sb.WriteByte(',')
				}
				fmt.Fprintf(&sb, "f%d=%d", f, ts%1000+int64(s+f))
			}
			fmt.Fprintf(&sb, " %d\n", ts)
		}
	}
	req, _ := http.NewRequest(http.MethodPost, base+"/write?precision=ms", strings.NewReader(sb.String()))
	return req
}
