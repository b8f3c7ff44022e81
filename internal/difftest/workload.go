package difftest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
)

// WorkloadConfig describes a workload. Generate is a pure function of it.
type WorkloadConfig struct {
	Seed        int64
	NodeTargets int // job="node" targets, instance="host-NN:9100", ~145+8*CPUs series each
	AppTargets  int // job="app" targets, instance="app-NN:8080", ~160 series each
	CPUs        int // CPUs per node: 8 node_cpu_seconds_total series each

	Start    int64 // ms timestamp of the first scrape tick
	Span     int64 // ms covered by the scrape ticks
	Interval int64 // ms between scrapes of one target
	Jitter   int64 // each row's timestamp is tick + phase(target) + [0, Jitter] ms

	// OOOWindow is the out-of-order window (ms) both engines are opened with.
	OOOWindow int64
	// LateFraction of rows are delivered late: after the rows of 2..MaxLate
	// later ticks. (MaxLate+1)*Interval+Jitter must stay below OOOWindow.
	LateFraction float64
	MaxLate      int

	TooOld    int // samples older than maxT-OOOWindow, written last, must be rejected
	Rollbacks int // batches that are appended and then rolled back

	// History adds writes of any age (Aerie's backfill; prometheus/tsdb
	// needs an out-of-order window as long, see HistoryOOOWindow): rows of
	// the HistoryDays days before Start, every HistoryInterval, written
	// target after target (each target's days in shuffled order, each day
	// in time order), interleaved with the current rows. HistoryDups of
	// those rows are sent again later with the same values (a re-import),
	// which every engine must take as a no-op. TooOld must be 0.
	HistoryDays     int
	HistoryInterval int64
	HistoryDups     float64
}

// HistoryOOOWindow is the out-of-order window prometheus/tsdb needs to
// take a history workload: one year.
const HistoryOOOWindow = int64(365 * 24 * time.Hour / time.Millisecond)

// History is Full with a third of its targets, two days of history per
// target (every 15 min, 5 % re-sent) and no too-old samples: ~1.5 M
// samples, a third of them history.
func History() WorkloadConfig {
	c := withHistory(Full(), 2, 15*60_000)
	c.NodeTargets, c.AppTargets = 20, 3
	return c
}

// SmallHistory is Small with one day of history every 30 min.
func SmallHistory() WorkloadConfig { return withHistory(Small(), 1, 30*60_000) }

// withHistory is c with days of history every interval ms, 5 % re-sent,
// and no too-old samples.
func withHistory(c WorkloadConfig, days int, interval int64) WorkloadConfig {
	c.TooOld = 0
	c.HistoryDays = days
	c.HistoryInterval = interval
	c.HistoryDups = 0.05
	return c
}

// Full is the CI-size workload: 66 groups, ~11,000 series, 4 h at 60 s
// (spans 3 partitions of 2 h), ~2.4 M samples.
func Full() WorkloadConfig {
	return WorkloadConfig{
		Seed:         1,
		NodeTargets:  60,
		AppTargets:   6,
		CPUs:         4,
		Start:        1_700_000_000_000, // not aligned to 2 h
		Span:         int64(4 * time.Hour / time.Millisecond),
		Interval:     60_000,
		Jitter:       100,
		OOOWindow:    int64(30 * time.Minute / time.Millisecond),
		LateFraction: 0.02,
		MaxLate:      10,
		TooOld:       120,
		Rollbacks:    12,
	}
}

// Small is a quick workload: 5 groups, ~740 series, 1 h.
func Small() WorkloadConfig {
	c := Full()
	c.NodeTargets = 4
	c.AppTargets = 1
	c.CPUs = 1
	c.Span = int64(time.Hour / time.Millisecond)
	c.LateFraction = 0.05
	c.TooOld = 20
	c.Rollbacks = 3
	return c
}

// Batch is one scrape of one target: every sample has timestamp T.
// It is written with one Appender and one Commit (or Rollback).
type Batch struct {
	Group    int     // index into Workload.Groups
	Tick     int     // scrape tick the row belongs to (-1 for too-old batches)
	T        int64   // timestamp of every sample
	Refs     []int32 // indexes into Workload.Series
	Values   []float64
	Late     bool // delivered after rows of later ticks (out of order)
	TooOld   bool // older than the OOO window at write time: must be rejected
	Rollback bool // appended then rolled back: must leave no trace
	History  bool // a row of the days before Start (backfill)
	Dup      bool // an earlier batch sent again with the same values: a no-op
	Off      int  // index of the batch's first sample in the workload's sample order
}

// Workload is a deterministic set of batches (see Generate).
type Workload struct {
	Config WorkloadConfig
	Groups []labels.Labels // {job, instance} of each target
	Series []labels.Labels
	// SeriesGroup[i] is the group of Series[i].
	SeriesGroup []int
	// Batches in delivery order.
	Batches []Batch

	NumSamples int   // all samples in Batches (including too-old and rolled back)
	Accepted   int   // samples expected to be stored
	Rows       int   // batches expected to be stored (not too-old, not rolled back)
	MinT, MaxT int64 // of the samples expected to be stored
	Ticks      int

	names      []string                       // sorted label names (incl. __name__)
	values     map[string][]string            // label name -> sorted values
	metricLbls map[string]map[string][]string // metric -> label name -> sorted values
	metrics    []string                       // sorted metric names
	lateTimes  []int64                        // T of a few late batches
}

type valueKind uint8

const (
	kCounter    valueKind = iota // float increments, random resets
	kCounterInt                  // integer increments, random resets
	kGauge                       // random walk, may go negative
	kGaugePos                    // random walk reflected at 0
	kConst                       // constant
	kNaNGauge                    // positive gauge with occasional NaN
	kNaN                         // always NaN
	kInf                         // always +Inf
	kNegInf                      // always -Inf
	kMixed                       // NaN, ±Inf, ±0, extremes, normal values
	kHist                        // bucket/sum/count of a histogram family
	kUp                          // always 1
)

type histFamily struct {
	les    []float64
	counts []float64 // cumulative per bucket
	sum    float64
	count  float64
	mean   float64
}

type seriesDef struct {
	lset  labels.Labels
	kind  valueKind
	v     float64
	scale float64

	every, off int  // present when tick%every == off
	from, to   int  // present for ticks in [from, to); to == -1: until target ends
	staleAtTo  bool // write a stale marker at tick `to`
	flap       bool // randomly disappears (with a stale marker) and comes back

	hist    *histFamily
	histIdx int // >=0 bucket index, -1 sum, -2 count

	// generation state
	present   bool
	live      bool // last written sample was not a stale marker
	lastWrote bool
}

type target struct {
	job, instance string
	lset          labels.Labels
	first, last   int   // scraped for ticks in [first, last)
	phase         int64 // ms offset inside the interval
	restart       int   // tick of a process restart (-1: none)
	series        []*seriesDef
	hists         []*histFamily
	rng           *rand.Rand
}

var httpBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, math.Inf(1)}

func fmtLe(le float64) string {
	if math.IsInf(le, 1) {
		return "+Inf"
	}
	return strconv.FormatFloat(le, 'g', -1, 64)
}

func (tg *target) add(kind valueKind, name string, kv ...string) *seriesDef {
	b := labels.NewScratchBuilder(len(kv)/2 + 3)
	b.Add(labels.MetricName, name)
	b.Add("job", tg.job)
	b.Add("instance", tg.instance)
	for i := 0; i < len(kv); i += 2 {
		b.Add(kv[i], kv[i+1])
	}
	b.Sort()
	s := &seriesDef{lset: b.Labels(), kind: kind, every: 1, to: -1}
	r := tg.rng
	switch kind {
	case kCounter:
		s.v = math.Round(r.Float64()*1e6) / 100
		s.scale = 10 * r.Float64()
	case kCounterInt:
		s.v = float64(r.IntN(1_000_000))
		s.scale = float64(1 + r.IntN(5000))
	case kGauge, kGaugePos, kNaNGauge:
		s.v = r.Float64() * 100
		s.scale = 1 + r.Float64()*5
	case kConst:
		s.v = 1
	}
	tg.series = append(tg.series, s)
	return s
}

func (tg *target) gaugeAt(name string, v, scale float64, kv ...string) *seriesDef {
	s := tg.add(kGaugePos, name, kv...)
	s.v, s.scale = v, scale
	return s
}

func (tg *target) constant(name string, v float64, kv ...string) *seriesDef {
	s := tg.add(kConst, name, kv...)
	s.v = v
	return s
}

func (tg *target) histogram(name string, kv ...string) {
	h := &histFamily{les: httpBuckets, counts: make([]float64, len(httpBuckets)), mean: 0.02 + tg.rng.Float64()*0.5}
	tg.hists = append(tg.hists, h)
	for i, le := range h.les {
		s := tg.add(kHist, name+"_bucket", append(slices.Clone(kv), "le", fmtLe(le))...)
		s.hist, s.histIdx = h, i
	}
	s := tg.add(kHist, name+"_sum", kv...)
	s.hist, s.histIdx = h, -1
	s = tg.add(kHist, name+"_count", kv...)
	s.hist, s.histIdx = h, -2
}

func (tg *target) scrapeMeta(ticks int) {
	tg.add(kUp, "up")
	tg.add(kGaugePos, "scrape_duration_seconds").scale = 0.01
	tg.add(kGaugePos, "scrape_samples_scraped").scale = 0.5
	s := tg.add(kGaugePos, "scrape_series_added")
	s.scale, s.every, s.off = 1, 3, 1 // sparse, no stale markers
}

func (tg *target) buildNode(cpus, ticks int) {
	mid := ticks / 2
	modes := []string{"idle", "iowait", "irq", "nice", "softirq", "steal", "system", "user"}
	for c := range cpus {
		for _, m := range modes {
			tg.add(kCounter, "node_cpu_seconds_total", "cpu", strconv.Itoa(c), "mode", m)
		}
	}
	for _, dev := range []string{"eth0", "eth1", "lo"} {
		tg.add(kCounterInt, "node_network_receive_bytes_total", "device", dev)
		tg.add(kCounterInt, "node_network_transmit_bytes_total", "device", dev)
		tg.add(kCounterInt, "node_network_receive_packets_total", "device", dev)
		tg.add(kCounterInt, "node_network_transmit_packets_total", "device", dev)
		s := tg.add(kCounterInt, "node_network_receive_errs_total", "device", dev)
		s.every, s.off = 2, 0 // only every 2nd scrape
		tg.constant("node_network_up", 1, "device", dev)
	}
	// container interfaces: two stop half-way (with stale markers), two start half-way.
	for i := range 2 {
		s := tg.add(kCounterInt, "node_network_receive_bytes_total", "device", fmt.Sprintf("veth%x", tg.rng.Uint32()))
		s.to, s.staleAtTo = mid+i, true
		s = tg.add(kCounterInt, "node_network_receive_bytes_total", "device", fmt.Sprintf("veth%x", tg.rng.Uint32()))
		s.from = mid + i
	}
	memTotal := float64(8<<30) * float64(1+tg.rng.IntN(8))
	tg.constant("node_memory_MemTotal_bytes", memTotal)
	for _, m := range []string{"MemFree", "MemAvailable", "Buffers", "Cached", "Active", "Inactive", "Dirty", "Shmem", "Slab"} {
		tg.gaugeAt("node_memory_"+m+"_bytes", memTotal*tg.rng.Float64()*0.6, memTotal/1000)
	}
	tg.constant("node_memory_SwapTotal_bytes", 2<<30)
	tg.gaugeAt("node_memory_SwapFree_bytes", 2<<30, 1<<20)
	for _, fs := range [][3]string{{"/dev/sda1", "/", "ext4"}, {"/dev/sda2", "/boot", "vfat"}, {"/dev/sdb1", "/var", "xfs"}, {"tmpfs", "/run", "tmpfs"}} {
		kv := []string{"device", fs[0], "mountpoint", fs[1], "fstype", fs[2]}
		size := float64(uint64(1+tg.rng.IntN(500)) << 30)
		tg.constant("node_filesystem_size_bytes", size, kv...)
		tg.gaugeAt("node_filesystem_avail_bytes", size*tg.rng.Float64(), size/5000, kv...)
		tg.gaugeAt("node_filesystem_free_bytes", size*tg.rng.Float64(), size/5000, kv...)
		tg.constant("node_filesystem_files", float64(1+tg.rng.IntN(1<<20)), kv...)
		tg.gaugeAt("node_filesystem_files_free", float64(tg.rng.IntN(1<<20)), 50, kv...)
		tg.constant("node_filesystem_readonly", 0, kv...)
	}
	for _, n := range []string{"node_load1", "node_load5", "node_load15"} {
		tg.gaugeAt(n, tg.rng.Float64()*4, 0.3)
	}
	for _, dev := range []string{"sda", "sdb", "nvme0n1"} {
		tg.add(kCounterInt, "node_disk_read_bytes_total", "device", dev)
		tg.add(kCounterInt, "node_disk_written_bytes_total", "device", dev)
		tg.add(kCounter, "node_disk_io_time_seconds_total", "device", dev)
		tg.add(kCounterInt, "node_disk_reads_completed_total", "device", dev)
		tg.add(kCounterInt, "node_disk_writes_completed_total", "device", dev)
	}
	tg.histogram("http_request_duration_seconds", "handler", "/metrics")
	tg.add(kCounterInt, "promhttp_metric_handler_requests_total", "code", "200")
	s := tg.add(kCounterInt, "promhttp_metric_handler_requests_total", "code", "500")
	s.every, s.off = 3, 2
	tg.add(kCounterInt, "node_context_switches_total")
	tg.add(kCounterInt, "node_intr_total")
	tg.add(kCounterInt, "node_forks_total")
	tg.constant("node_boot_time_seconds", float64(tg.rng.IntN(1_000_000)+1_699_000_000))
	tg.add(kGaugePos, "node_time_seconds")
	tg.gaugeAt("node_procs_running", 3, 1)
	tg.gaugeAt("node_procs_blocked", 0, 0.5)
	tg.gaugeAt("node_entropy_available_bits", 3000, 20)
	for i := range 4 {
		tg.add(kNaNGauge, "node_hwmon_temp_celsius", "chip", "platform_coretemp_0", "sensor", fmt.Sprintf("temp%d", i+1))
	}
	for _, c := range []string{"cpu", "diskstats", "filesystem", "meminfo", "netdev", "textfile"} {
		tg.gaugeAt("node_scrape_collector_duration_seconds", 0.01, 0.002, "collector", c)
		tg.constant("node_scrape_collector_success", 1, "collector", c)
	}
	s = tg.add(kGaugePos, "node_textfile_scrape_error")
	s.every, s.off = 3, 0
	for _, k := range []string{"nan", "inf", "neginf", "mixed"} {
		kind := map[string]valueKind{"nan": kNaN, "inf": kInf, "neginf": kNegInf, "mixed": kMixed}[k]
		tg.add(kind, "node_weird_value", "kind", k)
	}
	s = tg.constant("node_systemd_unit_state", 1, "name", "backup.service", "state", "active")
	s.to, s.staleAtTo = mid, true
	s = tg.constant("node_systemd_unit_state", 1, "name", "deploy.service", "state", "active")
	s.from = mid
	s = tg.constant("node_systemd_unit_state", 1, "name", "flappy.service", "state", "active")
	s.flap = true
	tg.constant("node_uname_info", 1, "nodename", tg.instance[:len(tg.instance)-5], "release", "6.1.0-"+strconv.Itoa(10+tg.rng.IntN(5)), "machine", "x86_64")
	tg.scrapeMeta(ticks)
	for _, n := range []string{"pgfault", "pgmajfault", "oom_kill"} {
		tg.add(kCounterInt, "node_vmstat_"+n)
	}
	tg.gaugeAt("node_sockstat_TCP_inuse", 100, 5)
	tg.gaugeAt("node_netstat_Tcp_CurrEstab", 80, 5)
	tg.gaugeAt("node_nf_conntrack_entries", 2000, 50)
	tg.gaugeAt("node_filefd_allocated", 5000, 20)
	s = tg.add(kGauge, "node_timex_offset_seconds")
	s.v, s.scale = 0, 0.0003
	tg.constant("node_timex_sync_status", 1)
}

func (tg *target) buildApp(ticks int) {
	mid := ticks / 2
	handlers := []string{"/api/v1/query", "/api/v1/write", "/healthz", "/login", "/"}
	for _, h := range handlers {
		for _, m := range []string{"GET", "POST"} {
			for _, c := range []string{"200", "404", "500"} {
				s := tg.add(kCounterInt, "http_requests_total", "handler", h, "method", m, "code", c)
				if c == "500" {
					s.every, s.off = 2, 1
				}
			}
		}
	}
	for _, h := range handlers {
		tg.histogram("http_request_duration_seconds", "handler", h)
	}
	tg.add(kCounter, "process_cpu_seconds_total")
	tg.gaugeAt("process_resident_memory_bytes", 3e8, 1e6)
	tg.gaugeAt("process_open_fds", 40, 2)
	tg.constant("process_max_fds", 1<<20)
	tg.constant("process_start_time_seconds", float64(1_699_990_000+tg.rng.IntN(5000)))
	tg.gaugeAt("go_goroutines", 200, 10)
	tg.gaugeAt("go_threads", 20, 1)
	for _, q := range []string{"0", "0.25", "0.5", "0.75", "1"} {
		tg.gaugeAt("go_gc_duration_seconds", 0.001, 0.0001, "quantile", q)
	}
	tg.add(kCounter, "go_gc_duration_seconds_sum")
	tg.add(kCounterInt, "go_gc_duration_seconds_count")
	for _, m := range []string{"alloc", "heap_alloc", "heap_idle", "heap_inuse", "heap_released", "heap_sys", "stack_inuse", "sys", "next_gc", "mspan_inuse"} {
		tg.gaugeAt("go_memstats_"+m+"_bytes", 1e8*tg.rng.Float64(), 1e5)
	}
	for _, q := range []string{"ingest", "compact", "email", "billing", "export"} {
		tg.gaugeAt("app_queue_length", 10, 3, "queue", q)
		tg.add(kCounterInt, "app_jobs_processed_total", "queue", q, "status", "ok")
		s := tg.add(kCounterInt, "app_jobs_processed_total", "queue", q, "status", "failed")
		s.every, s.off = 3, 0
	}
	for _, svc := range []string{"auth", "db", "cache", "search"} {
		tg.add(kCounterInt, "rpc_client_requests_total", "service", svc, "code", "OK")
		tg.add(kCounterInt, "rpc_client_requests_total", "service", svc, "code", "Unavailable")
	}
	for _, c := range []string{"users", "sessions", "pages"} {
		tg.add(kCounterInt, "app_cache_hits_total", "cache", c)
		tg.add(kCounterInt, "app_cache_misses_total", "cache", c)
	}
	// A deploy half-way: the old version's info series goes stale, a new one appears.
	s := tg.constant("app_build_info", 1, "version", "1.4.2", "goversion", "go1.22.1")
	s.to, s.staleAtTo = mid, true
	s = tg.constant("app_build_info", 1, "version", "1.5.0", "goversion", "go1.23.0")
	s.from = mid
	for _, k := range []string{"nan", "inf", "neginf", "mixed"} {
		kind := map[string]valueKind{"nan": kNaN, "inf": kInf, "neginf": kNegInf, "mixed": kMixed}[k]
		tg.add(kind, "app_weird_value", "kind", k)
	}
	s = tg.add(kGaugePos, "app_sessions_active", "region", "eu")
	s.flap = true
	tg.scrapeMeta(ticks)
}

var mixedValues = []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, math.Copysign(0, -1), math.MaxFloat64, -math.MaxFloat64, math.SmallestNonzeroFloat64, 1, -1}

// step advances s to the next tick; it returns the value to write.
func (s *seriesDef) step(r *rand.Rand) float64 {
	switch s.kind {
	case kCounter:
		if r.IntN(500) == 0 {
			s.v = 0
		}
		s.v += s.scale * r.Float64()
		return s.v
	case kCounterInt:
		if r.IntN(500) == 0 {
			s.v = 0
		}
		s.v += float64(r.IntN(int(s.scale) + 1))
		return s.v
	case kGauge:
		s.v += s.scale * r.NormFloat64()
		return s.v
	case kGaugePos:
		s.v = math.Abs(s.v + s.scale*r.NormFloat64())
		return s.v
	case kNaNGauge:
		s.v = math.Abs(s.v + s.scale*r.NormFloat64())
		if r.IntN(20) == 0 {
			return math.NaN()
		}
		return s.v
	case kConst:
		return s.v
	case kUp:
		return 1
	case kNaN:
		return math.NaN()
	case kInf:
		return math.Inf(1)
	case kNegInf:
		return math.Inf(-1)
	case kMixed:
		if r.IntN(2) == 0 {
			return r.NormFloat64() * 1000
		}
		return mixedValues[r.IntN(len(mixedValues))]
	case kHist:
		h := s.hist
		switch s.histIdx {
		case -1:
			return h.sum
		case -2:
			return h.count
		}
		return h.counts[s.histIdx]
	}
	panic("unknown kind")
}

func (h *histFamily) step(r *rand.Rand) {
	n := r.IntN(40)
	for range n {
		obs := r.ExpFloat64() * h.mean
		h.sum += obs
		h.count++
		for i, le := range h.les {
			if obs <= le {
				h.counts[i]++
			}
		}
	}
}

func (h *histFamily) reset() {
	clear(h.counts)
	h.sum, h.count = 0, 0
}

// Generate builds the workload described by cfg. It is deterministic: the
// same config gives the same workload, bit for bit.
func Generate(cfg WorkloadConfig) *Workload {
	if cfg.Interval <= 0 || cfg.Span < cfg.Interval || cfg.CPUs < 1 || cfg.NodeTargets+cfg.AppTargets < 1 {
		panic(fmt.Sprintf("difftest: bad workload config %+v", cfg))
	}
	if int64(cfg.MaxLate+1)*cfg.Interval+cfg.Jitter >= cfg.OOOWindow {
		panic("difftest: (MaxLate+1)*Interval+Jitter must be below OOOWindow")
	}
	if cfg.Span <= cfg.OOOWindow+3*cfg.Interval && cfg.TooOld > 0 {
		panic("difftest: Span too short for too-old samples")
	}
	ticks := int(cfg.Span / cfg.Interval)
	w := &Workload{Config: cfg, Ticks: ticks, MinT: math.MaxInt64, MaxT: math.MinInt64}
	master := rand.New(rand.NewPCG(uint64(cfg.Seed), 0xae51e))

	// Targets.
	var tgs []*target
	nGroups := cfg.NodeTargets + cfg.AppTargets
	churn := max(1, cfg.NodeTargets/30)
	for i := range nGroups {
		tg := &target{first: 0, last: ticks, restart: -1}
		tg.rng = rand.New(rand.NewPCG(master.Uint64(), uint64(i)))
		if i < cfg.NodeTargets {
			tg.job, tg.instance = "node", fmt.Sprintf("host-%02d:9100", i)
			switch {
			case cfg.NodeTargets >= 4 && i >= cfg.NodeTargets-churn:
				tg.first = ticks / 3 // appears
			case cfg.NodeTargets >= 4 && i >= cfg.NodeTargets-2*churn:
				tg.last = 2 * ticks / 3 // disappears
			}
		} else {
			tg.job, tg.instance = "app", fmt.Sprintf("app-%02d:8080", i-cfg.NodeTargets)
		}
		tg.lset = labels.FromStrings("job", tg.job, "instance", tg.instance)
		tg.phase = (int64(i) * 7919 % max(1, cfg.Interval/1000)) * 1000 % cfg.Interval
		if i%7 == 3 {
			tg.restart = tg.first + ticks/4 + tg.rng.IntN(max(1, ticks/2))
		}
		if tg.job == "node" {
			tg.buildNode(cfg.CPUs, ticks)
		} else {
			tg.buildApp(ticks)
		}
		tgs = append(tgs, tg)
	}

	// Series ids, in order of definition.
	seriesID := map[*seriesDef]int32{}
	for gi, tg := range tgs {
		w.Groups = append(w.Groups, tg.lset)
		for _, s := range tg.series {
			seriesID[s] = int32(len(w.Series))
			w.Series = append(w.Series, s.lset)
			w.SeriesGroup = append(w.SeriesGroup, gi)
		}
	}

	rowT := func(tg *target, tick int) int64 {
		return cfg.Start + int64(tick)*cfg.Interval + tg.phase + tg.rng.Int64N(cfg.Jitter+1)
	}

	// Rows, in tick order; delivery slots per tick.
	onTime := make([][]Batch, ticks+1)
	late := make([][]Batch, ticks+cfg.MaxLate+2)
	var rollbacks []Batch
	for tick := 0; tick <= ticks; tick++ {
		for gi, tg := range tgs {
			if tick < tg.first || tick > tg.last || (tick == tg.last && tick == ticks) {
				continue
			}
			t := rowT(tg, tick)
			b := Batch{Group: gi, Tick: tick, T: t}
			if tick == tg.last {
				// Target disappeared: stale markers for everything still live.
				for _, s := range tg.series {
					if s.live {
						b.Refs = append(b.Refs, seriesID[s])
						b.Values = append(b.Values, math.Float64frombits(value.StaleNaN))
						s.live = false
					}
				}
				if len(b.Refs) > 0 {
					onTime[tick] = append(onTime[tick], b)
				}
				continue
			}
			r := tg.rng
			if tick == tg.restart {
				for _, s := range tg.series {
					if s.kind == kCounter || s.kind == kCounterInt {
						s.v = 0
					}
				}
				for _, h := range tg.hists {
					h.reset()
				}
			}
			for _, h := range tg.hists {
				h.step(r)
			}
			for _, s := range tg.series {
				v := s.step(r)
				end := s.to
				if end < 0 {
					end = tg.last
				}
				present := tick >= s.from && tick < end && tick%s.every == s.off
				if s.flap && tick >= s.from && tick < end {
					if s.present {
						present = r.IntN(12) != 0
					} else {
						present = tick == 0 || r.IntN(3) == 0
					}
					s.present = present
				}
				switch {
				case present:
					b.Refs = append(b.Refs, seriesID[s])
					b.Values = append(b.Values, v)
					s.live = true
				case s.live && ((s.staleAtTo && tick == s.to) || s.flap):
					b.Refs = append(b.Refs, seriesID[s])
					b.Values = append(b.Values, math.Float64frombits(value.StaleNaN))
					s.live = false
				}
			}
			if len(b.Refs) == 0 {
				continue
			}
			// Late delivery?
			dst := &onTime[tick]
			if tick >= tg.first+2 && tick < tg.last-1 && cfg.MaxLate >= 2 && master.Float64() < cfg.LateFraction {
				d := 2 + master.IntN(cfg.MaxLate-1)
				b.Late = true
				dst = &late[tick+d]
				if len(w.lateTimes) < 16 {
					w.lateTimes = append(w.lateTimes, t)
				}
			}
			*dst = append(*dst, b)
			if len(rollbacks) < cfg.Rollbacks && tick > tg.first && master.IntN(max(1, ticks*nGroups/(2*max(1, cfg.Rollbacks)))) == 0 {
				// Appended and rolled back right after the row it follows,
				// between that row and the target's next one.
				rb := Batch{Group: gi, Tick: tick, T: t + cfg.Interval/2, Refs: slices.Clone(b.Refs), Rollback: true}
				for range b.Refs {
					rb.Values = append(rb.Values, float64(master.IntN(1000))+0.5)
				}
				*dst = append(*dst, rb)
				rollbacks = append(rollbacks, rb)
			}
		}
	}
	for k := range late {
		if k < len(onTime) {
			w.Batches = append(w.Batches, onTime[k]...)
		}
		w.Batches = append(w.Batches, late[k]...)
	}
	if cfg.HistoryDays > 0 {
		if cfg.TooOld > 0 || cfg.HistoryInterval <= 0 {
			panic("difftest: a history workload needs TooOld = 0 and HistoryInterval > 0")
		}
		w.Batches = interleave(w.Batches, history(cfg, tgs, seriesID, master), len(tgs))
	}
	for i := range w.Batches {
		b := &w.Batches[i]
		if b.Rollback || b.Dup {
			continue
		}
		w.Rows++
		w.Accepted += len(b.Refs)
		w.MinT = min(w.MinT, b.T)
		w.MaxT = max(w.MaxT, b.T)
	}

	// Too-old samples: rows between existing rows, older than maxT-OOOWindow,
	// for series that have later samples (so no engine can take them as
	// in-order appends).
	limit := w.MaxT - cfg.OOOWindow - 2*cfg.Interval
	var candidates []int
	for gi, tg := range tgs {
		if tg.last == ticks && cfg.Start+int64(tg.first+1)*cfg.Interval < limit {
			candidates = append(candidates, gi)
		}
	}
	for left, attempts := cfg.TooOld, 0; left > 0 && len(candidates) > 0 && attempts < 100*cfg.TooOld; attempts++ {
		gi := candidates[master.IntN(len(candidates))]
		tg := tgs[gi]
		maxTick := int((limit - cfg.Start) / cfg.Interval)
		tick := tg.first + master.IntN(max(1, maxTick-tg.first))
		b := Batch{Group: gi, Tick: -1, TooOld: true,
			T: cfg.Start + int64(tick)*cfg.Interval + tg.phase + cfg.Jitter + 1 + master.Int64N(cfg.Interval/2)}
		if b.T >= limit {
			continue
		}
		n := min(left, 1+master.IntN(10))
		for _, s := range tg.series {
			// Series live at the end: they have samples after b.T.
			if s.live && len(b.Refs) < n && master.IntN(4) == 0 {
				b.Refs = append(b.Refs, seriesID[s])
				b.Values = append(b.Values, float64(master.IntN(100))+0.25)
			}
		}
		if len(b.Refs) == 0 {
			continue
		}
		left -= len(b.Refs)
		w.Batches = append(w.Batches, b)
	}

	off := 0
	for i := range w.Batches {
		w.Batches[i].Off = off
		off += len(w.Batches[i].Refs)
	}
	w.NumSamples = off
	w.buildIndex()
	return w
}

// history returns the history rows: target after target (in shuffled
// order), each target's days in shuffled order, each day in time order,
// then the re-sent duplicates.
func history(cfg WorkloadConfig, tgs []*target, seriesID map[*seriesDef]int32, r *rand.Rand) []Batch {
	const day = int64(24 * time.Hour / time.Millisecond)
	var out, dups []Batch
	for _, gi := range r.Perm(len(tgs)) {
		tg := tgs[gi]
		if tg.first != 0 {
			continue // appears later: no past
		}
		var refs []int32
		for _, s := range tg.series {
			if s.from == 0 && s.every == 1 && !s.flap {
				refs = append(refs, seriesID[s])
			}
		}
		if len(refs) == 0 {
			continue
		}
		for _, d := range r.Perm(cfg.HistoryDays) {
			start := cfg.Start - int64(cfg.HistoryDays-d)*day
			for k := int64(0); k < day/cfg.HistoryInterval; k++ {
				b := Batch{Group: gi, Tick: -2, T: start + k*cfg.HistoryInterval + tg.phase, Refs: refs, History: true}
				for range refs {
					b.Values = append(b.Values, float64(r.IntN(4000))/4)
				}
				out = append(out, b)
				if r.Float64() < cfg.HistoryDups {
					dup := b
					dup.Dup = true
					dups = append(dups, dup)
				}
			}
		}
	}
	return append(out, dups...)
}

// interleave delivers the history rows among the current ones, evenly,
// after the first scrape of every target (so the history is older than
// what the engines hold).
func interleave(cur, hist []Batch, first int) []Batch {
	out := make([]Batch, 0, len(cur)+len(hist))
	first = min(first, len(cur))
	out = append(out, cur[:first]...)
	rest := cur[first:]
	j := 0
	for i, b := range rest {
		out = append(out, b)
		for j < len(hist) && j*len(rest) < (i+1)*len(hist) {
			out = append(out, hist[j])
			j++
		}
	}
	return append(out, hist[j:]...)
}

func (w *Workload) buildIndex() {
	vals := map[string]map[string]struct{}{}
	ml := map[string]map[string]map[string]struct{}{}
	for _, l := range w.Series {
		name := l.Get(labels.MetricName)
		if ml[name] == nil {
			ml[name] = map[string]map[string]struct{}{}
		}
		l.Range(func(lb labels.Label) {
			if vals[lb.Name] == nil {
				vals[lb.Name] = map[string]struct{}{}
			}
			vals[lb.Name][lb.Value] = struct{}{}
			if ml[name][lb.Name] == nil {
				ml[name][lb.Name] = map[string]struct{}{}
			}
			ml[name][lb.Name][lb.Value] = struct{}{}
		})
	}
	sortedKeys := func(m map[string]struct{}) []string {
		out := make([]string, 0, len(m))
		for k := range m {
			out = append(out, k)
		}
		slices.Sort(out)
		return out
	}
	w.values = map[string][]string{}
	for n, vs := range vals {
		w.names = append(w.names, n)
		w.values[n] = sortedKeys(vs)
	}
	slices.Sort(w.names)
	w.metricLbls = map[string]map[string][]string{}
	for m, lv := range ml {
		w.metrics = append(w.metrics, m)
		w.metricLbls[m] = map[string][]string{}
		for n, vs := range lv {
			w.metricLbls[m][n] = sortedKeys(vs)
		}
	}
	slices.Sort(w.metrics)
}

// Metrics returns the sorted metric names of the workload.
func (w *Workload) Metrics() []string { return slices.Clone(w.metrics) }

// String summarises the workload.
func (w *Workload) String() string {
	late, tooOld, rb := 0, 0, 0
	for _, b := range w.Batches {
		switch {
		case b.Late:
			late++
		case b.TooOld:
			tooOld += len(b.Refs)
		case b.Rollback:
			rb++
		}
	}
	return fmt.Sprintf("%d series in %d groups, %d metrics, %d samples expected in %d rows (batches), %d late rows, %d rolled-back batches, %d too-old samples, span %s (%d ticks of %s), t=[%d,%d]",
		len(w.Series), len(w.Groups), len(w.metrics), w.Accepted, w.Rows, late, rb, tooOld,
		time.Duration(w.MaxT-w.MinT)*time.Millisecond, w.Ticks, time.Duration(w.Config.Interval)*time.Millisecond, w.MinT, w.MaxT)
}
