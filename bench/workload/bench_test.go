package workload

import (
	"testing"
	"time"
)

// BenchmarkScraper measures generator speed: one target's rows over 6 h.
//
//	go test -run XXX -bench Scraper -count 6 ./bench/workload/ | tee new.txt
//	benchstat old.txt new.txt
func BenchmarkScraper(b *testing.B) {
	for _, tc := range []struct {
		kind     string
		interval time.Duration
	}{
		{"node", 15 * time.Second},
		{"random", 15 * time.Second},
		{"tsbs", 10 * time.Second},
	} {
		b.Run("kind="+tc.kind, func(b *testing.B) {
			w, err := New(tc.kind, Spec{Targets: 4, Interval: tc.interval, Duration: 6 * time.Hour, Seed: 1})
			if err != nil {
				b.Fatal(err)
			}
			for i := range w.NumTargets() {
				w.Series(i) // build the label sets outside the timing
			}
			b.ReportAllocs()
			b.ResetTimer()
			var r Row
			var samples int64
			for i := 0; b.Loop(); i++ {
				s := w.Scraper(i % w.NumTargets())
				for s.Next(&r) {
					samples += int64(len(r.Values))
				}
			}
			b.ReportMetric(float64(samples)/b.Elapsed().Seconds(), "samples/s")
		})
	}
}
