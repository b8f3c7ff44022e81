package graphitebench

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
)

// Prefix is the first path component of every series of the run.
const Prefix = "bench"

// minHosts is the fewest hosts a run has: the panels read host000??.
const minHosts = 100

// metric is one series of every host: its path below the host, and
// whether it is a counter (monotonic) or a gauge.
type metric struct {
	path    string
	counter bool
}

// metrics are the series of one host, node-like: 50 of them.
var metrics = func() (ms []metric) {
	for _, g := range []struct {
		counter         bool
		prefixes, names string
	}{
		{false, "cpu.0 cpu.1 cpu.2 cpu.3", "user system idle iowait"},
		{false, "mem", "used free cached buffers"},
		{false, "load", "1 5 15"},
		{true, "disk.sda disk.sdb", "reads writes read_bytes write_bytes"},
		{true, "net.eth0 net.eth1", "rx_bytes tx_bytes rx_packets tx_packets"},
		{false, "app", "requests errors latency"},
		{false, "proc", "running blocked total"},
		{false, "tcp", "established time_wait listen"},
		{false, "swap", "used free"},
	} {
		for _, p := range strings.Fields(g.prefixes) {
			for _, n := range strings.Fields(g.names) {
				ms = append(ms, metric{p + "." + n, g.counter})
			}
		}
	}
	return ms
}()

// MetricsPerHost is the series of one host.
var MetricsPerHost = len(metrics)

// seriesName is the path of host h's metric m.
func seriesName(h, m int) string { return fmt.Sprintf("%s.host%05d.%s", Prefix, h, metrics[m].path) }

// mix is a 64-bit hash of (h, m, step) (splitmix64's finalizer).
func mix(h, m, step int) uint64 {
	x := uint64(h)*0x9e3779b97f4a7c15 ^ uint64(m)*0xbf58476d1ce4e5b9 ^ uint64(step)*0x94d049bb133111eb
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// value is host h's metric m at step (0 is the first point of the run):
// an integer, so that sums over any number of points are exact in
// float64. A gauge is in [0, 1000); a counter grows by its rate (100 to
// 999 a step) plus or minus less than the rate, so it never decreases.
func value(h, m, step int) int64 {
	r := mix(h, m, step)
	if !metrics[m].counter {
		return int64(r % 1000)
	}
	rate := int64(100 + (h*7+m*13)%900)
	return int64(step)*rate + int64(r%uint64(rate))
}

// dataset is what one peer is sent: Hosts × MetricsPerHost series,
// Steps points each, the last at End (epoch seconds).
type dataset struct {
	Hosts, Steps int
	End          int64
}

func (d dataset) series() int       { return d.Hosts * MetricsPerHost }
func (d dataset) points() int64     { return int64(d.series()) * int64(d.Steps) }
func (d dataset) start() int64      { return d.End - int64(d.Steps-1)*int64(Step.Seconds()) }
func (d dataset) ts(step int) int64 { return d.start() + int64(step)*int64(Step.Seconds()) }

// sum is the sum of every value sent.
func (d dataset) sum() float64 {
	var s int64
	for h := range d.Hosts {
		for m := range metrics {
			for st := range d.Steps {
				s += value(h, m, st)
			}
		}
	}
	return float64(s)
}

// payloads returns the plaintext lines of the dataset split over n
// clients: client c sends the hosts h with h%n == c, step after step
// (every series' point of a step before the next step, as collectors
// report).
func (d dataset) payloads(n int) [][]byte {
	out := make([][]byte, n)
	var wg sync.WaitGroup
	for c := range n {
		wg.Go(func() { out[c] = d.client(c, n) })
	}
	wg.Wait()
	return out
}

// client returns client c of n's lines.
func (d dataset) client(c, n int) []byte {
	names := make([][]byte, 0, (d.Hosts/n+1)*MetricsPerHost)
	var hosts []int
	for h := c; h < d.Hosts; h += n {
		hosts = append(hosts, h)
		for m := range metrics {
			names = append(names, []byte(seriesName(h, m)+" "))
		}
	}
	dst := make([]byte, 0, len(names)*d.Steps*48)
	for st := range d.Steps {
		tail := " " + strconv.FormatInt(d.ts(st), 10) + "\n"
		i := 0
		for _, h := range hosts {
			for m := range metrics {
				dst = append(dst, names[i]...)
				dst = strconv.AppendInt(dst, value(h, m, st), 10)
				dst = append(dst, tail...)
				i++
			}
		}
	}
	return dst
}

// names returns every series path of the dataset.
func (d dataset) names() []string {
	out := make([]string, 0, d.series())
	for h := range d.Hosts {
		for m := range metrics {
			out = append(out, seriesName(h, m))
		}
	}
	return out
}
