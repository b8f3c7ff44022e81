package main

import (
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/aerie-db/aerie/bench/rollupbench"
)

func newBenchRollupCmd() *cobra.Command {
	var (
		cfg      rollupbench.Config
		jsonPath string
		quiet    bool
	)
	cmd := &cobra.Command{
		Use:   "rollup",
		Short: "Measure the space Graphite-style rollups save on a year of node-like data",
		Long: `rollup writes node-like series scraped every 10 s (small: 14 days, every
50th series of a node target; medium: a year, every 10th) into an engine
keeping everything raw and into one with the storage schema
` + rollupbench.Schema + ` (rollup levels and the raw retention running as in
aerie serve), compacts both and reports their bytes on disk next to
whisper's. It fails on a rollup bucket that differs from what the raw data
give. See bench/rollupbench/doc.go.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !quiet {
				cfg.Log = slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			rep, err := rollupbench.Run(ctx, cfg)
			if err != nil {
				return err
			}
			if err := rep.WriteMarkdown(cmd.OutOrStdout()); err != nil {
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
			if err := f.Close(); err != nil {
				return fmt.Errorf("write %s: %w", jsonPath, err)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Scale, "scale", "small", "small (14 days, ~10 series) or medium (a year, ~50 series)")
	f.StringVar(&cfg.Dir, "dir", "", "work directory (default: a temporary one, removed)")
	f.Int64Var(&cfg.Seed, "seed", 1, "workload seed")
	f.StringVar(&jsonPath, "json", "", "write the JSON report here (aerie bench report reads it)")
	f.BoolVar(&quiet, "quiet", false, "no progress on stderr")
	return cmd
}
