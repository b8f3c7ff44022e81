package rollup

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"go.uber.org/goleak"

	"github.com/aerie-db/aerie/internal/tsdb"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// env is a raw engine with rules and a Manager over it, at a fixed clock.
type env struct {
	t     *testing.T
	dir   string
	now   time.Time
	rules *Rules
	ret   *Retainer
	raw   *tsdb.DB
	m     *Manager
}

func testRules(t *testing.T) *Rules {
	s, err := ParseSchemasConf(strings.NewReader("[app]\npattern = ^app\\.\nretentions = 10s:1h,1m:1d,10m:30d\n"), "schemas")
	if err != nil {
		t.Fatal(err)
	}
	a, err := ParseAggregationConf(strings.NewReader("[sum]\npattern = \\.count$\nxFilesFactor = 0\naggregationMethod = sum\n[avg]\npattern = .*\nxFilesFactor = 0.5\n"), "aggs")
	if err != nil {
		t.Fatal(err)
	}
	return &Rules{Schemas: s, Aggregations: a}
}

func newEnv(t *testing.T, dir string, now time.Time) *env {
	e := &env{t: t, dir: dir, now: now, rules: testRules(t)}
	clock := func() time.Time { return e.now }
	e.ret = NewRetainer(e.rules, clock)
	var err error
	e.raw, err = tsdb.Open(dir+"/raw", &tsdb.Options{FlushCheckInterval: -1, SeriesRetention: e.ret.Cutoff, OnBackfill: e.ret.Backfilled})
	if err != nil {
		t.Fatal(err)
	}
	e.m, err = Open(dir+"/rollup", e.raw, e.rules, e.ret, Options{Interval: -1, Now: clock, Engine: tsdb.Options{FlushCheckInterval: -1}})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *env) close() {
	if err := e.m.Close(); err != nil {
		e.t.Error(err)
	}
	if err := e.raw.Close(); err != nil {
		e.t.Error(err)
	}
}

func (e *env) samples(db storage.Queryable, name string, mint, maxt int64) ([]int64, []float64) {
	q, err := db.Querier(mint, maxt)
	if err != nil {
		e.t.Fatal(err)
	}
	defer q.Close()
	ss := q.Select(context.Background(), false, nil, labels.MustNewMatcher(labels.MatchEqual, labels.MetricName, name))
	var ts []int64
	var vs []float64
	for ss.Next() {
		it := ss.At().Iterator(nil)
		for it.Next() == chunkenc.ValFloat {
			t, v := it.At()
			ts, vs = append(ts, t), append(vs, v)
		}
	}
	if err := ss.Err(); err != nil {
		e.t.Fatal(err)
	}
	return ts, vs
}

// TestManager writes 6 h of 10 s data for app series (value = its time
// in seconds, and 1 for the .count series), rolls up and checks every
// level bucket against its formula, the archives /render would read, and
// the raw retention.
func TestManager(t *testing.T) {
	dir := t.TempDir()
	now := time.Unix(1_700_000_000, 0).Truncate(time.Hour)
	e := newEnv(t, dir, now)
	start := now.Add(-6 * time.Hour).UnixMilli()
	app := e.raw.Appender(context.Background())
	for ts := start; ts < now.UnixMilli(); ts += 10_000 {
		if (ts/10_000)%30 == 7 {
			continue // one missing point in every 5 minutes
		}
		for _, s := range []struct {
			name string
			v    float64
		}{{"app.a.value", float64(ts / 1000)}, {"app.a.count", 1}, {"other.x", 3}} {
			if _, err := app.Append(0, labels.FromStrings(labels.MetricName, s.name), ts, s.v); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := app.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := e.m.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Settled: the head's newest time (now - 10 s) minus the 1 h
	// out-of-order window, on each level's grid.
	settled := now.UnixMilli() - 10_000 - 3600_000
	for _, c := range []struct {
		level string
		step  int64
	}{{"1m", 60_000}, {"10m", 600_000}} {
		l := e.m.Level(c.level)
		if l == nil {
			t.Fatalf("no level %s", c.level)
		}
		done := e.m.Done(c.level)
		if want := settled / c.step * c.step; done != want {
			t.Fatalf("level %s done %d, want %d", c.level, done, want)
		}
		ts, vs := e.samples(l.DB, "app.a.value", math.MinInt64, math.MaxInt64)
		if want := int((done - start) / c.step); len(ts) != want {
			t.Fatalf("level %s: %d buckets, want %d", c.level, len(ts), want)
		}
		for i, bt := range ts {
			// The mean of the bucket's known 10 s slots.
			var sum, n float64
			for x := bt; x < bt+c.step; x += 10_000 {
				if (x/10_000)%30 != 7 {
					sum += float64(x / 1000)
					n++
				}
			}
			if vs[i] != sum/n {
				t.Fatalf("level %s bucket %d: %v, want %v", c.level, bt, vs[i], sum/n)
			}
		}
		ts, vs = e.samples(l.DB, "app.a.count", math.MinInt64, math.MaxInt64)
		for i, bt := range ts {
			n := c.step / 10_000
			for x := bt; x < bt+c.step; x += 10_000 {
				if (x/10_000)%30 == 7 {
					n--
				}
			}
			if vs[i] != float64(n) {
				t.Fatalf("level %s count bucket %d: %v, want %d", c.level, bt, vs[i], n)
			}
		}
		if ts, _ := e.samples(l.DB, "other.x", math.MinInt64, math.MaxInt64); len(ts) != 0 {
			t.Fatalf("level %s holds other.x, whose default schema has no rollup", c.level)
		}
	}

	// Archives as graphite-web picks them.
	ctx := context.Background()
	sec := now.Unix()
	lset := labels.FromStrings(labels.MetricName, "app.a.value")
	p, err := e.m.Points(ctx, lset, sec-1800, sec, sec)
	if err != nil {
		t.Fatal(err)
	}
	if p.Step != 10 || p.Start != sec-1800+10 || len(p.Values) != 180 {
		t.Fatalf("raw archive: start %d step %d n %d", p.Start, p.Step, len(p.Values))
	}
	for i, v := range p.Values {
		x := p.Start + int64(i)*10
		switch {
		case x >= sec:
			if !math.IsNaN(v) {
				t.Fatalf("raw %d: %v after the data", x, v)
			}
		case (x/10)%30 == 7:
			if !math.IsNaN(v) {
				t.Fatalf("raw %d: %v in a gap", x, v)
			}
		case v != float64(x):
			t.Fatalf("raw %d: %v", x, v)
		}
	}
	p, err = e.m.Points(ctx, lset, sec-5*3600, sec-4*3600, sec)
	if err != nil {
		t.Fatal(err)
	}
	if p.Step != 60 || len(p.Values) != 60 || p.Method != "average" || p.XFilesFactor != 0.5 {
		t.Fatalf("1m archive: %+v", p)
	}
	ts, vs := e.samples(e.m.Level("1m").DB, "app.a.value", (sec-5*3600+60)*1000, (sec-4*3600+60)*1000-1)
	for i := range p.Values {
		if p.Values[i] != vs[i] || ts[i] != (p.Start+int64(i)*60)*1000 {
			t.Fatalf("1m archive point %d: %v at %d, level has %v at %d", i, p.Values[i], p.Start+int64(i)*60, vs[i], ts[i])
		}
	}
	ss, err := e.m.Series(ctx, math.MinInt64, math.MaxInt64, labels.MustNewMatcher(labels.MatchRegexp, labels.MetricName, "app\\..*"))
	if err != nil || len(ss) != 2 {
		t.Fatalf("series %v %v", ss, err)
	}

	// Raw retention: app series keep 1 h of raw data, and what the
	// coarsest level has not consumed yet; other.x (default schema) keeps
	// everything.
	ts, _ = e.samples(e.raw, "app.a.value", math.MinInt64, math.MaxInt64)
	if cut := min(now.Add(-time.Hour).UnixMilli(), e.m.Done("10m")); ts[0] != cut {
		t.Fatalf("raw app.a.value starts at %d, want %d", ts[0], cut)
	}
	if ts, _ := e.samples(e.raw, "other.x", math.MinInt64, math.MaxInt64); ts[0] != start {
		t.Fatalf("raw other.x starts at %d, want %d", ts[0], start)
	}

	// Blocks wholly past a series' cutoff are rewritten without it.
	if err := e.raw.FlushHead(); err != nil {
		t.Fatal(err)
	}
	samplesIn := func() (n int64) {
		for _, b := range e.raw.Blocks() {
			n += int64(b.Stats.Samples)
		}
		return n
	}
	before := samplesIn()
	n, err := e.raw.ApplySeriesRetention()
	if err != nil || n == 0 {
		t.Fatalf("ApplySeriesRetention: %d blocks, %v", n, err)
	}
	if after := samplesIn(); after >= before {
		t.Fatalf("blocks hold %d samples after the series retention, %d before", after, before)
	}
	ts2, _ := e.samples(e.raw, "app.a.value", math.MinInt64, math.MaxInt64)
	if ts2[0] != ts[0] || len(ts2) != len(ts) {
		t.Fatalf("raw app.a.value after rewriting blocks: %d samples from %d, want %d from %d", len(ts2), ts2[0], len(ts), ts[0])
	}
	if n, err := e.raw.ApplySeriesRetention(); err != nil || n != 0 {
		t.Fatalf("second ApplySeriesRetention: %d blocks, %v", n, err)
	}

	// Restart: the state survives; another pass writes nothing new.
	e.close()
	e = newEnv(t, dir, now)
	defer e.close()
	if d := e.m.Done("1m"); d != settled/60_000*60_000 {
		t.Fatalf("after restart: done %d", d)
	}
	if err := e.m.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestTagIndex(t *testing.T) {
	e := newEnv(t, t.TempDir(), time.Unix(1_700_000_000, 0))
	defer e.close()
	app := e.raw.Appender(context.Background())
	for _, l := range []labels.Labels{
		labels.FromStrings(labels.MetricName, "disk.used", "dc", "x", "host", "a"),
		labels.FromStrings(labels.MetricName, "disk.used", "dc", "y", "host", "b"),
		labels.FromStrings(labels.MetricName, "app.c.count"),
	} {
		if _, err := app.Append(0, l, 1_699_999_000_000, 1); err != nil {
			t.Fatal(err)
		}
	}
	if err := app.Commit(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	names, err := e.m.LabelNames(ctx, labels.MustNewMatcher(labels.MatchEqual, labels.MetricName, "disk.used"))
	if err != nil || strings.Join(names, ",") != "__name__,dc,host" {
		t.Fatalf("names %v %v", names, err)
	}
	vals, err := e.m.LabelValues(ctx, labels.MetricName)
	if err != nil || strings.Join(vals, ",") != "app.c.count,disk.used" {
		t.Fatalf("values %v %v", vals, err)
	}
}

// TestBackfillRolledUp: samples written below the head into ranges a level
// already covers (history sent late, a replay) are rolled up at the next
// pass, even across a restart; raw data there are kept until then.
func TestBackfillRolledUp(t *testing.T) {
	dir := t.TempDir()
	now := time.Unix(1_700_000_000, 0).Truncate(time.Hour)
	e := newEnv(t, dir, now)
	ctx := context.Background()
	write := func(name string, from, to time.Time) {
		t.Helper()
		app := e.raw.Appender(ctx)
		for ts := from.UnixMilli(); ts < to.UnixMilli(); ts += 10_000 {
			if _, err := app.Append(0, labels.FromStrings(labels.MetricName, name), ts, float64(ts/1000)); err != nil {
				t.Fatal(err)
			}
		}
		if err := app.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	write("app.live", now.Add(-6*time.Hour), now)
	if err := e.m.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	// Five hours ago, long rolled up: a new series, and the live one's
	// history goes to the backfill.
	old, oldEnd := now.Add(-5*time.Hour), now.Add(-4*time.Hour)
	write("app.late", old, oldEnd)
	if e.m.Done("1m") <= oldEnd.UnixMilli() {
		t.Fatalf("1m done %d: the late range should be rolled up already", e.m.Done("1m"))
	}
	if ts, _ := e.samples(e.raw, "app.late", math.MinInt64, math.MaxInt64); len(ts) != 360 {
		t.Fatalf("raw app.late: %d samples kept, want 360 (not rolled up yet)", len(ts))
	}
	e.close() // the range to redo is in the state file
	e = newEnv(t, dir, now)
	defer e.close()
	if err := e.m.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	ts, vs := e.samples(e.m.Level("1m").DB, "app.late", math.MinInt64, math.MaxInt64)
	if len(ts) != 60 {
		t.Fatalf("1m level holds %d buckets of app.late, want 60", len(ts))
	}
	for i := range ts {
		if want := float64(ts[i]/1000 + 25); vs[i] != want {
			t.Fatalf("1m app.late at %d: %v, want %v", ts[i], vs[i], want)
		}
	}
	if ts, _ := e.samples(e.m.Level("10m").DB, "app.late", math.MinInt64, math.MaxInt64); len(ts) != 6 {
		t.Fatalf("10m level holds %d buckets of app.late, want 6", len(ts))
	}
	e.m.stMu.Lock()
	n := len(e.m.st.dirty)
	e.m.stMu.Unlock()
	if n != 0 {
		t.Fatalf("%d dirty ranges left", n)
	}
}
