package main

import (
	"fmt"
	"os"
	"runtime/pprof"
	"strings"

	"github.com/spf13/cobra"

	"github.com/aerie-db/aerie/bench"
	"github.com/aerie-db/aerie/bench/bucketbench"
	"github.com/aerie-db/aerie/bench/cachebench"
	"github.com/aerie-db/aerie/bench/graphitebench"
	"github.com/aerie-db/aerie/bench/httpbench"
	"github.com/aerie-db/aerie/bench/rollupbench"
	"github.com/aerie-db/aerie/bench/sensorbench"
)

func newBenchCmd() *cobra.Command {
	var (
		cfg        bench.Config
		jsonPath   string
		cpuProfile string
		quiet      bool
		sensors    benchSensorsFlags
	)
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure Aerie's engine side by side with prometheus/tsdb",
		Long: `bench runs one workload through Aerie's engine and through the
prometheus/tsdb library in this process and prints the measurements with
their ratios (Aerie ÷ Prometheus): insert throughput, the TSBS query
patterns of Heracles Table 2 over the head and over blocks, bytes per
sample on disk, head bytes per series, query latency while a 2 h partition
is flushed, and the tuple-size trade-off. --workload=history instead
measures writes of any age and block compaction: backfill throughput
against prometheus/tsdb's out-of-order path, bytes per sample before and
after compaction, 7- and 30-day queries, and query latency during a
compaction. See bench/doc.go and
docs/BENCHMARKS.md ("make benchmarks" regenerates it).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !quiet {
				cfg.Log = cmd.ErrOrStderr()
			}
			if cpuProfile != "" {
				f, err := os.Create(cpuProfile)
				if err != nil {
					return err
				}
				defer f.Close()
				if err := pprof.StartCPUProfile(f); err != nil {
					return err
				}
				defer pprof.StopCPUProfile()
			}
			if cfg.Workload == sensorsWorkload {
				return sensors.run(cmd, cfg, jsonPath)
			}
			rep, err := bench.Run(cfg)
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
	f.StringVar(&cfg.Workload, "workload", "node", "node, random (node's series and timestamps, values uniform in [0,1)), tsbs (devops cpu-only), history (node hosts' history backfilled, then compacted: its own phases) or sensors (Peregreen's upload, search by value and extraction against VictoriaMetrics over HTTP: bench/sensorbench; small 4 sensors × 6 h, medium 100 × 7 d, large 100 × 30 d)")
	f.StringVar(&cfg.Input, "input", "", "real data instead of a generated workload: a remote-write dump (.rwpb.zst) or OpenMetrics text with timestamps")
	f.StringVar(&cfg.Scale, "scale", "small", "small (1 K series, <2 min), medium (10 K series) or large (150 K series, Heracles' scale); history: days of 1 to 4 hosts and 30 days of 1 or 2 (bench/histdata.go)")
	f.StringVar(&jsonPath, "json", "", "also write the report as JSON to this file")
	f.StringVar(&cfg.Dir, "dir", "", "scratch directory for both engines' data (default: a temporary directory, removed after)")
	f.Int64Var(&cfg.Seed, "seed", 1, "workload seed")
	f.DurationVar(&cfg.Interval, "interval", 0, "scrape interval (default 15s for node and random, 10s for tsbs)")
	f.IntVar(&cfg.Writers, "writers", 0, "concurrent writers (default GOMAXPROCS)")
	f.IntVar(&cfg.Targets, "targets", 0, "targets (tsbs: hosts) of the main dataset (default: the scale's series count; history: the hosts with every series)")
	f.DurationVar(&cfg.Duration, "duration", 0, "span of the main dataset (default: the scale's, 12h; history: those hosts' history, whole days)")
	f.StringVar(&cfg.AerieSync, "aerie.wal-sync", "interval", "Aerie's WAL sync: interval (fsync every second) or batch (fsync before each commit returns)")
	f.Float64Var(&cfg.AerieFlushCPU, "aerie.flush-cpu", 1, "Aerie's flush CPU budget, a share of one core (0 < x <= 1)")
	f.IntVar(&cfg.QueryRuns, "query-runs", 0, "instances of each TSBS pattern (default: the scale's)")
	f.BoolVar(&quiet, "quiet", false, "no progress on stderr")
	f.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the whole run to this file (both engines: use pprof -focus to split them)")
	sensors.addFlags(f)
	cmd.AddCommand(newBenchReportCmd(), newBenchHTTPCmd(), newBenchBucketCmd(), newBenchRollupCmd(), newBenchGraphiteCmd(), newBenchCacheCmd(), newBenchDashboardCmd())
	return cmd
}

func newBenchReportCmd() *cobra.Command {
	var out, notes, command string
	cmd := &cobra.Command{
		Use:   "report FILE.json...",
		Short: "Write docs/BENCHMARKS.md from bench, bench http, bench bucket and bench --workload=sensors JSON reports",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var (
				reps     []*bench.Report
				sections []bench.Section
			)
			for _, a := range args {
				b, err := os.ReadFile(a)
				if err != nil {
					return err
				}
				if sensorbench.IsReport(b) { // aerie bench --workload=sensors --out
					r, err := sensorbench.ReadReport(a)
					if err != nil {
						return err
					}
					sections = append(sections, r)
					continue
				}
				if rollupbench.IsReport(b) { // aerie bench rollup --json
					r, err := rollupbench.ReadReport(a)
					if err != nil {
						return err
					}
					sections = append(sections, r)
					continue
				}
				if cachebench.IsReport(b) { // aerie bench cache --json
					r, err := cachebench.ReadReport(a)
					if err != nil {
						return err
					}
					sections = append(sections, r)
					continue
				}
				if graphitebench.IsReport(b) { // aerie bench graphite --json
					r, err := graphitebench.ReadReport(a)
					if err != nil {
						return err
					}
					sections = append(sections, r)
					continue
				}
				if bucketbench.IsReport(b) { // aerie bench bucket --json
					r, err := bucketbench.ReadReport(a)
					if err != nil {
						return err
					}
					sections = append(sections, r)
					continue
				}
				if httpbench.IsDashboardReport(b) { // aerie bench dashboard --json
					r, err := httpbench.ReadDashboardReport(a)
					if err != nil {
						return err
					}
					sections = append(sections, r)
					continue
				}
				if httpbench.IsReport(b) { // aerie bench http --json
					r, err := httpbench.ReadReport(a)
					if err != nil {
						return err
					}
					sections = append(sections, r)
					continue
				}
				r, err := bench.ReadReport(a)
				if err != nil {
					return err
				}
				reps = append(reps, r)
			}
			var extra string
			if notes != "" {
				b, err := os.ReadFile(notes)
				if err != nil {
					return err
				}
				extra = string(b)
			}
			var sb strings.Builder
			if err := bench.WriteMarkdownSections(&sb, reps, sections, command, extra); err != nil {
				return err
			}
			if out == "" || out == "-" {
				_, err := fmt.Fprint(cmd.OutOrStdout(), sb.String())
				return err
			}
			return os.WriteFile(out, []byte(sb.String()), 0o644)
		},
	}
	cmd.Flags().StringVarP(&out, "out", "o", "-", "output file")
	cmd.Flags().StringVar(&notes, "notes", "", "hand-written Markdown appended after the tables (analysis, what is missing)")
	cmd.Flags().StringVar(&command, "command", "make benchmarks", "the command named as the generator")
	return cmd
}
