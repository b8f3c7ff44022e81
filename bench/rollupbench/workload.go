package rollupbench

import (
	"context"
	"io"
	"log/slog"

	"github.com/spf13/pflag"

	"github.com/aerie-db/aerie/bench/harness"
)

// Rollup is `aerie bench rollup`.
var Rollup = &harness.Workload{
	Name:     "rollup",
	Compares: "a year of node-like data kept raw against Graphite-style rollups (" + Schema + "), and against carbon's whisper files of the same schema: bytes on disk",
	Doc: `rollup writes node-like series scraped every 10 s (small: 14 days, every
50th series of a node target; medium: a year, every 10th) into an engine
keeping everything raw and into one with the storage schema
` + Schema + ` (rollup levels and the raw retention running as in
aerie serve), compacts both and reports their bytes on disk next to
whisper's. It fails on a rollup bucket that differs from what the raw data
give. See bench/rollupbench/doc.go.`,
	Kind: Kind,
	Read: harness.ReadAs[Report](Kind),
	Flags: func(*pflag.FlagSet) harness.Run {
		return func(ctx context.Context, o harness.Options) (harness.Report, error) {
			cfg := Config{Scale: o.Scale, Dir: o.Dir, Seed: o.Seed}
			if o.Log != nil {
				cfg.Log = slog.New(slog.NewTextHandler(o.Log, nil))
			}
			return harness.Returned(Run(ctx, cfg))
		}
	},
}

// WriteTable writes the report for the terminal: its Markdown section.
func (r *Report) WriteTable(w io.Writer) error { return r.WriteMarkdown(w) }
