package statsd

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
)

// benchPackets returns datagrams of about 1400 bytes (a Fast Ethernet
// payload, as statsd's docs advise) over series distinct keys: 40%
// counters (a quarter sampled), 20% gauges (half deltas), 30% timers, 10%
// sets; a third of the keys tagged. Fixed seed.
func benchPackets(series, n int) (pkts [][]byte) {
	r := rand.New(rand.NewPCG(1, 2))
	var b strings.Builder
	for len(pkts) < n {
		k := r.IntN(series)
		var line string
		switch k % 10 {
		case 0, 1, 2, 3:
			if r.IntN(4) == 0 {
				line = fmt.Sprintf("app.requests.k%d:1|c|@0.1", k)
			} else {
				line = fmt.Sprintf("app.requests.k%d:%d|c", k, r.IntN(10))
			}
		case 4, 5:
			if r.IntN(2) == 0 {
				line = fmt.Sprintf("app.queue.k%d:+%d|g", k, r.IntN(5))
			} else {
				line = fmt.Sprintf("app.queue.k%d:%d|g", k, r.IntN(1000))
			}
		case 6, 7, 8:
			line = fmt.Sprintf("app.latency.k%d:%.3f|ms", k, r.ExpFloat64()*100)
		default:
			line = fmt.Sprintf("app.users.k%d:u%d|s", k, r.IntN(500))
		}
		if k%3 == 0 {
			line += fmt.Sprintf("|#env:prod,az:z%d", k%4)
		}
		if b.Len()+len(line)+1 > 1400 {
			pkts = append(pkts, []byte(b.String()))
			b.Reset()
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(line)
	}
	return pkts
}

// BenchmarkParseAggregate measures what one listener goroutine and the
// aggregator do per datagram: parse, batch, aggregate (a snapshot every
// 1000 datagrams keeps the interval's values bounded).
//
//	go test -run '^$' -bench BenchmarkParseAggregate -count 10 ./internal/statsd > new.txt && benchstat old.txt new.txt
func BenchmarkParseAggregate(b *testing.B) {
	for _, series := range []int{100, 10_000, 100_000} {
		b.Run(fmt.Sprintf("series=%d", series), func(b *testing.B) {
			pkts := benchPackets(series, 1000)
			cfg := Config{}
			cfg.fill()
			acfg := cfg.aggConfig()
			agg := newAggregator(acfg)
			p := NewParser(cfg.Limits, false)
			var bt batcher
			var sn snapshot
			var bytes, metrics int
			bad := func(e *ParseError) { b.Fatal(e) }
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				pkt := pkts[i%len(pkts)]
				n, _ := p.ParsePacket(pkt, bt.add, bad)
				agg.addBatch(bt.take())
				bytes += len(pkt)
				metrics += n
				if i%len(pkts) == len(pkts)-1 {
					agg.snapshot([3]float64{}, &sn)
				}
			}
			b.ReportMetric(float64(metrics)/b.Elapsed().Seconds(), "metrics/s")
			b.ReportMetric(float64(bytes)/float64(metrics), "B/metric")
		})
	}
}

// discardAppendable takes samples and keeps nothing.
type discardAppendable struct{}

func (discardAppendable) Appender(context.Context) storage.Appender { return discardAppender{} }

type discardAppender struct{ storage.Appender }

func (discardAppender) Append(ref storage.SeriesRef, _ labels.Labels, _ int64, _ float64) (storage.SeriesRef, error) {
	if ref == 0 {
		ref = 1
	}
	return ref, nil
}
func (discardAppender) Commit() error { return nil }

// BenchmarkFlush measures a flush: statistics of every series (timers
// sorted with 90th percentile) and their appends, with labels built once
// and refs remembered across flushes.
func BenchmarkFlush(b *testing.B) {
	for _, series := range []int{1000, 100_000} {
		b.Run(fmt.Sprintf("series=%d", series), func(b *testing.B) {
			pkts := benchPackets(series, 2*series/20+10)
			s, err := New(discardAppendable{}, Config{Clock: newFakeClock(time.UnixMilli(1))})
			if err != nil {
				b.Fatal(err)
			}
			p := NewParser(Limits{}, false)
			var bt batcher
			feed := func() {
				for _, pkt := range pkts {
					p.ParsePacket(pkt, bt.add, func(e *ParseError) { b.Fatal(e) })
					s.agg.addBatch(bt.take())
				}
			}
			feed()
			if err := s.Flush(); err != nil { // labels built here
				b.Fatal(err)
			}
			first := testutil.ToFloat64(s.m.flushedSamples)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				feed()
				b.StartTimer()
				if err := s.flushAt(int64(i + 2)); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric((testutil.ToFloat64(s.m.flushedSamples)-first)/b.Elapsed().Seconds(), "samples/s")
			b.ReportMetric(float64(s.agg.seriesLen()), "keys")
		})
	}
}
