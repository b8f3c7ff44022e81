package carbon

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"

	"github.com/aerie-db/aerie/internal/tsdb"
)

// Compare runs with:
//
//	go test -run '^$' -bench . -count 6 ./internal/carbon > new.txt && benchstat old.txt new.txt

func BenchmarkParseLine(b *testing.B) {
	for _, tc := range []struct{ name, line string }{
		{"kind=plain", "servers.web-042.cpu.user 12.5 1700000000"},
		{"kind=tagged", "servers.cpu.user;host=web-042;dc=eu-west;env=prod 12.5 1700000000"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			line := []byte(tc.line)
			b.ReportAllocs()
			b.SetBytes(int64(len(line)))
			for b.Loop() {
				if _, err := ParseLine(line, 0, Limits{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "samples/s")
		})
	}
}

func BenchmarkDecodePickle(b *testing.B) {
	es := make([]PickleEntry, 1000)
	for i := range es {
		es[i] = PickleEntry{Path: fmt.Appendf(nil, "servers.web-%03d.cpu.user", i), T: 1700000000, V: float64(i)}
	}
	payload := AppendPickle(nil, es)
	b.ReportAllocs()
	b.SetBytes(int64(len(payload)))
	n := 0
	for b.Loop() {
		if err := DecodePickle(payload, func(PickleEntry) { n++ }, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "samples/s")
}

// discardDB counts appended samples and stores nothing: the receiver's own
// cost, without the engine's.
type discardDB struct{ n atomic.Int64 }

func (d *discardDB) Appender(context.Context) storage.Appender { return &discardApp{d: d} }

type discardApp struct {
	storage.Appender
	d *discardDB
	n int64
}

func (a *discardApp) Append(storage.SeriesRef, labels.Labels, int64, float64) (storage.SeriesRef, error) {
	a.n++
	return 1, nil
}
func (a *discardApp) Commit() error   { a.d.n.Add(a.n); a.n = 0; return nil }
func (a *discardApp) Rollback() error { a.n = 0; return nil }

// BenchmarkReceiveTCP: plaintext over loopback TCP from 4 clients, 10 000
// series (2 500 a client) at one timestamp per iteration, parsed, queued
// and appended to a discarding storage (the receiver's own cost) or to a
// real engine (tsdb.Open in a temporary directory, default options).
func BenchmarkReceiveTCP(b *testing.B) {
	for _, st := range []string{"discard", "engine"} {
		b.Run("storage="+st, func(b *testing.B) {
			var db storage.Appendable
			var count func() float64
			switch st {
			case "discard":
				d := &discardDB{}
				db, count = d, func() float64 { return float64(d.n.Load()) }
			case "engine":
				e, err := tsdb.Open(b.TempDir(), &tsdb.Options{FlushCheckInterval: -1})
				if err != nil {
					b.Fatal(err)
				}
				defer e.Close()
				db = e
			}
			benchReceive(b, db, count)
		})
	}
}

func benchReceive(b *testing.B, db storage.Appendable, count func() float64) {
	const clients, series = 4, 10_000
	r, err := New(Config{PlaintextTCP: "127.0.0.1:0", Registerer: prometheus.NewRegistry()}, db)
	if err != nil {
		b.Fatal(err)
	}
	if err := r.Start(); err != nil {
		b.Fatal(err)
	}
	base := time.Now().Add(-2*time.Hour).Unix() / 10 * 10
	b.ReportAllocs()
	start := time.Now()
	var wg sync.WaitGroup
	var sent atomic.Int64
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := net.Dial("tcp", r.PlaintextTCPAddr().String())
			if err != nil {
				b.Error(err)
				return
			}
			defer conn.Close()
			var buf []byte
			for i := range b.N {
				buf = buf[:0]
				for s := c * series / clients; s < (c+1)*series/clients; s++ {
					buf = append(buf, "servers.web-"...)
					buf = strconv.AppendInt(buf, int64(s), 10)
					buf = append(buf, ".cpu.user "...)
					buf = strconv.AppendInt(buf, int64(i+s), 10)
					buf = append(buf, ' ')
					buf = strconv.AppendInt(buf, base+int64(i)*10, 10)
					buf = append(buf, '\n')
				}
				if _, err := conn.Write(buf); err != nil {
					b.Error(err)
					return
				}
				sent.Add(int64(series / clients))
			}
		}()
	}
	wg.Wait()
	stored := func() float64 { return testutil.ToFloat64(r.m.stored.WithLabelValues(PlaintextTCP)) }
	for testutil.ToFloat64(r.m.received.WithLabelValues(PlaintextTCP)) < float64(sent.Load()) {
		time.Sleep(time.Millisecond)
	}
	r.Close() // commits everything received
	elapsed := time.Since(start)
	if got := stored(); got != float64(sent.Load()) {
		b.Fatalf("stored %v of %d samples", got, sent.Load())
	}
	if count != nil && count() != float64(sent.Load()) {
		b.Fatalf("storage saw %v of %d samples", count(), sent.Load())
	}
	b.ReportMetric(float64(sent.Load())/elapsed.Seconds(), "samples/s")
}
