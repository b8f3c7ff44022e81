package head

import (
	"fmt"
	"math"
	"math/rand"
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
