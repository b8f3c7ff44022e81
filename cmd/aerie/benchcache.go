package main

import (
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/aerie-db/aerie/bench/cachebench"
)

func newBenchCacheCmd() *cobra.Command {
	var (
		cfg      cachebench.Config
		jsonPath string
		quiet    bool
	)
	cmd := &cobra.Command{
		Use:   "cache",
		Short: "Reproduce TSCache's evaluation: Aerie's cache against memcached chunks and no cache, over InfluxDB",
		Long: `cache loads a synthetic sensor dataset into Debian's InfluxDB (started
here on loopback), then runs five YCSB-TS-like query workloads (Zipfian
keys, Latest end times, Zipfian range lengths; full, small, medium,
large and mixed) from concurrent clients through three systems, each
fresh and with the same queries: InfluxDB alone; Debian's memcached
holding fixed 4-hour chunks (Fatcache-style); and Aerie's time-series
cache (internal/cache, in process). Both caches are 10 % of the
dataset. It reports hit ratios, bandwidth delivered and latency, and
the ratios against the goals (TSCache §5). It fails if any sampled
answer differs from InfluxDB's own. See bench/cachebench/doc.go.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !quiet {
				cfg.Log = cmd.ErrOrStderr()
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			rep, err := cachebench.Run(ctx, cfg)
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
	f.StringVar(&cfg.Scale, "scale", "small", "small (8 sensors × 14 days at 1 min, 300 queries a workload; <1 min) or medium (16 sensors × 60 days, 3000 queries)")
	f.IntVar(&cfg.Queries, "queries", 0, "queries per workload and system (default: the scale's)")
	f.IntVar(&cfg.Clients, "clients", 0, "concurrent client goroutines (default 16; the paper's 64)")
	f.StringSliceVar(&cfg.Workloads, "workloads", nil, "workloads to run (default all: full, small, medium, large, mixed)")
	f.Float64Var(&cfg.CacheShare, "cache-share", 0, "each cache's size as a share of the dataset's bytes (default 0.1)")
	f.IntVar(&cfg.CheckEvery, "check-every", 0, "compare every Nth answer with InfluxDB's (default 50)")
	f.Uint64Var(&cfg.Seed, "seed", 1, "query generator seed")
	f.StringVar(&cfg.Dir, "dir", "", "scratch directory (default: a temporary directory, removed after)")
	f.StringVar(&jsonPath, "json", "", "also write the report as JSON to this file (aerie bench report reads it)")
	f.BoolVar(&quiet, "quiet", false, "no progress on stderr")
	return cmd
}
