package tsdb

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/stretchr/testify/require"

	"github.com/aerie-db/aerie/internal/head"
)

const (
	hour = int64(3600_000)
	day  = 24 * hour
)

// host returns series of a TSBS-like host: one group of fields.
func hostSeries(h, f int) labels.Labels {
	return labels.FromStrings("__name__", fmt.Sprintf("cpu_f%d", f), "hostname", fmt.Sprintf("host_%d", h))
}

// writeHostDay writes one host's samples in [from, to) every step through
// the storage appender, committing every batch samples, and records them.
func writeHostDay(t *testing.T, db *DB, h int, from, to, step int64, want map[string][]smp, mu *sync.Mutex) {
	t.Helper()
	app := db.Appender(context.Background())
	n := 0
	for ts := from; ts < to; ts += step {
		for f := 0; f < 4; f++ {
			l := hostSeries(h, f)
			v := float64(ts/step) + float64(f)/10
			_, err := app.Append(0, l, ts, v)
			require.NoError(t, err)
			if mu != nil {
				mu.Lock()
			}
			want[l.String()] = append(want[l.String()], smp{ts, v})
			if mu != nil {
				mu.Unlock()
			}
			n++
		}
		if n >= 1000 {
			require.NoError(t, app.Commit())
			n = 0
		}
	}
	require.NoError(t, app.Commit())
}

func requireSamples(t *testing.T, db *DB, want map[string][]smp, stage string) {
	t.Helper()
	got := query(t, db, math.MinInt64, math.MaxInt64, labels.MustNewMatcher(labels.MatchRegexp, "__name__", "cpu_.*"))
	require.Len(t, got, len(want), stage)
	for k, w := range want {
		g := got[k]
		sortSmp(w)
		require.Equal(t, len(w), len(g), "%s: %s", stage, k)
		require.Equal(t, w, g, "%s: %s", stage, k)
	}
}

func sortSmp(s []smp) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j].t < s[j-1].t; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// TestBackfillHostAfterHost is the scenario: two writers each send
// one host's whole day, then the next host's. Every sample is stored, seen
// at once, and kept through the backfill flush and a restart.
func TestBackfillHostAfterHost(t *testing.T) {
	opts := &Options{FlushCheckInterval: -1, BackfillIdle: time.Hour}
	db, dir := openDir(t, opts)
	want := map[string][]smp{}
	var mu sync.Mutex
	base := 100 * day
	var wg sync.WaitGroup
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for h := w; h < 6; h += 2 {
				writeHostDay(t, db, h, base, base+day, 60_000, want, &mu)
			}
		}()
	}
	wg.Wait()
	require.Greater(t, db.BackfillStats().Samples, int64(0), "some hosts went through the backfill")
	requireSamples(t, db, want, "before flush")
	require.NoError(t, db.FlushBackfill())
	require.NoError(t, db.FlushHead())
	requireSamples(t, db, want, "after flush")
	seqs := 0
	for _, m := range db.Blocks() {
		if m.Seq > 0 {
			seqs++
			require.Equal(t, m.Seq, m.Backfill)
		}
	}
	require.Greater(t, seqs, 0, "backfill blocks")
	reopen(t, &db, dir, opts)
	defer db.Close()
	requireSamples(t, db, want, "after restart")
}

// TestBackfillReplay: backfilled rows not yet flushed are in the
// generation's WAL and come back after a close (the same path as kill -9,
// which crash_test covers for the head).
func TestBackfillReplay(t *testing.T) {
	opts := &Options{FlushCheckInterval: -1, BackfillIdle: time.Hour}
	db, dir := openDir(t, opts)
	want := map[string][]smp{}
	writeHostDay(t, db, 0, 50*day, 50*day+2*hour, 10_000, want, nil)
	writeHostDay(t, db, 1, 10*day, 10*day+3*day, 300_000, want, nil) // far in the past
	require.Equal(t, 1, db.BackfillStats().Generations)
	requireSamples(t, db, want, "live")
	require.NoError(t, db.Close())
	ents, err := os.ReadDir(filepath.Join(dir, backfillDirname))
	require.NoError(t, err)
	require.Len(t, ents, 1, "the generation's WAL is kept")

	db, err = Open(dir, opts)
	require.NoError(t, err)
	requireSamples(t, db, want, "replayed")
	require.NoError(t, db.FlushBackfill())
	ents, err = os.ReadDir(filepath.Join(dir, backfillDirname))
	require.NoError(t, err)
	require.Empty(t, ents, "a flushed generation's WAL is deleted")
	requireSamples(t, db, want, "flushed")
	require.NoError(t, db.Close())
}

// TestBackfillUnfinishedFlush: a crash between a generation's block writes
// and its WAL deletion. While the WAL is whole, its blocks are deleted at
// open and written again from it, without duplicates; once its deletion
// began (the directory renamed, some segments gone), the blocks are kept
// and what is left of the WAL is deleted.
func TestBackfillUnfinishedFlush(t *testing.T) {
	for _, tc := range []struct {
		name        string
		interrupted bool // the WAL's deletion began
	}{{"wal whole", false}, {"wal deletion interrupted", true}} {
		t.Run(tc.name, func(t *testing.T) {
			opts := &Options{FlushCheckInterval: -1, BackfillIdle: time.Hour, WALSegmentSize: 8 << 10}
			db, dir := openDir(t, opts)
			want := map[string][]smp{}
			writeHostDay(t, db, 0, 50*day, 50*day+2*hour, 10_000, want, nil)
			writeHostDay(t, db, 1, 10*day, 12*day, 60_000, want, nil)
			// Keep a copy of the generation's WAL, flush, put the WAL back:
			// the state a crash before (or during) the WAL deletion leaves.
			gdir := filepath.Join(dir, backfillDirname)
			ents, err := os.ReadDir(gdir)
			require.NoError(t, err)
			require.Len(t, ents, 1)
			name := ents[0].Name()
			saved := t.TempDir()
			require.NoError(t, os.CopyFS(filepath.Join(saved, name), os.DirFS(filepath.Join(gdir, name))))
			require.NoError(t, db.FlushBackfill())
			nblocks := len(db.Blocks())
			require.NoError(t, db.Close())
			back := filepath.Join(gdir, name)
			if tc.interrupted {
				back += ".tmp"
			}
			require.NoError(t, os.CopyFS(back, os.DirFS(filepath.Join(saved, name))))
			if tc.interrupted {
				segs, err := os.ReadDir(back)
				require.NoError(t, err)
				require.Greater(t, len(segs), 1, "the generation's WAL has several segments")
				require.NoError(t, os.Remove(filepath.Join(back, segs[0].Name())))
			}

			db, err = Open(dir, opts)
			require.NoError(t, err)
			defer db.Close()
			if tc.interrupted {
				require.Equal(t, nblocks, len(db.Blocks()), "the flushed generation's blocks are kept")
				_, err := os.Stat(back)
				require.True(t, os.IsNotExist(err), "the WAL left by an interrupted deletion is deleted")
			} else {
				require.Less(t, len(db.Blocks()), nblocks, "the unfinished generation's blocks are deleted")
			}
			requireSamples(t, db, want, "replayed")
			require.NoError(t, db.FlushBackfill())
			require.Equal(t, nblocks, len(db.Blocks()))
			requireSamples(t, db, want, "flushed again")
			for _, m := range db.Blocks() {
				total := 0
				for _, o := range db.Blocks() {
					if o.MinTime == m.MinTime && o.Seq == m.Seq {
						total++
					}
				}
				require.Equal(t, 1, total, "no block written twice")
			}
		})
	}
}

// TestBackfillManyPartitions: a backfill spanning far more partitions than
// the memory manager's version window (32) is stored through several
// generations, none refused.
func TestBackfillManyPartitions(t *testing.T) {
	db, _ := openDir(t, &Options{FlushCheckInterval: -1, BackfillIdle: time.Hour, BackfillPartitionRange: 2 * hour, BackfillPartitions: 6})
	defer db.Close()
	want := map[string][]smp{}
	writeHostDay(t, db, 0, 400*day, 400*day+hour, 60_000, want, nil)
	// 30 days, in reverse order of days, each day in order: 360 partitions.
	for d := int64(29); d >= 0; d-- {
		writeHostDay(t, db, 1, 300*day+d*day, 300*day+(d+1)*day, 1800_000, want, nil)
	}
	requireSamples(t, db, want, "live")
	require.Greater(t, db.BackfillStats().Flushed+int64(db.BackfillStats().Generations), int64(30))
	require.NoError(t, db.FlushBackfill())
	requireSamples(t, db, want, "flushed")
}

// TestBackfillBounds: retention and max_future reject with typed reasons;
// with NoBackfill the head's rule applies.
func TestBackfillBounds(t *testing.T) {
	now := time.Now().UnixMilli()
	db, err := Open(t.TempDir(), &Options{FlushCheckInterval: -1, Retention: 30 * day, MaxFuture: 600_000})
	require.NoError(t, err)
	defer db.Close()
	app := db.Appender(context.Background())
	l := hostSeries(0, 0)
	_, err = app.Append(0, l, now, 1)
	require.NoError(t, err)
	require.NoError(t, app.Commit())
	for _, c := range []struct {
		t    int64
		want error
	}{
		{now - 10*day, nil},
		{now - 31*day, ErrTooOldForRetention},
		{now + 5*60_000, nil},
		{now + 11*60_000, ErrTooFarInFuture},
	} {
		_, err := app.Append(0, l, c.t, 2)
		if c.want == nil {
			require.NoError(t, err, "t=%d", c.t)
			continue
		}
		require.ErrorIs(t, err, c.want)
		require.ErrorIs(t, err, storage.ErrOutOfBounds, "a 400 for remote write")
	}
	require.NoError(t, app.Commit())

	db2, err := Open(t.TempDir(), &Options{FlushCheckInterval: -1, NoBackfill: true})
	require.NoError(t, err)
	defer db2.Close()
	app = db2.Appender(context.Background())
	_, err = app.Append(0, l, 10*day, 1)
	require.NoError(t, err)
	require.NoError(t, app.Commit())
	_, err = app.Append(0, l, 5*day, 1)
	require.True(t, errors.Is(err, storage.ErrOutOfBounds) || errors.Is(err, storage.ErrTooOldSample), "got %v", err)
}

// TestBackfillFirstWriteWins: a timestamp written again with another value
// keeps its first value, whether the first is in the head, in a
// generation or in a block; the same value again is a no-op.
func TestBackfillFirstWriteWins(t *testing.T) {
	db, err := Open(t.TempDir(), &Options{FlushCheckInterval: -1, BackfillIdle: time.Hour})
	require.NoError(t, err)
	defer db.Close()
	l := hostSeries(0, 0)
	put := func(ts int64, v float64) {
		app := db.Appender(context.Background())
		_, err := app.Append(0, l, ts, v)
		require.NoError(t, err)
		require.NoError(t, app.Commit())
	}
	get := func(ts int64) []smp {
		return query(t, db, ts, ts, labels.MustNewMatcher(labels.MatchEqual, "__name__", "cpu_f0"))[l.String()]
	}
	put(10*day, 1) // head
	put(20*day, 1) // head moves on: 10 days is now backfill
	put(10*day, 2) // to the backfill: the head's value stays
	require.Equal(t, []smp{{10 * day, 1}}, get(10*day))
	put(5*day, 3)
	put(5*day, 4) // same generation: rejected (counted), first kept
	put(5*day, 3) // same value: no-op
	require.Equal(t, []smp{{5 * day, 3}}, get(5*day))
	require.NoError(t, db.FlushBackfill())
	require.NoError(t, db.FlushHead())
	put(5*day, 5) // a later generation
	require.Equal(t, []smp{{5 * day, 3}}, get(5*day))
	require.Equal(t, []smp{{10 * day, 1}}, get(10*day))
	require.NoError(t, db.FlushBackfill())
	require.Equal(t, []smp{{5 * day, 3}}, get(5*day))
	require.NotZero(t, db.CommitRejections()[head.ErrDuplicateValue.Error()])
}

// TestBackfillYearBounded backfills a year, host after host, through the
// storage appender while a sampler records the Go heap: generations rotate
// (by partitions and bytes), none is refused by the memory manager's
// version window, the heap stays bounded, and every sample is stored.
// CI's size is 100 series at 10 min (5.3 M samples); short mode 20 at 1 h.
func TestBackfillYearBounded(t *testing.T) {
	hosts, fields, step := 10, 10, int64(600_000)
	if testing.Short() {
		hosts, fields, step = 4, 5, 3600_000
	}
	db, err := Open(t.TempDir(), &Options{FlushCheckInterval: -1, BackfillBytes: 16 << 20})
	require.NoError(t, err)
	defer db.Close()
	const year = 365 * day
	now := 1000 * day
	app := db.Appender(context.Background())
	for h := 0; h < hosts; h++ { // the present, through the head
		for f := 0; f < fields; f++ {
			_, err := app.Append(0, labels.FromStrings("__name__", fmt.Sprintf("f%d", f), "host", fmt.Sprint(h)), now, 1)
			require.NoError(t, err)
		}
	}
	require.NoError(t, app.Commit())

	stopPeak := sampleHeapPeak(20*time.Millisecond, func(m *runtime.MemStats) uint64 { return m.HeapInuse })
	start := time.Now()
	n := 0
	for h := 0; h < hosts; h++ {
		for ts := now - year; ts < now; ts += step {
			for f := 0; f < fields; f++ {
				_, err := app.Append(0, labels.FromStrings("__name__", fmt.Sprintf("f%d", f), "host", fmt.Sprint(h)), ts, float64(ts/step%1000))
				require.NoError(t, err)
				n++
			}
			if n%20_000 == 0 {
				require.NoError(t, app.Commit())
			}
		}
	}
	require.NoError(t, app.Commit())
	require.NoError(t, db.FlushBackfill())
	peak := stopPeak()
	st := db.BackfillStats()
	require.Zero(t, db.CommitRejections()[head.ErrPartitionLimit.Error()])
	require.Greater(t, st.Samples, int64(n*9/10), "the past goes through the backfill (the last hour is the head's out-of-order window)")
	got := 0
	q, err := db.Querier(now-year, now-1)
	require.NoError(t, err)
	ss := q.Select(context.Background(), false, nil, labels.MustNewMatcher(labels.MatchRegexp, "__name__", "f.*"))
	for ss.Next() {
		it := ss.At().Iterator(nil)
		for it.Next() != chunkenc.ValNone {
			got++
		}
	}
	require.NoError(t, ss.Err())
	require.NoError(t, q.Close())
	require.Equal(t, n, got)
	t.Logf("%d samples (a year of %d series every %v) in %v: %.0f samples/s, %d generations flushed, %d blocks, peak heap in use %d MiB",
		n, hosts*fields, time.Duration(step)*time.Millisecond, time.Since(start), float64(n)/time.Since(start).Seconds(), st.Flushed, len(db.Blocks()), peak>>20)
	require.Less(t, peak, uint64(512<<20), "the heap stays bounded by the generations in memory, not by the year")
}

// TestBackfillByRef: samples of series the main head knows reach the
// backfill by the caller's ref (no labels), and from their generation's
// second commit on are appended there by the generation's ref: every
// sample is stored, a duplicate with another value is still refused, and
// the generation learned each series once.
func TestBackfillByRef(t *testing.T) {
	db, err := Open(t.TempDir(), &Options{FlushCheckInterval: -1})
	require.NoError(t, err)
	defer db.Close()
	ctx := context.Background()
	want := map[string][]smp{}
	refs := make([]storage.SeriesRef, 3)
	app := db.Appender(ctx)
	for f := range refs {
		l := hostSeries(0, f)
		refs[f], err = app.Append(0, l, 10*day, 1)
		require.NoError(t, err)
		want[l.String()] = append(want[l.String()], smp{10 * day, 1})
	}
	require.NoError(t, app.Commit())
	for c := range 3 { // commits of old samples, by ref only
		app = db.Appender(ctx)
		for f, ref := range refs {
			ts := day + int64(c)*hour
			_, err := app.Append(ref, labels.EmptyLabels(), ts, float64(c))
			require.NoError(t, err)
			l := hostSeries(0, f)
			want[l.String()] = append(want[l.String()], smp{ts, float64(c)})
		}
		require.NoError(t, app.Commit())
	}
	app = db.Appender(ctx)
	_, err = app.Append(refs[0], labels.EmptyLabels(), day, 99) // first write wins
	require.NoError(t, err)
	require.NoError(t, app.Commit())
	require.Equal(t, map[string]int64{"duplicate sample for timestamp": 1}, db.CommitRejections())
	gens := db.generations()
	require.Len(t, gens, 1)
	require.Len(t, gens[0].refOf, len(refs))
	requireSamples(t, db, want, "before the backfill flush")
	require.NoError(t, db.FlushBackfill())
	requireSamples(t, db, want, "after the backfill flush")
}

// TestCommitOverlapsBackfill: a commit with samples for the head and for
// the backfill writes both, and waits for both WALs' fsyncs at once, not
// one after the other: an fsync held open until another starts (or 2 s
// pass) sees the other WAL's start while it is held.
func TestCommitOverlapsBackfill(t *testing.T) {
	var (
		armed      atomic.Bool
		inside     atomic.Int32
		overlapped atomic.Bool
		mu         sync.Mutex
		release    = make(chan struct{})
		released   bool
	)
	hook := func(time.Duration) {
		if !armed.Load() {
			return
		}
		if inside.Add(1) > 1 {
			overlapped.Store(true)
			mu.Lock()
			if !released {
				released = true
				close(release)
			}
			mu.Unlock()
		}
		defer inside.Add(-1)
		select {
		case <-release:
		case <-time.After(2 * time.Second):
		}
	}
	db, err := Open(t.TempDir(), &Options{PartitionRange: 2 * hour, FlushCheckInterval: -1, OnWALFsync: hook})
	require.NoError(t, err)
	defer db.Close()
	ctx := context.Background()
	now := time.Now().UnixMilli()
	live, old := labels.FromStrings("__name__", "live"), labels.FromStrings("__name__", "old")
	commit := func(t0 int64) {
		app := db.Appender(ctx)
		_, err := app.Append(0, live, now+t0, 1)
		require.NoError(t, err)
		_, err = app.Append(0, old, now-10*day+t0, 1)
		require.NoError(t, err)
		require.NoError(t, app.Commit())
	}
	app := db.Appender(ctx)
	_, err = app.Append(0, live, now-1000, 1)
	require.NoError(t, err)
	require.NoError(t, app.Commit()) // the head now refuses what is 10 days old
	commit(0)                        // opens the backfill generation and its WAL
	require.Equal(t, 1, db.BackfillStats().Generations)
	armed.Store(true)
	commit(1000)
	armed.Store(false)
	require.True(t, overlapped.Load(), "the head's and the backfill's fsyncs ran one after the other")
}

// TestCommitNoWaitBackfill: a commit into the head and a backfill
// generation returns from CommitNoWait while both WALs' fsyncs are held,
// waits for the tickets of both heads, and its wait returns only once the
// fsyncs are let go.
func TestCommitNoWaitBackfill(t *testing.T) {
	var (
		armed   atomic.Bool
		inside  atomic.Int32
		gate    = make(chan struct{})
		release = sync.OnceFunc(func() { close(gate) })
	)
	hook := func(time.Duration) {
		if armed.Load() {
			inside.Add(1)
			<-gate
		}
	}
	db, err := Open(t.TempDir(), &Options{PartitionRange: 2 * hour, FlushCheckInterval: -1, OnWALFsync: hook})
	require.NoError(t, err)
	defer db.Close()
	defer release() // before Close: a commit held at the gate holds Close
	ctx := context.Background()
	now := time.Now().UnixMilli()
	live, old := labels.FromStrings("__name__", "live"), labels.FromStrings("__name__", "old")
	add := func(app storage.Appender, t0 int64) {
		_, err := app.Append(0, live, now+t0, 1)
		require.NoError(t, err)
		_, err = app.Append(0, old, now-10*day+t0, 1)
		require.NoError(t, err)
	}
	app := db.Appender(ctx)
	_, err = app.Append(0, live, now-1000, 1)
	require.NoError(t, err)
	require.NoError(t, app.Commit()) // the head now refuses what is 10 days old
	app = db.Appender(ctx)
	add(app, 0)
	require.NoError(t, app.Commit()) // opens the generation and its WAL
	require.Equal(t, 1, db.BackfillStats().Generations)

	armed.Store(true)
	app = db.Appender(ctx)
	add(app, 1000)
	type result struct {
		d   *durable
		err error
	}
	done := make(chan result, 1)
	go func() {
		d, err := app.(*appender).commitNoWait()
		done <- result{d, err}
	}()
	var r result
	select {
	case r = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("CommitNoWait waited for a WAL's fsync")
	}
	require.NoError(t, r.err)
	require.Len(t, r.d.waits, 2, "a ticket for the head and one for the generation")
	require.Same(t, db.head, r.d.waits[0].h)
	require.NotSame(t, db.head, r.d.waits[1].h)

	waited := make(chan error, 1)
	go func() { waited <- r.d.wait() }()
	for deadline := time.Now().Add(20 * time.Second); inside.Load() < 2; time.Sleep(time.Millisecond) {
		require.True(t, time.Now().Before(deadline), "the two WALs never fsynced")
	}
	select {
	case err := <-waited:
		t.Fatalf("wait returned (%v) while the fsyncs were held", err)
	case <-time.After(50 * time.Millisecond):
	}
	armed.Store(false)
	release()
	require.NoError(t, <-waited)
	q, err := db.Querier(now-11*day, now+hour)
	require.NoError(t, err)
	defer q.Close()
	ss := q.Select(ctx, false, nil, labels.MustNewMatcher(labels.MatchEqual, "__name__", "old"))
	n := 0
	for ss.Next() {
		it := ss.At().Iterator(nil)
		for it.Next() != chunkenc.ValNone {
			n++
		}
	}
	require.NoError(t, ss.Err())
	require.Equal(t, 2, n)
}
