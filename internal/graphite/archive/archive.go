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

// GridStore is an optional interface of a Store, for caches below the
// render functions (internal/rendercache): the grid Points reads, known
// before reading it, and reads of part of that grid. Points(lset, from,
// until, now) must answer what Grid and then ReadGrid over the whole grid
// answer (rollup.Manager implements Points that way).
type GridStore interface {
	// Grid returns Points' answer without its values: the archive it
	// reads and its grid (Values nil, N buckets; N = 0 when Points answers
	// no values), with what a cache needs to know of that archive.
	Grid(lset labels.Labels, from, until, now int64) Grid
	// ReadGrid returns the values of g's buckets [start, end) (Unix
	// seconds on g's grid, inside it): each the value Points would give
	// that bucket at the time of the read.
	ReadGrid(ctx context.Context, lset labels.Labels, g Grid, start, end int64) ([]float64, error)
}

// Grid is one series' archive and grid as Points reads them.
type Grid struct {
	Points     // Values nil
	N      int // buckets from Start
	// Index is the archive's index in the series' schema (0: the raw
	// data, read on the finest grid).
	Index int
	// Stable (Unix seconds): buckets starting before it hold values that
	// change only through writes and deletions of the engine (which it
	// reports to its tsdb.LateObserver) or when Version changes. Buckets
	// from Stable on may change without either — a level's newest buckets
	// are computed from raw data at read time — and must not be cached.
	Stable int64
	// Version changes whenever buckets before Stable may have changed by
	// other means than reported writes: a level is computed again over a
	// range a backfill wrote into (internal/rollup, invariant 2), so its
	// buckets may change long after the write was reported. It moves only
	// after the new buckets are readable.
	Version uint64
	// Oldest (Unix seconds, math.MinInt64: never) is the time before which
	// the archive's data may be deleted by retention as time passes, and
	// Reach the seconds before a bucket's start whose data its value reads
	// (the raw archive's heartbeat): a bucket starting before Oldest+Reach
	// may lose data without a reported deletion.
	Oldest, Reach int64
}
