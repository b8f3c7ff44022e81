package sensorbench

import (
	"context"

	"github.com/spf13/pflag"

	"github.com/aerie-db/aerie/bench/harness"
)

// Sensors is `aerie bench sensors` (and today's `aerie bench
// --workload=sensors`).
var Sensors = &harness.Workload{
	Name:     "sensors",
	Compares: "Peregreen's upload, search by value and extraction on aerie serve against VictoriaMetrics over HTTP (small 4 sensors × 6 h, medium 100 × 7 d, large 100 × 30 d)",
	Doc: `sensors generates 1 Hz sensor histories quantized to 0.01, uploads them
into aerie serve (/upload) and VictoriaMetrics (/api/v1/import) from
several clients, then searches them by value and extracts ranges from both
(answers compared), and reports throughput, CPU, disk and index bytes per
record with the ratios against the goals. See bench/sensorbench/doc.go.`,
	Kind: Kind,
	Read: harness.ReadAs[Report](Kind),
	Flags: func(f *pflag.FlagSet) harness.Run {
		var cfg Config
		f.IntVar(&cfg.Sensors, "targets", 0, "sensors (default: the scale's)")
		f.DurationVar(&cfg.Span, "duration", 0, "span of every sensor, whole hours (default: the scale's)")
		f.IntVar(&cfg.Clients, "writers", 0, "concurrent upload clients (default 4)")
		f.StringVar(&cfg.VM, "vm", "", "the victoria-metrics binary (default: victoria-metrics in --peers)")
		return func(ctx context.Context, o harness.Options) (harness.Report, error) {
			cfg.Options = o
			return harness.Returned(Run(ctx, cfg))
		}
	},
}
