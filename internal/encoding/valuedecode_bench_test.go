package encoding

import (
	"math"
	"syscall"
	"testing"
	"time"
)

// Value decoding alone, the querier's inner loop (no timestamps), in
// samples per second. Compare two commits with:
//
//	go test -run XXX -bench DecodeValues -count 10 ./internal/encoding/ | tee new.txt
//	benchstat old.txt new.txt
//
// Sub-benchmarks are data=node|tsbs|walk / codec=head|disk|disk-tuple, with
// DefaultTupleSize rows per tuple. Each iteration decodes every value of one
// series (a fixed stride through all series): head through DecodeValueTuple
// per tuple, disk through DecodeColumn, disk-tuple through TupleRange and
// DecodeColumnTuple per tuple as the block reader does. Msamples/s counts
// the series' samples (present rows only) per second of wall time,
// Msamples/cpu-s per second of the process' CPU time.
//
//   - node: the real capture (nodedata_test.go).
//   - tsbs: TSBS's cpu-only fields, a clamped random walk (normal(0, 1)
//     steps in [0, 100]) truncated to integers as TSBS writes them.
//   - walk: the same walk untruncated, full-precision floats: the most bits
//     per sample.
func BenchmarkDecodeValues(b *testing.B) {
	type dataSet struct {
		name string
		d    *benchData
	}
	var sets []dataSet
	if d, err := loadNode(); err != nil {
		b.Logf("node capture unavailable, data=node skipped: %v", err)
	} else {
		sets = append(sets, dataSet{"data=node", d})
	}
	sets = append(sets, dataSet{"data=tsbs", walkData(true)}, dataSet{"data=walk", walkData(false)})
	for _, ds := range sets {
		refs := ds.d.refs()
		b.Run(ds.name+"/codec=head", func(b *testing.B) {
			enc := make(map[*benchSeries][]byte)
			for _, r := range refs {
				enc[r.s] = headCodec(DefaultTupleSize).encSer(nil, r.s)
			}
			var vals []float64
			decodeLoop(b, refs, func(s *benchSeries) {
				src, base := enc[s], s.vals[0]
				vals = vals[:0]
				for i := 0; i < len(s.vals); i += DefaultTupleSize {
					var n int
					var err error
					vals, n, err = DecodeValueTuple(vals, src, base, min(DefaultTupleSize, len(s.vals)-i))
					if err != nil {
						b.Fatal(err)
					}
					src = src[n:]
				}
			})
		})
		b.Run(ds.name+"/codec=disk", func(b *testing.B) {
			cols := benchColumns(refs)
			var vals []float64
			var pres []bool
			decodeLoop(b, refs, func(s *benchSeries) {
				c := cols[s]
				var err error
				if vals, pres, err = DecodeColumn(vals[:0], pres[:0], &c.m, c.data); err != nil {
					b.Fatal(err)
				}
			})
		})
		b.Run(ds.name+"/codec=disk-tuple", func(b *testing.B) {
			cols := benchColumns(refs)
			var vals []float64
			var pres []bool
			decodeLoop(b, refs, func(s *benchSeries) {
				c := cols[s]
				for i := range c.m.NumTuples() {
					off, end := c.m.TupleRange(i, i)
					var err error
					if vals, pres, err = DecodeColumnTuple(vals[:0], pres[:0], &c.m, c.data[off:end], i); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}

type benchColumn struct {
	m    ColumnMeta
	data []byte
}

// benchColumns encodes every series as a disk column with an indexed meta.
func benchColumns(refs []benchRef) map[*benchSeries]benchColumn {
	cols := make(map[*benchSeries]benchColumn)
	for _, r := range refs {
		data, m := AppendColumn(nil, r.s.col, r.s.present, DefaultTupleSize, DiskBlockTuples)
		m.Index()
		cols[r.s] = benchColumn{m, data}
	}
	return cols
}

func decodeLoop(b *testing.B, refs []benchRef, decode func(s *benchSeries)) {
	samples := 0
	b.ReportAllocs()
	cpu0 := cpuTime()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s := refs[(i*benchStride)%len(refs)].s
		decode(s)
		samples += len(s.vals)
	}
	b.StopTimer()
	cpu := cpuTime() - cpu0
	b.ReportMetric(float64(samples)/b.Elapsed().Seconds()/1e6, "Msamples/s")
	b.ReportMetric(float64(samples)/cpu.Seconds()/1e6, "Msamples/cpu-s")
}

// cpuTime is the user and system CPU time of the process so far. Samples
// per CPU second are steadier than per wall second on a shared machine,
// where the benchmark waits for a core.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// walkData is one group of 100 series × 1800 rows at 10 s ± 100 ms, each
// a TSBS clamped random walk: uniform start in [0, 100), normal(0, 1)
// steps, clamped to [0, 100]; truncated to integers if trunc.
func walkData(trunc bool) *benchData {
	r := newRand(23)
	rows := regularTimestamps(r, 1800, 1795297874652, 10000, 100)
	name := "walk"
	if trunc {
		name = "tsbs"
	}
	g := &benchGroup{name: name, rows: rows}
	d := &benchData{groups: []*benchGroup{g}}
	for range 100 {
		vals := make([]float64, len(rows))
		x := 100 * r.Float64()
		for i := range vals {
			vals[i] = x
			if trunc {
				vals[i] = math.Trunc(x)
			}
			x = min(max(x+r.NormFloat64(), 0), 100)
		}
		s := &benchSeries{ts: rows, vals: vals}
		s.col, s.present = onRows(rows, s.ts, s.vals)
		g.series = append(g.series, s)
		d.samples += len(vals)
	}
	return d
}
