package pgarchive

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/aerie-db/aerie/internal/pgarchive/pgtest"
)

// sharedPG serves the tests that do not stop PostgreSQL, each in a
// database of its own.
var sharedPG pgtest.Shared

func TestMain(m *testing.M) {
	code := m.Run()
	if err := sharedPG.Close(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}

// t0 is a step-aligned start for every level of the tests (2023-11-14).
const t0 = int64(1_699_920_000_000)

func testLogger(t *testing.T) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	return slog.New(slog.DiscardHandler)
}

func startArchiver(t *testing.T, cfg Config, src Source) *Archiver {
	t.Helper()
	a, err := New(cfg, src, testLogger(t), prometheus.NewRegistry())
	require.NoError(t, err)
	require.NoError(t, a.Start())
	t.Cleanup(func() { require.NoError(t, a.Close()) })
	return a
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitCaughtUp waits until every level's committed watermark reaches the
// source's Ready.
func waitCaughtUp(t *testing.T, a *Archiver, src *fakeSource) {
	t.Helper()
	waitFor(t, "the archive to catch up", func() bool {
		for _, lv := range a.levels {
			if lv.done.Load() < src.Ready(lv.level) {
				return false
			}
		}
		return true
	})
}

func connect(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// queryTV returns tv's rows of level by series name.
func queryTV(t *testing.T, c *pgx.Conn, level string) map[string][]point {
	t.Helper()
	rs, err := c.Query(context.Background(), `
SELECT ds.name, tv.t, tv.r FROM tv JOIN ds ON ds.id = tv.ds_id
WHERE tv.level = $1 ORDER BY ds.name, tv.t`, level)
	require.NoError(t, err)
	out := map[string][]point{}
	var (
		name string
		ts   time.Time
		r    float64
	)
	_, err = pgx.ForEachRow(rs, []any{&name, &ts, &r}, func() error {
		out[name] = append(out[name], point{T: ts.UnixMilli(), Bits: math.Float64bits(r)})
		return nil
	})
	require.NoError(t, err)
	return out
}

func requireArchiveMatches(t *testing.T, c *pgx.Conn, src *fakeSource) {
	t.Helper()
	for _, l := range src.levels {
		want := src.expected(l)
		require.NotEmpty(t, want, "level %s: the test wrote nothing in the window", l.Name)
		require.Equal(t, want, queryTV(t, c, l.Name), "level %s: tv differs from the source", l.Name)
	}
}

// specials are values that must come back bit for bit.
var specials = []float64{
	math.Float64frombits(0x7ff8000000000001), // a NaN with a payload
	math.Float64frombits(0x7ff0000000000002), // Prometheus's staleness marker
	math.NaN(), math.Inf(1), math.Inf(-1), math.Copysign(0, -1), 5e-324, math.MaxFloat64, -math.SmallestNonzeroFloat64,
}

// feed appends to src the points of level l in [from, to): every series
// gets a point in each step with probability fill (gaps otherwise).
func feed(src *fakeSource, rng *rand.Rand, l Level, series []labels.Labels, from, to int64, fill float64) {
	step := l.Step.Milliseconds()
	for _, lset := range series {
		for t := from; t < to; t += step {
			if rng.Float64() >= fill {
				continue
			}
			v := rng.NormFloat64() * 1e6
			if rng.IntN(20) == 0 {
				v = specials[rng.IntN(len(specials))]
			}
			src.Append(l.Name, lset, t, v)
		}
	}
}

// ingest feeds [from, to) and then makes it ready, as the ingest path
// does.
func ingest(src *fakeSource, rng *rand.Rand, l Level, series []labels.Labels, from, to int64, fill float64) {
	feed(src, rng, l, series, from, to, fill)
	src.SetReady(l.Name, to)
}

func testSeries(n int) []labels.Labels {
	out := make([]labels.Labels, n)
	for k := range out {
		if k%3 == 0 {
			out[k] = labels.FromStrings(labels.MetricName, fmt.Sprintf("servers.host%02d.cpu.load", k))
		} else {
			out[k] = labels.FromStrings(labels.MetricName, "node_load1", "instance", fmt.Sprintf("host%02d:9100", k), "job", "node")
		}
	}
	return out
}

// TestArchiveMatchesSource feeds three levels over several laps, with gaps
// and special values, and checks after each round that tv returns exactly
// the points of each level's round-robin window.
func TestArchiveMatchesSource(t *testing.T) {
	pg := sharedPG.Get(t)
	dsn := pg.CreateDB(t, "archive")
	levels := []Level{
		{Name: "10s", Step: 10 * time.Second, Retention: 100 * time.Second},
		// Same step and size as 10s: the two share a bundle (and its
		// window, so the test moves them together).
		{Name: "10s_max", Step: 10 * time.Second, Retention: 100 * time.Second},
		{Name: "1m", Step: time.Minute, Retention: 6 * time.Minute},
		{Name: "5m", Step: 5 * time.Minute, Retention: time.Hour},
	}
	src := newFakeSource(levels...)
	series := testSeries(37) // with width 16: three segments
	a := startArchiver(t, Config{DSN: dsn, SegmentWidth: 16, Interval: 5 * time.Millisecond, ChunkSteps: 4, BatchRows: 7}, src)
	c := connect(t, dsn)
	rng := rand.New(rand.NewPCG(1, 2))
	ready := map[string]int64{}
	for _, l := range levels {
		ready[l.Name] = t0
	}
	for round := range 6 {
		for _, l := range levels {
			step, size := l.Step.Milliseconds(), int64(l.Retention/l.Step)
			to := ready[l.Name] + step*(1+rng.Int64N(size*3/2))
			if l.Name == "10s_max" {
				to = ready["10s"]
			}
			feed(src, rng, l, series, ready[l.Name], to, 0.7)
			if round == 3 && l.Name != "10s_max" {
				to += 3 // Ready need not be aligned to the step
				src.Append(l.Name, series[0], to-2, 42)
			}
			ready[l.Name] = to
			src.SetReady(l.Name, to)
		}
		waitCaughtUp(t, a, src)
		requireArchiveMatches(t, c, src)
	}
	// 37 series in each of 4 levels, in 3 bundles.
	var nds, nrra, nbundle, maxPos int
	require.NoError(t, c.QueryRow(context.Background(), `SELECT (SELECT count(*) FROM ds), (SELECT count(*) FROM rra),
  (SELECT count(*) FROM rra_bundle), (SELECT max(pos) FROM rra JOIN rra_bundle b ON b.id = rra_bundle_id WHERE step_ms = 10000)`).Scan(&nds, &nrra, &nbundle, &maxPos))
	require.Equal(t, [4]int{37, 4 * 37, 3, 2*37 - 1}, [4]int{nds, nrra, nbundle, maxPos})
	require.Zero(t, testutil.ToFloat64(a.m.flushErrors))
	require.Positive(t, testutil.ToFloat64(a.m.pointsWritten))
	for _, lv := range a.levels {
		require.Zero(t, a.lagMs(lv), "level %s lags after catching up", lv.level.Name)
	}
}

// TestStaleSlotsHidden walks one series by hand through a lap with a gap:
// the slots the gap left from the previous lap stay in ts but leave tv.
func TestStaleSlotsHidden(t *testing.T) {
	pg := sharedPG.Get(t)
	dsn := pg.CreateDB(t, "stale")
	l := Level{Name: "1s", Step: time.Second, Retention: 4 * time.Second}
	src := newFakeSource(l)
	s := labels.FromStrings(labels.MetricName, "a.b")
	for k := range int64(4) { // lap 0: slots 0..3 hold 10, 11, 12, 13
		src.Append("1s", s, k*1000, float64(10+k))
	}
	src.SetReady("1s", 4000)
	a := startArchiver(t, Config{DSN: dsn, Interval: 5 * time.Millisecond}, src)
	c := connect(t, dsn)
	waitCaughtUp(t, a, src)
	require.Equal(t, map[string][]point{s.String(): {
		{0, math.Float64bits(10)}, {1000, math.Float64bits(11)}, {2000, math.Float64bits(12)}, {3000, math.Float64bits(13)},
	}}, queryTV(t, c, "1s"))

	// Lap 1 has only slot 6 (index 2); Ready 7 s puts the window at
	// slots 3..6.
	src.Append("1s", s, 6000, 16)
	src.SetReady("1s", 7000)
	waitCaughtUp(t, a, src)
	require.Equal(t, map[string][]point{s.String(): {
		{3000, math.Float64bits(13)}, {6000, math.Float64bits(16)},
	}}, queryTV(t, c, "1s"))
	// ts still holds lap 0 in indexes 0, 1 and 3: nothing was written for
	// the gap.
	var ver []int32
	require.NoError(t, c.QueryRow(context.Background(), `SELECT array_agg(ver[1] ORDER BY i) FROM ts`).Scan(&ver))
	require.Equal(t, []int32{0, 0, 1, 0}, ver)

	// Much later, with no new point: every slot is stale.
	src.SetReady("1s", 60000)
	waitCaughtUp(t, a, src)
	require.Empty(t, queryTV(t, c, "1s"))
}

// TestPostgresDown stops PostgreSQL mid-way: ingestion goes on, the level
// loop keeps reading until the queue is full, flushes fail and are
// counted, and after a restart the archive catches up to the same answer.
func TestPostgresDown(t *testing.T) {
	pg := pgtest.Start(t)
	dsn := pg.CreateDB(t, "down")
	l := Level{Name: "1s", Step: time.Second, Retention: 2 * time.Minute}
	src := newFakeSource(l)
	series := testSeries(20)
	rng := rand.New(rand.NewPCG(3, 4))
	a := startArchiver(t, Config{DSN: dsn, SegmentWidth: 8, QueueSize: 64, ChunkSteps: 5, BatchRows: 10,
		Interval: 5 * time.Millisecond, MaxBackoff: 200 * time.Millisecond}, src)
	ingest(src, rng, l, series, t0, t0+30000, 0.8)
	waitCaughtUp(t, a, src)

	require.NoError(t, pg.Stop())
	reads := src.reads.Load()
	ingestUnblocked(t, src, rng, l, series, t0+30000, 0.8, "PostgreSQL was down")
	waitFor(t, "flush errors", func() bool { return testutil.ToFloat64(a.m.flushErrors) > 0 })
	waitFor(t, "the level loop to read on", func() bool { return src.reads.Load() > reads+2 })
	waitFor(t, "a full queue", func() bool { return a.queue.len() > 64-10 })
	require.Positive(t, a.lagMs(a.levels[0]))

	require.NoError(t, pg.Restart())
	waitCaughtUp(t, a, src)
	requireArchiveMatches(t, connect(t, dsn), src)
	require.Zero(t, a.queue.len())
}

// ingestUnblocked feeds a minute from from on in 5 s steps, as the ingest
// path does, and fails t if that takes 30 s: ingestion must never wait for
// the archive, not even while (the archive's trouble).
func ingestUnblocked(t *testing.T, src *fakeSource, rng *rand.Rand, l Level, series []labels.Labels, from int64, fill float64, while string) {
	t.Helper()
	ingested := make(chan struct{})
	go func() {
		defer close(ingested)
		for k := int64(0); k < 12; k++ {
			from := from + k*5000
			ingest(src, rng, l, series, from, from+5000, fill)
		}
	}()
	select {
	case <-ingested:
	case <-time.After(30 * time.Second):
		t.Fatalf("ingestion blocked while %s", while)
	}
}

// TestPostgresDownAtStart starts the archiver with PostgreSQL down: Start
// returns at once, the loop retries, and the archive fills once the
// server is up.
func TestPostgresDownAtStart(t *testing.T) {
	pg := pgtest.Start(t)
	dsn := pg.CreateDB(t, "late")
	require.NoError(t, pg.Stop())
	l := Level{Name: "10s", Step: 10 * time.Second, Retention: 10 * time.Minute}
	src := newFakeSource(l)
	ingest(src, rand.New(rand.NewPCG(5, 6)), l, testSeries(5), t0, t0+300000, 1)
	a := startArchiver(t, Config{DSN: dsn, Interval: 5 * time.Millisecond, MaxBackoff: 200 * time.Millisecond}, src)
	waitFor(t, "level errors", func() bool { return testutil.ToFloat64(a.m.levelErrors.WithLabelValues("10s")) > 0 })
	require.NoError(t, pg.Restart())
	waitCaughtUp(t, a, src)
	requireArchiveMatches(t, connect(t, dsn), src)
}

// TestSlowPostgres holds an exclusive lock on ts: writes wait, but the
// source is read on until the queue is full and ingestion never waits.
func TestSlowPostgres(t *testing.T) {
	pg := sharedPG.Get(t)
	dsn := pg.CreateDB(t, "slow")
	l := Level{Name: "1s", Step: time.Second, Retention: 2 * time.Minute}
	src := newFakeSource(l)
	series := testSeries(20)
	rng := rand.New(rand.NewPCG(7, 8))
	a := startArchiver(t, Config{DSN: dsn, SegmentWidth: 8, QueueSize: 64, ChunkSteps: 5, Interval: 5 * time.Millisecond}, src)
	ingest(src, rng, l, series, t0, t0+10000, 1)
	waitCaughtUp(t, a, src)

	ctx := context.Background()
	locker := connect(t, dsn)
	tx, err := locker.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `LOCK TABLE ts IN ACCESS EXCLUSIVE MODE`)
	require.NoError(t, err)
	written := testutil.ToFloat64(a.m.pointsWritten)
	reads := src.reads.Load()
	ingestUnblocked(t, src, rng, l, series, t0+10000, 1, "ts was locked")
	waitFor(t, "the level loop to read on", func() bool { return src.reads.Load() > reads+2 })
	waitFor(t, "a full queue", func() bool { return a.queue.len() > 64-20 })
	require.Equal(t, written, testutil.ToFloat64(a.m.pointsWritten), "points were committed through the lock")
	require.NoError(t, tx.Rollback(ctx))
	waitCaughtUp(t, a, src)
	requireArchiveMatches(t, connect(t, dsn), src)
}

// TestRateLimit writes one row per flush under a limit of 20 flushes a
// second, and checks the number of flushes against the time taken.
func TestRateLimit(t *testing.T) {
	pg := sharedPG.Get(t)
	dsn := pg.CreateDB(t, "rate")
	l := Level{Name: "1s", Step: time.Second, Retention: time.Minute}
	src := newFakeSource(l)
	ingest(src, rand.New(rand.NewPCG(9, 10)), l, testSeries(8), t0, t0+20000, 1)
	const perSecond = 20
	start := time.Now()
	// Width 4: 2 segments × 20 slots = 40 rows, one per flush.
	a := startArchiver(t, Config{DSN: dsn, SegmentWidth: 4, BatchRows: 1, MaxFlushesPerSecond: perSecond, ChunkSteps: 100}, src)
	waitCaughtUp(t, a, src)
	elapsed := time.Since(start)
	flushes := testutil.ToFloat64(a.m.flushes)
	require.GreaterOrEqual(t, flushes, 40.0)
	// The limiter's burst is one flush.
	require.LessOrEqual(t, flushes, 1+perSecond*elapsed.Seconds(), "%v flushes in %v", flushes, elapsed)
	requireArchiveMatches(t, connect(t, dsn), src)
}

// TestResume closes an archiver half-way and lets a new one continue from
// the watermark in the database; then moves the watermark behind the
// archiver's back, which it must notice and recover from.
func TestResume(t *testing.T) {
	pg := sharedPG.Get(t)
	dsn := pg.CreateDB(t, "resume")
	l := Level{Name: "1m", Step: time.Minute, Retention: time.Hour}
	src := newFakeSource(l)
	series := testSeries(10)
	rng := rand.New(rand.NewPCG(11, 12))
	cfg := Config{DSN: dsn, SegmentWidth: 4, Interval: 5 * time.Millisecond, ChunkSteps: 7}
	ingest(src, rng, l, series, t0, t0+30*60000, 0.9)
	a, err := New(cfg, src, testLogger(t), nil)
	require.NoError(t, err)
	require.NoError(t, a.Start())
	waitCaughtUp(t, a, src)
	require.NoError(t, a.Close())

	ingest(src, rng, l, series, t0+30*60000, t0+50*60000, 0.9)
	b := startArchiver(t, cfg, src)
	waitCaughtUp(t, b, src)
	c := connect(t, dsn)
	requireArchiveMatches(t, c, src)
	var npos, maxPos int
	require.NoError(t, c.QueryRow(context.Background(), `SELECT count(*), max(pos) FROM rra`).Scan(&npos, &maxPos))
	require.Equal(t, [2]int{10, 9}, [2]int{npos, maxPos}, "positions were handed out again")

	// A restore rewinds the watermark: the next job finds it moved, the
	// level reloads and writes the window again.
	_, err = c.Exec(context.Background(), `UPDATE aerie_archive_progress SET done_ms = $1`, t0+20*60000)
	require.NoError(t, err)
	gen := b.levels[0].gen.Load()
	ingest(src, rng, l, series, t0+50*60000, t0+55*60000, 0.9)
	waitFor(t, "the level to reload", func() bool { return b.levels[0].gen.Load() > gen })
	waitCaughtUp(t, b, src)
	requireArchiveMatches(t, c, src)
}

func TestSchemaVersion(t *testing.T) {
	pg := sharedPG.Get(t)
	dsn := pg.CreateDB(t, "schema")
	ctx := context.Background()
	a, err := New(Config{DSN: dsn}, newFakeSource(), nil, nil)
	require.NoError(t, err)
	defer a.Close()
	require.NoError(t, createSchema(ctx, a.pool))
	require.NoError(t, createSchema(ctx, a.pool), "schema creation is not idempotent")
	c := connect(t, dsn)
	_, err = c.Exec(ctx, `UPDATE aerie_archive_meta SET schema_version = 2`)
	require.NoError(t, err)
	require.ErrorContains(t, createSchema(ctx, a.pool), "schema version 2; this build knows only version 1")
}

func TestNewErrors(t *testing.T) {
	f := func(cfg Config, levels []Level, want string) {
		t.Helper()
		_, err := New(cfg, newFakeSource(levels...), nil, nil)
		require.ErrorContains(t, err, want)
	}
	ok := Level{Name: "1m", Step: time.Minute, Retention: time.Hour}
	f(Config{}, nil, "empty dsn")
	f(Config{DSN: "host=/nonexistent", SegmentWidth: -1}, nil, "segment width")
	f(Config{DSN: "host=/nonexistent", MaxFlushesPerSecond: -1}, nil, "max flushes")
	f(Config{DSN: "host=/nonexistent", QueueSize: -1}, nil, "queue size")
	f(Config{DSN: "host=/nonexistent", BatchRows: -1}, nil, "batch rows")
	f(Config{DSN: "port=notaport"}, nil, "parse dsn")
	f(Config{DSN: "host=/nonexistent"}, []Level{ok, ok}, `two levels named "1m"`)
	f(Config{DSN: "host=/nonexistent"}, []Level{{Name: "x", Step: time.Minute, Retention: time.Second}}, "retention")
}

// TestCloseWhileBlocked closes the archiver while its flusher waits on a
// lock: Close cancels the statement and returns.
func TestCloseWhileBlocked(t *testing.T) {
	pg := sharedPG.Get(t)
	dsn := pg.CreateDB(t, "close")
	l := Level{Name: "1s", Step: time.Second, Retention: time.Minute}
	src := newFakeSource(l)
	a, err := New(Config{DSN: dsn, Interval: 5 * time.Millisecond}, src, testLogger(t), nil)
	require.NoError(t, err)
	require.NoError(t, a.Start())
	closed := false
	defer func() {
		if !closed {
			a.Close()
		}
	}()
	src.SetReady("1s", t0)
	waitCaughtUp(t, a, src)

	ctx := context.Background()
	tx, err := connect(t, dsn).Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx)
	_, err = tx.Exec(ctx, `LOCK TABLE ts IN ACCESS EXCLUSIVE MODE`)
	require.NoError(t, err)
	ingest(src, rand.New(rand.NewPCG(13, 14)), l, testSeries(3), t0, t0+5000, 1)
	waitFor(t, "a job to wait on the lock", func() bool { return a.queue.len() > 0 })
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := a.Close(); err != nil {
			t.Error(err)
		}
	}()
	select {
	case <-done:
		closed = true
	case <-time.After(30 * time.Second):
		t.Fatal("Close blocked behind a lock")
	}
	require.Less(t, a.levels[0].done.Load(), int64(t0+5000), "the job committed through the lock")
}

func TestMetricsRegistered(t *testing.T) {
	reg := prometheus.NewRegistry()
	a, err := New(Config{DSN: "host=/nonexistent"}, newFakeSource(Level{Name: "1m", Step: time.Minute, Retention: time.Hour}), nil, reg)
	require.NoError(t, err)
	defer a.Close()
	a.m.dropped.WithLabelValues(DropTooOld)
	a.m.levelErrors.WithLabelValues("1m")
	mfs, err := reg.Gather()
	require.NoError(t, err)
	var names []string
	for _, mf := range mfs {
		names = append(names, mf.GetName())
	}
	require.ElementsMatch(t, []string{
		"aerie_pgarchive_dropped_points_total", "aerie_pgarchive_flushes_total", "aerie_pgarchive_flush_errors_total",
		"aerie_pgarchive_level_errors_total", "aerie_pgarchive_points_written_total", "aerie_pgarchive_rows_written_total",
		"aerie_pgarchive_queue_length", "aerie_pgarchive_lag_seconds",
	}, names)
	_, err = New(Config{DSN: "host=/nonexistent"}, newFakeSource(), nil, reg)
	require.ErrorContains(t, err, "register metrics")
}
