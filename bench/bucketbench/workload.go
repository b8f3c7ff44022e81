package bucketbench

import (
	"context"

	"github.com/spf13/pflag"

	"github.com/aerie-db/aerie/bench/harness"
)

// Bucket is `aerie bench bucket`.
var Bucket = &harness.Workload{
	Name:     "bucket",
	Compares: "the bucket tier's reader against a Thanos-style reader of Prometheus' blocks in the same bucket: GETs, round trips, bytes, latency",
	Doc: `bucket writes eight days of the node and tsbs workloads into Aerie's engine
and into prometheus/tsdb, compacts both, uploads both sets of blocks into
one filesystem bucket (Aerie's layout; Prometheus' blocks as they are) and
queries 1, 10 and 100 series over 1 h, 24 h and 7 d through each reader
(Aerie's; one that reads as Thanos' store gateway does), every request
delayed by --latency. It reports GETs, round trips, bytes fetched, read
amplification and latency per query, and fails if the answers differ. See
bench/bucketbench/doc.go.`,
	Kind: Kind,
	Read: harness.ReadAs[Report](Kind),
	Flags: func(f *pflag.FlagSet) harness.Run {
		var cfg Config
		f.StringSliceVar(&cfg.Workloads, "workload", nil, "node, tsbs (default both)")
		f.DurationVar(&cfg.Latency, "latency", 0, "added to every bucket request (default 30ms)")
		return func(ctx context.Context, o harness.Options) (harness.Report, error) {
			cfg.Scale, cfg.Dir, cfg.Log = o.Scale, o.Dir, o.Log
			return harness.Returned(Run(ctx, cfg))
		}
	},
}
