package encoding

import (
	"fmt"
	"math"
	"testing"

	"github.com/prometheus/prometheus/tsdb/chunkenc"
)

// Codec size and speed on real and random data, next to Prometheus' XOR
// chunk. Compare the codecs with:
//
//	go test -run XXX -bench . -benchtime=200x -count 6 ./internal/encoding/ | tee bench.txt
//	benchstat -col /codec -row .name,/data,/tuple bench.txt
//
// Sub-benchmarks are data=node|random / codec=head|disk|prom-xor /
// tuple=4|8|16 (Aerie codecs only). Every metric is per sample:
//   - B/sample is measured once over the whole data set. head: value tuples
//     plus time tuples (shared by the group, so amortized over its series).
//     disk: value columns plus their ColumnMeta (index bytes) plus the
//     group's timestamp column, amortized likewise. prom-xor: chunk bytes
//     (timestamps and values, 120 samples per chunk as Prometheus cuts them),
//     without the chunk file's length, encoding and CRC.
//   - ns/sample is time per iteration over the samples it processed: one
//     series per iteration (a fixed stride through all series), plus the
//     group's timestamps once every len(group) iterations.

const (
	promSamplesPerChunk = 120
	benchStride         = 7919 // prime: iterations visit series spread over the groups
)

// randomData is one group of 100 series × 1800 rows of uniform [0, 1)
// values at 1 s ± 2 ms, like the node capture's shape.
func randomData() *benchData {
	r := newRand(42)
	rows := regularTimestamps(r, 1800, 1795297874652, 1000, 2)
	g := &benchGroup{name: "random", rows: rows}
	d := &benchData{groups: []*benchGroup{g}}
	for range 100 {
		vals := randomUnit(r, len(rows))
		s := &benchSeries{ts: rows, vals: vals}
		s.col, s.present = onRows(rows, s.ts, s.vals)
		g.series = append(g.series, s)
		d.samples += len(vals)
	}
	return d
}

type benchRef struct {
	g *benchGroup
	s *benchSeries
}

func (d *benchData) refs() []benchRef {
	var out []benchRef
	for _, g := range d.groups {
		for _, s := range g.series {
			out = append(out, benchRef{g, s})
		}
	}
	return out
}

// codecCase encodes and decodes one series (and its group's timestamps) with
// one codec.
type codecCase struct {
	name     string
	encSer   func(buf []byte, s *benchSeries) []byte
	encGroup func(buf []byte, g *benchGroup) []byte
	prepare  func(d *benchData) func(r benchRef, groupToo bool) // returns a decoder
}

// size is the whole data set's bytes: every group's and series' encoding.
func (c codecCase) size(d *benchData) int {
	n := 0
	for _, g := range d.groups {
		n += len(c.encGroup(nil, g))
		for _, s := range g.series {
			n += len(c.encSer(nil, s))
		}
	}
	return n
}

func headCodec(k int) codecCase {
	encSer := func(buf []byte, s *benchSeries) []byte {
		for i := 0; i < len(s.vals); i += k {
			buf = AppendValueTuple(buf, s.vals[0], s.vals[i:min(i+k, len(s.vals))])
		}
		return buf
	}
	encGroup := func(buf []byte, g *benchGroup) []byte {
		for i := 0; i < len(g.rows); i += k {
			buf = AppendTimeTuple(buf, g.rows[i:min(i+k, len(g.rows))])
		}
		return buf
	}
	return codecCase{
		name:     fmt.Sprintf("codec=head/tuple=%d", k),
		encSer:   encSer,
		encGroup: encGroup,
		prepare: func(d *benchData) func(benchRef, bool) {
			enc := map[any][]byte{}
			for _, g := range d.groups {
				enc[g] = encGroup(nil, g)
				for _, s := range g.series {
					enc[s] = encSer(nil, s)
				}
			}
			var vals []float64
			var ts []int64
			return func(r benchRef, groupToo bool) {
				src := enc[r.s]
				vals = vals[:0]
				for i := 0; i < len(r.s.vals); i += k {
					var n int
					var err error
					vals, n, err = DecodeValueTuple(vals, src, r.s.vals[0], min(k, len(r.s.vals)-i))
					if err != nil {
						panic(err)
					}
					src = src[n:]
				}
				if groupToo {
					src := enc[r.g]
					ts = ts[:0]
					for i := 0; i < len(r.g.rows); i += k {
						var n int
						var err error
						ts, n, err = DecodeTimeTuple(ts, src, min(k, len(r.g.rows)-i))
						if err != nil {
							panic(err)
						}
						src = src[n:]
					}
				}
			}
		},
	}
}

func diskCodec(k int) codecCase {
	encSer := func(buf []byte, s *benchSeries) []byte {
		buf, m := AppendColumn(buf, s.col, s.present, k, DiskBlockTuples)
		return AppendColumnMeta(buf, &m)
	}
	encGroup := func(buf []byte, g *benchGroup) []byte { return AppendScaledTimestamps(buf, g.rows) }
	return codecCase{
		name:     fmt.Sprintf("codec=disk/tuple=%d", k),
		encSer:   encSer,
		encGroup: encGroup,
		prepare: func(d *benchData) func(benchRef, bool) {
			type col struct {
				m    ColumnMeta
				data []byte
			}
			cols := map[*benchSeries]col{}
			ts := map[*benchGroup][]byte{}
			for _, g := range d.groups {
				ts[g] = encGroup(nil, g)
				for _, s := range g.series {
					data, m := AppendColumn(nil, s.col, s.present, k, DiskBlockTuples)
					cols[s] = col{m, data}
				}
			}
			var vals []float64
			var pres []bool
			var all []int64
			return func(r benchRef, groupToo bool) {
				c := cols[r.s]
				var err error
				vals, pres, err = DecodeColumn(vals[:0], pres[:0], &c.m, c.data)
				if err != nil {
					panic(err)
				}
				if groupToo {
					st, _, err := ParseScaledTimestamps(ts[r.g])
					if err != nil {
						panic(err)
					}
					all = st.AppendAll(all[:0])
				}
			}
		},
	}
}

func promChunks(s *benchSeries) []*chunkenc.XORChunk {
	var out []*chunkenc.XORChunk
	for i := 0; i < len(s.ts); i += promSamplesPerChunk {
		c := chunkenc.NewXORChunk()
		app, err := c.Appender()
		if err != nil {
			panic(err)
		}
		for j := i; j < min(i+promSamplesPerChunk, len(s.ts)); j++ {
			app.Append(0, s.ts[j], s.vals[j])
		}
		out = append(out, c)
	}
	return out
}

func promCodec() codecCase {
	return codecCase{
		name: "codec=prom-xor",
		encSer: func(buf []byte, s *benchSeries) []byte {
			for _, c := range promChunks(s) {
				buf = append(buf, c.Bytes()...)
			}
			return buf
		},
		encGroup: func(buf []byte, _ *benchGroup) []byte { return buf },
		prepare: func(d *benchData) func(benchRef, bool) {
			chunks := map[*benchSeries][]*chunkenc.XORChunk{}
			for _, g := range d.groups {
				for _, s := range g.series {
					chunks[s] = promChunks(s)
				}
			}
			var it chunkenc.Iterator
			var sink float64
			return func(r benchRef, _ bool) {
				for _, c := range chunks[r.s] {
					it = c.Iterator(it)
					for it.Next() == chunkenc.ValFloat {
						_, v := it.At()
						sink += v
					}
					if it.Err() != nil {
						panic(it.Err())
					}
				}
				_ = math.Float64bits(sink)
			}
		},
	}
}

func benchCodecs() []codecCase {
	var cs []codecCase
	for _, k := range []int{4, 8, 16} {
		cs = append(cs, headCodec(k), diskCodec(k))
	}
	return append(cs, promCodec())
}

func benchDataSets(b *testing.B) []struct {
	name string
	d    *benchData
} {
	out := []struct {
		name string
		d    *benchData
	}{{"data=random", randomData()}}
	d, err := loadNode()
	if err != nil {
		b.Logf("node capture unavailable, data=node skipped: %v", err)
		return out
	}
	return append([]struct {
		name string
		d    *benchData
	}{{"data=node", d}}, out...)
}

// stride returns the series of iteration i and whether it also processes its
// group's timestamps (once every len(group.series) iterations).
func stride(refs []benchRef, i int) (benchRef, bool) {
	r := refs[(i*benchStride)%len(refs)]
	return r, i%len(r.g.series) == 0
}

func reportPerSample(b *testing.B, samples, size, total int) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(samples), "ns/sample")
	b.ReportMetric(float64(size)/float64(total), "B/sample")
}

// benchPerSample runs, for every data set and codec, the operation that
// setup returns on the series (and now and then the group) that stride
// picks, and reports its ns/sample and the codec's B/sample.
func benchPerSample(b *testing.B, setup func(c codecCase, d *benchData) func(r benchRef, groupToo bool)) {
	for _, ds := range benchDataSets(b) {
		refs := ds.d.refs()
		for _, c := range benchCodecs() {
			b.Run(ds.name+"/"+c.name, func(b *testing.B) {
				size := c.size(ds.d)
				op := setup(c, ds.d)
				samples := 0
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					r, groupToo := stride(refs, i)
					op(r, groupToo)
					samples += len(r.s.ts)
				}
				b.StopTimer()
				reportPerSample(b, samples, size, ds.d.samples)
			})
		}
	}
}

func BenchmarkEncode(b *testing.B) {
	benchPerSample(b, func(c codecCase, _ *benchData) func(benchRef, bool) {
		var buf []byte
		return func(r benchRef, groupToo bool) {
			buf = c.encSer(buf[:0], r.s)
			if groupToo {
				buf = c.encGroup(buf[:0], r.g)
			}
		}
	})
}

func BenchmarkDecode(b *testing.B) {
	benchPerSample(b, func(c codecCase, d *benchData) func(benchRef, bool) { return c.prepare(d) })
}
