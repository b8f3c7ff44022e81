package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/aerie-db/aerie/internal/server"
)

func newServeCmd() *cobra.Command {
	var o server.Options
	var logLevel string
	var budget byteSize // --memory.budget
	var autoMemLimit bool
	var autoMemRatio float64
	delayed := true // --query.delayed-name-removal
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the Aerie server: Prometheus-compatible ingestion, scraping, PromQL API and rules",
		Long: `serve opens the data directory (replaying its WAL), then serves the
Prometheus HTTP API v1 (query, remote write and read, status, admin),
Influx line protocol (/write, /api/v2/write), Prometheus text import
(/api/v1/import/prometheus), scrapes the targets of --config.file (a
prometheus.yml, optionally with an aerie: section) and evaluates its rules.
SIGTERM or SIGINT shut it down gracefully.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var lvl slog.Level
			if err := lvl.UnmarshalText([]byte(logLevel)); err != nil {
				return err
			}
			o.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lvl}))
			o.Flags = map[string]string{}
			cmd.Flags().VisitAll(func(f *pflag.Flag) { o.Flags[f.Name] = f.Value.String() })
			o.NoDelayedNameRemoval = !delayed
			o.Runtime.MemoryBudget = int64(budget)
			if autoMemLimit {
				o.Runtime.AutoRatio = autoMemRatio
			}
			if o.QueryEngine != "aerie" && o.QueryEngine != "prometheus" {
				return fmt.Errorf("--query.engine=%q: want aerie or prometheus", o.QueryEngine)
			}
			s, err := server.New(o)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			return s.Run(ctx)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.DataDir, "data.dir", "./data", "data directory")
	f.StringVar(&o.HTTPAddr, "http.addr", "127.0.0.1:9201", "address to listen on")
	f.StringVar(&o.ConfigFile, "config.file", "", "prometheus.yml with an optional aerie: section")
	f.Int64Var(&o.MaxBody, "http.max-body", 64<<20, "largest request body in bytes (413 above)")
	f.IntVar(&o.MaxInflightWrites, "http.max-inflight-writes", 256, "concurrent write requests; more get 503 with Retry-After")
	f.DurationVar(&o.QueryTimeout, "query.timeout", 2*time.Minute, "maximum time a query may take")
	f.IntVar(&o.MaxSamples, "query.max-samples", 50_000_000, "maximum samples a query may load")
	f.IntVar(&o.MaxConcurrentQueries, "query.max-concurrency", 20, "maximum queries executed at once")
	f.DurationVar(&o.LookbackDelta, "query.lookback-delta", 5*time.Minute, "how far back an instant selector looks")
	f.BoolVar(&delayed, "query.delayed-name-removal", true, "drop __name__ at the end of a query, not inside it, so queries written for VictoriaMetrics (e.g. max_over_time({__name__=~\"a|b\"}[1m]) by name) answer as there; false: as Prometheus 3 without its promql-delayed-name-removal feature")
	f.StringVar(&o.QueryEngine, "query.engine", "aerie", "PromQL evaluation: aerie (aggregated range functions over decoded arrays on every core, the rest by Prometheus' engine) or prometheus (Prometheus' engine alone); both answer alike")
	f.StringVar(&logLevel, "log.level", "info", "debug, info, warn or error")
	o.Runtime.Apply = true
	f.Var(&budget, "memory.budget", "the process' memory budget (GOMEMLIMIT), e.g. 4GiB: the garbage collector works harder as the heap nears it instead of letting it grow by runtime.gogc (default: --auto-gomemlimit's)")
	f.BoolVar(&autoMemLimit, "auto-gomemlimit", true, "without --memory.budget, set GOMEMLIMIT to a share of the container's (cgroup) or else the machine's memory, as Prometheus does")
	f.Float64Var(&autoMemRatio, "auto-gomemlimit.ratio", 0.9, "that share, in (0, 1]")
	return cmd
}
