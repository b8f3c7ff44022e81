package ingest

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/prometheus/prometheus/prompb"
)

// BenchmarkInfluxIngest posts Telegraf-like bodies (cpu, mem and disk of
// 20 hosts, 50 timestamps: 19,000 samples a request) to the in-process
// handler over a DB with the default WAL (fsync per commit).
//
//	go test -run '^$' -bench BenchmarkInfluxIngest -count 6 ./internal/ingest > new.txt
//	benchstat old.txt new.txt
func BenchmarkInfluxIngest(b *testing.B) {
	for _, gz := range []bool{false, true} {
		b.Run(fmt.Sprintf("gzip=%v", gz), func(b *testing.B) {
			db := openDB(b, nil)
			h := NewInfluxHandler(db, Options{})
			rng := rand.New(rand.NewPCG(1, 2))
			const hosts, steps = 20, 50
			var samples int
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				b.StopTimer()
				body, n := telegrafBody(rng, hosts, steps, int64(i)*steps)
				r := request{url: "/write?precision=s", body: body, gzip: gz}
				b.StartTimer()
				rec := serve(b, h, r)
				if rec.Code != http.StatusNoContent {
					b.Fatalf("status %d: %s", rec.Code, rec.Body.String())
				}
				samples += n
			}
			b.ReportMetric(float64(samples)/b.Elapsed().Seconds(), "samples/s")
		})
	}
}

// telegrafBody returns lines as Telegraf's cpu, mem and disk inputs write
// them, every 10 s from step0, and the number of samples.
func telegrafBody(rng *rand.Rand, hosts, steps int, step0 int64) ([]byte, int) {
	var sb strings.Builder
	n := 0
	for s := range int64(steps) {
		ts := 1_700_000_000 + (step0+s)*10
		for hst := range hosts {
			fmt.Fprintf(&sb, "cpu,cpu=cpu-total,host=host%02d usage_user=%.3f,usage_system=%.3f,usage_idle=%.3f,usage_iowait=%.3f,usage_irq=0,usage_softirq=%.3f,usage_steal=0 %d\n",
				hst, rng.Float64()*30, rng.Float64()*10, 60+rng.Float64()*30, rng.Float64(), rng.Float64()/10, ts)
			fmt.Fprintf(&sb, "mem,host=host%02d total=16777216000i,used=%di,free=%di,available_percent=%.2f,buffered=%di,cached=%di %d\n",
				hst, rng.Int64N(1<<33), rng.Int64N(1<<33), rng.Float64()*100, rng.Int64N(1<<28), rng.Int64N(1<<32), ts)
			fmt.Fprintf(&sb, "disk,device=sda1,fstype=ext4,host=host%02d,mode=rw,path=/ total=500000000000i,free=%di,used=%di,used_percent=%.2f,inodes_total=30000000i,inodes_free=%di %d\n",
				hst, rng.Int64N(1<<38), rng.Int64N(1<<38), rng.Float64()*100, rng.Int64N(30000000), ts)
			n += 7 + 6 + 6
		}
	}
	return []byte(sb.String()), n
}

// BenchmarkInfluxTSBS posts TSBS cpu-only bodies (50 hosts × 10 steps of
// 10 s, 10 tags and 10 fields a line: 5,000 samples, the HTTP bench's
// workload) to the in-process handler from 2×GOMAXPROCS goroutines over a
// DB with the default WAL (fsync'd commits, grouped). The series exist
// before the timer starts, so allocs/sample is the hot path's for known
// series.
//
//	go test -run '^$' -bench BenchmarkInfluxTSBS -benchtime 400x ./internal/ingest
func BenchmarkInfluxTSBS(b *testing.B) {
	const hosts, steps = 50, 10
	db := openDB(b, nil)
	h := NewInfluxHandler(db, Options{})
	bodies := make([][]byte, b.N+1)
	for i := range bodies {
		bodies[i] = tsbsBody(hosts, steps, int64(i)*steps)
	}
	serve(b, h, request{url: "/write?precision=s", body: bodies[0]}) // create the series
	runPosts(b, hosts*steps*10, func(i int64) {
		rec := serve(b, h, request{url: "/write?precision=s", body: bodies[i]})
		if rec.Code != http.StatusNoContent {
			b.Fatalf("status %d: %s", rec.Code, rec.Body.String())
		}
	})
}

// runPosts runs post(1), post(2), … b.N times from 2×GOMAXPROCS
// goroutines, timed, and reports samples/s and, per sample, the process'
// CPU time (the handler, the WAL, the GC: steadier than samples/s on a
// shared machine), allocations and allocated bytes.
func runPosts(b *testing.B, samplesPerPost int, post func(i int64)) {
	var next atomic.Int64
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	cpu0 := cpuTime()
	b.SetParallelism(2)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			post(next.Add(1))
		}
	})
	b.StopTimer()
	cpu := cpuTime() - cpu0
	runtime.ReadMemStats(&ms1)
	samples := float64(b.N * samplesPerPost)
	b.ReportMetric(float64(cpu.Nanoseconds())/samples, "cpu-ns/sample")
	b.ReportMetric(samples/b.Elapsed().Seconds(), "samples/s")
	b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/samples, "allocs/sample")
	b.ReportMetric(float64(ms1.TotalAlloc-ms0.TotalAlloc)/samples, "B/sample")
}

// cpuTime is the user and system CPU time of the process so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// tsbsBody returns TSBS cpu-only lines: every host's 10 fields every 10 s
// from step0.
func tsbsBody(hosts, steps int, step0 int64) []byte {
	var sb strings.Builder
	for s := range int64(steps) {
		ts := 1_700_000_000 + (step0+s)*10
		for h := range hosts {
			fmt.Fprintf(&sb, "cpu,hostname=host_%d,region=eu-west-%d,datacenter=eu-west-%db,rack=%d,os=Ubuntu16.10,arch=x86,team=SF,service=%d,service_version=1,service_environment=production ", h, h%3, h%3, h%97, h%19)
			for f, name := range []string{"usage_user", "usage_system", "usage_idle", "usage_nice", "usage_iowait", "usage_irq", "usage_softirq", "usage_steal", "usage_guest", "usage_guest_nice"} {
				if f > 0 {
					sb.WriteByte(',')
				}
				fmt.Fprintf(&sb, "%s=%di", name, (int64(h)*7+s*3+int64(f)*11)%100)
			}
			fmt.Fprintf(&sb, " %d\n", ts)
		}
	}
	return []byte(sb.String())
}

// BenchmarkRemoteWriteTSBS posts the samples of BenchmarkInfluxTSBS as
// remote write 1.0 requests (one series per host and field, 10 samples
// each) to the in-process handler, as BenchmarkInfluxTSBS does.
//
//	go test -run '^$' -bench BenchmarkRemoteWriteTSBS -benchtime 400x ./internal/ingest
func BenchmarkRemoteWriteTSBS(b *testing.B) {
	const hosts, steps = 50, 10
	db := openDB(b, nil)
	h := NewRemoteWriteHandler(db, Options{}, http.NotFoundHandler())
	bodies := make([][]byte, b.N+1)
	for i := range bodies {
		bodies[i] = tsbsRemoteWrite(b, hosts, steps, int64(i)*steps)
	}
	post := func(body []byte) {
		r := httptest.NewRequest(http.MethodPost, "/api/v1/write", bytes.NewReader(body))
		r.Header.Set("Content-Type", "application/x-protobuf")
		r.Header.Set("Content-Encoding", "snappy")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		if rec.Code != http.StatusNoContent {
			b.Fatalf("status %d: %s", rec.Code, rec.Body.String())
		}
	}
	post(bodies[0]) // create the series
	runPosts(b, hosts*steps*10, func(i int64) { post(bodies[i]) })
}

// tsbsRemoteWrite is tsbsBody as a snappy remote write 1.0 request.
func tsbsRemoteWrite(b *testing.B, hosts, steps int, step0 int64) []byte {
	var req prompb.WriteRequest
	for h := range hosts {
		for f, name := range []string{"usage_user", "usage_system", "usage_idle", "usage_nice", "usage_iowait", "usage_irq", "usage_softirq", "usage_steal", "usage_guest", "usage_guest_nice"} {
			ts := prompb.TimeSeries{Labels: []prompb.Label{
				{Name: "__name__", Value: "cpu_" + name}, {Name: "arch", Value: "x86"}, {Name: "datacenter", Value: fmt.Sprintf("eu-west-%db", h%3)},
				{Name: "hostname", Value: fmt.Sprintf("host_%d", h)}, {Name: "os", Value: "Ubuntu16.10"}, {Name: "rack", Value: fmt.Sprint(h % 97)},
				{Name: "region", Value: fmt.Sprintf("eu-west-%d", h%3)}, {Name: "service", Value: fmt.Sprint(h % 19)}, {Name: "service_environment", Value: "production"},
				{Name: "service_version", Value: "1"}, {Name: "team", Value: "SF"},
			}}
			for s := range int64(steps) {
				ts.Samples = append(ts.Samples, prompb.Sample{Timestamp: (1_700_000_000 + (step0+s)*10) * 1000, Value: float64((int64(h)*7 + s*3 + int64(f)*11) % 100)})
			}
			req.Timeseries = append(req.Timeseries, ts)
		}
	}
	pb, err := req.Marshal()
	if err != nil {
		b.Fatal(err)
	}
	return snappy.Encode(nil, pb)
}

// nodeCapture is the real node_exporter capture of ../shared/data (absent
// in CI: the benchmark skips).
const nodeCapture = "../../../shared/data/node-1s-a.rwpb.zst"

// BenchmarkRemoteWriteNode replays the real node_exporter capture, the
// requests exactly as Prometheus sent them (950 series, about 500 samples
// a request), to the in-process handler over a DB with the default WAL,
// one request at a time in the capture's order (its series would
// otherwise arrive out of order). Past the capture's end it is replayed
// again, shifted by its span. It reports the process' CPU per sample
// beside samples/s.
//
//	go test -run '^$' -bench BenchmarkRemoteWriteNode -benchtime 3000x ./internal/ingest
func BenchmarkRemoteWriteNode(b *testing.B) {
	reqs := readCapture(b)
	span := reqs[len(reqs)-1].maxT - reqs[0].minT + 1000
	db := openDB(b, nil)
	h := NewRemoteWriteHandler(db, Options{}, http.NotFoundHandler())
	bodies := make([][]byte, b.N)
	samples := 0
	for i := range bodies {
		r := reqs[i%len(reqs)]
		shift := int64(i/len(reqs)) * span
		for k := range r.req.Timeseries {
			for j := range r.req.Timeseries[k].Samples {
				r.req.Timeseries[k].Samples[j].Timestamp += shift
			}
		}
		pb, err := r.req.Marshal()
		if err != nil {
			b.Fatal(err)
		}
		for k := range r.req.Timeseries {
			for j := range r.req.Timeseries[k].Samples {
				r.req.Timeseries[k].Samples[j].Timestamp -= shift
			}
		}
		bodies[i] = snappy.Encode(nil, pb)
		samples += r.samples
	}
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	cpu0 := cpuTime()
	b.ResetTimer()
	for i := range b.N {
		r := httptest.NewRequest(http.MethodPost, "/api/v1/write", bytes.NewReader(bodies[i]))
		r.Header.Set("Content-Type", "application/x-protobuf")
		r.Header.Set("Content-Encoding", "snappy")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		if rec.Code != http.StatusNoContent {
			b.Fatalf("request %d: status %d: %s", i, rec.Code, rec.Body.String())
		}
	}
	b.StopTimer()
	cpu := cpuTime() - cpu0
	runtime.ReadMemStats(&ms1)
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(samples), "cpu-ns/sample")
	b.ReportMetric(float64(samples)/b.Elapsed().Seconds(), "samples/s")
	b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/float64(samples), "allocs/sample")
	b.ReportMetric(float64(ms1.TotalAlloc-ms0.TotalAlloc)/float64(samples), "B/sample")
}

// captured is one request of the capture.
type captured struct {
	req        prompb.WriteRequest
	samples    int
	minT, maxT int64
}

// readCapture returns the requests of nodeCapture, or skips b.
func readCapture(b *testing.B) []captured {
	b.Helper()
	f, err := os.Open(nodeCapture)
	if err != nil {
		b.Skipf("no capture: %v", err)
	}
	defer f.Close()
	zr, err := zstd.NewReader(f)
	if err != nil {
		b.Fatal(err)
	}
	defer zr.Close()
	br := bufio.NewReader(zr)
	var out []captured
	for {
		var n [4]byte
		if _, err := io.ReadFull(br, n[:]); err == io.EOF {
			return out
		} else if err != nil {
			b.Fatal(err)
		}
		buf := make([]byte, binary.BigEndian.Uint32(n[:]))
		if _, err := io.ReadFull(br, buf); err != nil {
			b.Fatal(err)
		}
		c := captured{minT: math.MaxInt64, maxT: math.MinInt64}
		if err := c.req.Unmarshal(buf); err != nil {
			b.Fatal(err)
		}
		for _, ts := range c.req.Timeseries {
			c.samples += len(ts.Samples)
			for _, s := range ts.Samples {
				c.minT, c.maxT = min(c.minT, s.Timestamp), max(c.maxT, s.Timestamp)
			}
		}
		out = append(out, c)
	}
}
