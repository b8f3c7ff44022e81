package graphite

import (
	"context"
	"math"
	"strconv"
	"testing"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/aerie-db/aerie/internal/graphite/expr"
)

// go test -run '^$' -bench . -count 10 ./internal/graphite > new.txt; benchstat old.txt new.txt

func BenchmarkRenderJSON(b *testing.B) {
	for _, n := range []int{1440, 10080} {
		for _, mdp := range []int{0, 500} {
			b.Run("points="+strconv.Itoa(n)+"/maxDataPoints="+strconv.Itoa(mdp), func(b *testing.B) {
				series := make([]*expr.Series, 20)
				for i := range series {
					v := make([]float64, n)
					for j := range v {
						v[j] = float64(j%97) * 1.25
						if j%13 == 0 {
							v[j] = math.NaN()
						}
					}
					series[i] = &expr.Series{Name: "servers.web" + strconv.Itoa(i) + ".cpu.user", Tags: map[string]string{"name": "x"},
						Start: 1_700_000_000, Step: 60, End: 1_700_000_000 + int64(n)*60, Values: v, ConsolidationFunc: "average"}
				}
				b.ReportAllocs()
				var buf []byte
				for b.Loop() {
					buf = AppendRenderJSON(buf[:0], series, mdp, false)
				}
				b.ReportMetric(float64(len(buf))/float64(20*n), "B/point")
			})
		}
	}
}

func BenchmarkFetchGlob(b *testing.B) {
	st := &memStore{}
	for i := range 2000 {
		st.series = append(st.series, memSeries{lset: labels.FromStrings("__name__", "servers.web"+strconv.Itoa(i)+".cpu.user"), start: 0, step: 60, values: []float64{1}})
	}
	b.ReportAllocs()
	for b.Loop() {
		f := NewFetcher(st, 3600, 0, 0)
		ss, err := f.Fetch(context.Background(), "servers.web1{0,1}*.cpu.user", 0, 3600)
		if err != nil || len(ss) != 222 {
			b.Fatal(len(ss), err)
		}
	}
}
