// Package queryeval evaluates the range functions of a PromQL query over
// decoded arrays, on every core, and leaves the rest of the query to
// Prometheus' engine (issue 23 §1).
//
// Prometheus' engine evaluates `f(sel[R])` one sample at a time: for every
// series and every step it re-reads the window through a
// BufferedSeriesIterator and a sample ring, about 30 ns a sample in
// Aerie's profiles, on one core. Engine instead plans each query first:
// every call of a supported range function over a plain matrix selector
// that is the query's whole answer (alone or in arithmetic with a number,
// `rate(x[5m]) * 8`), or reaches the answer only through an aggregation
// that keeps nothing but its `by` labels, is a *rollup*. A rollup is replaced, in a
// copy of the query, by a vector selector of a synthetic series set; the
// rewritten query runs on Prometheus' engine over a Queryable that answers
// those selectors with the rollups' results and every other selector from
// the storage. A rollup decodes each selected series once into an array,
// slides the windows of all steps over it with two indices, and calls
// Prometheus' own implementation of the function (promql.FunctionCalls)
// once per window and series; series run on the query's goroutine and up
// to Options.Concurrency−1 helpers, drawn from one pool of that size shared
// by all the engine's queries (a query whose helpers are all taken runs
// alone). Where a rollup's windows are whole metric intervals of the
// storage's blocks (a range and steps that are multiples of the interval,
// one hour by default, and a start on an interval's start, as Grafana
// aligns its queries to their step), min_over_time, max_over_time,
// count_over_time, sum_over_time and avg_over_time are answered from the
// block metrics of the intervals (tsdb series.AppendSummaries) without
// decoding their samples, wherever that gives exactly what Prometheus'
// function gives over the samples (summarize has the rules); the other
// windows of the series are decoded as before, and only those.
// Stats.MetricWindows counts the windows answered so. Tracker makes the wrapped engine's active-query log record a
// planned query as it was asked, not as rewritten.
//
// What it does not do, falling back to Prometheus' engine for the whole
// query: native histograms in a window, offsets, @ modifiers, anchored or
// smoothed selectors, functions with parameters, rollups under a
// subquery, under a function or an operator (but arithmetic with a number
// at the answer), or under any aggregation but
// sum, avg, min, max, count, group, stddev and stdvar `by` labels (with
// delayed name removal, label_replace and label_join may stand in
// between). With delayed name removal, an aggregation by __name__ keeps
// the name a range function marked for removal, a mark the synthetic
// series cannot carry: a rollup is planned under it only through
// label_replace(…, "__name__", "$1", "__name__", "(.+)"), which clears the
// mark (the form the VictoriaMetrics name compatibility asks), or directly
// when the aggregation is the query's answer and the selector reads one
// metric name. That label_replace right over a rollup, under such an
// aggregation or as the query's answer, is folded into the rollup, whose
// series then keep their names (planRestored). Nor a top-level rollup whose answer has two series with
// the same labels. Query statistics count the rollups'
// output, not the raw samples they read, and Options.MaxSamples bounds a
// rollup's output, not its window.
//
// A range query made only of plain vector selectors, arithmetic or
// comparisons between a vector and a number, and set operators (and, or,
// unless, with on or ignoring) is a vector plan (vector.go), answered
// without the wrapped engine (vectorQuery): each selected series is
// decoded once and its value at every step found in one pass (the last
// sample in (t−lookback, t], none if that is a stale marker), each
// signature is computed once per series, and each operator runs over
// whole step arrays. Prometheus' engine instead seeks every series at
// every step and gathers and matches its operands again at every step
// (three fifths of high-cpu-1's time). It takes the wrapped engine's
// place in the active-query tracker, its timeout and its lookback
// (Options), and hands a query back (errFallback) where series would
// collide once their names are dropped, where a series' points times
// the steps would pass Options.MaxSamples, and where it meets a native
// histogram.
//
// Invariants:
//  1. A query answers exactly what Prometheus' engine answers on the same
//     storage, bit for bit, with the same annotations: the windows are
//     Prometheus' (left-open (t−R, t], stale markers dropped), the
//     function is Prometheus' own (or its answer, exactly: invariant 6), and the rollups' series reach the
//     aggregation in the order the storage returned them.
//  2. A rollup emits a point at a step only where Prometheus' function
//     returns one; after a run of points it emits a stale marker at the
//     first step without one, so that the vector selector's lookback
//     never carries a value into a step where the function had none.
//  3. A rollup stops when its context is done (the engine's timeout or the
//     client leaving) and fails with promql.ErrTooManySamples when its
//     output would pass Options.MaxSamples.
//  4. Whatever the planner or a rollup cannot do exactly is run by
//     Prometheus' engine unchanged; no query fails because of this
//     package that Prometheus would answer.
//  5. At most Options.Concurrency−1 helper goroutines run at once over all
//     of an Engine's queries; every token taken is returned when its
//     helper ends.
//  6. A window is answered from block metrics only when the summaries of
//     every interval it covers and of the interval starting at its end are
//     of every sample of the series there, none NaN; sums and averages
//     only over integers whose sums stay below 2⁵³, where every partial
//     sum in any order is exact; a minimum or maximum only when the sample
//     the window leaves out of its first interval cannot have been its
//     only extreme, and when the answer is 0, only over integers (no −0).
//     Invariant 1 holds for them bit for bit.
//  7. A vector plan runs only after a place in Options.Tracker (when
//     set) is its own, releases it before a fallback runs, and stops at
//     Options.Timeout with Prometheus' error for it.
package queryeval
