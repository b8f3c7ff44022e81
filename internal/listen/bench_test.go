package listen

import (
	"bytes"
	"fmt"
	"testing"
)

type countLines struct{ n int }

func (c *countLines) Line([]byte) { c.n++ }
func (c *countLines) TooLong(int) {}
func (c *countLines) Flush()      {}
func (c *countLines) Close()      {}

// BenchmarkReadLines measures line splitting alone.
//
//	go test -run '^$' -bench ReadLines -count 6 ./internal/listen > new.txt && benchstat old.txt new.txt
func BenchmarkReadLines(b *testing.B) {
	var in bytes.Buffer
	for i := range 10_000 {
		fmt.Fprintf(&in, "servers.web-%04d.cpu.user %d 1700000000\n", i, i)
	}
	b.ReportAllocs()
	b.SetBytes(int64(in.Len()))
	var c countLines
	for b.Loop() {
		readLines(bytes.NewReader(in.Bytes()), DefaultMaxLineLen, &c, func() {})
	}
	b.ReportMetric(float64(c.n)/b.Elapsed().Seconds(), "lines/s")
}
