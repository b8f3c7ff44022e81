package expr

import "context"

// Series is one Graphite series over a regular grid: Values[i] is the value
// of the interval starting at Start+i*Step (Unix seconds); NaN is Graphite's
// null (None). End is Start+len(Values)*Step, exclusive, as in graphite-web's
// TimeSeries.
type Series struct {
	Name           string            // display name: the path, or what alias/aggregates made of it
	PathExpression string            // the path expression (or target) that produced it
	Tags           map[string]string // Graphite tags; "name" is the path, as graphite-web sets it
	Start, End     int64             // Unix seconds; End exclusive
	Step           int64             // seconds, > 0
	Values         []float64         // NaN = null

	// ConsolidationFunc is how the render API consolidates the series to
	// maxDataPoints: "average" (default), "sum", "min", "max", "first",
	// "last"; consolidateBy sets it.
	ConsolidationFunc string
	// XFilesFactor is graphite-web's: the share of non-null points an
	// aggregate needs to be non-null.
	XFilesFactor float64
}

// Fetcher loads the series a target names. Times are Unix seconds, the
// range is [from, until). Every series of one Fetch has the same Start,
// End and Step only if they come from archives of the same step; callers
// must not assume it.
type Fetcher interface {
	// Fetch returns the series whose path matches the Graphite path
	// expression (globs *, ?, [a-c], {a,b}; tagged paths a.b;k=v too).
	Fetch(ctx context.Context, pathExpr string, from, until int64) ([]*Series, error)
	// FetchTagged returns the series seriesByTag selects: each expression
	// is "tag=value", "tag!=value", "tag=~regex" or "tag!=~regex"
	// (graphite-web's grammar; "name" is the path). Eval has checked
	// each expression's syntax and that every =~ value compiles as a Go
	// regular expression; graphite-web anchors them at the start of the
	// value (re.match), i.e. "^(?:value)".
	FetchTagged(ctx context.Context, exprs []string, from, until int64) ([]*Series, error)
}
