package cachebench

import (
	"context"

	"github.com/spf13/pflag"

	"github.com/aerie-db/aerie/bench/harness"
)

// Cache is `aerie bench cache`.
var Cache = &harness.Workload{
	Name:     "cache",
	Compares: "TSCache's evaluation: Aerie's time-series cache against memcached holding 4 h chunks and against InfluxDB alone, five YCSB-TS-like workloads",
	Doc: `cache loads a synthetic sensor dataset into Debian's InfluxDB (started
here on loopback), then runs five YCSB-TS-like query workloads (Zipfian
keys, Latest end times, Zipfian range lengths; full, small, medium,
large and mixed) from concurrent clients through three systems, each
fresh and with the same queries: InfluxDB alone; Debian's memcached
holding fixed 4-hour chunks (Fatcache-style); and Aerie's time-series
cache (internal/cache, in process). Both caches are 10 % of the
dataset. It reports hit ratios, bandwidth delivered and latency, and
the ratios against the goals (TSCache §5). It fails if any sampled
answer differs from InfluxDB's own. See bench/cachebench/doc.go.`,
	Kind: Kind,
	Read: harness.ReadAs[Report](Kind),
	Flags: func(f *pflag.FlagSet) harness.Run {
		var cfg Config
		f.IntVar(&cfg.Queries, "queries", 0, "queries per workload and system (default: the scale's)")
		f.IntVar(&cfg.Clients, "clients", 0, "concurrent client goroutines (default 16; the paper's 64)")
		f.StringSliceVar(&cfg.Workloads, "workloads", nil, "workloads to run (default all: full, small, medium, large, mixed)")
		f.Float64Var(&cfg.CacheShare, "cache-share", 0, "each cache's size as a share of the dataset's bytes (default 0.1)")
		f.IntVar(&cfg.CheckEvery, "check-every", 0, "compare every Nth answer with InfluxDB's (default 50)")
		return func(ctx context.Context, o harness.Options) (harness.Report, error) {
			cfg.Scale, cfg.Dir, cfg.Seed, cfg.Log = o.Scale, o.Dir, uint64(o.Seed), o.Log
			return harness.Returned(Run(ctx, cfg))
		}
	},
}
