package cache

import (
	"fmt"
	"path/filepath"
	"strconv"
	"testing"
)

// BenchmarkGet reads one week of 8 fields at 1 min (80 640 points) of one
// of 16 keys, the shape of a YCSB-TS "large" query.
//
//	go test -run '^$' -bench BenchmarkGet -count 6 ./internal/cache/ | tee new.txt; benchstat old.txt new.txt
func BenchmarkGet(b *testing.B) {
	for _, direct := range []bool{true, false} {
		b.Run(fmt.Sprintf("direct=%v", direct), func(b *testing.B) {
			c, err := Open(Options{Path: filepath.Join(b.TempDir(), "c"), Size: 256 << 20, NoDirectIO: !direct})
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			const week = 7 * 1440
			fields := make([]Field, 8)
			for k := range 16 {
				for f := range fields {
					fields[f].Name = "field" + strconv.Itoa(f)
					fields[f].Points = fields[f].Points[:0]
					for i := range week {
						fields[f].Points = append(fields[f].Points, Point{T: int64(i) * 60, V: strconv.AppendFloat(nil, float64(i*k+f)/7, 'g', -1, 64)})
					}
				}
				if err := c.Set(KeyOf(strconv.Itoa(k)), 0, week*60, fields); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			points := 0
			for i := 0; i < b.N; i++ {
				res, err := c.Get(KeyOf(strconv.Itoa(i%16)), 0, week*60, nil)
				if err != nil || res.Status != Hit {
					b.Fatal(err, res.Status)
				}
				for _, f := range res.Fields {
					points += len(f.Points)
				}
			}
			b.ReportMetric(float64(points)/b.Elapsed().Seconds(), "points/s")
		})
	}
}
