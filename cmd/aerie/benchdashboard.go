package main

import (
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/aerie-db/aerie/bench/httpbench"
)

func newBenchDashboardCmd() *cobra.Command {
	var (
		cfg      httpbench.DashboardConfig
		jsonPath string
		quiet    bool
	)
	cmd := &cobra.Command{
		Use:   "dashboard",
		Short: "Replay a Grafana dashboard against Aerie with and without its results cache and against VictoriaMetrics",
		Long: `dashboard loads node_exporter-like data ending at the wall clock's now into
three servers on loopback — "aerie serve" with its results cache off, "aerie
serve" with it on (its default) and VictoriaMetrics with its rollup result
cache — and replays a dashboard of 20 panels over "last 6 hours", refreshing
every 30 s, fast-forward through the data's newest minutes. It reports each
server's CPU seconds, wall time and query latency (whole replay and steady
state after the first refresh), the results cache's hits, and the ratios.
Every answer of Aerie with the cache must be byte-identical to Aerie's
without it, or the command fails. See bench/httpbench/doc.go.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !quiet {
				cfg.Log = cmd.ErrOrStderr()
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			rep, err := httpbench.RunDashboard(ctx, cfg)
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
	f.StringVar(&cfg.Scale, "scale", "small", "small (2 targets, 3 refreshes, <1 min on 2 cores) or medium (10 targets, 40 refreshes)")
	f.IntVar(&cfg.Refreshes, "refreshes", 0, "dashboard refreshes to replay (default: the scale's)")
	f.StringVar(&jsonPath, "json", "", "also write the report as JSON to this file (aerie bench report reads it)")
	f.StringVar(&cfg.VM, "vm", "", "the victoria-metrics binary (default: ../shared/peers/victoria-metrics from the repository root)")
	f.StringVar(&cfg.Aerie, "aerie", "", "the aerie binary to serve (default: this executable)")
	f.StringVar(&cfg.Dir, "dir", "", "scratch directory for the servers' data (default: a temporary directory, removed after)")
	f.Int64Var(&cfg.Seed, "seed", 1, "workload seed")
	f.BoolVar(&quiet, "quiet", false, "no progress on stderr")
	return cmd
}
