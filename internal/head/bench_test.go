package head

import (
	"fmt"
	"math"
	"math/rand"
	"runtime"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/aerie-db/aerie/internal/seriesiter"
)

// BenchmarkTupleSize measures, for Heracles' two tuple sizes (4 in its
// code, 8 in its paper), the bytes of encoded tuples per sample in the head
// and the cost of a seek to a random time followed by reading 16 samples
// (a short range query), on node-like counters and on random values.
//
//	go test -run '^$' -bench BenchmarkTupleSize -count 6 ./internal/head/ | tee new.txt
//	benchstat new.txt
func BenchmarkTupleSize(b *testing.B) {
	for _, data := range []string{"node", "random"} {
		for _, ts := range []int{4, 8} {
			b.Run(fmt.Sprintf("data=%s/tuple=%d", data, ts), func(b *testing.B) {
				h := mustNew(b, Options{TupleSize: ts, PartitionRange: math.MaxInt64 / 4})
				const series, rows = 100, 2880 // 12 h at 15 s
				rng := rand.New(rand.NewSource(1))
				vals := make([]float64, series)
				lsets := make([]labels.Labels, series)
				for s := range lsets {
					lsets[s] = labels.FromStrings("__name__", fmt.Sprintf("m%d", s), "job", "j")
				}
				for i := 0; i < rows; i++ {
					app := h.Appender()
					for s := range vals {
						if data == "node" {
							vals[s] += math.Round(rng.Float64() * float64(s%7) * 100)
						} else {
							vals[s] = rng.Float64()
						}
						if err := app.Append(lsets[s], int64(i)*15_000+rng.Int63n(100), vals[s]); err != nil {
							b.Fatal(err)
						}
					}
					if err := app.Commit(); err != nil {
						b.Fatal(err)
					}
				}
				bytes := h.Bytes() // memory blocks, refs, offsets, presence
				guard := h.Enter()
				defer guard.Exit()
				ss, err := h.Select(math.MinInt64, math.MaxInt64, labels.MustNewMatcher(labels.MatchEqual, "job", "j"))
				if err != nil {
					b.Fatal(err)
				}
				var it *seriesiter.Iterator
				b.ReportAllocs()
				b.ResetTimer()
				for n := 0; n < b.N; n++ {
					c := ss[n%len(ss)].Columns[0]
					it = seriesiter.NewIterator(it, c, c.Extra, math.MinInt64, math.MaxInt64)
					if it.Seek(int64(rng.Intn(rows))*15_000) == chunkenc.ValNone {
						continue
					}
					for k := 0; k < 16 && it.Next() != chunkenc.ValNone; k++ {
					}
				}
				b.ReportMetric(float64(bytes)/float64(series*rows), "B/sample")
			})
		}
	}
}

// BenchmarkSeriesMemory measures the Go heap each series holds in the head
// (registry, labels, index, group slots, columns), after a GC, for series
// shaped as TSBS' cpu measurement (ten fields of one host share a group and
// eleven tags) and written once ("new") or for 16 scrapes ("active": two
// closed tuples at the default tuple size). Memory blocks the columns'
// tuples live in are counted too (Head.Bytes): they are outside the Go
// heap's live objects only when the manager maps them itself.
//
//	go test -run '^$' -bench BenchmarkSeriesMemory -benchtime 1x ./internal/head/
func BenchmarkSeriesMemory(b *testing.B) {
	fields := []string{"usage_user", "usage_system", "usage_idle", "usage_nice", "usage_iowait", "usage_irq", "usage_softirq", "usage_steal", "usage_guest", "usage_guest_nice"}
	for _, c := range []struct {
		name  string
		rows  int
		hosts int
	}{{"new", 1, 10_000}, {"active", 16, 10_000}} {
		b.Run(c.name, func(b *testing.B) {
			for range b.N {
				lsets := make([]labels.Labels, 0, c.hosts*len(fields))
				for h := range c.hosts {
					for _, f := range fields {
						lsets = append(lsets, labels.FromStrings("__name__", "cpu_"+f,
							"arch", []string{"x86", "x64", "arm64"}[h%3],
							"datacenter", fmt.Sprintf("us-east-1%c", 'a'+h%6),
							"hostname", fmt.Sprintf("host_%d", h),
							"os", []string{"Ubuntu16.10", "Ubuntu16.04LTS", "Ubuntu15.10"}[h%3],
							"rack", fmt.Sprint(h%100),
							"region", "us-east-1",
							"service", fmt.Sprint(h%20),
							"service_environment", []string{"production", "staging", "test"}[h%3],
							"service_version", fmt.Sprint(h%2),
							"team", []string{"SF", "NYC", "LON", "CHI"}[h%4]))
					}
				}
				runtime.GC()
				before := memStats().HeapAlloc
				h := mustNew(b, Options{})
				for r := range c.rows {
					for s := 0; s < len(lsets); s += len(fields) {
						app := h.Appender()
						for k, l := range lsets[s : s+len(fields)] {
							if err := app.Append(l, int64(r)*10_000, float64(r*k)); err != nil {
								b.Fatal(err)
							}
						}
						if err := app.Commit(); err != nil {
							b.Fatal(err)
						}
					}
				}
				runtime.GC()
				after := memStats().HeapAlloc
				b.ReportMetric(float64(after-before)/float64(len(lsets)), "heap-B/series")
				b.ReportMetric(float64(h.Bytes())/float64(len(lsets)), "tuple-B/series")
				runtime.KeepAlive(lsets)
				runtime.KeepAlive(h)
			}
		})
	}
}

func memStats() runtime.MemStats {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms
}
