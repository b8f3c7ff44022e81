package cond

import (
	"fmt"
	"strings"

	"github.com/aerie-db/aerie/internal/sensor/enum"
)

// Metric names a block metric a condition or an aggregation can use. The
// zero Metric is invalid.
type Metric uint8

// The metrics, in the order they are listed to users. Count, min, max, sum,
// first and last are exact; avg and stddev derive from count, sum and sum of
// squares; p50, p90 and p99 are quantiles that need a sketch of the values.
const (
	Count  Metric = 1
	Min    Metric = 2
	Max    Metric = 3
	Avg    Metric = 4
	Sum    Metric = 5
	Stddev Metric = 6
	First  Metric = 7
	Last   Metric = 8
	P50    Metric = 9
	P90    Metric = 10
	P99    Metric = 11
)

var metricNames = [...]string{
	Count:  "count",
	Min:    "min",
	Max:    "max",
	Avg:    "avg",
	Sum:    "sum",
	Stddev: "stddev",
	First:  "first",
	Last:   "last",
	P50:    "p50",
	P90:    "p90",
	P99:    "p99",
}

// validMetrics lists every metric name for error messages.
var validMetrics = strings.Join(metricNames[1:], ", ")

// AllMetrics returns every valid metric in listing order.
func AllMetrics() []Metric {
	ms := make([]Metric, 0, len(metricNames)-1)
	for m := Count; m <= P99; m++ {
		ms = append(ms, m)
	}
	return ms
}

// Valid reports whether m is one of the defined metrics.
func (m Metric) Valid() bool { return m >= Count && m <= P99 }

// String returns the metric's name as written in conditions ("p50"), or
// "Metric(N)" for an invalid m.
func (m Metric) String() string { return enum.Name(metricNames[:], m, "Metric") }

// Quantile returns the quantile a percentile metric stands for (0.5 for
// p50) and true, or 0 and false for the other metrics. A metric with a
// quantile needs a sketch of the values: block metrics cannot answer it.
func (m Metric) Quantile() (q float64, ok bool) {
	switch m {
	case P50:
		return 0.5, true
	case P90:
		return 0.9, true
	case P99:
		return 0.99, true
	}
	return 0, false
}

// ParseMetric returns the metric named s (lower case, as String prints it).
// The error lists the valid names.
func ParseMetric(s string) (Metric, error) {
	if m, ok := enum.Parse[Metric](metricNames[:], s); ok {
		return m, nil
	}
	if lower := strings.ToLower(s); lower != s {
		if m, err := ParseMetric(lower); err == nil {
			return 0, fmt.Errorf("unknown metric %s (metric names are lower case: %q)", quote(s), m.String())
		}
	}
	return 0, fmt.Errorf("unknown metric %s (valid metrics: %s)", quote(s), validMetrics)
}

// quote quotes user input for an error message, cutting it at 32 bytes so
// one bad token cannot make a message the size of the request.
func quote(s string) string {
	const max = 32
	if len(s) > max {
		return fmt.Sprintf("%q…", s[:max])
	}
	return fmt.Sprintf("%q", s)
}
