package workload

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
)

func TestNodeSeries(t *testing.T) {
	w := mustNew(t, "node", Spec{Targets: 12, Interval: 15 * time.Second, Duration: time.Minute, Seed: 1})
	names := map[string]bool{}
	for i := range w.NumTargets() {
		ls := w.Series(i)
		if len(ls) < 450 || len(ls) > 600 {
			t.Fatalf("target %d: %d series, want about 500", i, len(ls))
		}
		if len(ls) != len(w.Series(0)) {
			t.Errorf("target %d: %d series, target 0 has %d", i, len(ls), len(w.Series(0)))
		}
		seen := map[string]bool{}
		instance := fmt.Sprintf("host-%03d:9100", i)
		for _, l := range ls {
			if l.Get("job") != "node" || l.Get("instance") != instance {
				t.Fatalf("target %d: series %s, want job node and instance %s", i, l, instance)
			}
			if seen[l.String()] {
				t.Fatalf("target %d: series %s twice", i, l)
			}
			seen[l.String()] = true
			names[l.Get(labels.MetricName)] = true
		}
		checkSeries(t, "node", i, ls)
	}
	for _, want := range []string{
		"node_cpu_seconds_total", "node_network_receive_bytes_total", "node_network_transmit_packets_total",
		"node_disk_reads_completed_total", "node_disk_written_bytes_total", "node_disk_io_time_seconds_total",
		"node_memory_MemAvailable_bytes", "node_filesystem_avail_bytes", "node_filesystem_readonly",
		"node_load1", "node_load5", "node_load15", "node_procs_running", "node_context_switches_total",
		"node_boot_time_seconds", "node_time_seconds", "node_scrape_collector_duration_seconds",
		"node_scrape_collector_success", "go_gc_duration_seconds", "go_goroutines", "process_cpu_seconds_total",
		"http_request_duration_seconds_bucket", "http_request_duration_seconds_sum", "up",
	} {
		if !names[want] {
			t.Errorf("no %s series", want)
		}
	}
	// 8 cpus × 8 modes.
	cpus := 0
	for _, l := range w.Series(0) {
		if l.Get(labels.MetricName) == "node_cpu_seconds_total" {
			cpus++
		}
	}
	if cpus != 64 {
		t.Errorf("%d node_cpu_seconds_total series, want 64", cpus)
	}
	t.Logf("%d series per node target", len(w.Series(0)))
}

// isCounter reports whether a series must not decrease but at reboots.
func isCounter(l labels.Labels) bool {
	n := l.Get(labels.MetricName)
	for _, s := range []string{"_total", "_bucket", "_count", "_sum"} {
		if strings.HasSuffix(n, s) {
			return true
		}
	}
	return false
}

// TestNodeCounters checks invariant 7 with frequent reboots.
func TestNodeCounters(t *testing.T) {
	for _, iv := range []time.Duration{time.Second, 15 * time.Second, 60 * time.Second} {
		c, err := newClock(Spec{Targets: 2, Interval: iv, Duration: 600 * iv, Seed: 11}, defaultInterval, true)
		if err != nil {
			t.Fatal(err)
		}
		w := newNode("node", c, 100*iv) // ~6 reboots per target
		reboots := 0
		for i := range w.NumTargets() {
			ls := w.Series(i)
			rows := collect(t, w, i)
			boot := column(rows, seriesIndex(t, ls, "node_boot_time_seconds"))
			rebooted := make([]bool, len(rows))
			for k := 1; k < len(rows); k++ {
				if boot[k] != boot[k-1] {
					rebooted[k] = true
					reboots++
					if boot[k] < boot[k-1] || boot[k] > float64(rows[k].T)/1000 {
						t.Errorf("%v target %d row %d: boot time %v after %v, at %d", iv, i, k, boot[k], boot[k-1], rows[k].T)
					}
				}
			}
			for j, l := range ls {
				if !isCounter(l) {
					continue
				}
				v := column(rows, j)
				for k := 1; k < len(v); k++ {
					if v[k] < v[k-1] && !rebooted[k] {
						t.Fatalf("%v target %d: counter %s fell from %v to %v at row %d without a reboot", iv, i, l, v[k-1], v[k], k)
					}
				}
			}
			// At a reboot busy counters restart near 0.
			idle := column(rows, seriesIndex(t, ls, "node_cpu_seconds_total", "cpu", "0", "mode", "idle"))
			for k := range rows {
				if rebooted[k] && idle[k] > float64(rows[k].T-rows[k-1].T)/1000+0.01 {
					t.Errorf("%v target %d row %d: cpu idle %v s just after a reboot", iv, i, k, idle[k])
				}
			}
			checkBuckets(t, ls, rows)
		}
		if reboots == 0 {
			t.Errorf("%v: no reboot in %d targets", iv, w.NumTargets())
		}
	}
	// With the default rate, a reboot is rare.
	w := mustNew(t, "node", Spec{Targets: 10, Interval: 30 * time.Second, Duration: 2 * time.Hour, Seed: 1})
	changes := 0
	for i := range w.NumTargets() {
		boot := column(collect(t, w, i), seriesIndex(t, w.Series(i), "node_boot_time_seconds"))
		for k := 1; k < len(boot); k++ {
			if boot[k] != boot[k-1] {
				changes++
			}
		}
	}
	if changes > 2 {
		t.Errorf("%d reboots in 20 target-hours, want about one per 100 h", changes)
	}
}

// checkBuckets checks that histogram buckets are cumulative, and +Inf is
// the count.
func checkBuckets(t *testing.T, ls []labels.Labels, rows []Row) {
	t.Helper()
	var les []int
	var bounds []float64
	for j, l := range ls {
		if l.Get(labels.MetricName) == "http_request_duration_seconds_bucket" {
			les = append(les, j)
			bounds = append(bounds, parseLe(l.Get("le")))
		}
	}
	count := seriesIndex(t, ls, "http_request_duration_seconds_count")
	inf := seriesIndex(t, ls, "http_request_duration_seconds_bucket", "le", "+Inf")
	for k, r := range rows {
		if r.Values[inf] != r.Values[count] {
			t.Fatalf("row %d: +Inf bucket %v, count %v", k, r.Values[inf], r.Values[count])
		}
		for x, a := range les {
			for y, b := range les {
				if bounds[x] < bounds[y] && r.Values[a] > r.Values[b] {
					t.Fatalf("row %d: bucket %s holds %v, %s %v", k, ls[a], r.Values[a], ls[b], r.Values[b])
				}
			}
		}
	}
}

func parseLe(s string) float64 {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		panic(err)
	}
	return f
}

// TestNodeCPU checks invariant 8.
func TestNodeCPU(t *testing.T) {
	for _, iv := range []time.Duration{time.Second, 5 * time.Second, 15 * time.Second, 30 * time.Second} {
		w := mustNew(t, "node", Spec{Targets: 2, Interval: iv, Duration: 200 * iv, Jitter: iv / 3, Seed: 3})
		for i := range w.NumTargets() {
			ls := w.Series(i)
			rows := collect(t, w, i)
			boot := column(rows, seriesIndex(t, ls, "node_boot_time_seconds"))
			for cpu := range nodeCPUs {
				var modes [][]float64
				for _, m := range cpuModes {
					modes = append(modes, column(rows, seriesIndex(t, ls, "node_cpu_seconds_total", "cpu", fmt.Sprint(cpu), "mode", m)))
				}
				var busy float64
				for k := 1; k < len(rows); k++ {
					if boot[k] != boot[k-1] {
						continue
					}
					dt := float64(rows[k].T-rows[k-1].T) / 1000
					var sum float64
					for m, v := range modes {
						d := v[k] - v[k-1]
						if got := math.Round(v[k]*100) / 100; got != v[k] {
							t.Fatalf("%v cpu %d mode %s: %v has more than 2 decimals", iv, cpu, cpuModes[m], v[k])
						}
						sum += d
						if m != 0 {
							busy += d
						}
					}
					if math.Abs(sum-dt) > 0.08+1e-6 {
						t.Fatalf("%v target %d cpu %d row %d: modes advanced %.4f s in %.3f s", iv, i, cpu, k, sum, dt)
					}
				}
				if busy <= 0 {
					t.Errorf("%v target %d cpu %d: never busy", iv, i, cpu)
				}
			}
		}
	}
}

// TestNodeValues checks the shape of gauges and constants.
func TestNodeValues(t *testing.T) {
	w := mustNew(t, "node", Spec{Targets: 4, Interval: 15 * time.Second, Duration: 2 * time.Hour, Seed: 9})
	for i := range w.NumTargets() {
		ls := w.Series(i)
		rows := collect(t, w, i)
		constant, changing := 0, 0
		for j, l := range ls {
			name := l.Get(labels.MetricName)
			v := column(rows, j)
			check := func(ok func(float64) bool, what string) {
				t.Helper()
				for k, x := range v {
					if !ok(x) {
						t.Fatalf("target %d: %s row %d is %v, want %s", i, l, k, x, what)
					}
				}
			}
			switch {
			case strings.HasPrefix(name, "node_memory_") && strings.HasSuffix(name, "_bytes"):
				// /proc/meminfo counts kB; what changes, changes by pages.
				check(func(x float64) bool { return x >= 0 && math.Mod(x, 1024) == 0 }, "a multiple of 1024")
				if v[0] != v[len(v)-1] {
					check(func(x float64) bool { return math.Mod(x, 4096) == 0 }, "a multiple of 4096")
				}
			case strings.HasPrefix(name, "node_filesystem_") && strings.HasSuffix(name, "_bytes"):
				check(func(x float64) bool { return x >= 0 && math.Mod(x, 4096) == 0 }, "a multiple of 4096")
			case strings.HasPrefix(name, "node_load"):
				check(func(x float64) bool { return x >= 0 && math.Round(x*100)/100 == x }, "2 decimals")
			case name == "node_procs_running":
				check(func(x float64) bool { return x >= 0 && x <= 10 && x == math.Trunc(x) }, "an integer in [0, 10]")
			case name == "node_filesystem_readonly", name == "node_filesystem_device_error":
				check(func(x float64) bool { return x == 0 }, "0")
			case name == "node_scrape_collector_success", name == "up":
				check(func(x float64) bool { return x == 1 }, "1")
			case strings.HasPrefix(name, "node_network_") && strings.HasSuffix(name, "_total"),
				strings.HasPrefix(name, "node_disk_") && strings.HasSuffix(name, "bytes_total"):
				check(func(x float64) bool { return x >= 0 && x == math.Trunc(x) }, "an integer")
			case name == "node_time_seconds":
				for k, x := range v {
					if d := x - float64(rows[k].T)/1000; d < 0 || d > 0.01 {
						t.Fatalf("target %d: node_time_seconds %v at T %d", i, x, rows[k].T)
					}
				}
			}
			same := true
			for k := 1; k < len(v); k++ {
				same = same && v[k] == v[0]
			}
			if same {
				constant++
			} else {
				changing++
			}
			if name == "node_filesystem_size_bytes" || name == "node_memory_MemTotal_bytes" || name == "node_boot_time_seconds" {
				if !same {
					t.Errorf("target %d: %s changes", i, l)
				}
			}
		}
		// The real capture has 65% constant series at 1 s; a busier
		// target at 15 s has fewer, but many.
		if frac := float64(constant) / float64(len(ls)); frac < 0.25 || frac > 0.7 {
			t.Errorf("target %d: %d constant series of %d", i, constant, len(ls))
		}
	}
}

// TestRandom checks invariant 9 and the values of "random".
func TestRandom(t *testing.T) {
	spec := Spec{Targets: 3, Interval: 5 * time.Second, Duration: 15 * time.Minute, Seed: 21}
	node, random := mustNew(t, "node", spec), mustNew(t, "random", spec)
	if random.Name() != "random" || random.Samples() != node.Samples() ||
		random.MinTime() != node.MinTime() || random.MaxTime() != node.MaxTime() {
		t.Fatalf("random and node differ: %s %d %d %d, %s %d %d %d", random.Name(), random.Samples(), random.MinTime(), random.MaxTime(),
			node.Name(), node.Samples(), node.MinTime(), node.MaxTime())
	}
	for i := range spec.Targets {
		ls := random.Series(i)
		if len(ls) != len(node.Series(i)) {
			t.Fatalf("target %d: %d random series, %d node", i, len(ls), len(node.Series(i)))
		}
		for j := range ls {
			if !labels.Equal(ls[j], node.Series(i)[j]) {
				t.Fatalf("target %d: series %d is %s in random, %s in node", i, j, ls[j], node.Series(i)[j])
			}
		}
		rr, nr := collect(t, random, i), collect(t, node, i)
		if len(rr) != len(nr) {
			t.Fatalf("target %d: %d random rows, %d node", i, len(rr), len(nr))
		}
		var sum float64
		var n int
		for k := range rr {
			if rr[k].T != nr[k].T {
				t.Fatalf("target %d row %d: T %d in random, %d in node", i, k, rr[k].T, nr[k].T)
			}
			for _, v := range rr[k].Values {
				if v < 0 || v >= 1 {
					t.Fatalf("target %d row %d: random value %v", i, k, v)
				}
				sum += v
				n++
			}
		}
		if mean := sum / float64(n); math.Abs(mean-0.5) > 0.01 {
			t.Errorf("target %d: mean random value %v", i, mean)
		}
	}
}
