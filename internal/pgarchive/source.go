package pgarchive

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/prometheus/model/labels"
)

// Source is what the archive copies from: Aerie's rollup levels. Every
// method may be called from several goroutines at once (one loop per level).
type Source interface {
	// Levels lists the rollup levels to archive. It is read once, by New.
	Levels() []Level
	// Ready returns the time (ms) before which the level holds every point
	// it will ever hold: points before it are final.
	Ready(level Level) int64
	// Read calls fn for each series that has points in [from, to) (ms),
	// series by series, with that series' points in time order. ts and vs
	// are only valid during the call; lset may be kept. An error from fn
	// stops Read, which returns it. Read should return soon after ctx is
	// done: Close waits for it.
	Read(ctx context.Context, level Level, from, to int64, fn func(lset labels.Labels, ts []int64, vs []float64) error) error
}

// Level is one rollup level: points every Step, kept for Retention. Its
// round-robin archive has Retention/Step slots.
type Level struct {
	Name      string // e.g. "1m"; unique among the levels
	Step      time.Duration
	Retention time.Duration
}

// MaxSlots bounds the slots of one level (Retention/Step): slot numbers and
// array subscripts are PostgreSQL INT.
const MaxSlots = 1 << 30

// layout returns the level's round-robin geometry with segments of width
// positions.
func (l Level) layout(width int32) (Layout, error) {
	switch {
	case l.Name == "":
		return Layout{}, fmt.Errorf("level with step %v: empty name", l.Step)
	case l.Step <= 0 || l.Step%time.Millisecond != 0:
		return Layout{}, fmt.Errorf("level %q: step %v is not a positive whole number of milliseconds", l.Name, l.Step)
	case l.Retention < l.Step || l.Retention%l.Step != 0:
		return Layout{}, fmt.Errorf("level %q: retention %v is not a positive multiple of the step %v", l.Name, l.Retention, l.Step)
	case l.Retention/l.Step > MaxSlots:
		return Layout{}, fmt.Errorf("level %q: %d slots (retention/step) is more than %d", l.Name, l.Retention/l.Step, MaxSlots)
	}
	return Layout{StepMs: l.Step.Milliseconds(), Size: int64(l.Retention / l.Step), Width: width}, nil
}
