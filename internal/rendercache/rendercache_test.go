package rendercache

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"go.uber.org/goleak"

	"github.com/aerie-db/aerie/internal/cache"
	"github.com/aerie-db/aerie/internal/graphite"
	"github.com/aerie-db/aerie/internal/graphite/archive"
	"github.com/aerie-db/aerie/internal/rollup"
	"github.com/aerie-db/aerie/internal/tsdb"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// env is a raw engine, its rollup levels, and two render APIs over them:
// one straight on the rollup.Manager, one through the render cache. The
// clock is fixed and moved by the tests.
type env struct {
	t      testing.TB
	now    time.Time
	raw    *tsdb.DB
	m      *rollup.Manager
	c      *cache.Cache
	rc     *Store
	direct http.Handler
	cached http.Handler
}

const schemas = "[app]\npattern = ^app\\.\nretentions = 10s:6h,1m:7d,10m:30d\n"

func newEnv(t testing.TB, now time.Time, agg string) *env {
	s, err := rollup.ParseSchemasConf(strings.NewReader(schemas), "schemas")
	if err != nil {
		t.Fatal(err)
	}
	return newEnvSchemas(t, now, s, agg)
}

func newEnvSchemas(t testing.TB, now time.Time, s []rollup.Schema, agg string) *env {
	e := &env{t: t, now: now}
	dir := t.TempDir()
	clock := func() time.Time { return e.now }
	a, err := rollup.ParseAggregationConf(strings.NewReader(agg), "aggs")
	if err != nil {
		t.Fatal(err)
	}
	rules := &rollup.Rules{Schemas: s, Aggregations: a}
	ret := rollup.NewRetainer(rules, clock)
	if e.raw, err = tsdb.Open(filepath.Join(dir, "raw"), &tsdb.Options{FlushCheckInterval: -1, SeriesRetention: ret.Cutoff, OnBackfill: ret.Backfilled}); err != nil {
		t.Fatal(err)
	}
	if e.m, err = rollup.Open(filepath.Join(dir, "rollup"), e.raw, rules, ret, rollup.Options{Interval: -1, Now: clock, Engine: tsdb.Options{FlushCheckInterval: -1}}); err != nil {
		t.Fatal(err)
	}
	if e.c, err = cache.Open(cache.Options{Path: filepath.Join(dir, "render.cache"), Size: 16 << 20, PartialMinBytes: -1}); err != nil {
		t.Fatal(err)
	}
	if e.rc, err = New(e.m, e.c, Options{Now: clock}); err != nil {
		t.Fatal(err)
	}
	e.raw.SetLateObserver(tsdb.LateObservers{e.rc})
	handler := func(st archive.Store) http.Handler {
		mux := http.NewServeMux()
		graphite.New(st, graphite.Options{Now: clock}).Register(mux, func(_ string, h http.Handler) http.Handler { return h })
		return mux
	}
	e.direct, e.cached = handler(e.m), handler(e.rc.Graphite())
	t.Cleanup(func() {
		e.raw.SetLateObserver(nil)
		for _, err := range []error{e.c.Close(), e.m.Close(), e.raw.Close()} {
			if err != nil {
				t.Error(err)
			}
		}
	})
	return e
}

const aggs = "[avg]\npattern = .*\nxFilesFactor = 0.5\n"

// write appends every 10 s of [from, to) of series name, the value a
// function of the time, skipping the gaps; one commit.
func (e *env) write(name string, from, to time.Time, val func(ts int64) float64, gaps ...[2]time.Time) {
	e.t.Helper()
	app := e.raw.Appender(context.Background())
	lset := labels.FromStrings(labels.MetricName, name)
	var ref uint64
next:
	for ts := from.UnixMilli(); ts < to.UnixMilli(); ts += 10_000 {
		for _, g := range gaps {
			if ts >= g[0].UnixMilli() && ts < g[1].UnixMilli() {
				continue next
			}
		}
		r, err := app.Append(0, lset, ts, val(ts))
		if err != nil {
			e.t.Fatal(err)
		}
		ref = uint64(r)
	}
	_ = ref
	if err := app.Commit(); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) rollup() {
	e.t.Helper()
	if err := e.m.RunOnce(context.Background()); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) get(h http.Handler, target, from, until string, extra string) string {
	e.t.Helper()
	q := url.Values{"target": {target}, "from": {from}, "until": {until}, "format": {"json"}}
	u := "/render?" + q.Encode() + extra
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", u, nil))
	body, _ := io.ReadAll(w.Result().Body)
	if w.Code != 200 {
		e.t.Fatalf("%s: %d %s", u, w.Code, body)
	}
	return string(body)
}

// render renders through both APIs and fails unless the answers are
// equal; it returns the answer.
func (e *env) render(target, from, until, extra string) string {
	e.t.Helper()
	want := e.get(e.direct, target, from, until, extra)
	got := e.get(e.cached, target, from, until, extra)
	if got != want {
		e.t.Fatalf("render %s from=%s until=%s%s at %v:\n cached %.600s\n direct %.600s", target, from, until, extra, e.now.Unix(), got, want)
	}
	return got
}

// samePoints compares Points through the cache and straight from the
// Manager, values bit for bit.
func (e *env) samePoints(lset labels.Labels, from, until int64) {
	e.t.Helper()
	ctx := context.Background()
	now := e.now.Unix()
	want, err := e.m.Points(ctx, lset, from, until, now)
	if err != nil {
		e.t.Fatal(err)
	}
	got, err := e.rc.Points(ctx, lset, from, until, now)
	if err != nil {
		e.t.Fatal(err)
	}
	if got.Start != want.Start || got.Step != want.Step || got.Method != want.Method || got.XFilesFactor != want.XFilesFactor || len(got.Values) != len(want.Values) || (got.Values == nil) != (want.Values == nil) {
		e.t.Fatalf("%s [%d, %d) now %d: got grid %d+%d×%d %s %v, want %d+%d×%d %s %v", lset, from, until, now,
			got.Start, got.Step, len(got.Values), got.Method, got.XFilesFactor, want.Start, want.Step, len(want.Values), want.Method, want.XFilesFactor)
	}
	for i := range got.Values {
		if math.Float64bits(got.Values[i]) != math.Float64bits(want.Values[i]) {
			e.t.Fatalf("%s [%d, %d) now %d: bucket %d (%d): got %v, want %v", lset, from, until, now, i, got.Start+int64(i)*got.Step, got.Values[i], want.Values[i])
		}
	}
}

var t0 = time.Unix(1_700_000_000, 0).Truncate(time.Hour)

func val(ts int64) float64 { return float64(ts/1000%7919) / 10 }

// TestRenderEqual: renders of targets with functions, refreshed as a
// dashboard does (the clock and the range move 30 s at a time), answer
// the same through the cache as without it, at the raw archive (ranges
// within 6 h) and at the rollup levels (1m for a day, 10m for 10 days);
// and Points through the cache equal the Manager's bit for bit over
// ranges that start, end and shift off the grids.
func TestRenderEqual(t *testing.T) {
	e := newEnv(t, t0, aggs+"[sum]\npattern = \\.count$\nxFilesFactor = 0\naggregationMethod = sum\n")
	gap := [2]time.Time{t0.Add(-26 * time.Hour), t0.Add(-25 * time.Hour)}
	e.write("app.a", t0.Add(-11*24*time.Hour), t0.Add(20*time.Minute), val, gap)
	e.write("app.b", t0.Add(-2*24*time.Hour), t0.Add(20*time.Minute), func(ts int64) float64 { return -val(ts) })
	e.write("app.x.count", t0.Add(-30*time.Hour), t0.Add(20*time.Minute), func(int64) float64 { return 1 }, [2]time.Time{t0.Add(-3 * time.Hour), t0.Add(-2 * time.Hour)})
	e.rollup()
	targets := []string{
		"app.*",
		"movingAverage(app.a,10)",
		"sumSeries(app.*)",
		"timeShift(app.b,'1h')",
		"summarize(app.x.count,'10min','sum')",
		"nonNegativeDerivative(app.a)",
		"keepLastValue(app.x.count)",
	}
	ranges := []struct{ from, until, extra string }{
		{"-3h", "now", ""},
		{"-6h", "now", "&maxDataPoints=300"},
		{"-2h", "-1h", ""},
		{"-1d", "now", ""},
		{"-1d", "now", "&maxDataPoints=500"},
		{"-10d", "-1h", ""},
	}
	for refresh := 0; refresh < 4; refresh++ {
		for _, r := range ranges {
			for _, target := range targets {
				e.render(target, r.from, r.until, r.extra)
			}
		}
		e.now = e.now.Add(30 * time.Second)
	}
	st := e.rc.Stats()
	if st.Hits == 0 || st.Partials == 0 || st.Misses == 0 {
		t.Errorf("stats %+v: want hits, partial hits and misses", st)
	}
	// Points over ranges off the grids, each asked twice (the second from
	// the cache), through the refreshes.
	lsets := []labels.Labels{labels.FromStrings(labels.MetricName, "app.a"), labels.FromStrings(labels.MetricName, "app.x.count")}
	for refresh := 0; refresh < 3; refresh++ {
		now := e.now.Unix()
		for _, lset := range lsets {
			for _, r := range [][2]int64{
				{now - 3*3600 + 7, now}, {now - 3*3600 - 3, now - 1800 + 1}, {now - 2*3600, now - 2*3600 + 5},
				{now - 30*3600 + 11, now - 3600}, {now - 26*3600 - 59, now - 24*3600 + 1}, {now - 9*24*3600, now},
				{now + 10, now + 100}, {now - 40*24*3600, now - 39*24*3600},
			} {
				e.samePoints(lset, r[0], r[1])
				e.samePoints(lset, r[0], r[1])
			}
		}
		e.now = e.now.Add(17 * time.Second)
	}
}

// TestStaleness: a backfilled sample and a deletion in a cached range
// change the next render, through the cache as without it, at the raw
// archive (at once) and at a level (once the level has computed the range
// again: until then the level, and so the render, keeps its buckets).
func TestStaleness(t *testing.T) {
	gap := [2]time.Time{t0.Add(-26 * time.Hour), t0.Add(-25 * time.Hour)}
	cases := []struct {
		name        string
		from, until string
		change      func(e *env)
		rollup      bool // the change shows once the levels computed it again
	}{
		{"raw backfill", "-3h", "now", func(e *env) {
			e.write("app.a", t0.Add(-2*time.Hour+5*time.Second), t0.Add(-2*time.Hour+10*time.Second), func(int64) float64 { return 1e6 })
		}, false},
		{"raw backfill in a gap", "-6h", "-1h", func(e *env) {
			e.write("app.b", t0.Add(-4*time.Hour), t0.Add(-4*time.Hour+time.Minute), func(int64) float64 { return 42 })
		}, false},
		{"raw deletion", "-3h", "now", func(e *env) {
			if err := e.raw.Delete(context.Background(), t0.Add(-2*time.Hour).UnixMilli(), t0.Add(-90*time.Minute).UnixMilli(),
				labels.MustNewMatcher(labels.MatchRegexp, labels.MetricName, "app\\.(a|c)")); err != nil {
				e.t.Fatal(err)
			}
		}, false},
		{"level backfill in a gap", "-2d", "-2h", func(e *env) {
			e.write("app.a", gap[0].Add(10*time.Minute), gap[0].Add(20*time.Minute), func(int64) float64 { return 7 })
		}, true},
		{"level, a new series' history", "-2d", "-2h", func(e *env) {
			e.write("app.c", t0.Add(-30*time.Hour), t0.Add(-28*time.Hour), func(int64) float64 { return 3 })
		}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, t0, aggs)
			e.write("app.a", t0.Add(-3*24*time.Hour), t0.Add(20*time.Minute), val, gap)
			e.write("app.b", t0.Add(-3*24*time.Hour), t0.Add(20*time.Minute), val, [2]time.Time{t0.Add(-5 * time.Hour), t0.Add(-3 * time.Hour)})
			e.rollup()
			const target = "app.*"
			before := e.render(target, tc.from, tc.until, "")
			if again := e.render(target, tc.from, tc.until, ""); again != before {
				t.Fatal("a second render differs")
			}
			hits := e.rc.Stats().Hits
			if hits == 0 {
				t.Fatalf("stats %+v: the second render hit nothing", e.rc.Stats())
			}
			tc.change(e)
			mid := e.render(target, tc.from, tc.until, "")
			if tc.rollup {
				e.rollup()
				if after := e.render(target, tc.from, tc.until, ""); after == mid {
					t.Fatal("the render did not change when the level was computed again")
				}
			} else if mid == before {
				t.Fatal("the render did not change")
			}
			after := e.render(target, tc.from, tc.until, "")
			if after == before {
				t.Fatal("the render did not change")
			}
			if e.render(target, tc.from, tc.until, "") != after {
				t.Fatal("a render after the change differs from the first")
			}
		})
	}
}

// TestCounters: hits, partial hits, misses and uncached fetches of one
// series as its range and the clock move.
func TestCounters(t *testing.T) {
	e := newEnv(t, t0, aggs)
	lset := labels.FromStrings(labels.MetricName, "app.a")
	e.write("app.a", t0.Add(-3*24*time.Hour), t0.Add(20*time.Minute), val)
	e.rollup()
	now := t0.Unix()
	type step struct {
		name        string
		from, until int64
		advance     time.Duration // the clock, before the fetch
		write       bool          // a late sample of the series, before the fetch
		want        Stats         // the counters' moves
	}
	for _, s := range []step{
		// t0 is a multiple of the 10 s grid's chunks (160 s) and of the
		// 1m grid's (960 s); a grid starts a step after from, so the head
		// up to the first whole chunk is read from the store.
		{name: "first", from: now - 3*3600, until: now, want: Stats{Misses: 1, Reads: 1}},
		{name: "again", from: now - 3*3600, until: now, want: Stats{Hits: 1, Reads: 2}}, // the head, the fresh tail
		{name: "shifted 30s: in the same chunk", from: now - 3*3600 + 30, until: now + 30, advance: 30 * time.Second, want: Stats{Hits: 1, Reads: 2}},
		{name: "shifted 3 min: a new chunk", from: now - 3*3600 + 180, until: now + 180, advance: 150 * time.Second, want: Stats{Partials: 1, Reads: 2}},
		{name: "inside", from: now - 2*3600, until: now - 3600, want: Stats{Hits: 1, Reads: 2}},
		{name: "inside, on chunks", from: now - 2*3600 - 10, until: now - 3530, want: Stats{Hits: 1}},
		{name: "earlier head", from: now - 4*3600, until: now - 3600, want: Stats{Partials: 1, Reads: 2}},
		{name: "fresh only", from: now - 300, until: now, want: Stats{Uncached: 1, Reads: 1}},
		{name: "level", from: now - 2*24*3600, until: now - 24*3600, want: Stats{Misses: 1, Reads: 1}},
		{name: "level again", from: now - 2*24*3600, until: now - 24*3600, want: Stats{Hits: 1, Reads: 2}},
		{name: "after a late write", from: now - 2*3600, until: now - 3600, write: true, want: Stats{Misses: 1, Reads: 1, Invalidations: 2}},
		{name: "level after a late write", from: now - 2*24*3600, until: now - 24*3600, want: Stats{Misses: 1, Reads: 1}},
	} {
		before := e.rc.Stats()
		if s.advance > 0 {
			e.now = e.now.Add(s.advance)
		}
		if s.write {
			e.write("app.a", t0.Add(-90*time.Minute+5*time.Second), t0.Add(-90*time.Minute+6*time.Second), func(int64) float64 { return 1 })
		}
		e.samePoints(lset, s.from, s.until)
		after := e.rc.Stats()
		got := Stats{
			Hits: after.Hits - before.Hits, Partials: after.Partials - before.Partials, Misses: after.Misses - before.Misses,
			Uncached: after.Uncached - before.Uncached, Reads: after.Reads - before.Reads, Invalidations: after.Invalidations - before.Invalidations,
		}
		if got != s.want {
			t.Errorf("%s: counters moved %+v, want %+v", s.name, got, s.want)
		}
	}
}

// TestGraphiteView: the render API's view of the Store keeps the
// Manager's tag index (graphite.TagIndex).
func TestGraphiteView(t *testing.T) {
	e := newEnv(t, t0, aggs)
	if _, ok := e.rc.Graphite().(graphite.TagIndex); !ok {
		t.Fatal("the tag index is lost")
	}
}

// TestNotGridStore: a store that cannot tell its grids is refused.
func TestNotGridStore(t *testing.T) {
	if _, err := New(plainStore{}, nil, Options{}); err == nil || !strings.Contains(err.Error(), "GridStore") {
		t.Fatalf("err %v", err)
	}
}

type plainStore struct{}

func (plainStore) Series(context.Context, int64, int64, ...*labels.Matcher) ([]labels.Labels, error) {
	return nil, nil
}

func (plainStore) Points(context.Context, labels.Labels, int64, int64, int64) (archive.Points, error) {
	return archive.Points{}, fmt.Errorf("no")
}

// TestLevelTail: before its first pass a level answers nulls; after it,
// its buckets the level has not reached are computed
// from raw data at read time, with the xFilesFactor; once a pass reaches
// them, those already older than the raw archive are stored without it
// (rollup's history rule), so a sparse series' bucket goes from null to
// a value with no write in between. The cache must not have kept the
// nulls.
func TestLevelTail(t *testing.T) {
	e := newEnv(t, t0, aggs)
	sparse := func(from, to time.Time) { // a sample a minute: 1 of 6 slots
		app := e.raw.Appender(context.Background())
		for ts := from.UnixMilli(); ts < to.UnixMilli(); ts += 60_000 {
			if _, err := app.Append(0, labels.FromStrings(labels.MetricName, "app.sparse"), ts, 1); err != nil {
				t.Fatal(err)
			}
		}
		if err := app.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	sparse(t0.Add(-3*24*time.Hour), t0.Add(-20*time.Hour))
	// before the levels' first pass, a level answers nulls
	first := e.render("app.sparse", "-3d", "-2d", "")
	e.render("app.sparse", "-3d", "-2d", "")
	e.rollup()
	if e.render("app.sparse", "-3d", "-2d", "") == first {
		t.Fatal("the levels' first pass changed nothing: the test needs another setup")
	}
	sparse(t0.Add(-20*time.Hour), t0.Add(20*time.Minute))
	const target, from, until = "app.sparse", "-2d", "-8h"
	before := e.render(target, from, until, "")
	e.render(target, from, until, "")
	e.rollup()
	if after := e.render(target, from, until, ""); after == before {
		t.Fatal("the level's pass changed nothing: the test needs another setup")
	}
}

// TestConcurrent: fetches through the cache run while late samples are
// written into the ranges they cache; once the writes are acknowledged,
// every fetch through the cache equals the store's (a fetch that read the
// store during a write must not have stored what it read).
func TestConcurrent(t *testing.T) {
	e := newEnv(t, t0, aggs)
	var lsets []labels.Labels
	for i := range 4 {
		name := fmt.Sprintf("app.c%d", i)
		lsets = append(lsets, labels.FromStrings(labels.MetricName, name))
		e.write(name, t0.Add(-5*time.Hour), t0.Add(20*time.Minute), val)
	}
	now := t0.Unix()
	ranges := [][2]int64{{now - 4*3600, now}, {now - 3*3600 + 70, now - 3600}, {now - 2*3600, now - 1800}}
	ctx := context.Background()
	stop := make(chan struct{})
	errs := make(chan error, 4)
	for g := range 3 {
		go func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					errs <- nil
					return
				default:
				}
				r := ranges[(i+g)%len(ranges)]
				if _, err := e.rc.Points(ctx, lsets[(i*7+g)%len(lsets)], r[0], r[1], now); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for i := range 200 {
		lset := lsets[i%len(lsets)]
		ts := t0.Add(-4*time.Hour).UnixMilli() + int64(i)*61_003 // between the 10 s samples
		app := e.raw.Appender(ctx)
		if _, err := app.Append(0, lset, ts, float64(1000+i)); err != nil {
			t.Fatal(err)
		}
		if err := app.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	for range 3 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for _, lset := range lsets {
		for _, r := range ranges {
			e.samePoints(lset, r[0], r[1])
		}
	}
	if st := e.rc.Stats(); st.Invalidations == 0 || st.Hits+st.Partials == 0 {
		t.Errorf("stats %+v: want hits and invalidations", st)
	}
}

// TestRetentionEdge: with a heartbeat longer than the step, a raw bucket
// reads samples before its own start; as time passes the raw archive's
// retention hides them (at read time), and a bucket cached when they
// were there would answer a held value the store no longer has. Buckets
// within a heartbeat of the retention are not cached.
func TestRetentionEdge(t *testing.T) {
	sch, err := rollup.NewSchema("app", "^app\\.", "10s:2h,1m:1d", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvSchemas(t, t0, []rollup.Schema{sch}, aggs)
	app := e.raw.Appender(context.Background())
	for ts := t0.Add(-3 * time.Hour).UnixMilli(); ts < t0.Add(20*time.Minute).UnixMilli(); ts += 60_000 {
		if _, err := app.Append(0, labels.FromStrings(labels.MetricName, "app.minutely"), ts, 1); err != nil {
			t.Fatal(err)
		}
	}
	if err := app.Commit(); err != nil {
		t.Fatal(err)
	}
	e.rollup() // the level's progress no longer holds the raw retention back
	// c starts a chunk (160 s) of the 10 s grid; its first bucket holds
	// the sample of c − 20 s, which the retention (now − 2 h) hides once
	// now passes t0 + 300 s.
	c := t0.Unix() - 6880
	before := e.render("app.minutely", "-2h", "now", "")
	e.now = t0.Add(310 * time.Second)
	after := e.render("app.minutely", "-2h", "now", "")
	if null := fmt.Sprintf("[null, %d]", c); strings.Contains(before, null) || !strings.Contains(after, null) {
		t.Fatalf("the bucket at %d should hold 1 and then be null:\n %.300s\n %.300s", c, before, after)
	}
}
