// Package difftest is a differential-test harness: it writes one
// deterministic, Prometheus-like workload into two storage engines and checks
// that they hold the same data, answer the same storage.Querier calls and
// give bit-identical PromQL results.
//
// It is a normal (non-test) package so that tests in other packages can use
// it, but it is meant to be imported only by tests. It depends on the
// testing package.
//
// Typical use (see difftest_test.go):
//
//	w := difftest.Generate(difftest.Full())
//	want, _ := difftest.OpenProm(t.TempDir(), w.Config.OOOWindow)
//	got := myEngine(...) // anything implementing difftest.Engine
//	w.Write(t, want)
//	w.Write(t, got)
//	w.Verify(t, got)                        // data == the workload's model
//	difftest.CompareSelect(t, w, want, got, 500, 1)
//	difftest.CompareQueries(t, w, want, got)
//
// The workload models scrapes: all series of one target share one timestamp
// per row, each row is written as one batch with one Commit. It contains
// jitter, sparse series, NaN, ±Inf, -0, stale markers, counter resets, late
// (out-of-order) rows inside the OOO window, series and target churn,
// rolled-back batches and, at the end, batches of too-old samples that every
// engine must reject.
package difftest
