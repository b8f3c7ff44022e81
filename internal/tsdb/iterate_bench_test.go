package tsdb

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
)

// BenchmarkIterateBlocks reads every sample of 20 sensors (30 days at 10 s
// of a 0.01-resolution random walk, one series a group as sensors are
// written) from compacted blocks through a Querier's iterators, Next and
// At per sample, as the sensors bench's decode phase does, and reports the
// samples read per second of one goroutine.
//
//	go test -run XXX -bench IterateBlocks ./internal/tsdb/
func BenchmarkIterateBlocks(b *testing.B) {
	const sensors, days, step = 20, 30, 10_000
	db, err := Open(b.TempDir(), &Options{FlushCheckInterval: -1, HotPartitions: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	rows := int64(days * 86400_000 / step)
	rnd := rand.New(rand.NewPCG(1, 2))
	for s := range sensors {
		l := labels.FromStrings("__name__", fmt.Sprintf("sensor_%d", s))
		x := int64(2000)
		app := db.HistoryAppender(context.Background())
		for r := range rows {
			x += int64(rnd.IntN(21)) - 10
			if _, err := app.Append(0, l, r*step, float64(x)/100); err != nil {
				b.Fatal(err)
			}
		}
		if err := app.Commit(); err != nil {
			b.Fatal(err)
		}
	}
	if err := db.FlushHead(); err != nil {
		b.Fatal(err)
	}
	if err := db.FlushBackfill(); err != nil {
		b.Fatal(err)
	}
	if err := db.CompactBlocks(); err != nil {
		b.Fatal(err)
	}
	var it chunkenc.Iterator
	total := 0
	for b.Loop() {
		q, err := db.Querier(math.MinInt64, math.MaxInt64)
		if err != nil {
			b.Fatal(err)
		}
		for s := range sensors {
			ss := q.Select(context.Background(), false, nil, labels.MustNewMatcher(labels.MatchEqual, labels.MetricName, fmt.Sprintf("sensor_%d", s)))
			for ss.Next() {
				it = ss.At().Iterator(it)
				n := 0
				for it.Next() != chunkenc.ValNone {
					n++
				}
				if err := it.Err(); err != nil {
					b.Fatal(err)
				}
				if n != int(rows) {
					b.Fatalf("sensor_%d: %d samples, want %d", s, n, rows)
				}
				total += n
			}
		}
		q.Close()
	}
	b.ReportMetric(float64(total)/b.Elapsed().Seconds(), "samples/s")
}

// BenchmarkIterateHead reads every sample of the benchmarks' partition
// (2,000 series of 20 targets, 2 h at 15 s) from the head, through a
// Querier's iterators: Next and At per sample (Prometheus' engine), and
// in bulk (AppendSpan, queryeval's rollups). Reports samples per second
// of one goroutine (no read-ahead).
//
//	go test -run XXX -bench IterateHead ./internal/tsdb/
func BenchmarkIterateHead(b *testing.B) {
	db, err := Open(b.TempDir(), &Options{FlushCheckInterval: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	loadTargets(b, db)
	const want = benchTargets * benchPerTarget * benchRows
	for _, bulk := range []bool{false, true} {
		b.Run(map[bool]string{false: "next", true: "bulk"}[bulk], func(b *testing.B) {
			var (
				it  chunkenc.Iterator
				ts  []int64
				vs  []float64
				all int
			)
			for b.Loop() {
				q, err := db.Querier(math.MinInt64, math.MaxInt64)
				if err != nil {
					b.Fatal(err)
				}
				ss := q.Select(WithoutReadAhead(context.Background()), false, nil, labels.MustNewMatcher(labels.MatchEqual, "job", "node"))
				n := 0
				for ss.Next() {
					it = ss.At().Iterator(it)
					if bulk {
						ts, vs = ts[:0], vs[:0]
						for more := true; more; {
							ts, vs, more = it.(bulkIterator).AppendSamples(ts, vs, math.MaxInt)
						}
						n += len(ts)
						continue
					}
					for it.Next() != chunkenc.ValNone {
						n++
					}
				}
				if err := ss.Err(); err != nil {
					b.Fatal(err)
				}
				if n != want {
					b.Fatalf("%d samples, want %d", n, want)
				}
				all += n
				q.Close()
			}
			b.ReportMetric(float64(all)/b.Elapsed().Seconds(), "samples/s")
		})
	}
}
