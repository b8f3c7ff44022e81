package httpbench

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/spf13/pflag"

	"github.com/aerie-db/aerie/bench/harness"
)

// HTTP is `aerie bench http`.
var HTTP = &harness.Workload{
	Name:     "http",
	Compares: "aerie serve against VictoriaMetrics (cache off and on) over HTTP: line-protocol and remote-write ingest, disk, TSBS query patterns, new series",
	Doc: `http starts this binary's "aerie serve" and VictoriaMetrics (twice:
with -search.disableCache and with its defaults) on loopback, each in a
temporary data directory, loads the same data into each through Influx line
protocol and Prometheus remote write from several clients (samples/s, CPU
per sample, peak memory, disk per sample), runs the TSBS query patterns
over /api/v1/query_range (median and p99, answers compared), and registers
new series (time and memory per series). Every number comes with its ratio
Aerie ÷ VictoriaMetrics. Aerie acknowledges writes after fsync,
VictoriaMetrics before. See bench/httpbench/doc.go.`,
	Kind: Kind,
	Read: harness.ReadAs[Report](Kind),
	Flags: func(f *pflag.FlagSet) harness.Run {
		var cfg Config
		f.StringVar(&cfg.Workload, "workload", "tsbs", "tsbs (devops cpu-only: the six Heracles patterns and four more of TSBS) or node (node_exporter targets: the six Heracles patterns)")
		f.StringVar(&cfg.VM, "vm", "", "the victoria-metrics binary (default: victoria-metrics in --peers)")
		f.IntSliceVar(&cfg.Clients, "clients", nil, "concurrent ingest clients, one load per count (default 2,4,8)")
		f.IntVar(&cfg.LPBatch, "lp.batch", 0, "samples per line-protocol request (default 10000)")
		f.IntVar(&cfg.RWBatch, "rw.batch", 0, "samples per remote-write request (default 2000)")
		f.IntVar(&cfg.Instances, "instances", 0, "instances of each query pattern (default: the scale's)")
		f.IntVar(&cfg.Repeats, "repeats", 0, "timed runs of each instance per server (default: the scale's)")
		f.StringSliceVar(&cfg.Phases, "phases", []string{"ingest", "cardinality"}, "the phases to run: ingest (loads, disk and queries) and cardinality (new series)")
		f.IntVar(&cfg.Series, "series", 0, "new series of the cardinality phase (default: the scale's)")
		f.StringVar(&cfg.HeapProfile, "heapprofile", "", "write aerie serve's heap profile at the end of the cardinality phase to this file (go tool pprof reads it)")
		return func(ctx context.Context, o harness.Options) (harness.Report, error) {
			cfg.Options, cfg.VM = o, cmp.Or(cfg.VM, o.Peer("victoria-metrics"))
			return Run(ctx, cfg)
		}
	},
}

// Dashboard is `aerie bench dashboard`.
var Dashboard = &harness.Workload{
	Name:     "dashboard",
	Compares: "a Grafana dashboard replayed against aerie serve with its results cache off and on, and against VictoriaMetrics: CPU, latency, cache hits",
	Doc: `dashboard loads node_exporter-like data ending at the wall clock's now into
three servers on loopback — "aerie serve" with its results cache off, "aerie
serve" with it on (its default) and VictoriaMetrics with its rollup result
cache — and replays a dashboard of 20 panels over "last 6 hours", refreshing
every 30 s, fast-forward through the data's newest minutes. It reports each
server's CPU seconds, wall time and query latency (whole replay and steady
state after the first refresh), the results cache's hits, and the ratios.
Every answer of Aerie with the cache must be byte-identical to Aerie's
without it, or the command fails. See bench/httpbench/doc.go.`,
	Kind: DashboardKind,
	Read: harness.ReadAs[DashboardReport](DashboardKind),
	Flags: func(f *pflag.FlagSet) harness.Run {
		var cfg DashboardConfig
		f.IntVar(&cfg.Refreshes, "refreshes", 0, "dashboard refreshes to replay (default: the scale's)")
		f.StringVar(&cfg.VM, "vm", "", "the victoria-metrics binary (default: victoria-metrics in --peers)")
		return func(ctx context.Context, o harness.Options) (harness.Report, error) {
			cfg.Options, cfg.VM = o, cmp.Or(cfg.VM, o.Peer("victoria-metrics"))
			return RunDashboard(ctx, cfg)
		}
	},
}

// Config is one `aerie bench http` run.
type Config struct {
	harness.Options
	Workload string // tsbs (default) or node
	VM       string // the victoria-metrics binary ("": victoria-metrics in Peers)
	Clients  []int  // concurrent ingest clients, one load per count (nil → 2, 4, 8)
	// LPBatch and RWBatch are the samples per request (rounded up to a
	// whole scrape): line protocol 10 000 (Telegraf's metric_batch_size of
	// 1000 lines of TSBS' 10 fields), remote write 2000 (Prometheus'
	// max_samples_per_send).
	LPBatch, RWBatch int
	// Instances and Repeats override the scale's query instances per
	// pattern and timed runs per instance.
	Instances, Repeats int
	Series             int // cardinality phase: new series (0 → the scale's)
	// Phases are the phases to run, "ingest" and "cardinality" (nil:
	// both).
	Phases []string
	// HeapProfile, if set, is where Aerie's heap profile is written at the
	// end of the cardinality phase (/debug/pprof/heap, after a GC).
	HeapProfile string
}

// Scale sizes a run.
type Scale struct {
	Name     string
	Hosts    int           // tsbs hosts (10 series each); node: about as many series in targets of 517 (at least 2)
	Duration time.Duration // span of the dataset every load writes
	// Instances of each query pattern; each is run once unrecorded (its
	// answers are compared) and then Repeats times per peer.
	Instances, Repeats int
	NewSeries          int // cardinality phase
}

// Scales are the predefined sizes. small is what CI runs (≲3 min on two
// cores), medium what `make benchmarks` runs.
var Scales = map[string]Scale{
	"small":  {Name: "small", Hosts: 50, Duration: 12 * time.Hour, Instances: 1, Repeats: 3, NewSeries: 20_000},
	"medium": {Name: "medium", Hosts: 250, Duration: 12 * time.Hour, Instances: 4, Repeats: 5, NewSeries: 200_000},
	"large":  {Name: "large", Hosts: 1000, Duration: 12 * time.Hour, Instances: 5, Repeats: 6, NewSeries: 1_000_000},
}

const (
	defaultLPBatch = 10_000
	defaultRWBatch = 2_000
)

// check fills the defaults of cfg and validates it.
func (cfg *Config) check() (Scale, error) {
	sc, ok := Scales[cfg.Scale]
	if !ok {
		return Scale{}, fmt.Errorf("--scale=%q: want small, medium or large", cfg.Scale)
	}
	switch cfg.Workload {
	case "":
		cfg.Workload = "tsbs"
	case "tsbs", "node":
	default:
		return Scale{}, fmt.Errorf("--workload=%q: want tsbs or node", cfg.Workload)
	}
	cfg.Clients = slices.Clone(cfg.Clients)
	if len(cfg.Clients) == 0 {
		cfg.Clients = []int{2, 4, 8}
	}
	for _, c := range cfg.Clients {
		if c < 1 || c > 64 {
			return Scale{}, fmt.Errorf("--clients: %d is not in [1, 64]", c)
		}
	}
	slices.Sort(cfg.Clients)
	cfg.Clients = slices.Compact(cfg.Clients)
	if len(cfg.Phases) == 0 {
		cfg.Phases = []string{"ingest", "cardinality"}
	}
	for _, p := range cfg.Phases {
		if p != "ingest" && p != "cardinality" {
			return Scale{}, fmt.Errorf("--phases: %q is not ingest or cardinality", p)
		}
	}
	cfg.LPBatch = orDefault(cfg.LPBatch, defaultLPBatch)
	cfg.RWBatch = orDefault(cfg.RWBatch, defaultRWBatch)
	sc.Instances = orDefault(cfg.Instances, sc.Instances)
	sc.Repeats = orDefault(cfg.Repeats, sc.Repeats)
	sc.NewSeries = orDefault(cfg.Series, sc.NewSeries)
	if cfg.Seed == 0 {
		cfg.Seed = 1
	}
	return sc, nil
}

// orDefault is n if it is positive, else def.
func orDefault(n, def int) int {
	if n > 0 {
		return n
	}
	return def
}
