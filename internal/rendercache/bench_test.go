package rendercache

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/aerie-db/aerie/internal/graphite"
	"github.com/aerie-db/aerie/internal/graphite/archive"
)

// countingStore counts the Points calls of the render API straight on
// the Manager, and the values they return.
type countingStore struct {
	archive.Store
	calls, values atomic.Uint64
}

func (c *countingStore) Points(ctx context.Context, lset labels.Labels, from, until, now int64) (archive.Points, error) {
	p, err := c.Store.Points(ctx, lset, from, until, now)
	c.calls.Add(1)
	c.values.Add(uint64(len(p.Values)))
	return p, err
}

// BenchmarkDashboard renders a dashboard panel — 20 series over the last
// 6 h at 10 s (the raw archive), three targets — once per op, the clock
// moving 30 s between ops as a dashboard refreshes, with the render cache
// on and off, the data in the head or in blocks. It reports the store's reads (Points calls, or reads of
// the rest of a partial hit) and the buckets read from the store per op.
//
//	go test -run '^$' -bench BenchmarkDashboard -benchtime 200x -count 6 ./internal/rendercache/ | tee new.txt
//	benchstat -col /cache new.txt
func BenchmarkDashboard(b *testing.B) {
	for _, data := range []string{"head", "blocks"} {
		for _, on := range []bool{false, true} {
			b.Run(fmt.Sprintf("data=%s/cache=%v", data, on), func(b *testing.B) { benchDashboard(b, data, on) })
		}
	}
}

// benchDashboard is one BenchmarkDashboard: the data in the raw engine's
// head (memory) or flushed to its blocks (disk, the page cache).
func benchDashboard(b *testing.B, data string, on bool) {
	e := newEnv(b, t0, aggs)
	for i := range 20 {
		e.write(fmt.Sprintf("app.host%02d.cpu", i), t0.Add(-7*time.Hour), t0.Add(3*time.Hour), func(ts int64) float64 { return val(ts) + float64(i) })
	}
	if data == "blocks" {
		if err := e.raw.FlushHead(); err != nil {
			b.Fatal(err)
		}
	}
	// movingAverage's window takes its fetch past the raw archive's 6 h:
	// the 1m level, rolled up to an hour ago, the rest computed from raw
	// data at each read
	e.rollup()
	counting := &countingStore{Store: e.m}
	h := e.cached
	if !on {
		mux := http.NewServeMux()
		graphite.New(counting, graphite.Options{Now: func() time.Time { return e.now }}).Register(mux, func(_ string, h http.Handler) http.Handler { return h })
		h = mux
	}
	var urls []string
	for _, target := range []string{"app.*.cpu", "movingAverage(app.host0*.cpu,6)", "sumSeries(app.*.cpu)"} {
		q := url.Values{"target": {target}, "from": {"-6h"}, "until": {"now"}, "format": {"json"}, "maxDataPoints": {"1000"}}
		urls = append(urls, "/render?"+q.Encode())
	}
	start := e.rc.Stats()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		e.now = t0.Add(time.Duration(i%360) * 30 * time.Second)
		for _, u := range urls {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest("GET", u, nil))
			if w.Code != 200 {
				b.Fatalf("%s: %d %s", u, w.Code, w.Body)
			}
		}
	}
	b.StopTimer()
	reads, buckets := counting.calls.Load(), counting.values.Load()
	if on {
		st := e.rc.Stats()
		reads, buckets = st.Reads-start.Reads, st.ReadBuckets-start.ReadBuckets
		b.ReportMetric(float64(st.Hits+st.Partials-start.Hits-start.Partials)/float64(st.Hits+st.Partials+st.Misses+st.Uncached-start.Hits-start.Partials-start.Misses-start.Uncached), "hit-ratio")
	}
	b.ReportMetric(float64(reads)/float64(b.N), "store-reads/op")
	b.ReportMetric(float64(buckets)/float64(b.N), "store-buckets/op")
}

// BenchmarkPoints is BenchmarkDashboard's fetches without the render API:
// Points of 20 series over the last 6 h at 10 s, the clock moving 30 s
// between ops, straight from the Manager and through the cache.
//
//	go test -run '^$' -bench BenchmarkPoints -benchtime 300x -count 6 ./internal/rendercache/ | tee new.txt
func BenchmarkPoints(b *testing.B) {
	for _, data := range []string{"head", "blocks"} {
		for _, on := range []bool{false, true} {
			b.Run(fmt.Sprintf("data=%s/cache=%v", data, on), func(b *testing.B) {
				e := newEnv(b, t0, aggs)
				var lsets []labels.Labels
				for i := range 20 {
					name := fmt.Sprintf("app.host%02d.cpu", i)
					lsets = append(lsets, labels.FromStrings(labels.MetricName, name))
					e.write(name, t0.Add(-7*time.Hour), t0.Add(3*time.Hour), func(ts int64) float64 { return val(ts) + float64(i) })
				}
				if data == "blocks" {
					if err := e.raw.FlushHead(); err != nil {
						b.Fatal(err)
					}
				}
				var st archive.Store = e.m
				if on {
					st = e.rc
				}
				ctx := context.Background()
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					e.now = t0.Add(time.Duration(i%360) * 30 * time.Second)
					now := e.now.Unix()
					for _, lset := range lsets {
						if _, err := st.Points(ctx, lset, now-6*3600, now, now); err != nil {
							b.Fatal(err)
						}
					}
				}
			})
		}
	}
}
