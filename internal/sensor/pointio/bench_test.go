package pointio

import (
	"bytes"
	"io"
	"math/rand/v2"
	"testing"
)

// Benchmarks of each reader and writer on the same 100k points (fixed
// seed): sensor-like values with two decimals at one-minute steps.
// Compare two runs with:
//
//	go test -run=NONE -bench=. -count=10 ./internal/sensor/pointio > new.txt
//	benchstat old.txt new.txt

const benchPoints = 100_000

func benchData() []pt {
	rng := rand.New(rand.NewPCG(1, 1))
	pts := make([]pt, benchPoints)
	v := 20.0
	for i := range pts {
		v += float64(rng.IntN(21)-10) / 100
		pts[i] = pt{T: 1_700_000_000_000 + int64(i)*60_000, V: float64(int64(v*100)) / 100}
	}
	return pts
}

func encodePoints(tb testing.TB, format string, pts []pt) []byte {
	var b bytes.Buffer
	w, err := NewWriter(format, &b)
	if err != nil {
		tb.Fatal(err)
	}
	for _, p := range pts {
		w.Point(p.T, p.V)
	}
	if err := w.Close(); err != nil {
		tb.Fatal(err)
	}
	return b.Bytes()
}

func BenchmarkReader(b *testing.B) {
	pts := benchData()
	for _, format := range []string{FormatCSV, FormatJSON, FormatMsgp} {
		b.Run("format="+format, func(b *testing.B) {
			data := encodePoints(b, format, pts)
			rformat := "default"
			if format == FormatCSV {
				rformat = "0-1-,"
			}
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				r, err := NewReader(format, rformat, Float64, bytes.NewReader(data), Limits{})
				if err != nil {
					b.Fatal(err)
				}
				n := 0
				for r.Next() {
					n++
				}
				if r.Err() != nil || n != len(pts) {
					b.Fatal(n, r.Err())
				}
			}
			b.ReportMetric(float64(len(pts))*float64(b.N)/b.Elapsed().Seconds(), "points/s")
			b.ReportMetric(float64(len(data))/float64(len(pts)), "B/point")
		})
	}
}

func BenchmarkWriter(b *testing.B) {
	pts := benchData()
	for _, format := range []string{FormatCSV, FormatJSON, FormatMsgp} {
		b.Run("format="+format, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(encodePoints(b, format, pts))))
			for b.Loop() {
				w, _ := NewWriter(format, io.Discard)
				for _, p := range pts {
					w.Point(p.T, p.V)
				}
				if err := w.Close(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(pts))*float64(b.N)/b.Elapsed().Seconds(), "points/s")
		})
	}
}
