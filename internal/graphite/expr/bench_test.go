package expr

import (
	"context"
	"fmt"
	"math/rand"
	"testing"
)

// benchFetcher returns the same pre-built series for every fetch, without
// copying, so the benchmarks time evaluation alone.
type benchFetcher struct{ series []*Series }

func (f *benchFetcher) Fetch(ctx context.Context, pathExpr string, from, until int64) ([]*Series, error) {
	return f.series, nil
}

func (f *benchFetcher) FetchTagged(ctx context.Context, exprs []string, from, until int64) ([]*Series, error) {
	return f.series, nil
}

func benchSeries(n, points int) []*Series {
	r := rand.New(rand.NewSource(1))
	out := make([]*Series, n)
	for i := range out {
		vs := make([]float64, points)
		for j := range vs {
			if r.Intn(20) == 0 {
				vs[j] = null
			} else {
				vs[j] = r.Float64() * 100
			}
		}
		s := newSeries(fmt.Sprintf("host%04d.cpu.user", i), 0, 10, vs, 0)
		out[i] = s
	}
	return out
}

// BenchmarkEval times whole targets over series × points fetched.
//
//	go test -run '^$' -bench BenchmarkEval -count 10 ./internal/graphite/expr > new.txt && benchstat old.txt new.txt
func BenchmarkEval(b *testing.B) {
	for _, bc := range []struct {
		target         string
		series, points int
	}{
		{"sumSeries(host*.cpu.user)", 1000, 1000},
		{"averageSeries(host*.cpu.user)", 1000, 1000},
		{"groupByNode(host*.cpu.user,1,'sum')", 1000, 1000},
		{"movingAverage(host*.cpu.user,10)", 100, 1000},
		{"summarize(host*.cpu.user,'1h','max')", 100, 10000},
		{"highestMax(host*.cpu.user,5)", 1000, 1000},
		{"scale(host*.cpu.user,2)", 1000, 1000},
		{"aliasByNode(host*.cpu.user,0)", 1000, 1000},
	} {
		f := &benchFetcher{series: benchSeries(bc.series, bc.points)}
		e, err := Parse(bc.target)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("target=%s/series=%d/points=%d", bc.target, bc.series, bc.points), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Eval(context.Background(), e, 0, int64(bc.points)*10, 0, f); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(bc.series*bc.points), "ns/point")
		})
	}
}

func BenchmarkParse(b *testing.B) {
	target := "aliasByNode(movingAverage(scale(sumSeries(servers.{web,db}[0-9]*.cpu.*.user),2),'5min'),1)|alias('x')"
	b.ReportAllocs()
	b.SetBytes(int64(len(target)))
	for b.Loop() {
		if _, err := Parse(target); err != nil {
			b.Fatal(err)
		}
	}
}
