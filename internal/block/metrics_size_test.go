package block

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/aerie-db/aerie/bench/workload"
	"github.com/aerie-db/aerie/internal/mathx"
)

// sensorSpec is a simulated 1 Hz sensor: 20 plus a daily cycle of
// amplitude 5, a mean-reverting random walk (Ornstein–Uhlenbeck, time
// constant 3 days, standard deviation walk: it moves about walk/6 in an
// hour) and white noise, quantized to quantum (0: not quantized).
type sensorSpec struct {
	name    string
	quantum float64
	noise   float64 // standard deviation of the white noise
	walk    float64
}

var sensorSpecs = []sensorSpec{
	{"q=0.01", 0.01, 0.05, 2},
	{"q=1", 1, 0.05, 2},
	{"q=none", 0, 0.05, 2},
}

const hoursPerYear = 8760

// sensorMetrics simulates hours hours of spec at 1 Hz (fixed seed) and
// returns the hourly metrics as the block writer computes them (add).
func sensorMetrics(spec sensorSpec, hours int) []IntervalMetrics {
	rng := rand.New(rand.NewPCG(13, 2))
	const tau = 3 * 86400.0
	walkStep := spec.walk * math.Sqrt(2/tau)
	walk := 0.0
	ms := make([]IntervalMetrics, hours)
	t0 := int64(1_700_000_000) / 3600 * 3600 // an hour boundary, s
	for h := range ms {
		m := &ms[h]
		m.Interval = t0/3600 + int64(h)
		for s := range 3600 {
			t := t0 + int64(h)*3600 + int64(s)
			walk += -walk/tau + walkStep*rng.NormFloat64()
			v := 20 + 5*math.Sin(2*math.Pi*float64(t%86400)/86400) + walk + spec.noise*rng.NormFloat64()
			if spec.quantum > 0 {
				v = quantize(v, spec.quantum)
			}
			m.add(t*1000, v)
		}
	}
	return ms
}

// quantize rounds v to a multiple of q (a power of ten), as a reading
// printed with that resolution parses.
func quantize(v, q float64) float64 {
	if q >= 1 {
		return math.Round(v/q) * q
	}
	k := math.Round(-math.Log10(q))
	return math.Round(v*math.Pow(10, k)) / math.Pow(10, k)
}

// appendMetricsV1 is version 1's encoder (the writer's until index
// version 2), for comparisons: uvarint n, then per interval uvarint
// deltas of index and count and six raw float64s.
func appendMetricsV1(dst []byte, ms []IntervalMetrics, base int64) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(ms)))
	prev := base
	for _, m := range ms {
		dst = binary.AppendUvarint(dst, uint64(m.Interval-prev))
		prev = m.Interval
		dst = binary.AppendUvarint(dst, m.Count)
		for _, f := range [...]float64{m.Min, m.Max, m.Sum, m.SumSq, m.First, m.Last} {
			dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(f))
		}
	}
	return dst
}

// v1Size is the bytes ms took in a version 1 index.
func v1Size(ms []IntervalMetrics, base int64) int {
	n := uvarintLen(uint64(len(ms)))
	prev := base
	for _, m := range ms {
		n += uvarintLen(uint64(m.Interval-prev)) + uvarintLen(m.Count) + 48
		prev = m.Interval
	}
	return n
}

// nodeCapture is the real node_exporter capture of
// /work/shared/data/README.md, absent in CI.
const nodeCapture = "/work/shared/data/node-1s-a.rwpb.zst"

var (
	nodeOnce   sync.Once
	nodeSeries [][2][]float64 // per series: timestamps (as float64) and values
	nodeErr    error
)

// loadNodeSeries returns every series of the capture: its samples' times
// and values in time order.
func loadNodeSeries(t testing.TB) [][2][]float64 {
	t.Helper()
	if _, err := os.Stat(nodeCapture); err != nil {
		t.Skipf("no capture: %v", err)
	}
	nodeOnce.Do(func() {
		w, err := workload.FromFile(nodeCapture)
		if err != nil {
			nodeErr = err
			return
		}
		for i := range w.NumTargets() {
			n := len(w.Series(i))
			ss := make([][2][]float64, n)
			var r workload.Row
			sc := w.Scraper(i)
			for sc.Next(&r) {
				for j := range r.Values {
					if r.Present == nil || r.Present[j] {
						ss[j][0] = append(ss[j][0], float64(r.T))
						ss[j][1] = append(ss[j][1], r.Values[j])
					}
				}
			}
			nodeSeries = append(nodeSeries, ss...)
		}
	})
	if nodeErr != nil {
		t.Fatal(nodeErr)
	}
	return nodeSeries
}

// nodeMetrics returns every capture series' metrics at metric interval
// iv (ms).
func nodeMetrics(t testing.TB, iv int64) [][]IntervalMetrics {
	var out [][]IntervalMetrics
	for _, s := range loadNodeSeries(t) {
		var ms []IntervalMetrics
		for i, tf := range s[0] {
			ts := int64(tf)
			k := mathx.FloorDiv(ts, iv)
			if len(ms) == 0 || ms[len(ms)-1].Interval != k {
				ms = append(ms, IntervalMetrics{Interval: k})
			}
			ms[len(ms)-1].add(ts, s[1][i])
		}
		out = append(out, ms)
	}
	return out
}

func roundTrip(t testing.TB, ms []IntervalMetrics, base int64) []byte {
	t.Helper()
	b := AppendMetrics(nil, ms, base)
	got, n, err := DecodeMetrics(nil, b, base)
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	if n != len(b) {
		t.Fatalf("decoded %d of %d bytes", n, len(b))
	}
	if len(got) != len(ms) {
		t.Fatalf("%d intervals decoded, %d encoded", len(got), len(ms))
	}
	for i := range ms {
		requireSameMetrics(t, ms[i], got[i], "interval %d", i)
	}
	return b
}

// TestMetricsSize reports the bytes per interval of the version 1 and 2
// encodings: for a sensor-year at 1 h of each sensorSpec, as one record
// and as the records of blocks of each compaction level's window (2 h
// flushes, then 12 h, 2 d, 8 d, 32 d), and with zstd over each record;
// and for every series of the node capture at 10 s, 60 s and 1 h.
//
//	go test ./internal/block -run TestMetricsSize -v
func TestMetricsSize(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates a year of 1 Hz samples per sensor")
	}
	zw, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedBestCompression))
	if err != nil {
		t.Fatal(err)
	}
	defer zw.Close()
	for _, spec := range sensorSpecs {
		ms := sensorMetrics(spec, hoursPerYear)
		base := ms[0].Interval
		b := roundTrip(t, ms, base)
		z := len(zw.EncodeAll(b, nil))
		t.Logf("sensor %s, 1 Hz, a year at 1 h (%d intervals): v1 %d B (%.2f B/interval); v2 %d B (%.2f B/interval), %.1f KB/sensor-year; v2+zstd %d B",
			spec.name, len(ms), v1Size(ms, base), float64(v1Size(ms, base))/float64(len(ms)), len(b), float64(len(b))/float64(len(ms)), float64(len(b))/1000, z)
		for _, w := range []int{2, 12, 48, 192, 768} {
			var s1, s2, sz int
			for i := 0; i < len(ms); i += w {
				rec := ms[i:min(i+w, len(ms))]
				b := roundTrip(t, rec, rec[0].Interval)
				s1 += v1Size(rec, rec[0].Interval)
				s2 += len(b)
				sz += min(len(b), len(zw.EncodeAll(b, nil)))
			}
			t.Logf("  in blocks of %3d h: v1 %.1f KB, v2 %.1f KB (%.2f B/interval), v2 or zstd, the smaller per record: %.1f KB",
				w, float64(s1)/1000, float64(s2)/1000, float64(s2)/float64(len(ms)), float64(sz)/1000)
		}
	}
	// How the 0.01-resolution sensor-year depends on the signal: the
	// walk moves walk/6 in an hour; walk 0 is a daily cycle plus noise.
	for _, walk := range []float64{0, 0.5, 2} {
		for _, noise := range []float64{0.005, 0.02, 0.05} {
			ms := sensorMetrics(sensorSpec{quantum: 0.01, noise: noise, walk: walk}, hoursPerYear)
			b := AppendMetrics(nil, ms, ms[0].Interval)
			t.Logf("sensor q=0.01 walk=%v noise=%v: %.1f KB/sensor-year (%.2f B/interval)", walk, noise, float64(len(b))/1000, float64(len(b))/float64(len(ms)))
		}
	}
	for _, iv := range []int64{10_000, 60_000, 3600_000} {
		var n, s1, s2, sz int
		for _, ms := range nodeMetrics(t, iv) {
			if len(ms) == 0 {
				continue
			}
			base := ms[0].Interval
			b := roundTrip(t, ms, base)
			n += len(ms)
			s1 += v1Size(ms, base)
			s2 += len(b)
			sz += min(len(b), len(zw.EncodeAll(b, nil)))
		}
		t.Logf("node capture at %d s: %d series-intervals: v1 %.2f B/interval, v2 %.2f B/interval, v2 or zstd %.2f B/interval",
			iv/1000, n, float64(s1)/float64(n), float64(s2)/float64(n), float64(sz)/float64(n))
	}
}

// metricsBenchData returns the benchmarks' inputs: a sensor-year per
// sensorSpec and, when the capture is present, its series at 60 s.
func metricsBenchData(b *testing.B) (names []string, data [][][]IntervalMetrics) {
	for _, spec := range sensorSpecs {
		ms := sensorMetrics(spec, hoursPerYear)
		names = append(names, "sensor-"+spec.name)
		data = append(data, [][]IntervalMetrics{ms})
		if spec.quantum == 0.01 { // as 32-day blocks hold it
			var recs [][]IntervalMetrics
			for i := 0; i < len(ms); i += 768 {
				recs = append(recs, ms[i:min(i+768, len(ms))])
			}
			names = append(names, "sensor-"+spec.name+"-32d")
			data = append(data, recs)
		}
	}
	if _, err := os.Stat(nodeCapture); err == nil {
		names = append(names, "node-60s")
		data = append(data, nodeMetrics(b, 60_000))
	}
	return names, data
}

// BenchmarkMetricsCodec encodes and decodes one series' metrics (a
// sensor-year at 1 h) or every series of the node capture (at 60 s).
//
//	go test ./internal/block -run '^$' -bench MetricsCodec -count 6 | tee new.txt
//	benchstat old.txt new.txt
func BenchmarkMetricsCodec(b *testing.B) {
	names, data := metricsBenchData(b)
	for k, series := range data {
		var encoded [][]byte
		intervals, size := 0, 0
		for _, ms := range series {
			enc := AppendMetrics(nil, ms, 0)
			encoded = append(encoded, enc)
			intervals += len(ms)
			size += len(enc)
		}
		b.Run("data="+names[k]+"/op=decode", func(b *testing.B) {
			var dst []IntervalMetrics
			benchIntervals(b, intervals, func() {
				for _, enc := range encoded {
					var err error
					if dst, _, err = DecodeMetrics(dst[:0], enc, 0); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.ReportMetric(float64(size)/float64(intervals), "B/interval")
		})
		b.Run("data="+names[k]+"/op=decode-v1", func(b *testing.B) {
			var v1 [][]byte
			for _, ms := range series {
				v1 = append(v1, appendMetricsV1(nil, ms, 0))
			}
			benchIntervals(b, intervals, func() {
				for _, enc := range v1 {
					if _, _, err := decodeMetricsV1(enc, 0); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
		b.Run("data="+names[k]+"/op=encode", func(b *testing.B) {
			var dst []byte
			benchIntervals(b, intervals, func() {
				for _, ms := range series {
					dst = AppendMetrics(dst[:0], ms, 0)
				}
			})
		})
	}
}

// benchIntervals runs op, which handles the given number of intervals, in
// b's loop and reports intervals/s and intervals/cpu-s.
func benchIntervals(b *testing.B, intervals int, op func()) {
	b.ReportAllocs()
	cpu0 := cpuSeconds()
	for b.Loop() {
		op()
	}
	b.ReportMetric(float64(intervals)*float64(b.N)/b.Elapsed().Seconds(), "intervals/s")
	b.ReportMetric(float64(intervals)*float64(b.N)/(cpuSeconds()-cpu0), "intervals/cpu-s")
}

// cpuSeconds returns the process's user and system CPU time: on a loaded
// machine a rate per CPU-second says more about the code than one per
// wall-clock second.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return math.NaN()
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// naiveAdd is IntervalMetrics.add as index version 1's writer summed:
// float sums only, the baseline of BenchmarkIntervalMetricsAdd.
func naiveAdd(m *IntervalMetrics, t int64, v float64) {
	if math.IsNaN(v) {
		return
	}
	m.addExtremes(t, v)
	m.Sum += v
	m.SumSq += v * v
}

// BenchmarkIntervalMetricsAdd measures the writer's per-sample cost of
// block metrics: exact decimal sums (add) against the float sums of
// version 1 (naive), on 0.01-resolution values and on values that are
// not decimal.
//
//	go test ./internal/block -run '^$' -bench IntervalMetricsAdd -count 6
func BenchmarkIntervalMetricsAdd(b *testing.B) {
	rng := rand.New(rand.NewPCG(9, 9))
	vals := map[string][]float64{"decimal": make([]float64, 3600), "float": make([]float64, 3600)}
	for i := range 3600 {
		v := 20 + 5*math.Sin(float64(i)/600) + rng.NormFloat64()
		vals["decimal"][i], vals["float"][i] = quantize(v, 0.01), v
	}
	for _, kind := range []string{"decimal", "float"} {
		for _, path := range []string{"exact", "naive"} {
			b.Run("values="+kind+"/sums="+path, func(b *testing.B) {
				vs := vals[kind]
				var m IntervalMetrics
				for b.Loop() {
					m = IntervalMetrics{}
					for i, v := range vs {
						if path == "exact" {
							m.add(int64(i), v)
						} else {
							naiveAdd(&m, int64(i), v)
						}
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(vs)), "ns/sample")
				if m.Count != uint64(len(vs)) {
					b.Fatal(m.Count)
				}
			})
		}
	}
}
