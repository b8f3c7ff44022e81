package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"strings"
	"syscall"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/aerie-db/aerie/bench/harness"
	"github.com/aerie-db/aerie/bench/workloads"
)

// newBenchCmd is `aerie bench WORKLOAD`, one subcommand a registered
// workload (bench/workloads), with `list` and `report`. Today's form
// `aerie bench --workload=W [flags]` runs W (default node).
func newBenchCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench WORKLOAD [flags]",
		Short: "Measure Aerie side by side with prometheus/tsdb, VictoriaMetrics and the other systems its users run",
		Long: `bench runs one workload of bench/ (aerie bench list names them and what
each compares), prints its figures with their ratios and, with --json,
writes its report; aerie bench report turns reports into
docs/BENCHMARKS.md ("make benchmarks" regenerates it). The form
"aerie bench --workload=W [flags]" is "aerie bench W [flags]".`,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			name, rest, err := workloadArg(args)
			if err != nil {
				return err
			}
			if name == "" {
				return cmd.Help()
			}
			sub, _, err := cmd.Find([]string{name})
			if err != nil || sub == cmd {
				return fmt.Errorf("--workload=%q: no such workload (aerie bench list)", name)
			}
			sub.SetContext(cmd.Context())
			if err := sub.ParseFlags(rest); err != nil {
				return err
			}
			if a := sub.Flags().Args(); len(a) > 0 {
				return fmt.Errorf("%q: no such workload (aerie bench list)", a[0])
			}
			return sub.RunE(sub, nil)
		},
	}
	for _, w := range harness.Workloads() {
		cmd.AddCommand(newWorkloadCmd(w))
	}
	cmd.AddCommand(newBenchListCmd(), newBenchReportCmd())
	return cmd
}

// workloadArg takes --workload=W or --workload W out of args (default
// node); name is "" for -h or --help.
func workloadArg(args []string) (name string, rest []string, err error) {
	name = "node"
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-h" || a == "--help":
			return "", nil, nil
		case strings.HasPrefix(a, "--workload="):
			name = strings.TrimPrefix(a, "--workload=")
		case a == "--workload":
			if i+1 == len(args) {
				return "", nil, fmt.Errorf("--workload needs a value")
			}
			i++
			name = args[i]
		default:
			rest = append(rest, a)
		}
	}
	return name, rest, nil
}

// newWorkloadCmd is `aerie bench NAME`: the common flags, the workload's
// own, the run, its table on stdout and its JSON.
func newWorkloadCmd(w *harness.Workload) *cobra.Command {
	var (
		o                    harness.Options
		jsonPath, cpuProfile string
		quiet                bool
	)
	cmd := &cobra.Command{
		Use:   w.Name,
		Short: w.Compares,
		Long:  w.Doc,
		Args:  cobra.NoArgs,
	}
	f := cmd.Flags()
	f.StringVar(&o.Scale, "scale", "small", "small (CI, a minute or two), medium (make benchmarks) or large where the workload has it")
	f.StringVar(&jsonPath, "json", "", "also write the report as JSON to this file (aerie bench report reads it)")
	f.StringVar(&jsonPath, "out", "", "the same as --json")
	f.MarkHidden("out")
	f.StringVar(&o.Dir, "dir", "", "scratch directory (default: a temporary directory, removed after)")
	f.Int64Var(&o.Seed, "seed", 1, "workload and query seed")
	f.StringVar(&o.Peers, "peers", "", "directory of the peers' binaries, e.g. victoria-metrics (default ../shared/peers beside the repository)")
	f.StringVar(&o.Aerie, "aerie", "", "the aerie binary a server workload runs (default: this executable)")
	f.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of this process over the run to this file (in-process workloads: both engines; pprof -focus splits them)")
	f.BoolVar(&quiet, "quiet", false, "no progress on stderr")
	run := w.Flags(f)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if !quiet {
			o.Log = cmd.ErrOrStderr()
		}
		if cpuProfile != "" {
			pf, err := os.Create(cpuProfile)
			if err != nil {
				return err
			}
			defer pf.Close()
			if err := pprof.StartCPUProfile(pf); err != nil {
				return err
			}
			defer pprof.StopCPUProfile()
		}
		ctx := cmd.Context()
		if ctx == nil {
			ctx = context.Background()
		}
		ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
		defer stop()
		rep, err := run(ctx, o)
		if rep == nil {
			return err
		}
		if werr := rep.WriteTable(cmd.OutOrStdout()); werr != nil {
			return werr
		}
		if jsonPath != "" {
			if werr := writeJSONFile(jsonPath, rep); werr != nil {
				return werr
			}
		}
		return err // a run's failure (answers that differ) comes after its report
	}
	return cmd
}

func writeJSONFile(path string, rep harness.Report) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := rep.WriteJSON(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func newBenchListCmd() *cobra.Command {
	var names bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "Name the workloads and what each compares",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
			for _, w := range harness.Workloads() {
				if names {
					fmt.Fprintln(tw, w.Name)
					continue
				}
				fmt.Fprintf(tw, "%s\t%s\n", w.Name, w.Compares)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&names, "names", false, "names only, one a line (scripts/benchmarks.sh)")
	return cmd
}

func newBenchReportCmd() *cobra.Command {
	var out, notes, command string
	cmd := &cobra.Command{
		Use:   "report FILE.json...",
		Short: "Write docs/BENCHMARKS.md from the JSON reports of aerie bench",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var extra string
			if notes != "" {
				b, err := os.ReadFile(notes)
				if err != nil {
					return err
				}
				extra = string(b)
			}
			var sb strings.Builder
			if err := workloads.WriteDocument(&sb, args, command, extra); err != nil {
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
