package bench

import (
	"context"
	"fmt"

	"github.com/spf13/pflag"

	"github.com/aerie-db/aerie/bench/harness"
)

// The engine workloads: each runs in this process through Aerie's engine
// and through prometheus/tsdb, on the same data, one after the other.
var (
	Node    = engineWorkload("node", "node_exporter targets (generated, or --input): insert, TSBS patterns over head and blocks, bytes, flush tail, tuple sizes; against prometheus/tsdb in process")
	Random  = engineWorkload("random", "node's series and timestamps with values uniform in [0,1) (no compression to find): the same measures; against prometheus/tsdb in process")
	TSBS    = engineWorkload("tsbs", "TSBS devops cpu-only hosts: the same measures; against prometheus/tsdb in process")
	History = engineWorkload(historyWorkload, "node hosts' history backfilled, then compacted: backfill throughput, bytes before and after compaction, 7- and 30-day queries, queries during compaction; against prometheus/tsdb's out-of-order path in process")
)

const engineDoc = `runs one workload through Aerie's engine and through the prometheus/tsdb
library in this process and prints the measurements with their ratios
(Aerie ÷ Prometheus): insert throughput, the TSBS query patterns of
Heracles Table 2 over the head and over blocks, bytes per sample on disk,
head bytes per series, query latency while a 2 h partition is flushed, and
the tuple-size trade-off. history instead measures writes of any age and
block compaction: backfill throughput against prometheus/tsdb's
out-of-order path, bytes per sample before and after compaction, 7- and
30-day queries, and query latency during a compaction. See bench/doc.go and
docs/BENCHMARKS.md ("make benchmarks" regenerates it).`

func engineWorkload(name, compares string) *harness.Workload {
	return &harness.Workload{
		Name: name, Compares: compares, Doc: engineDoc,
		Flags: func(f *pflag.FlagSet) harness.Run {
			cfg := Config{Workload: name}
			f.StringVar(&cfg.Input, "input", "", "real data instead of a generated workload: a remote-write dump (.rwpb.zst) or OpenMetrics text with timestamps")
			f.DurationVar(&cfg.Interval, "interval", 0, "scrape interval (default 15s for node and random, 10s for tsbs)")
			f.IntVar(&cfg.Writers, "writers", 0, "concurrent writers (default GOMAXPROCS)")
			f.IntVar(&cfg.Targets, "targets", 0, "targets (tsbs: hosts) of the main dataset (default: the scale's series count; history: the hosts with every series)")
			f.DurationVar(&cfg.Duration, "duration", 0, "span of the main dataset (default: the scale's, 12h; history: those hosts' history, whole days)")
			f.StringVar(&cfg.AerieSync, "aerie.wal-sync", "interval", "Aerie's WAL sync: interval (fsync every second) or batch (fsync before each commit returns)")
			f.StringVar(&cfg.AerieQueryEngine, "aerie.query-engine", "aerie", "the engine Aerie's queries run on: aerie (range functions over arrays, as aerie serve) or prometheus (Prometheus' engine alone, as --query.engine=prometheus)")
			f.Float64Var(&cfg.AerieFlushCPU, "aerie.flush-cpu", 1, "Aerie's flush CPU budget, a share of one core (0 < x <= 1)")
			f.IntVar(&cfg.QueryRuns, "query-runs", 0, "instances of each TSBS pattern (default: the scale's)")
			f.BoolVar(&cfg.Keep, "keep", false, "keep each phase's data directories under --dir (e.g. for aerie inspect --parts --data.dir=DIR/main-aerie)")
			return func(_ context.Context, o harness.Options) (harness.Report, error) {
				cfg.Scale, cfg.Dir, cfg.Seed, cfg.Log = o.Scale, o.Dir, o.Seed, o.Log
				return harness.Returned(Run(cfg))
			}
		},
		Read: func(path string, b []byte) (harness.Report, error) {
			var rep Report
			if err := harness.ReadJSON(path, b, "", &rep); err != nil {
				return nil, err
			}
			if rep.Workload == "" {
				return nil, fmt.Errorf("%s: not an engine report (no \"workload\")", path)
			}
			return &rep, nil
		},
	}
}
