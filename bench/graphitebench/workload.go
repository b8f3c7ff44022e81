package graphitebench

import (
	"context"

	"github.com/spf13/pflag"

	"github.com/aerie-db/aerie/bench/harness"
)

// Graphite is `aerie bench graphite`.
var Graphite = &harness.Workload{
	Name:     "graphite",
	Compares: "Graphite plaintext ingest into aerie serve against Debian's carbon-cache, and 20 Grafana panels rendered against graphite-web",
	Doc: `graphite sends node-like hosts' series over Graphite's plaintext
protocol from several TCP clients, as fast as the server reads, into
aerie serve (this executable) and into Debian's carbon-cache, and reports
points accepted and stored per second, drops, the servers' CPU seconds and
RSS; then it renders 20 typical Grafana panels from Aerie and from
graphite-web over the same data, compares the answers point by point and
reports p50 and p90 latencies. It fails if Aerie stores other points than
were sent; differences between the panels' answers are reported. See
bench/graphitebench/doc.go.`,
	Kind: Kind,
	Read: harness.ReadAs[Report](Kind),
	Flags: func(f *pflag.FlagSet) harness.Run {
		var cfg Config
		f.IntVar(&cfg.Series, "series", 0, "series Aerie ingests alone (default: the scale's; whole hosts of 50)")
		f.IntVar(&cfg.CarbonSeries, "carbon-series", 0, "series both peers ingest, which the panels read (default: the scale's)")
		f.DurationVar(&cfg.Span, "duration", 0, "span of every series at 10 s (default: the scale's: small 5m, medium 10m)")
		f.IntVar(&cfg.Clients, "clients", 0, "plaintext TCP clients (default 4)")
		f.IntVar(&cfg.Runs, "runs", 0, "timed renders of each panel per peer (default: the scale's)")
		f.StringVar(&cfg.Profile, "profile", "", "write a CPU profile of aerie serve over its largest ingest to this file, and put its top frames in the report")
		f.IntVar(&cfg.ProfileSeconds, "profile-seconds", 20, "length of that profile")
		f.DurationVar(&cfg.ProfileAfter, "profile-after", 0, "start that profile this long after the ingest's first dial (its first seconds create the series)")
		return func(ctx context.Context, o harness.Options) (harness.Report, error) {
			cfg.Options = o
			return harness.Returned(Run(ctx, cfg))
		}
	},
}
