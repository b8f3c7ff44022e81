package main

import (
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/aerie-db/aerie/bench/httpbench"
)

func newBenchHTTPCmd() *cobra.Command {
	var (
		cfg      httpbench.Config
		jsonPath string
		quiet    bool
	)
	cmd := &cobra.Command{
		Use:   "http",
		Short: "Measure `aerie serve` against VictoriaMetrics over HTTP",
		Long: `http starts this binary's "aerie serve" and VictoriaMetrics (twice:
with -search.disableCache and with its defaults) on loopback, each in a
temporary data directory, loads the same data into each through Influx line
protocol and Prometheus remote write from several clients (samples/s, CPU
per sample, peak memory, disk per sample), runs the TSBS query patterns
over /api/v1/query_range (median and p99, answers compared), and registers
new series (time and memory per series). Every number comes with its ratio
Aerie ÷ VictoriaMetrics. Aerie acknowledges writes after fsync,
VictoriaMetrics before. See bench/httpbench/doc.go.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !quiet {
				cfg.Log = cmd.ErrOrStderr()
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			rep, err := httpbench.Run(ctx, cfg)
			if rep == nil {
				return err
			}
			if werr := rep.WriteTable(cmd.OutOrStdout()); werr != nil {
				return werr
			}
			if jsonPath != "" {
				f, ferr := os.Create(jsonPath)
				if ferr != nil {
					return ferr
				}
				if werr := rep.WriteJSON(f); werr != nil {
					f.Close()
					return werr
				}
				if cerr := f.Close(); cerr != nil {
					return cerr
				}
			}
			return err // ErrMismatch, after the report is out
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Scale, "scale", "small", "small (500 series, ~2 min on 2 cores), medium (2500 series, ~10 min) or large (10 000 series, 1 M new series)")
	f.StringVar(&cfg.Workload, "workload", "tsbs", "tsbs (devops cpu-only: the six Heracles patterns and four more of TSBS) or node (node_exporter targets: the six Heracles patterns)")
	f.StringVar(&jsonPath, "json", "", "also write the report as JSON to this file (aerie bench report reads it)")
	f.StringVar(&cfg.VM, "vm", "", "the victoria-metrics binary (default: ../shared/peers/victoria-metrics from the repository root)")
	f.StringVar(&cfg.Aerie, "aerie", "", "the aerie binary to serve (default: this executable)")
	f.StringVar(&cfg.Dir, "dir", "", "scratch directory for the servers' data (default: a temporary directory, removed after)")
	f.Int64Var(&cfg.Seed, "seed", 1, "workload and query seed")
	f.IntSliceVar(&cfg.Clients, "clients", nil, "concurrent ingest clients, one load per count (default 2,4,8)")
	f.IntVar(&cfg.LPBatch, "lp.batch", 0, "samples per line-protocol request (default 10000)")
	f.IntVar(&cfg.RWBatch, "rw.batch", 0, "samples per remote-write request (default 2000)")
	f.IntVar(&cfg.Instances, "instances", 0, "instances of each query pattern (default: the scale's)")
	f.IntVar(&cfg.Repeats, "repeats", 0, "timed runs of each instance per server (default: the scale's)")
	f.IntVar(&cfg.Series, "series", 0, "new series of the cardinality phase (default: the scale's)")
	f.BoolVar(&quiet, "quiet", false, "no progress on stderr")
	return cmd
}
