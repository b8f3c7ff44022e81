// Package extract implements Peregreen's extraction (paper §3.1) and its
// Metric and Transformation modules (§3.2) as streaming operators over one
// series: full extraction, sampling, aggregation and transformation.
//
// A caller parses the function (ParseFunc), fills Params (from, to,
// interval, function), builds the operator with New and pushes the series'
// points in time order; the operator emits to an Emitter as soon as output
// is final: a point at once, a window's row when the first point of a later
// window arrives or on Close.
//
// Windows: with interval > 0, window i is
//
//	[from + i·interval, from + (i+1)·interval)
//
// and the last window is clipped at to, which is inclusive (Peregreen's
// from-to); with interval 0 the single window is [from, to]. Windows are
// aligned to from, not to the epoch: a request whose from and interval are
// multiples of the engine's metric interval gets windows that are unions of
// metric intervals, and can be answered from block metrics
// (Aggregator.PushAgg).
//
// Modes (Params.Mode):
//   - full (interval 0, function none): every point, NaN included;
//   - sampling (interval > 0, function none): the first non-NaN point of
//     each window, with its own timestamp;
//   - aggregation (a list of metrics): one row per window holding at least
//     one non-NaN value, stamped with the window's start, the metrics in
//     requested order (Func.Columns); with interval 0 one row for [from, to];
//   - transformation (a chain of transformations): every point (interval
//     0) or every sample (interval > 0) passes through the chain in order.
//     abs is |v|, sub:k is v−k, mul:k is v·k, cumsum is the running sum,
//     diff is v minus the previous value and emits nothing for the first
//     one (n values give n−1 differences), movavg:n is the mean of the last
//     n values including the current one, of all values so far while fewer
//     than n have been seen.
//
// NaN values (Prometheus stale markers are NaN) are skipped by aggregation
// and sampling, like the engine's block metrics skip them. In full and
// transformation extractions a NaN passes through every transformation
// unchanged, bit for bit, and leaves its state as it was: cumsum continues
// from the sum before it, diff differences across it, movavg does not count
// it. A NaN produced by a transformation (mul:0 of an Inf) is treated the
// same way by the transformations after it.
//
// Invariants:
//  1. Memory is O(1) per operator, except movavg:n, which holds at most n
//     values (all movavg steps of a function at most MaxMovavg together),
//     and a quantile sketch, at most SketchMaxBins bins per sign. No
//     operator holds the series: a year at 1 Hz streams through.
//  2. Aggregation from block metrics (PushAgg) and from the data (Push)
//     give the same rows for aligned windows: count, min, max, first and
//     last are equal exactly; sum, avg and stddev are sums added in a
//     different order and equal up to that rounding (exactly, when the
//     values and their squares are integers below 2^53).
//  3. Output is in time order and every emitted timestamp is in
//     [from, to]: a point's own time, or a window's start.
//  4. Input is checked: a point outside [from, to] or before the previous
//     one, a span outside one window or before earlier input, and any use
//     after Close or after an error, is an error, and the operator stops.
//     An Emitter's error stops the operator and is returned as is.
//  5. Quantiles (p50, p90, p99) come from a DDSketch with relative accuracy
//     SketchRelativeAccuracy, clamped to the exact [min, max]; only
//     aggregation from data can answer them (block metrics hold no sketch,
//     and PushAgg refuses a span without one).
//  6. ParseFunc never panics; its errors are *SyntaxError naming the
//     offending item and its byte offset, and Func.String is canonical:
//     ParseFunc(f.String()) gives f back.
package extract
