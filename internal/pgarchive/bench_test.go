package pgarchive

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// BenchmarkRowBuild measures turning a chunk of a level's points into ts
// row updates (the level loop's CPU work per job).
//
//	go test -run '^$' -bench BenchmarkRowBuild -count 6 ./internal/pgarchive/ > new.txt && benchstat old.txt new.txt
func BenchmarkRowBuild(b *testing.B) {
	for _, nSeries := range []int{1000, 100000} {
		for _, nSlots := range []int{1, 60} {
			b.Run(fmt.Sprintf("series=%d/slots=%d", nSeries, nSlots), func(b *testing.B) {
				lay := Layout{StepMs: 10000, Size: 2160, Width: DefaultSegmentWidth}
				from := int64(1_699_920_000_000)
				to := from + int64(nSlots)*lay.StepMs
				ts := make([]int64, nSlots)
				for k := range ts {
					ts[k] = from + int64(k)*lay.StepMs
				}
				rng := rand.New(rand.NewPCG(1, 1))
				vs := make([][]float64, nSeries)
				for s := range vs {
					vs[s] = make([]float64, nSlots)
					for k := range vs[s] {
						vs[s][k] = rng.Float64()
					}
				}
				var bld rowBuilder
				var nrows int
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					bld.reset(lay, from, to, lay.Slot(to-1))
					for s := range vs {
						bld.add(int32(s), ts, vs[s])
					}
					r := bld.build()
					nrows = r.Len()
				}
				points := float64(nSeries * nSlots)
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/points, "ns/point")
				b.ReportMetric(float64(nrows), "rows/op")
				b.ReportMetric(points/float64(nrows), "points/row")
			})
		}
	}
}

// BenchmarkArchive measures the archive end to end against a local
// PostgreSQL: each iteration makes one more minute of a 1 s level final
// for every series and waits until it is committed.
//
//	go test -run '^$' -bench BenchmarkArchive -benchtime 5x ./internal/pgarchive/
func BenchmarkArchive(b *testing.B) {
	pg := sharedPG.Get(b)
	for _, nSeries := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("series=%d", nSeries), func(b *testing.B) {
			dsn := pg.CreateDB(b, fmt.Sprintf("bench%d", nSeries))
			l := Level{Name: "1s", Step: time.Second, Retention: time.Hour}
			src := newFakeSource(l)
			series := testSeries(nSeries)
			rng := rand.New(rand.NewPCG(1, 1))
			a, err := New(Config{DSN: dsn, Interval: time.Millisecond}, src, nil, nil)
			if err != nil {
				b.Fatal(err)
			}
			if err := a.Start(); err != nil {
				b.Fatal(err)
			}
			defer a.Close()
			ready := t0
			var points int
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				b.StopTimer()
				for _, lset := range series {
					for k := int64(0); k < 60; k++ {
						src.Append("1s", lset, ready+k*1000, rng.Float64())
					}
				}
				points += len(series) * 60
				ready += 60000
				b.StartTimer()
				src.SetReady("1s", ready)
				for a.levels[0].done.Load() < ready {
					time.Sleep(time.Millisecond)
				}
			}
			b.ReportMetric(float64(points)/b.Elapsed().Seconds(), "points/s")
		})
	}
}
