package httpbench

import (
	"context"

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
		f.IntVar(&cfg.Series, "series", 0, "new series of the cardinality phase (default: the scale's)")
		return func(ctx context.Context, o harness.Options) (harness.Report, error) {
			cfg.Scale, cfg.Dir, cfg.Seed, cfg.Aerie, cfg.Log = o.Scale, o.Dir, o.Seed, o.Aerie, o.Log
			if cfg.VM == "" {
				cfg.VM = o.Peer("victoria-metrics")
			}
			rep, err := Run(ctx, cfg)
			if rep == nil {
				return nil, err
			}
			return rep, err // ErrMismatch, after the report is out
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
			cfg.Scale, cfg.Dir, cfg.Seed, cfg.Aerie, cfg.Log = o.Scale, o.Dir, o.Seed, o.Aerie, o.Log
			if cfg.VM == "" {
				cfg.VM = o.Peer("victoria-metrics")
			}
			rep, err := RunDashboard(ctx, cfg)
			if rep == nil {
				return nil, err
			}
			return rep, err // ErrMismatch, after the report is out
		}
	},
}
