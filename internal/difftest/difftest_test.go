package difftest

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/tsdb/chunks"
	"github.com/stretchr/testify/require"

	"github.com/aerie-db/aerie/internal/api"
)

func hashWorkload(w *Workload) [32]byte {
	h := sha256.New()
	var buf [8]byte
	put := func(v uint64) { binary.LittleEndian.PutUint64(buf[:], v); h.Write(buf[:]) }
	for _, l := range w.Series {
		h.Write(l.Bytes(nil))
	}
	for _, b := range w.Batches {
		put(uint64(b.Group))
		put(uint64(b.T))
		for i, r := range b.Refs {
			put(uint64(r))
			put(math.Float64bits(b.Values[i]))
		}
		fmt.Fprint(h, b.Late, b.TooOld, b.Rollback)
	}
	return [32]byte(h.Sum(nil))
}

func TestGenerateDeterministic(t *testing.T) {
	for _, cfg := range []WorkloadConfig{Small(), Full()} {
		a, b := Generate(cfg), Generate(cfg)
		require.Equal(t, hashWorkload(a), hashWorkload(b))
		require.Equal(t, Expressions(a), Expressions(b))
		cfg.Seed++
		require.NotEqual(t, hashWorkload(a), hashWorkload(Generate(cfg)))
	}
}

func TestWorkloadShape(t *testing.T) {
	check := func(w *Workload, minSeries, minGroups, minSamples int, minSpan time.Duration) {
		t.Helper()
		t.Log(w)
		require.GreaterOrEqual(t, len(w.Series), minSeries)
		require.GreaterOrEqual(t, len(w.Groups), minGroups)
		require.GreaterOrEqual(t, w.Accepted, minSamples)
		require.GreaterOrEqual(t, time.Duration(w.MaxT-w.MinT)*time.Millisecond, minSpan)

		var nan, stale, inf, negInf, negZero, late, tooOld, rollback int
		seriesIn := map[int32]int{}
		for _, b := range w.Batches {
			// One timestamp per row, all series of the row in the row's group.
			for _, r := range b.Refs {
				require.Equal(t, b.Group, w.SeriesGroup[r])
			}
			switch {
			case b.Late:
				late++
			case b.TooOld:
				tooOld++
				require.Less(t, b.T, w.MaxT-w.Config.OOOWindow)
			case b.Rollback:
				rollback++
			}
			for i, v := range b.Values {
				switch {
				case value.IsStaleNaN(v):
					stale++
				case math.IsNaN(v):
					nan++
				case math.IsInf(v, 1):
					inf++
				case math.IsInf(v, -1):
					negInf++
				case v == 0 && math.Signbit(v):
					negZero++
				}
				if !b.TooOld && !b.Rollback {
					seriesIn[b.Refs[i]]++
				}
			}
			// Jitter: timestamps are grid + phase + [0, Jitter].
			if b.Tick >= 0 && !b.Rollback {
				off := b.T - w.Config.Start - int64(b.Tick)*w.Config.Interval
				require.True(t, off >= 0 && off < w.Config.Interval, "row offset %d", off)
			}
		}
		for _, n := range []int{nan, stale, inf, negInf, negZero, late, tooOld, rollback} {
			require.Positive(t, n)
		}
		// Sparse series and churn: some series have far fewer rows than ticks.
		sparse := 0
		for _, n := range seriesIn {
			if n < w.Ticks*2/3 {
				sparse++
			}
		}
		require.Greater(t, sparse, len(w.Groups)*5)
		require.Len(t, seriesIn, len(w.Series))
	}
	check(Generate(Full()), 10_000, 50, 2_000_000, 4*time.Hour-2*time.Minute)
	check(Generate(Small()), 500, 5, 30_000, time.Hour-2*time.Minute)
}

func TestExpressions(t *testing.T) {
	w := Generate(Small())
	ex := Expressions(w)
	require.GreaterOrEqual(t, len(ex), 200)
	seen := map[string]bool{}
	for _, e := range ex {
		require.False(t, seen[e], "duplicate %s", e)
		seen[e] = true
		_, err := parser.ParseExpr(e)
		require.NoError(t, err, e)
	}
	t.Logf("%d expressions", len(ex))
}

func openProm(t testing.TB, w *Workload) Engine {
	e, err := OpenProm(t.TempDir(), w.Config.OOOWindow)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, e.Close()) })
	return e
}

// promVsPromConfig is the workload of TestPromVsProm: Full by default, Small
// with -short or DIFFTEST_SMALL=1. Full costs ~65 s of CPU (2 TSDBs with
// 2.5 M samples each, 14,472 PromQL queries per side); measured wall time on
// the shared 2-core machine: 46 s (load ~5) to 163 s (load ~10). Small: ~4 s.
func promVsPromConfig() WorkloadConfig {
	if testing.Short() || os.Getenv("DIFFTEST_SMALL") == "1" {
		return Small()
	}
	return Full()
}

// TestPromVsProm writes the workload into two independent Prometheus TSDBs:
// they must agree on everything, and both must hold exactly the workload's
// model. This proves the harness, the determinism of the generator and the
// workload's acceptance assumptions (all but the too-old samples accepted).
func TestPromVsProm(t *testing.T) {
	start := time.Now()
	w := Generate(promVsPromConfig())
	t.Logf("workload: %s (generated in %s)", w, time.Since(start).Round(time.Millisecond))
	a, b := openProm(t, w), openProm(t, w)

	var sa, sb Stats
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); sa = w.Write(t, a) }()
	go func() { defer wg.Done(); sb = w.Write(t, b) }()
	wg.Wait()
	t.Logf("written in %s", time.Since(start).Round(time.Millisecond))
	require.True(t, slices.Equal(sa.Outcome, sb.Outcome), "per-sample outcomes differ")
	require.Equal(t, w.Accepted, sa.Accepted, "Prometheus must accept every sample but the too-old ones")
	require.Zero(t, sa.Unexpected)
	require.Equal(t, sa.TooOldSamples, sa.TooOldRejected)

	w.Verify(t, a)
	w.Verify(t, b)
	t.Logf("verified in %s", time.Since(start).Round(time.Millisecond))
	require.Positive(t, CompareSelect(t, w, a, b, 400, 1), "all Selects empty")
	t.Logf("selects compared in %s", time.Since(start).Round(time.Millisecond))
	qs := CompareQueries(t, w, a, b)
	require.Less(t, qs.EmptyExpressions, qs.Expressions/10, "too many expressions return nothing")
	t.Logf("total %s", time.Since(start).Round(time.Millisecond))
}

// recorder captures Errorf calls instead of failing the test.
type recorder struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}
func (r *recorder) Error(args ...any)   { r.Errorf("%s", fmt.Sprint(args...)) }
func (r *recorder) Logf(string, ...any) {}
func (r *recorder) Log(...any)          {}

// corruptQueryable returns the data of a Queryable with one sample of one
// series dropped (drop) or with its lowest value bit flipped.
type corruptQueryable struct {
	storage.Queryable
	lset labels.Labels
	t    int64
	drop bool
}

func (c corruptQueryable) Querier(mint, maxt int64) (storage.Querier, error) {
	q, err := c.Queryable.Querier(mint, maxt)
	return corruptQuerier{q, c}, err
}

type corruptQuerier struct {
	storage.Querier
	c corruptQueryable
}

func (q corruptQuerier) Select(ctx context.Context, sorted bool, h *storage.SelectHints, ms ...*labels.Matcher) storage.SeriesSet {
	return corruptSet{q.Querier.Select(ctx, sorted, h, ms...), q.c}
}

type corruptSet struct {
	storage.SeriesSet
	c corruptQueryable
}

func (s corruptSet) At() storage.Series {
	ser := s.SeriesSet.At()
	if labels.Equal(ser.Labels(), s.c.lset) {
		return corruptSeries{ser, s.c}
	}
	return ser
}

type corruptSeries struct {
	storage.Series
	c corruptQueryable
}

// Iterator reads the whole series and serves a modified copy.
func (s corruptSeries) Iterator(chunkenc.Iterator) chunkenc.Iterator {
	var out []chunks.Sample
	it := s.Series.Iterator(nil)
	for it.Next() == chunkenc.ValFloat {
		t, v := it.At()
		if t == s.c.t {
			if s.c.drop {
				continue
			}
			v = math.Float64frombits(math.Float64bits(v) ^ 1)
		}
		out = append(out, fsample{t, v})
	}
	return storage.NewListSeries(s.Labels(), out).Iterator(nil)
}

type fsample struct {
	t int64
	f float64
}

func (s fsample) T() int64                      { return s.t }
func (s fsample) ST() int64                     { return 0 }
func (s fsample) F() float64                    { return s.f }
func (s fsample) H() *histogram.Histogram       { return nil }
func (s fsample) FH() *histogram.FloatHistogram { return nil }
func (s fsample) Type() chunkenc.ValueType      { return chunkenc.ValFloat }
func (s fsample) Copy() chunks.Sample           { return s }

// TestHarnessCatchesCorruption checks that every comparison fails when one
// sample is dropped or has one bit flipped.
func TestHarnessCatchesCorruption(t *testing.T) {
	w := Generate(Small())
	e := openProm(t, w)
	w.Write(t, e)
	w.Verify(t, e)

	// The row of host-00 at the middle tick is an instant-query time.
	var row Batch
	for _, b := range w.Batches {
		if b.Group == 0 && b.Tick == w.Ticks/2 && !b.Rollback {
			row = b
		}
	}
	require.NotZero(t, row.T)
	cases := map[string]corruptQueryable{
		"drop": {Queryable: e, lset: labels.FromStrings("__name__", "node_load1", "job", "node", "instance", "host-00:9100"), t: row.T, drop: true},
		"flip": {Queryable: e, lset: labels.FromStrings("__name__", "node_cpu_seconds_total", "job", "node", "instance", "host-00:9100", "cpu", "0", "mode", "user"), t: row.T},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			r := &recorder{TB: t}
			w.Verify(r, c)
			require.NotEmpty(t, r.errs, "Verify missed it")
			t.Log("Verify: ", r.errs[0])

			r = &recorder{TB: t}
			CompareSelect(r, w, e, c, 20, 1)
			require.NotEmpty(t, r.errs, "CompareSelect missed it")
			t.Log("CompareSelect: ", r.errs[0])

			r = &recorder{TB: t}
			st := CompareQueries(r, w, e, c)
			require.NotEmpty(t, r.errs, "CompareQueries missed it")
			require.Positive(t, st.Failed)
			t.Logf("CompareQueries: %d expressions failed, e.g. %s", st.Failed, r.errs[0])
		})
	}

	// Sanity: the uncorrupted engine compared with itself passes.
	r := &recorder{TB: t}
	CompareSelect(r, w, e, e, 20, 1)
	require.Empty(t, r.errs)
}

// lenientEngine accepts everything: its appender hides the errors.
type lenientEngine struct{ Engine }

func (l lenientEngine) NewAppender() Appender { return lenientAppender{l.Engine.NewAppender()} }

type lenientAppender struct{ Appender }

func (a lenientAppender) Append(l labels.Labels, t int64, v float64) error {
	_ = a.Appender.Append(l, t, v)
	return nil
}
func (a lenientAppender) Commit() error { _ = a.Appender.Commit(); return nil }

// TestWriteCatchesAcceptedTooOld checks that Write fails when an engine
// accepts the too-old samples without an error.
func TestWriteCatchesAcceptedTooOld(t *testing.T) {
	w := Generate(Small())
	r := &recorder{TB: t}
	st := w.Write(r, lenientEngine{openProm(t, w)})
	require.Zero(t, st.TooOldRejected)
	require.Len(t, r.errs, 1)
	require.True(t, strings.Contains(r.errs[0], "too-old"), r.errs[0])
}

// TestNameRemovalChanges lists every expression of the suite whose answer
// through aerie serve's query engine (delayed name removal on, names kept
// as VictoriaMetrics keeps them where Prometheus' answer collides) differs
// from Prometheus 3's with its defaults, and requires exactly that list.
func TestNameRemovalChanges(t *testing.T) {
	w := Generate(Small())
	e := openProm(t, w)
	w.Write(t, e)
	ng := NewPromQLEngine()
	defer ng.Close()
	got := NameRemovalChanges(w, e.(*PromEngine).DB, api.NameCompatEngine(ng, 0))
	want := map[string]string{
		// Prometheus fails (the three names collide once max_over_time
		// drops them); Aerie keeps the names through max_over_time as
		// VictoriaMetrics does, so max by (__name__) has one group per name.
		`max(max_over_time({__name__=~"node_load(1|5|15)", instance="host-01:9100"}[1m])) by (__name__)`: "error: want vector cannot contain metrics with the same labelset, got <nil>",
		// The same, without the aggregation: the series keep their names.
		`max_over_time({__name__=~"node_load(1|5|15)"}[5m])`: "error: want vector cannot contain metrics with the same labelset, got <nil>",
		// The same under an aggregation by other labels (the TSBS
		// patterns' shape): Prometheus fails before aggregating.
		`avg by (instance) (avg_over_time({__name__=~"node_load1|node_memory_MemAvailable_bytes|go_goroutines"}[1h]))`: "error: want vector cannot contain metrics with the same labelset, got <nil>",
		// label_replace sees the name only if its removal is delayed.
		`max by (metric, instance) (label_replace(max_over_time({__name__=~"node_load1|go_goroutines"}[30m]), "metric", "$1", "__name__", "(.+)"))`: `metric="go_goroutines"`,
		// Delayed name removal: rate marks the name for removal at the end
		// of the query instead of removing it, so label_replace still reads
		// it.
		`label_replace(rate(node_cpu_seconds_total{mode="user"}[5m]), "name", "$1", "__name__", "(.+)")`: `name="node_cpu_seconds_total"`,
		// The name compatibility's own form: label_replace restores the
		// name only while its removal is delayed, so Prometheus' default
		// fails or answers without names where Aerie keeps them.
		`max by (__name__) (label_replace(max_over_time({__name__=~"node_load(1|5|15)", instance="host-01:9100"}[1m]), "__name__", "$1", "__name__", "(.+)"))`:          "error: want vector cannot contain metrics with the same labelset, got <nil>",
		`max by (__name__) (label_replace(max_over_time({__name__=~"node_load(1|5)"}[5m]), "__name__", "$1", "__name__", "(node_load1)"))`:                              "error: want vector cannot contain metrics with the same labelset, got <nil>",
		`label_replace(max_over_time({__name__=~"node_load(1|5|15)"}[5m]), "__name__", "$1", "__name__", "(.+)")`:                                                       "error: want vector cannot contain metrics with the same labelset, got <nil>",
		`sum by (__name__, job) (label_replace(rate({__name__=~"http_requests_total|process_cpu_seconds_total"}[5m]), "__name__", "$1", "__name__", "(.+)"))`:           `got {__name__="http_requests_total", job="app"}`,
		`avg by (__name__, instance) (label_replace(avg_over_time({__name__=~"node_load1|go_goroutines|node_weird_value"}[1h]), "__name__", "$1", "__name__", "(.+)"))`: `got {__name__="go_goroutines", instance="app-00:8080"}`,
		// Delayed name removal: count by (__name__) sees two names, which
		// collide once removed at the end (count_over_time keeps no name
		// in VictoriaMetrics either, so the compatibility does not retry).
		`count by (__name__) (count_over_time({__name__=~"node_load1|node_systemd_unit_state"}[10m]))`: "error: want <nil>, got vector cannot contain metrics with the same labelset",
	}
	for expr, diff := range got {
		why, ok := want[expr]
		require.True(t, ok, "unlisted change: %s\n\t%s", expr, diff)
		require.Contains(t, diff, why, expr)
	}
	for expr := range want {
		require.Contains(t, got, expr, "listed change did not happen")
	}
}
