package server

import (
	"log/slog"
	"math"
	"runtime/debug"
	"testing"
)

// TestApplyRuntime: `aerie serve` sets GOGC and GOMEMLIMIT; a server of a
// test leaves them; a ratio above 1 is refused.
func TestApplyRuntime(t *testing.T) {
	gogc, limit := debug.SetGCPercent(100), debug.SetMemoryLimit(math.MaxInt64)
	defer func() { debug.SetGCPercent(gogc); debug.SetMemoryLimit(limit) }()
	log := slog.New(slog.DiscardHandler)

	got, err := applyRuntime(RuntimeOptions{}, 50, log)
	if err != nil || got != math.MaxInt64 || debug.SetGCPercent(100) != 100 {
		t.Fatalf("without Apply: limit %d, err %v; want no change", got, err)
	}
	got, err = applyRuntime(RuntimeOptions{Apply: true, MemoryBudget: 3 << 30, AutoRatio: 0.9}, 50, log)
	if err != nil || got != 3<<30 {
		t.Fatalf("budget: limit %d, err %v; want %d", got, err, 3<<30)
	}
	if g := debug.SetGCPercent(100); g != 50 {
		t.Errorf("GOGC %d, want runtime.gogc's 50", g)
	}
	debug.SetMemoryLimit(math.MaxInt64)
	got, err = applyRuntime(RuntimeOptions{Apply: true, AutoRatio: 0.5}, 75, log)
	if err != nil || got <= 0 || got == math.MaxInt64 {
		t.Errorf("auto: limit %d, err %v; want half the cgroup's or the machine's memory", got, err)
	}
	if _, err := applyRuntime(RuntimeOptions{Apply: true, AutoRatio: 1.5}, 75, log); err == nil {
		t.Error("a ratio of 1.5 was taken")
	}
}
