// Package archive defines what the Graphite API reads: series and their
// points on the grid of the archive graphite-web would read. It has no
// dependencies on the API, so the engine side (internal/rollup) implements
// it without importing the render code.
package archive

import (
	"context"

	"github.com/prometheus/prometheus/model/labels"
)

// Store is what the Graphite API reads: series by label matchers, and their
// points on the grid of the archive graphite-web would read. The rollup
// package implements it over the engine and its rollup levels
// (rollup.Store); tests may use any implementation.
type Store interface {
	// Series returns the label sets of the series matching ms that hold
	// data anywhere in [from, until) (milliseconds, inclusive), in any
	// archive, sorted by labels.Compare.
	Series(ctx context.Context, from, until int64, ms ...*labels.Matcher) ([]labels.Labels, error)
	// Points returns the series' values over [from, until) (Unix seconds)
	// from the finest archive whose retention covers from, counted back
	// from now (graphite-web's rule), or the coarsest if none does. The
	// grid is whisper's fetch: from clamped to the oldest time kept and
	// until to now, each then moved to the step boundary after it
	// (Start = from - from%Step + Step), Values[i] the interval
	// [Start+i*Step, Start+(i+1)*Step), NaN where unknown.
	Points(ctx context.Context, lset labels.Labels, from, until, now int64) (Points, error)
}

// Points is one series on an archive's grid.
type Points struct {
	Start, Step int64     // Unix seconds
	Values      []float64 // NaN = null
	// Method and XFilesFactor are the series' aggregation rule
	// (storage-aggregation): the render API's default consolidateBy and
	// xFilesFactor.
	Method       string
	XFilesFactor float64
}
