package wal_test

import (
	"os"
	"sync"
	"testing"

	"github.com/aerie-db/aerie/bench/workload"
	"github.com/aerie-db/aerie/internal/head"
	"github.com/aerie-db/aerie/internal/wal"
)

// nodeCapture is the real node_exporter capture of
// /work/shared/data/README.md, absent in CI.
const nodeCapture = "/work/shared/data/node-1s-a.rwpb.zst"

// nodeBatches are the WAL batches a head logs while the capture is appended
// to it one scrape (one target's row) per commit, the targets interleaved
// in time order, with the number of samples they hold.
type nodeBatches struct {
	batches [][][]byte
	samples int
}

var (
	nodeOnce sync.Once
	nodeData nodeBatches
	nodeErr  error
)

// recorder is a head.WAL that keeps copies of what it is given.
type recorder struct{ batches [][][]byte }

func (r *recorder) Write(_ int64, recs ...[]byte) (uint64, error) {
	b := make([][]byte, len(recs))
	for i, rec := range recs {
		b[i] = append([]byte(nil), rec...)
	}
	r.batches = append(r.batches, b)
	return uint64(len(r.batches)), nil
}

func (r *recorder) Wait(uint64) error { return nil }

func loadNodeBatches(tb testing.TB) nodeBatches {
	tb.Helper()
	if _, err := os.Stat(nodeCapture); err != nil {
		tb.Skipf("no capture: %v", err)
	}
	nodeOnce.Do(func() { nodeData, nodeErr = readNodeBatches() })
	if nodeErr != nil {
		tb.Fatal(nodeErr)
	}
	return nodeData
}

func readNodeBatches() (nodeBatches, error) {
	w, err := workload.FromFile(nodeCapture)
	if err != nil {
		return nodeBatches{}, err
	}
	rec := &recorder{}
	h, err := head.New(head.Options{}, rec)
	if err != nil {
		return nodeBatches{}, err
	}
	n := w.NumTargets()
	scrapers := make([]workload.Scraper, n)
	rows := make([]workload.Row, n)
	more := make([]bool, n)
	for i := range n {
		scrapers[i] = w.Scraper(i)
		more[i] = scrapers[i].Next(&rows[i])
	}
	samples := 0
	for {
		// The target whose next row is oldest goes first.
		next := -1
		for i := range n {
			if more[i] && (next < 0 || rows[i].T < rows[next].T) {
				next = i
			}
		}
		if next < 0 {
			break
		}
		r, series := &rows[next], w.Series(next)
		app := h.Appender()
		for j, v := range r.Values {
			if r.Present != nil && !r.Present[j] {
				continue
			}
			if err := app.Append(series[j], r.T, v); err != nil {
				return nodeBatches{}, err
			}
			samples++
		}
		if err := app.Commit(); err != nil {
			return nodeBatches{}, err
		}
		more[next] = scrapers[next].Next(r)
	}
	return nodeBatches{batches: rec.batches, samples: samples}, nil
}

// BenchmarkNodeFrames frames the batches a head logs for the real node
// capture (loadNodeBatches) and decodes them back, reporting bytes and
// nanoseconds per sample. format=v1 is a frame per uncompressed record
// (the format before version 2), format=v2 a zstd frame per batch (what
// Log writes), format=v2-checkpoint frames of about 1 MiB (what a
// checkpoint writes). op=decode includes DecodeRows, as replay does.
// Compare runs with:
//
//	go test -run '^$' -bench BenchmarkNodeFrames -count 6 ./internal/wal/ > new.txt && benchstat old.txt new.txt
func BenchmarkNodeFrames(b *testing.B) {
	d := loadNodeBatches(b)
	encode := map[string]func(dst []byte) []byte{
		"v1": func(dst []byte) []byte {
			for _, batch := range d.batches {
				dst = wal.AppendFramesV1(dst, batch)
			}
			return dst
		},
		"v2": func(dst []byte) []byte {
			var scratch []byte
			for _, batch := range d.batches {
				dst, scratch = wal.AppendBatch(dst, scratch, batch)
			}
			return dst
		},
		"v2-checkpoint": func(dst []byte) []byte {
			var payload []byte
			for _, batch := range d.batches {
				dst, payload = wal.AppendCheckpointFrames(dst, payload, batch)
			}
			return wal.FlushCheckpointFrame(dst, payload)
		},
	}
	perSample := func(b *testing.B) float64 {
		return float64(b.Elapsed().Nanoseconds()) / float64(b.N) / float64(d.samples)
	}
	for _, format := range []string{"v1", "v2", "v2-checkpoint"} {
		frames := encode[format](nil)
		b.Run("format="+format+"/op=encode", func(b *testing.B) {
			b.ReportAllocs()
			buf := make([]byte, 0, len(frames))
			for b.Loop() {
				buf = encode[format](buf[:0])
			}
			b.ReportMetric(float64(len(buf))/float64(d.samples), "B/sample")
			b.ReportMetric(perSample(b), "ns/sample")
		})
		b.Run("format="+format+"/op=decode", func(b *testing.B) {
			version := byte(wal.SegmentVersion)
			if format == "v1" {
				version = 1
			}
			b.ReportAllocs()
			var rows wal.RowsDef
			for b.Loop() {
				err := wal.ForEachRecord(frames, version, func(rec []byte) {
					if wal.RecordType(rec) == wal.RecordRows {
						if err := wal.DecodeRows(rec, &rows); err != nil {
							b.Fatal(err)
						}
					}
				})
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(perSample(b), "ns/sample")
		})
	}
}
