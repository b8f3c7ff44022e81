package tsdb

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/stretchr/testify/require"

	"github.com/aerie-db/aerie/internal/block"
	"github.com/aerie-db/aerie/internal/crashtest"
)

// runOf gives the samples t0, t0+step, … (n of them) with value v(t).
func runOf(t0, step int64, n int, v func(t int64) float64) func() (int64, float64, bool) {
	i := 0
	return func() (int64, float64, bool) {
		if i == n {
			return 0, 0, false
		}
		t := t0 + int64(i)*step
		i++
		return t, v(t), true
	}
}

// blockDirs lists the entries of dir's blocks directory.
func blockDirs(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(dir, blocksDirname))
	require.NoError(t, err)
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

func TestWriteRun(t *testing.T) {
	const hourMs = int64(3600_000)
	dir := t.TempDir()
	opts := &Options{PartitionRange: 2 * hourMs, FlushCheckInterval: -1}
	db, err := Open(dir, opts)
	require.NoError(t, err)
	ctx := context.Background()
	now := time.Now().UnixMilli()
	// Live data: the head holds the last hour.
	app := db.Appender(ctx)
	live := labels.FromStrings("__name__", "live")
	for tt := now - hourMs; tt <= now; tt += 60_000 {
		_, err := app.Append(0, live, tt, 1)
		require.NoError(t, err)
	}
	require.NoError(t, app.Commit())
	bound := db.RunBound()
	require.LessOrEqual(t, bound, now-hourMs) // the head takes the last hour in order
	require.Greater(t, bound, now-4*hourMs)

	// Old data of a series through the backfill (an active generation):
	// written first, so its value wins where the run has another.
	hist := labels.FromStrings("__name__", "hist", "site", "a")
	old := now - 30*24*hourMs
	old -= old % 1000
	app = db.Appender(ctx)
	_, err = app.Append(0, hist, old+10_000, -1)
	require.NoError(t, err)
	require.NoError(t, app.Commit())
	require.Equal(t, 1, db.BackfillStats().Generations)

	// A run of 10 days at 10 s: several backfill partitions, many head
	// partitions.
	n := int(10 * 24 * hourMs / 10_000)
	val := func(t int64) float64 { return float64((t - old) / 10_000) }
	got, err := db.WriteRun(ctx, hist, runOf(old, 10_000, n, val))
	require.NoError(t, err)
	require.EqualValues(t, n, got)
	require.EqualValues(t, n, db.BackfillStats().RunSamples)

	check := func(what string) {
		t.Helper()
		ss := query(t, db, math.MinInt64, math.MaxInt64, labels.MustNewMatcher(labels.MatchEqual, "__name__", "hist"))[hist.String()]
		require.Len(t, ss, n, what)
		for i, s := range ss {
			require.Equal(t, old+int64(i)*10_000, s.t, what)
			want := val(s.t)
			if s.t == old+10_000 {
				want = -1 // first write wins
			}
			require.Equal(t, want, s.v, "%s: sample %d", what, i)
		}
	}
	check("after the run")
	require.NoError(t, db.FlushBackfill())
	check("after the backfill's flush")
	require.NoError(t, db.CompactBlocks())
	check("after compaction")

	// Refused runs store nothing and leave no directory behind.
	before := blockDirs(t, dir)
	for _, c := range []struct {
		name string
		next func() (int64, float64, bool)
		want error
	}{
		{"out of order", func() func() (int64, float64, bool) {
			ts := []int64{old - 20_000, old - 10_000, old - 15_000}
			i := 0
			return func() (int64, float64, bool) {
				if i == len(ts) {
					return 0, 0, false
				}
				i++
				return ts[i-1], 5, true
			}
		}(), ErrRunOrder},
		{"repeated time", runOf(old-20_000, 0, 2, val), ErrRunOrder},
		{"reaching the head", runOf(bound-2*hourMs, hourMs, 3, val), ErrRunBound},
	} {
		got, err := db.WriteRun(ctx, hist, c.next)
		require.ErrorIs(t, err, c.want, c.name)
		require.Zero(t, got, c.name)
		require.Equal(t, before, blockDirs(t, dir), c.name)
	}
	_, err = db.WriteRun(ctx, labels.FromStrings("__name__", "x", "a", ""), runOf(old, 1000, 1, val))
	require.Error(t, err, "empty label value")
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = db.WriteRun(cctx, hist, runOf(old-100_000, 1, 10, val))
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, before, blockDirs(t, dir))
	check("after the refused runs")

	// The run's blocks survive a restart (no WAL claims them), and a
	// generation opened after it writes later: the run's value wins.
	require.NoError(t, db.Close())
	db, err = Open(dir, opts)
	require.NoError(t, err)
	defer db.Close()
	check("after a restart")
	app = db.Appender(ctx)
	_, err = app.Append(0, hist, old+20_000, -2)
	require.NoError(t, err)
	require.NoError(t, app.Commit())
	require.NoError(t, db.FlushBackfill())
	require.NoError(t, db.CompactBlocks())
	check("after a later write at a run's time")
}

// TestWriteRunFreezesGeneration: a generation that took writes before a
// run is frozen by it, so writes after the run go to a generation with a
// greater number, which loses to the run where both have a sample.
func TestWriteRunFreezesGeneration(t *testing.T) {
	const hourMs = int64(3600_000)
	db, err := Open(t.TempDir(), &Options{PartitionRange: 2 * hourMs, FlushCheckInterval: -1})
	require.NoError(t, err)
	defer db.Close()
	ctx := context.Background()
	now := time.Now().UnixMilli()
	app := db.Appender(ctx)
	_, err = app.Append(0, labels.FromStrings("__name__", "live"), now, 1)
	require.NoError(t, err)
	require.NoError(t, app.Commit())
	s := labels.FromStrings("__name__", "s")
	old := now - 48*hourMs
	old -= old % 1000
	write := func(t0 int64, v float64) {
		app := db.Appender(ctx)
		_, err := app.Append(0, s, t0, v)
		require.NoError(t, err)
		require.NoError(t, app.Commit())
	}
	write(old, 1) // generation 1, before the run
	_, err = db.WriteRun(ctx, s, runOf(old, 1000, 3, func(int64) float64 { return 2 }))
	require.NoError(t, err)
	write(old+1000, 3) // after the run: loses to it
	ss := query(t, db, math.MinInt64, math.MaxInt64, labels.MustNewMatcher(labels.MatchEqual, "__name__", "s"))[s.String()]
	require.Equal(t, []smp{{old, 1}, {old + 1000, 2}, {old + 2000, 2}}, ss)
	require.NoError(t, db.FlushBackfill())
	require.NoError(t, db.CompactBlocks())
	ss = query(t, db, math.MinInt64, math.MaxInt64, labels.MustNewMatcher(labels.MatchEqual, "__name__", "s"))[s.String()]
	require.Equal(t, []smp{{old, 1}, {old + 1000, 2}, {old + 2000, 2}}, ss)
}

const runCrashEnv = "AERIE_RUN_CRASH_CHILD_DIR"

// runCrashValue is sample i's value of run r of series g.
func runCrashValue(g int, r int64, i int) float64 { return float64(r*1000+int64(i)) + float64(g)/10 }

const runCrashLen = 5000 // samples a run, 1 s apart

// runCrashSeries is series g of TestRunCrashChild.
func runCrashSeries(g int) labels.Labels {
	return labels.FromStrings("__name__", "run", "g", string(rune('a'+g)))
}

// TestRunCrashChild is the child of TestRunCrashKill9: it writes history
// runs of two series forever, run r covering [r*runCrashLen s, (r+1)*runCrashLen s),
// and prints "ack G R" after run R of series G returned, while compaction
// folds the runs' blocks.
func TestRunCrashChild(t *testing.T) {
	dir := crashtest.ChildDir(t, runCrashEnv)
	db, err := Open(dir, &Options{PartitionRange: 3600_000, FlushCheckInterval: 20 * time.Millisecond})
	crashtest.Check("open", err)
	next := int64(0)
	for _, b := range db.Blocks() {
		next = max(next, b.MaxTime/1000/runCrashLen+1)
	}
	for r := next; ; r++ {
		for g := 0; g < 2; g++ {
			_, err := db.WriteRun(context.Background(), runCrashSeries(g), func() func() (int64, float64, bool) {
				i := 0
				return func() (int64, float64, bool) {
					if i == runCrashLen {
						return 0, 0, false
					}
					i++
					return (r*runCrashLen + int64(i-1)) * 1000, runCrashValue(g, r, i-1), true
				}
			}())
			crashtest.Check("run", err)
			crashtest.Ack(g, r)
		}
	}
}

// TestRunCrashKill9 kills a child writing history runs at random points:
// every acknowledged run is whole after a restart, and no half-written
// block is left.
func TestRunCrashKill9(t *testing.T) {
	dir, iterations := crashtest.Parent(t, "AERIE_CRASH_ITERATIONS", 10)
	acked := crashtest.Acks{}
	crashtest.KillLoop(t, crashtest.Config{Child: "TestRunCrashChild", Env: runCrashEnv, Dir: dir, Iterations: iterations, MinDelay: 100 * time.Millisecond, Spread: 600 * time.Millisecond, Acks: acked},
		nil, func(it int) {
			db, err := Open(dir, &Options{PartitionRange: 3600_000, FlushCheckInterval: -1})
			require.NoError(t, err, "iteration %d: reopen", it)
			defer db.Close()
			for _, name := range blockDirs(t, dir) {
				require.False(t, strings.HasSuffix(name, block.TmpSuffix), "iteration %d: %s left", it, name)
			}
			for g, runs := range acked {
				ss := query(t, db, math.MinInt64, math.MaxInt64, labels.MustNewMatcher(labels.MatchEqual, "g", string(rune('a'+g))))[runCrashSeries(g).String()]
				byT := make(map[int64]float64, len(ss))
				for _, s := range ss {
					byT[s.t] = s.v
				}
				for r := range runs {
					for i := 0; i < runCrashLen; i++ {
						v, ok := byT[(r*runCrashLen+int64(i))*1000]
						require.True(t, ok, "iteration %d: acknowledged run %d of series %d lost its sample %d", it, r, g, i)
						require.Equal(t, runCrashValue(g, r, i), v)
					}
				}
			}
		})
	t.Logf("%d kills, %d acknowledged runs verified after each", iterations, acked.Rows())
}

// TestWriteRunEmptyHead: an empty head takes nothing older than RunBound
// gave it, nor, after a restart, older than the blocks: a later write at
// a run's time goes to the backfill and loses to the run.
func TestWriteRunEmptyHead(t *testing.T) {
	dir := t.TempDir()
	opts := &Options{PartitionRange: 3600_000, FlushCheckInterval: -1}
	db, err := Open(dir, opts)
	require.NoError(t, err)
	ctx := context.Background()
	s := labels.FromStrings("__name__", "s")
	old := db.RunBound() - 10_000
	_, err = db.WriteRun(ctx, s, runOf(old, 1000, 5, func(int64) float64 { return 1 }))
	require.NoError(t, err)
	write := func(db *DB, t0 int64) {
		app := db.Appender(ctx)
		_, err := app.Append(0, s, t0, 2)
		require.NoError(t, err)
		require.NoError(t, app.Commit())
	}
	want := []smp{{old, 1}, {old + 1000, 1}, {old + 2000, 1}, {old + 3000, 1}, {old + 4000, 1}}
	write(db, old+1000)
	require.Equal(t, want, query(t, db, math.MinInt64, math.MaxInt64, labels.MustNewMatcher(labels.MatchEqual, "__name__", "s"))[s.String()])
	require.NoError(t, db.FlushBackfill())
	require.NoError(t, db.Close())

	db, err = Open(dir, opts)
	require.NoError(t, err)
	defer db.Close()
	require.Equal(t, int64(math.MinInt64), db.Head().MaxTime())
	write(db, old+2000)
	require.Equal(t, want, query(t, db, math.MinInt64, math.MaxInt64, labels.MustNewMatcher(labels.MatchEqual, "__name__", "s"))[s.String()])
	require.NoError(t, db.FlushBackfill())
	require.NoError(t, db.CompactBlocks())
	require.Equal(t, want, query(t, db, math.MinInt64, math.MaxInt64, labels.MustNewMatcher(labels.MatchEqual, "__name__", "s"))[s.String()])
}

// TestRunWriterManySeries: series of one backfill partition share a
// block; beyond maxRunWindows partitions the least recently written block
// is finished; a series given twice, a sample before its series and an
// error after which Commit fails all store nothing.
func TestRunWriterManySeries(t *testing.T) {
	const dayMs = int64(24 * 3600_000)
	dir := t.TempDir()
	db, err := Open(dir, &Options{PartitionRange: 7200_000, FlushCheckInterval: -1})
	require.NoError(t, err)
	defer db.Close()
	ctx := context.Background()
	wr := db.opts.BackfillPartitionRange
	base := (db.RunBound() - 400*dayMs) / wr * wr
	rw, err := db.NewRunWriter(ctx)
	require.NoError(t, err)
	// 20 series over 12 backfill partitions: series i covers partitions
	// i%12 and (i+1)%12, a sample every 10 min.
	want := map[string][]smp{}
	for i := range 20 {
		l := labels.FromStrings("__name__", "m", "i", strconv.Itoa(i))
		require.NoError(t, rw.Series(l))
		for _, p := range []int64{int64(i % 12), int64(i%12 + 1)} {
			for k := int64(0); k < 50; k++ {
				ts := base + p*wr + k*600_000
				require.NoError(t, rw.Add(ts, float64(i)+float64(k)/100))
				want[l.String()] = append(want[l.String()], smp{ts, float64(i) + float64(k)/100})
			}
		}
	}
	n, err := rw.Commit()
	require.NoError(t, err)
	require.EqualValues(t, 20*100, n)
	require.Equal(t, want, query(t, db, math.MinInt64, math.MaxInt64, labels.MustNewMatcher(labels.MatchEqual, "__name__", "m")))
	// 13 partitions, each written by two or three series; the writer
	// keeps 8 blocks open, so some partitions got a second block.
	nb := len(blockDirs(t, dir))
	require.GreaterOrEqual(t, nb, 13)
	require.Less(t, nb, 20*2)

	before := blockDirs(t, dir)
	for name, f := range map[string]func(rw *RunWriter) error{
		"series twice": func(rw *RunWriter) error {
			l := labels.FromStrings("__name__", "x")
			require.NoError(t, rw.Series(l))
			require.NoError(t, rw.Add(base, 1))
			return rw.Series(l)
		},
		"sample before series": func(rw *RunWriter) error { return rw.Add(base, 1) },
		"out of order after a good series": func(rw *RunWriter) error {
			require.NoError(t, rw.Series(labels.FromStrings("__name__", "y")))
			for k := int64(0); k < 100; k++ {
				require.NoError(t, rw.Add(base+k*wr/10, 1))
			}
			require.NoError(t, rw.Series(labels.FromStrings("__name__", "z")))
			require.NoError(t, rw.Add(base+10, 1))
			return rw.Add(base, 1)
		},
	} {
		rw, err := db.NewRunWriter(ctx)
		require.NoError(t, err)
		require.Error(t, f(rw), name)
		_, err = rw.Commit()
		require.Error(t, err, name)
		require.Equal(t, before, blockDirs(t, dir), name)
	}
	require.Equal(t, want, query(t, db, math.MinInt64, math.MaxInt64, labels.MustNewMatcher(labels.MatchEqual, "__name__", "m")))
	require.Empty(t, query(t, db, math.MinInt64, math.MaxInt64, labels.MustNewMatcher(labels.MatchRegexp, "__name__", "x|y|z")))
}

// TestCloseWaitsForRunWriter: Close waits for a RunWriter in flight, and
// refuses new ones meanwhile; what the writer commits is there after a
// reopen.
func TestCloseWaitsForRunWriter(t *testing.T) {
	dir := t.TempDir()
	opts := &Options{PartitionRange: 2 * 3600_000, FlushCheckInterval: -1}
	db, err := Open(dir, opts)
	require.NoError(t, err)
	ctx := context.Background()
	old := time.Now().UnixMilli() - 10*24*3600_000
	old -= old % 1000
	lset := labels.FromStrings("__name__", "hist")
	rw, err := db.NewRunWriter(ctx)
	require.NoError(t, err)
	require.NoError(t, rw.Series(lset))
	for i := range 100 {
		require.NoError(t, rw.Add(old+int64(i)*1000, float64(i)))
	}
	closed := make(chan error, 1)
	go func() { closed <- db.Close() }()
	// Close has begun once it refuses new writers.
	require.Eventually(t, func() bool {
		w, err := db.NewRunWriter(ctx)
		if err == nil {
			w.Abort()
		}
		return errors.Is(err, errClosed)
	}, 10*time.Second, time.Millisecond)
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) with a RunWriter in flight", err)
	case <-time.After(100 * time.Millisecond):
	}
	n, err := rw.Commit()
	require.NoError(t, err)
	require.EqualValues(t, 100, n)
	require.NoError(t, <-closed)

	db, err = Open(dir, opts)
	require.NoError(t, err)
	defer db.Close()
	ss := query(t, db, math.MinInt64, math.MaxInt64, labels.MustNewMatcher(labels.MatchEqual, "__name__", "hist"))[lset.String()]
	require.Len(t, ss, 100)
}
