package carbon

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
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
// series, parsed, queued and appended (to a discarding storage).
func BenchmarkReceiveTCP(b *testing.B) {
	const clients, series = 4, 10_000
	var chunk bytes.Buffer
	for i := range series {
		fmt.Fprintf(&chunk, "servers.web-%04d.cpu.user %d 1700000000\n", i, i)
	}
	db := &discardDB{}
	r, err := New(Config{PlaintextTCP: "127.0.0.1:0"}, db)
	if err != nil {
		b.Fatal(err)
	}
	if err := r.Start(); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(chunk.Len()))
	start := time.Now()
	var wg sync.WaitGroup
	per := (b.N + clients - 1) / clients
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.Dial("tcp", r.PlaintextTCPAddr().String())
			if err != nil {
				b.Error(err)
				return
			}
			defer c.Close()
			for range per {
				if _, err := c.Write(chunk.Bytes()); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	for db.n.Load() < int64(per*clients*series) {
		time.Sleep(time.Millisecond)
	}
	elapsed := time.Since(start)
	b.ReportMetric(float64(db.n.Load())/elapsed.Seconds(), "samples/s")
	r.Close()
}
