package server

import (
	"fmt"
	"log/slog"
	"runtime/debug"

	"github.com/KimMachineGun/automemlimit/memlimit"
)

// RuntimeOptions are the process-wide Go runtime settings of `aerie
// serve`, as Prometheus sets them: the garbage collector's target
// (runtime.gogc of the configuration file) and its memory limit
// (GOMEMLIMIT).
type RuntimeOptions struct {
	// Apply turns the settings on; an in-process server of a test or
	// bench leaves its process alone.
	Apply bool
	// MemoryBudget is the process' memory budget in bytes
	// (--memory.budget): the collector works harder as the heap nears it
	// instead of letting it reach twice the live heap. 0: AutoRatio of the
	// container's (cgroup) or else the machine's memory, if AutoRatio > 0.
	MemoryBudget int64
	// AutoRatio is --auto-gomemlimit.ratio, or 0 with
	// --auto-gomemlimit=false [0.9].
	AutoRatio float64
}

// applyRuntime sets GOGC from runtime.gogc (Prometheus' loader gives 75,
// or the GOGC environment variable's value, when the file does not set
// it) and GOMEMLIMIT from the budget. It returns the memory limit in force
// (math.MaxInt64: none).
func applyRuntime(o RuntimeOptions, gogc int, log *slog.Logger) (int64, error) {
	if !o.Apply {
		return debug.SetMemoryLimit(-1), nil
	}
	if old := debug.SetGCPercent(gogc); old != gogc {
		log.Info("runtime: GOGC set from runtime.gogc", "old", old, "new", gogc)
	}
	switch {
	case o.MemoryBudget > 0:
		debug.SetMemoryLimit(o.MemoryBudget)
	case o.AutoRatio > 0:
		if o.AutoRatio > 1 {
			return 0, fmt.Errorf("--auto-gomemlimit.ratio=%v: want a ratio in (0, 1]", o.AutoRatio)
		}
		if _, err := memlimit.SetGoMemLimitWithOpts(
			memlimit.WithRatio(o.AutoRatio),
			memlimit.WithProvider(memlimit.ApplyFallback(memlimit.FromCgroup, memlimit.FromSystem)),
			memlimit.WithLogger(log.With("component", "automemlimit")),
		); err != nil {
			log.Warn("runtime: GOMEMLIMIT not set", "err", err)
		}
	}
	limit := debug.SetMemoryLimit(-1)
	log.Info("runtime", "gogc", gogc, "gomemlimit", limit)
	return limit, nil
}
