package workload

import "strconv"

// This file is the node_exporter target as data: which series it has and
// how each behaves. Calibrated against a real capture of the Debian
// prometheus-node-exporter 1.5 on a Linux VM (/work/shared/data, see
// doc.go): names, label sets, decimal places, which series are constant and
// how often the others change.

// kind is how a unit of series evolves.
type kind uint8

const (
	kConst     kind = iota + 1 // fixed value
	kCounter                   // monotone, increments at a rate
	kGauge                     // random walk in [lo, hi]
	kLevel                     // small integer, steps of ±1 in [lo, hi]
	kNoise                     // independent positive draws around a median
	kClock                     // the scrape time in seconds (node_time_seconds)
	kStamp                     // time of the last event (go_memstats_last_gc_time_seconds)
	kBoot                      // boot time in whole seconds
	kStart                     // process start time, 2 decimals
	kScraped                   // the target's series count less Prometheus' 5 (scrape_samples_scraped)
	kFirst                     // kScraped on the first row, 0 after (scrape_series_added)
	kPerScrape                 // counter +1 per scrape (the scrape's own request)
	kCPU                       // one cpu: the 8 modes of node_cpu_seconds_total
	kLoad                      // node_load1, node_load15, node_load5
	kFS                        // one filesystem's 7 series
	kHist                      // one classic histogram: buckets, _sum, _count
	kSummary                   // one summary: quantiles, _sum, _count
)

// rel says what a model's lo and hi are relative to.
type rel uint8

const (
	relAbs rel = iota // absolute
	relMem            // fractions of the target's MemTotal
)

// model is the behaviour of a unit.
type model struct {
	kind   kind
	lo, hi float64 // kCounter: rate per second (log-uniform); kNoise, kHist, kSummary: median (log-uniform); else the value range
	ev     float64 // events per second that change the series; 0: every row
	step   float64 // kGauge: largest step, as a fraction of hi-lo
	q      float64 // output quantum: < 1 → that many decimals, ≥ 1 → multiples of q; 0 → full precision
	dead   float64 // probability that the series is 0 for the whole run on a target
	rel    rel
	les    []float64 // kHist: bucket bounds, without +Inf
}

func konst(v float64) model { return model{kind: kConst, lo: v, hi: v} }

func konstIn(lo, hi, q float64) model { return model{kind: kConst, lo: lo, hi: hi, q: q} }

func counter(lo, hi, ev, q float64) model {
	return model{kind: kCounter, lo: lo, hi: hi, ev: ev, q: q}
}

func gauge(lo, hi, step, ev, q float64) model {
	return model{kind: kGauge, lo: lo, hi: hi, step: step, ev: ev, q: q}
}

func level(lo, hi, ev float64) model { return model{kind: kLevel, lo: lo, hi: hi, ev: ev, q: 1} }

func noise(lo, hi, q float64) model { return model{kind: kNoise, lo: lo, hi: hi, q: q} }

func (m model) deadP(p float64) model { m.dead = p; return m }

func (m model) ofMem() model { m.rel = relMem; return m }

// member is one label set of a family, with a multiplier of its rates and
// ranges (devices differ in traffic).
type member struct {
	labels []string // name, value pairs; "{host}" and "{mac}" in a value are filled per target
	scale  float64  // 0 → 1
}

// family is a metric and its members, all behaving by one model.
type family struct {
	name    string
	m       model
	members []member // nil → one member without labels
}

// by makes one member per value of label name.
func by(name string, values ...string) []member {
	ms := make([]member, len(values))
	for i, v := range values {
		ms[i] = member{labels: []string{name, v}}
	}
	return ms
}

// scaled gives members their scales, in order.
func scaled(ms []member, scales ...float64) []member {
	for i := range ms {
		ms[i].scale = scales[i]
	}
	return ms
}

func seq(n int) []string {
	s := make([]string, n)
	for i := range s {
		s[i] = strconv.Itoa(i)
	}
	return s
}

const (
	nodeCPUs = 8
	kiB      = 1024.0
	miB      = 1024 * kiB
	giB      = 1024 * miB
	page     = 4096.0
	nano     = 1e-9
	micro    = 1e-6
	milli    = 1e-3
	centi    = 1e-2
)

// cpuModes in label order; the kCPU unit relies on it.
var cpuModes = []string{"idle", "iowait", "irq", "nice", "softirq", "steal", "system", "user"}

var (
	netDevs   = []string{"docker0", "eth0", "eth1", "lo"}
	netScales = []float64{0.2, 1, 0.1, 0.05}
	disks     = []member{
		{labels: []string{"device", "nvme0n1"}, scale: 3},
		{labels: []string{"device", "sda"}, scale: 1},
		{labels: []string{"device", "sdb"}, scale: 0.3},
	}
	collectors = []string{
		"arp", "bcache", "bonding", "btrfs", "conntrack", "cpu", "cpufreq", "diskstats", "dmi",
		"edac", "entropy", "fibrechannel", "filefd", "filesystem", "hwmon", "infiniband", "ipvs",
		"loadavg", "mdadm", "meminfo", "netclass", "netdev", "netstat", "nfs", "nfsd", "nvme",
		"os", "powersupplyclass", "pressure", "rapl", "schedstat", "selinux", "sockstat",
		"softnet", "stat", "textfile", "thermal_zone", "time", "timex", "udp_queues", "uname",
		"vmstat", "xfs", "zfs",
	}
	httpDurationBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}
)

// nodeFamilies is one node_exporter target, scraped by Prometheus.
func nodeFamilies() []family {
	var fs []family
	add := func(name string, m model, ms ...member) {
		fs = append(fs, family{name: name, m: m, members: ms})
	}

	// cpu, stat, softnet. A cpu's modes advance by the elapsed time in
	// total (kCPU), in USER_HZ ticks: 2 decimals.
	add("node_cpu_seconds_total", model{kind: kCPU, q: centi}, by("cpu", seq(nodeCPUs)...)...)
	add("node_softnet_processed_total", counter(5, 300, 0, 1), by("cpu", seq(nodeCPUs)...)...)
	add("node_softnet_times_squeezed_total", counter(0.0005, 0.01, 0.001, 1).deadP(0.5), by("cpu", seq(nodeCPUs)...)...)
	add("node_context_switches_total", counter(300, 30000, 0, 1))
	add("node_intr_total", counter(200, 20000, 0, 1))
	add("node_forks_total", counter(0.5, 30, 0.3, 1))
	add("node_boot_time_seconds", model{kind: kBoot})
	add("node_time_seconds", model{kind: kClock})
	add("node_load1", model{kind: kLoad, lo: 0.05, hi: 6, q: centi}) // with node_load15, node_load5
	add("node_procs_running", level(0, 10, 0.3))
	add("node_procs_blocked", level(0, 2, 0.01))
	add("node_entropy_available_bits", konst(256))
	add("node_entropy_pool_size_bits", konst(256))
	add("node_filefd_allocated", level(300, 20000, 0.2))
	add("node_filefd_maximum", konstIn(1e6, 1e7, 1))
	add("node_nf_conntrack_entries", level(10, 5000, 0.2))
	add("node_nf_conntrack_entries_limit", konst(262144))
	add("node_time_zone_offset_seconds", konst(0), member{labels: []string{"time_zone", "UTC"}})
	add("node_uname_info", konst(1), member{labels: []string{
		"domainname", "(none)", "machine", "x86_64", "nodename", "{host}",
		"release", "6.1.0-18-amd64", "sysname", "Linux", "version", "#1 SMP PREEMPT_DYNAMIC Debian 6.1.76-1 (2024-02-01)"}})
	add("node_os_info", konst(1), member{labels: []string{
		"id", "debian", "name", "Debian GNU/Linux", "pretty_name", "Debian GNU/Linux 12 (bookworm)",
		"version", "12 (bookworm)", "version_codename", "bookworm", "version_id", "12"}})
	add("node_exporter_build_info", konst(1), member{labels: []string{
		"branch", "debian/sid", "goarch", "amd64", "goos", "linux", "goversion", "go1.19.8",
		"revision", "1.5.0-1+b6", "version", "1.5.0"}})
	add("node_pressure_cpu_waiting_seconds_total", counter(0.002, 0.2, 0, micro))
	add("node_pressure_io_stalled_seconds_total", counter(0.0005, 0.02, 0.1, micro))
	add("node_pressure_io_waiting_seconds_total", counter(0.0005, 0.03, 0.1, micro))
	add("node_pressure_memory_stalled_seconds_total", counter(0.00001, 0.001, 0.001, micro).deadP(0.5))
	add("node_pressure_memory_waiting_seconds_total", counter(0.00001, 0.001, 0.001, micro).deadP(0.5))

	// vmstat.
	add("node_vmstat_pgfault", counter(100, 20000, 0, 1))
	add("node_vmstat_pgmajfault", counter(0.01, 2, 0.05, 1))
	add("node_vmstat_pgpgin", counter(1, 500, 0.1, 1))
	add("node_vmstat_pgpgout", counter(5, 2000, 0.2, 1))
	add("node_vmstat_pswpin", konst(0))
	add("node_vmstat_pswpout", konst(0))
	add("node_vmstat_oom_kill", counter(1e-6, 1e-5, 1e-6, 1).deadP(0.9))

	// meminfo: gauges in pages, relative to MemTotal.
	mem := func(name string, m model) { add("node_memory_"+name+"_bytes", m) }
	memGauge := func(name string, lo, hi, step, ev float64) { mem(name, gauge(lo, hi, step, ev, page).ofMem()) }
	memZero := func(name string) { mem(name, konst(0)) }
	mem("MemTotal", konst(1).ofMem())
	memGauge("MemFree", 0.05, 0.7, 0.002, 0)
	memGauge("MemAvailable", 0.3, 0.9, 0.002, 0)
	memGauge("Buffers", 0.001, 0.03, 0.01, 0.2)
	memGauge("Cached", 0.05, 0.5, 0.002, 0)
	memGauge("Active", 0.05, 0.4, 0.002, 0)
	memGauge("Inactive", 0.05, 0.4, 0.002, 0)
	memGauge("Active_anon", 0.01, 0.2, 0.002, 0.5)
	memGauge("Inactive_anon", 0.001, 0.05, 0.005, 0.5)
	memGauge("Active_file", 0.05, 0.3, 0.002, 0.5)
	memGauge("Inactive_file", 0.05, 0.3, 0.002, 0.5)
	memGauge("Unevictable", 0.0001, 0.001, 0.05, 0.01)
	memGauge("Mlocked", 0.0001, 0.001, 0.05, 0.02)
	memGauge("Dirty", 0, 0.001, 0.1, 0.5)
	mem("Writeback", gauge(0, 0.0002, 0.3, 0.02, page).ofMem().deadP(0.7))
	memGauge("AnonPages", 0.01, 0.25, 0.002, 0.5)
	memGauge("Mapped", 0.005, 0.05, 0.01, 0.1)
	memGauge("Shmem", 0.001, 0.02, 0.01, 0.02)
	memGauge("KReclaimable", 0.01, 0.05, 0.005, 0.2)
	memGauge("Slab", 0.01, 0.06, 0.005, 0.3)
	memGauge("SReclaimable", 0.01, 0.05, 0.005, 0.2)
	memGauge("SUnreclaim", 0.003, 0.01, 0.01, 0.3)
	memGauge("KernelStack", 0.0005, 0.002, 0.02, 0.05)
	memGauge("PageTables", 0.0005, 0.005, 0.02, 0.1)
	memGauge("Committed_AS", 0.05, 0.6, 0.005, 0.1)
	memGauge("VmallocUsed", 0.0005, 0.002, 0.02, 0.05)
	mem("CommitLimit", konstIn(0.5, 0.5, page).ofMem())
	mem("Percpu", konstIn(0.00004, 0.00004, page).ofMem())
	mem("AnonHugePages", gauge(0, 0.01, 0.1, 0.002, 2*miB).ofMem())
	mem("VmallocTotal", konst(35184372087808))
	mem("Hugepagesize", konst(2*miB))
	mem("DirectMap4k", konstIn(100*miB, 500*miB, page))
	mem("DirectMap2M", konstIn(4*giB, 32*giB, 2*miB))
	mem("DirectMap1G", konstIn(0, 64*giB, giB))
	for _, n := range []string{"SwapTotal", "SwapFree", "SwapCached", "NFS_Unstable", "Bounce",
		"WritebackTmp", "VmallocChunk", "HardwareCorrupted", "ShmemHugePages", "ShmemPmdMapped",
		"FileHugePages", "FilePmdMapped", "Hugetlb"} {
		memZero(n)
	}
	for _, n := range []string{"HugePages_Free", "HugePages_Rsvd", "HugePages_Surp", "HugePages_Total"} {
		add("node_memory_"+n, konst(0))
	}

	// netdev, netclass: per device.
	nd := func(name string, m model) {
		add("node_network_"+name, m, scaled(by("device", netDevs...), netScales...)...)
	}
	nd("receive_bytes_total", counter(2e3, 2e6, 0, 1))
	nd("receive_packets_total", counter(3, 3000, 0, 1))
	nd("receive_errs_total", counter(1e-5, 1e-3, 1e-4, 1).deadP(0.8))
	nd("receive_drop_total", counter(1e-4, 1e-2, 1e-3, 1).deadP(0.5))
	nd("receive_fifo_total", konst(0))
	nd("receive_multicast_total", counter(0.001, 0.1, 0.01, 1).deadP(0.3))
	nd("transmit_bytes_total", counter(1e3, 1e6, 0, 1))
	nd("transmit_packets_total", counter(2, 2000, 0, 1))
	nd("transmit_errs_total", counter(1e-5, 1e-3, 1e-4, 1).deadP(0.9))
	nd("transmit_drop_total", counter(1e-5, 1e-3, 1e-4, 1).deadP(0.8))
	nd("transmit_fifo_total", konst(0))
	nd("transmit_colls_total", konst(0))
	add("node_network_info", konst(1),
		member{labels: []string{"address", "{mac}", "broadcast", "ff:ff:ff:ff:ff:ff", "device", "docker0", "operstate", "down"}},
		member{labels: []string{"address", "{mac}", "broadcast", "ff:ff:ff:ff:ff:ff", "device", "eth0", "duplex", "full", "operstate", "up"}},
		member{labels: []string{"address", "{mac}", "broadcast", "ff:ff:ff:ff:ff:ff", "device", "eth1", "duplex", "full", "operstate", "up"}},
		member{labels: []string{"address", "00:00:00:00:00:00", "broadcast", "00:00:00:00:00:00", "device", "lo", "operstate", "unknown"}})
	nc := func(name string, vs ...float64) {
		for i, d := range netDevs {
			add("node_network_"+name, konst(vs[i]), member{labels: []string{"device", d}})
		}
	}
	nc("up", 0, 1, 1, 0)
	nc("mtu_bytes", 1500, 1500, 9000, 65536)
	nc("carrier", 0, 1, 1, 1)
	nc("speed_bytes", -125000, 1.25e9, 1.25e9, 0)
	nc("flags", 4099, 4163, 4163, 73)
	nc("carrier_changes_total", 1, 2, 2, 0)
	add("node_arp_entries", level(1, 30, 0.005), member{labels: []string{"device", "eth0"}})

	// diskstats: bytes in 512-byte sectors, times in ms.
	dk := func(name string, m model) { add("node_disk_"+name, m, disks...) }
	dk("reads_completed_total", counter(0.1, 50, 0.3, 1))
	dk("reads_merged_total", counter(0.01, 10, 0.05, 1))
	dk("read_bytes_total", counter(1e3, 2e6, 0.3, 512))
	dk("read_time_seconds_total", counter(1e-4, 0.05, 0.3, milli))
	dk("writes_completed_total", counter(0.5, 100, 0.8, 1))
	dk("writes_merged_total", counter(0.1, 50, 0.5, 1))
	dk("written_bytes_total", counter(1e4, 5e6, 0.8, 512))
	dk("write_time_seconds_total", counter(5e-4, 0.2, 0.8, milli))
	dk("io_now", level(0, 4, 0.05))
	dk("io_time_seconds_total", counter(1e-3, 0.1, 0.8, milli))
	dk("io_time_weighted_seconds_total", counter(1e-3, 0.3, 0.8, milli))
	dk("discards_completed_total", counter(0.001, 0.1, 0.005, 1).deadP(0.3))
	dk("discarded_sectors_total", counter(0.1, 500, 0.005, 8).deadP(0.3))
	dk("discard_time_seconds_total", counter(1e-6, 1e-4, 0.005, milli).deadP(0.3))
	dk("flush_requests_total", counter(0.01, 2, 0.05, 1))
	add("node_disk_info", konst(1),
		member{labels: []string{"device", "nvme0n1", "major", "259", "minor", "0"}},
		member{labels: []string{"device", "sda", "major", "8", "minor", "0"}},
		member{labels: []string{"device", "sdb", "major", "8", "minor", "16"}})

	// filesystem: 7 series per mount (kFS), sized in [lo, hi); the scale is
	// how busy the filesystem is (0: never written).
	mount := func(device, fstype, mountpoint string, m model, activity float64) {
		m.kind = kFS
		add("node_filesystem", m, member{labels: []string{"device", device, "fstype", fstype, "mountpoint", mountpoint}, scale: activity})
	}
	mount("/dev/nvme0n1p1", "ext4", "/data", model{lo: 100 * giB, hi: 4000 * giB}, 3)
	mount("/dev/sda1", "ext4", "/", model{lo: 20 * giB, hi: 500 * giB}, 1)
	mount("/dev/sda15", "vfat", "/boot/efi", model{lo: 100 * miB, hi: 512 * miB}, 0)
	mount("/dev/sdb1", "xfs", "/var/lib/docker", model{lo: 50 * giB, hi: 1000 * giB}, 0.5)
	mount("tmpfs", "tmpfs", "/run", model{lo: 0.1, hi: 0.1, rel: relMem}, 0.01)
	mount("tmpfs", "tmpfs", "/run/user/1000", model{lo: 0.1, hi: 0.1, rel: relMem}, 0)

	// netstat, sockstat.
	ns := func(name string, m model) { add("node_netstat_"+name, m) }
	ns("Tcp_ActiveOpens", counter(0.01, 5, 0.1, 1))
	ns("Tcp_PassiveOpens", counter(0.01, 5, 0.1, 1))
	ns("Tcp_CurrEstab", level(2, 200, 0.05))
	ns("Tcp_InErrs", counter(1e-5, 1e-3, 1e-4, 1).deadP(0.7))
	ns("Tcp_InSegs", counter(5, 5000, 0, 1))
	ns("Tcp_OutSegs", counter(5, 5000, 0, 1))
	ns("Tcp_OutRsts", counter(0.001, 0.5, 0.01, 1))
	ns("Tcp_RetransSegs", counter(0.001, 0.5, 0.01, 1))
	ns("TcpExt_ListenDrops", konst(0))
	ns("TcpExt_ListenOverflows", konst(0))
	ns("TcpExt_SyncookiesSent", konst(0))
	ns("TcpExt_TCPSynRetrans", counter(1e-4, 0.01, 1e-3, 1))
	ns("TcpExt_TCPTimeouts", counter(1e-4, 0.01, 1e-3, 1))
	ns("Udp_InDatagrams", counter(0.01, 50, 0.1, 1))
	ns("Udp_OutDatagrams", counter(0.01, 50, 0.1, 1))
	ns("Udp_InErrors", konst(0))
	ns("Udp_NoPorts", counter(1e-4, 0.01, 1e-3, 1).deadP(0.5))
	ns("Udp6_InDatagrams", konst(0))
	ns("Udp6_OutDatagrams", konst(0))
	ns("Icmp_InMsgs", counter(1e-4, 0.01, 1e-3, 1))
	ns("Icmp_OutMsgs", counter(1e-4, 0.01, 1e-3, 1))
	ns("IpExt_InOctets", counter(2e3, 2e6, 0, 1))
	ns("IpExt_OutOctets", counter(1e3, 1e6, 0, 1))
	ns("Ip_Forwarding", konst(1))
	ss := func(name string, m model) { add("node_sockstat_"+name, m) }
	ss("sockets_used", level(50, 2000, 0.2))
	ss("TCP_alloc", level(5, 300, 0.1))
	ss("TCP_inuse", level(2, 200, 0.1))
	ss("TCP_orphan", level(0, 3, 0.01))
	ss("TCP_tw", level(0, 100, 0.1))
	ss("TCP_mem", level(1, 200, 0.2))
	ss("TCP_mem_bytes", gauge(4096, 800000, 0.05, 0.2, page))
	ss("UDP_inuse", level(1, 20, 0.01))
	ss("UDP_mem", level(1, 20, 0.05))
	ss("UDP_mem_bytes", gauge(4096, 80000, 0.05, 0.05, page))

	// The exporter's own metrics.
	add("node_scrape_collector_duration_seconds", noise(5e-6, 2e-3, nano), by("collector", collectors...)...)
	add("node_scrape_collector_success", konst(1), by("collector", collectors...)...)
	add("go_gc_duration_seconds", model{kind: kSummary, lo: 2e-5, hi: 2e-4, ev: 0.1})
	add("go_goroutines", level(6, 12, 0.05))
	add("go_threads", level(6, 12, 0.002))
	add("go_info", konst(1), member{labels: []string{"version", "go1.19.8"}})
	gm := func(name string, m model) { add("go_memstats_"+name, m) }
	gm("alloc_bytes", gauge(1*miB, 6*miB, 0.3, 0, 8))
	gm("heap_alloc_bytes", gauge(1*miB, 6*miB, 0.3, 0, 8))
	gm("alloc_bytes_total", counter(1e5, 2e6, 0, 8))
	gm("mallocs_total", counter(1e3, 2e4, 0, 1))
	gm("frees_total", counter(1e3, 2e4, 0, 1))
	gm("lookups_total", konst(0))
	gm("heap_objects", gauge(5e3, 4e4, 0.3, 0, 1))
	gm("heap_idle_bytes", gauge(2*miB, 8*miB, 0.1, 0.3, 8*kiB))
	gm("heap_inuse_bytes", gauge(2*miB, 8*miB, 0.1, 0.3, 8*kiB))
	gm("heap_released_bytes", gauge(1*miB, 6*miB, 0.1, 0.1, 8*kiB))
	gm("heap_sys_bytes", gauge(7*miB, 16*miB, 0.05, 0.005, 8*kiB))
	gm("next_gc_bytes", gauge(4*miB, 8*miB, 0.2, 0.05, 8))
	gm("stack_inuse_bytes", gauge(256*kiB, 1*miB, 0.1, 0.01, 32*kiB))
	gm("stack_sys_bytes", gauge(256*kiB, 1*miB, 0.1, 0.01, 32*kiB))
	gm("mspan_inuse_bytes", gauge(32*kiB, 128*kiB, 0.05, 0.1, 8))
	gm("mspan_sys_bytes", gauge(48*kiB, 160*kiB, 0.1, 0.001, 16*kiB))
	gm("mcache_inuse_bytes", konst(1200))
	gm("mcache_sys_bytes", konst(15600))
	gm("buck_hash_sys_bytes", gauge(1.4e6, 1.7e6, 0.01, 0.3, 1))
	gm("gc_sys_bytes", gauge(8e6, 1e7, 0.02, 0.03, 1))
	gm("other_sys_bytes", gauge(6e5, 9e5, 0.05, 0.3, 1))
	gm("sys_bytes", gauge(1.4e7, 2.4e7, 0.02, 0.003, 64*kiB))
	gm("last_gc_time_seconds", model{kind: kStamp, ev: 0.3})
	add("process_cpu_seconds_total", counter(0.002, 0.03, 0, centi))
	add("process_max_fds", konst(1048576))
	add("process_open_fds", level(8, 15, 0.02))
	add("process_resident_memory_bytes", gauge(15*miB, 30*miB, 0.02, 0.1, page))
	add("process_start_time_seconds", model{kind: kStart})
	add("process_virtual_memory_bytes", gauge(1.04e9, 1.06e9, 0.05, 0.003, page))
	add("process_virtual_memory_max_bytes", konst(1.8446744073709552e+19))
	add("promhttp_metric_handler_errors_total", konst(0), by("cause", "encoding", "gathering")...)
	add("promhttp_metric_handler_requests_in_flight", konst(1))
	add("promhttp_metric_handler_requests_total", model{kind: kPerScrape}, member{labels: []string{"code", "200"}})
	add("promhttp_metric_handler_requests_total", konst(0), by("code", "500", "503")...)
	add("http_request_duration_seconds", model{kind: kHist, lo: 0.005, hi: 0.05, les: httpDurationBuckets},
		member{labels: []string{"handler", "/metrics"}})

	// What Prometheus adds to every scrape.
	add("up", konst(1))
	add("scrape_duration_seconds", noise(0.005, 0.05, nano))
	add("scrape_samples_scraped", model{kind: kScraped})
	add("scrape_samples_post_metric_relabeling", model{kind: kScraped})
	add("scrape_series_added", model{kind: kFirst})
	return fs
}
