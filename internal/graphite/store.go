package graphite

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
	// Points returns the series' values over [from, until) (Unix seconds,
	// until exclusive) from the finest archive whose retention covers
	// from, counted back from now (graphite-web's rule), or the coarsest if
	// none does. The grid is aligned to the archive's step: Start is from
	// rounded down to the step (graphite-web's fetch), Values[i] is the
	// interval [Start+i*Step, Start+(i+1)*Step), NaN where unknown.
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
