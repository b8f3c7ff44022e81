package main

import (
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/aerie-db/aerie/bench/bucketbench"
)

func newBenchBucketCmd() *cobra.Command {
	var (
		cfg      bucketbench.Config
		jsonPath string
		quiet    bool
	)
	cmd := &cobra.Command{
		Use:   "bucket",
		Short: "Measure the object-storage tier against a Thanos-style layout on the same bucket",
		Long: `bucket writes eight days of the node and tsbs workloads into Aerie's engine
and into prometheus/tsdb, compacts both, uploads both sets of blocks into
one filesystem bucket (Aerie's layout; Prometheus' blocks as they are) and
queries 1, 10 and 100 series over 1 h, 24 h and 7 d through each reader
(Aerie's; one that reads as Thanos' store gateway does), every request
delayed by --latency. It reports GETs, round trips, bytes fetched, read
amplification and latency per query, and fails if the answers differ. See
bench/bucketbench/doc.go.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !quiet {
				cfg.Log = cmd.ErrOrStderr()
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			rep, err := bucketbench.Run(ctx, cfg)
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
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Scale, "scale", "small", "small (node: 2 targets, tsbs: 100 hosts, every 5 min; ~1 min) or medium (node: 10 targets every 1 min, tsbs: 100 hosts every 30 s)")
	f.StringSliceVar(&cfg.Workloads, "workload", nil, "node, tsbs (default both)")
	f.DurationVar(&cfg.Latency, "latency", 0, "added to every bucket request (default 30ms)")
	f.StringVar(&cfg.Dir, "dir", "", "scratch directory (default: a temporary directory, removed after)")
	f.StringVar(&jsonPath, "json", "", "also write the report as JSON to this file (aerie bench report reads it)")
	f.BoolVar(&quiet, "quiet", false, "no progress on stderr")
	return cmd
}
