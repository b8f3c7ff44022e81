package main

import (
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/aerie-db/aerie/bench"
	"github.com/aerie-db/aerie/bench/sensorbench"
)

// sensorsWorkload is the --workload of `aerie bench` that measures
// Peregreen's operations against VictoriaMetrics (bench/sensorbench).
const sensorsWorkload = "sensors"

// benchSensorsFlags are the flags of `aerie bench` that only
// --workload=sensors reads; it also reads --scale, --targets (sensors),
// --duration (span), --writers (upload clients), --seed, --dir, --json and
// --quiet.
type benchSensorsFlags struct {
	out, vm, aerie string
}

func (sf *benchSensorsFlags) addFlags(f *pflag.FlagSet) {
	f.StringVar(&sf.out, "out", "", "--workload=sensors: write the JSON report to this file (aerie bench report reads it; --json does the same)")
	f.StringVar(&sf.vm, "vm", "", "--workload=sensors: the victoria-metrics binary (default: ../shared/peers/victoria-metrics from the repository root)")
	f.StringVar(&sf.aerie, "aerie", "", "--workload=sensors: the aerie binary to serve and import with (default: this executable)")
}

// run runs bench/sensorbench with the bench command's flags, prints the
// report and writes its JSON.
func (sf *benchSensorsFlags) run(cmd *cobra.Command, cfg bench.Config, jsonPath string) error {
	ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	rep, err := sensorbench.Run(ctx, sensorbench.Config{
		Scale: cfg.Scale, Sensors: cfg.Targets, Span: cfg.Duration,
		Aerie: sf.aerie, VM: sf.vm, Dir: cfg.Dir, Seed: cfg.Seed, Clients: cfg.Writers, Log: cfg.Log,
	})
	if err != nil {
		return err
	}
	if err := rep.WriteTable(cmd.OutOrStdout()); err != nil {
		return err
	}
	out := sf.out
	if out == "" {
		out = jsonPath
	}
	if out == "" {
		return nil
	}
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	if err := rep.WriteJSON(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
