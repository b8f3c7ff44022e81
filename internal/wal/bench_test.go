package wal

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

// Compare runs with:
//
//	go test -run '^$' -bench . -count 10 ./internal/wal/ > new.txt && benchstat old.txt new.txt
func BenchmarkAppendRows(b *testing.B) {
	for _, width := range []int{8, 256} {
		b.Run(fmt.Sprintf("width=%d", width), func(b *testing.B) {
			r := &RowsDef{Group: 1, Width: uint32(width)}
			for i := range 100 {
				row := Row{T: int64(i) * 15000, Present: make([]uint64, (width+63)/64)}
				for s := range width {
					row.Present[s/64] |= 1 << (s % 64)
					row.Values = append(row.Values, float64(i*s))
				}
				r.Rows = append(r.Rows, row)
			}
			var buf []byte
			b.ReportAllocs()
			for b.Loop() {
				buf = AppendRows(buf[:0], r)
			}
			b.ReportMetric(float64(len(buf))/float64(100*width), "B/sample")
			var dst RowsDef
			if err := DecodeRows(buf, &dst); err != nil {
				b.Fatal(err)
			}
		})
	}
}

// BenchmarkLog logs 512-byte records from 8 goroutines per core, in both
// sync modes. In batch mode it also reports the mean fsync (the floor
// under a writer's acknowledgement on this disk) and how many Log calls
// share one.
func BenchmarkLog(b *testing.B) {
	for _, mode := range []SyncMode{SyncBatch, SyncInterval} {
		b.Run("sync="+mode.String(), func(b *testing.B) {
			var fsyncs, fsyncNs atomic.Int64
			onFsync := func(d time.Duration) {
				fsyncs.Add(1)
				fsyncNs.Add(d.Nanoseconds())
			}
			w, err := Open(b.TempDir(), Options{Sync: mode, OnFsync: onFsync})
			if err != nil {
				b.Fatal(err)
			}
			rec := testRecord(0, 512)
			b.ReportAllocs()
			b.SetParallelism(8)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := w.Log(rec); err != nil {
						b.Error(err)
						return
					}
				}
			})
			if err := w.Close(); err != nil {
				b.Fatal(err)
			}
			if n := fsyncs.Load(); mode == SyncBatch && n > 0 {
				b.ReportMetric(float64(fsyncNs.Load())/float64(n)/1e3, "µs/fsync")
				b.ReportMetric(float64(b.N)/float64(n), "logs/fsync")
			}
		})
	}
}
