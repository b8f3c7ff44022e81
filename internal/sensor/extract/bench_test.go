package extract

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// discard is an Emitter that drops everything.
type discard struct{ n int }

func (d *discard) Point(int64, float64) error { d.n++; return nil }
func (d *discard) Row(int64, []float64) error { d.n++; return nil }

// opCases are one operator per mode over a day of 1 Hz points.
var opCases = []struct {
	mode     string
	interval int64
	fn       string
}{
	{"full", 0, "none"},
	{"sampling", 60_000, "none"},
	{"aggregation", 60_000, "count,min,max,avg,stddev"},
	{"aggregation-quantiles", 60_000, "p50,p99"},
	{"transformation", 0, "diff,abs"},
	{"transformation-movavg", 0, "movavg:300"},
}

// TestPushDoesNotAllocate checks invariant 1 where it is cheap to: once an
// operator has warmed up, pushing a point allocates nothing, so memory does
// not grow with the series.
func TestPushDoesNotAllocate(t *testing.T) {
	for _, c := range opCases {
		p := Params{From: 0, To: 1 << 40, Interval: c.interval, Func: mustParseFunc(t, c.fn)}
		op, err := New(p, &discard{})
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(1, 1))
		ts := int64(0)
		push := func() {
			ts += 1000
			if err := op.Push(ts, 100+rng.NormFloat64()); err != nil {
				t.Fatal(err)
			}
		}
		for range 100_000 {
			push()
		}
		if a := testing.AllocsPerRun(100_000, push); a != 0 {
			t.Errorf("mode=%s: %v allocations per Push", c.mode, a)
		}
	}
}

// BenchmarkOp measures each operator over a day of 1 Hz points.
//
//	go test -run '^$' -bench BenchmarkOp -count 10 ./internal/sensor/extract/ > new.txt && benchstat old.txt new.txt
func BenchmarkOp(b *testing.B) {
	const n = 86_400
	rng := rand.New(rand.NewPCG(1, 2))
	vs := make([]float64, n)
	for i := range vs {
		vs[i] = 100 + 10*rng.NormFloat64()
	}
	for _, c := range opCases {
		b.Run(fmt.Sprintf("mode=%s", c.mode), func(b *testing.B) {
			p := Params{From: 0, To: n*1000 - 1, Interval: c.interval, Func: mustParseFunc(b, c.fn)}
			b.ReportAllocs()
			for b.Loop() {
				op, _ := New(p, &discard{})
				for i, v := range vs {
					if err := op.Push(int64(i)*1000, v); err != nil {
						b.Fatal(err)
					}
				}
				if err := op.Close(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "samples/s")
		})
	}
	b.Run("mode=aggregation-from-metrics", func(b *testing.B) {
		// A year of hourly block metrics into daily rows.
		const hour, hours = 3_600_000, 365 * 24
		p := Params{From: 0, To: hours*hour - 1, Interval: 24 * hour, Func: mustParseFunc(b, "count,min,max,avg,stddev")}
		m := Agg{Count: 3600, Min: 1, Max: 9, Sum: 18000, SumSq: 100000, First: 1, Last: 9}
		b.ReportAllocs()
		for b.Loop() {
			a, _ := NewAggregator(p, &discard{})
			for h := int64(0); h < hours; h++ {
				if err := a.PushAgg(h*hour, (h+1)*hour, m); err != nil {
					b.Fatal(err)
				}
			}
			if err := a.Close(); err != nil {
				b.Fatal(err)
			}
		}
		// samples/s counts the 1 Hz samples the metrics stand for, to
		// compare with aggregation from data; spans/s is the work done.
		b.ReportMetric(float64(hours)*3600*float64(b.N)/b.Elapsed().Seconds(), "samples/s")
		b.ReportMetric(float64(hours)*float64(b.N)/b.Elapsed().Seconds(), "spans/s")
	})
}
