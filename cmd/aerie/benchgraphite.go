package main

import (
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/aerie-db/aerie/bench/graphitebench"
)

func newBenchGraphiteCmd() *cobra.Command {
	var (
		cfg      graphitebench.Config
		jsonPath string
		quiet    bool
	)
	cmd := &cobra.Command{
		Use:   "graphite",
		Short: "Measure Graphite plaintext ingest and render against carbon-cache and graphite-web",
		Long: `graphite sends node-like hosts' series over Graphite's plaintext
protocol from several TCP clients, as fast as the server reads, into
aerie serve (this executable) and into Debian's carbon-cache, and reports
points accepted and stored per second, drops, the servers' CPU seconds and
RSS; then it renders 20 typical Grafana panels from Aerie and from
graphite-web over the same data, compares the answers point by point and
reports p50 and p90 latencies. It fails if Aerie stores other points than
were sent; differences between the panels' answers are reported. See
bench/graphitebench/doc.go.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !quiet {
				cfg.Log = cmd.ErrOrStderr()
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			rep, err := graphitebench.Run(ctx, cfg)
			if err != nil {
				return err
			}
			if err := rep.WriteTable(cmd.OutOrStdout()); err != nil {
				return err
			}
			if jsonPath == "" {
				return nil
			}
			f, err := os.Create(jsonPath)
			if err != nil {
				return err
			}
			if err := rep.WriteJSON(f); err != nil {
				f.Close()
				return err
			}
			return f.Close()
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Scale, "scale", "small", "small (5 K series on both peers, 5 min at 10 s; <1 min) or medium (Aerie alone 500 K series, then both peers 20 K)")
	f.IntVar(&cfg.Series, "series", 0, "series Aerie ingests alone (default: the scale's; whole hosts of 50)")
	f.IntVar(&cfg.CarbonSeries, "carbon-series", 0, "series both peers ingest, which the panels read (default: the scale's)")
	f.DurationVar(&cfg.Span, "duration", 0, "span of every series at 10 s (default: the scale's: small 5m, medium 10m)")
	f.IntVar(&cfg.Clients, "clients", 0, "plaintext TCP clients (default 4)")
	f.IntVar(&cfg.Runs, "runs", 0, "timed renders of each panel per peer (default: the scale's)")
	f.StringVar(&cfg.Aerie, "aerie", "", "the aerie binary to serve (default: this executable)")
	f.StringVar(&cfg.Dir, "dir", "", "scratch directory (default: a temporary directory, removed after)")
	f.StringVar(&cfg.Profile, "profile", "", "write a CPU profile of aerie serve over its largest ingest to this file, and put its top frames in the report")
	f.IntVar(&cfg.ProfileSeconds, "profile-seconds", 20, "length of that profile")
	f.DurationVar(&cfg.ProfileAfter, "profile-after", 0, "start that profile this long after the ingest's first dial (its first seconds create the series)")
	f.StringVar(&jsonPath, "json", "", "also write the report as JSON to this file (aerie bench report reads it)")
	f.BoolVar(&quiet, "quiet", false, "no progress on stderr")
	return cmd
}
