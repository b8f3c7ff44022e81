package tsdb

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/stretchr/testify/require"
)

type smp struct {
	t int64
	v float64
}

func query(t *testing.T, db *DB, mint, maxt int64, ms ...*labels.Matcher) map[string][]smp {
	t.Helper()
	q, err := db.Querier(mint, maxt)
	require.NoError(t, err)
	defer q.Close()
	return collect(t, q.Select(context.Background(), true, nil, ms...))
}

// collect reads every sample of ss, by series.
func collect(t *testing.T, ss storage.SeriesSet) map[string][]smp {
	t.Helper()
	out := map[string][]smp{}
	var it chunkenc.Iterator
	for ss.Next() {
		s := ss.At()
		it = s.Iterator(it)
		for it.Next() == chunkenc.ValFloat {
			a, b := it.At()
			out[s.Labels().String()] = append(out[s.Labels().String()], smp{a, b})
		}
		require.NoError(t, it.Err())
	}
	require.NoError(t, ss.Err())
	return out
}

// openDir opens a DB with opts on a new directory and returns both.
func openDir(t *testing.T, opts *Options) (*DB, string) {
	t.Helper()
	dir := t.TempDir()
	db, err := Open(dir, opts)
	require.NoError(t, err)
	return db, dir
}

// reopen closes *db and opens dir again in its place.
func reopen(t *testing.T, db **DB, dir string, opts *Options) {
	t.Helper()
	require.NoError(t, (*db).Close())
	var err error
	*db, err = Open(dir, opts)
	require.NoError(t, err)
}

func TestDBRoundTrip(t *testing.T) {
	opts := &Options{FlushCheckInterval: -1, PartitionRange: 3600_000}
	db, dir := openDir(t, opts)
	want := map[string][]smp{}
	stale := math.Float64frombits(value.StaleNaN)
	for i := int64(0); i < 400; i++ {
		app := db.RowAppender()
		ts := i*15_000 + i%7
		for s := 0; s < 20; s++ {
			if s == 3 && i%2 == 1 {
				continue // missing from every other row
			}
			l := labels.FromStrings("__name__", "m", "job", "j", "instance", "a", "s", string(rune('a'+s)))
			v := float64(i*int64(s)) + 0.5
			switch {
			case s == 5 && i == 10:
				v = stale
			case s == 6 && i%50 == 0:
				v = math.Inf(-1)
			case s == 7:
				v = math.NaN()
			}
			require.NoError(t, app.Append(l, ts, v))
			want[l.String()] = append(want[l.String()], smp{ts, v})
		}
		require.NoError(t, app.Commit())
	}
	check := func(stage string) {
		got := query(t, db, math.MinInt64, math.MaxInt64, labels.MustNewMatcher(labels.MatchEqual, "__name__", "m"))
		require.Len(t, got, len(want), stage)
		for k, w := range want {
			g := got[k]
			require.Len(t, g, len(w), "%s %s", stage, k)
			for i := range w {
				require.Equal(t, w[i].t, g[i].t, "%s %s", stage, k)
				require.Equal(t, math.Float64bits(w[i].v), math.Float64bits(g[i].v), "%s %s at %d", stage, k, w[i].t)
			}
		}
		// A sub-range.
		got = query(t, db, 1_000_000, 2_000_000, labels.MustNewMatcher(labels.MatchEqual, "s", "b"))
		require.Len(t, got, 1, stage)
		for _, g := range got {
			for _, s := range g {
				require.True(t, s.t >= 1_000_000 && s.t <= 2_000_000)
			}
		}
	}
	check("head")
	reopen(t, &db, dir, opts)
	check("replayed")
	require.NoError(t, db.FlushHead())
	require.NotZero(t, len(db.Blocks()))
	check("blocks")
	reopen(t, &db, dir, opts)
	check("reopened blocks")
	require.NoError(t, db.Close())
}

var _ storage.Queryable = (*DB)(nil)

// TestQuerierOpenAcrossFlush: a querier opened before a flush and used
// after it still sees the flushed rows (found by aerie bench's query loop:
// the querier held the old block list while the head dropped the
// partition).
func TestQuerierOpenAcrossFlush(t *testing.T) {
	db, err := Open(t.TempDir(), &Options{FlushCheckInterval: -1})
	require.NoError(t, err)
	defer db.Close()
	l := labels.FromStrings("__name__", "m", "job", "j", "instance", "a")
	for i := int64(0); i < 100; i++ {
		app := db.RowAppender()
		require.NoError(t, app.Append(l, i*15_000, float64(i)))
		require.NoError(t, app.Commit())
	}
	q, err := db.Querier(0, math.MaxInt64)
	require.NoError(t, err)
	require.NoError(t, db.FlushHead())
	require.Len(t, db.Blocks(), 1)
	ss := q.Select(context.Background(), false, nil, labels.MustNewMatcher(labels.MatchEqual, "__name__", "m"))
	n := 0
	var it chunkenc.Iterator
	for ss.Next() {
		it = ss.At().Iterator(it)
		for it.Next() == chunkenc.ValFloat {
			n++
		}
	}
	require.NoError(t, ss.Err())
	require.Equal(t, 100, n)
	vs, _, err := q.LabelValues(context.Background(), "instance", nil)
	require.NoError(t, err)
	require.Equal(t, []string{"a"}, vs)
	require.NoError(t, q.Close())
}

// TestPacedFlush: a flush with a CPU budget below one core writes the same
// block, and FlushProgress is back to (0, 0) after it.
func TestPacedFlush(t *testing.T) {
	db, err := Open(t.TempDir(), &Options{FlushCheckInterval: -1, FlushCPUBudget: 0.5})
	require.NoError(t, err)
	defer db.Close()
	for i := int64(0); i < 50; i++ {
		app := db.RowAppender()
		for g := 0; g < 10; g++ {
			l := labels.FromStrings("__name__", "m", "job", "j", "instance", string(rune('a'+g)))
			require.NoError(t, app.Append(l, i*15_000, float64(i*int64(g))))
		}
		require.NoError(t, app.Commit())
	}
	require.NoError(t, db.FlushHead())
	done, total := db.FlushProgress()
	require.Zero(t, done+total)
	require.Len(t, db.Blocks(), 1)
	got := query(t, db, 0, math.MaxInt64, labels.MustNewMatcher(labels.MatchEqual, "__name__", "m"))
	require.Len(t, got, 10)
	for _, s := range got {
		require.Len(t, s, 50)
	}
}

// TestSelectEmptySeries: Select leaves out a series without a sample in
// range even when its group has rows there (in the head and in blocks,
// where a block's index answers for its dense columns), and returns it,
// empty, to a caller that asked WithEmptySeries.
func TestSelectEmptySeries(t *testing.T) {
	db, _ := openDir(t, &Options{FlushCheckInterval: -1, PartitionRange: 3600_000})
	defer db.Close()
	for i := int64(0); i < 200; i++ {
		app := db.RowAppender()
		for _, n := range []string{"a", "c", "d", "e"} {
			require.NoError(t, app.Append(labels.FromStrings("__name__", n, "job", "j"), i*15_000, float64(i)))
		}
		if i%10 == 0 && i < 100 { // b (in the same group) every 10th row of the first 25 minutes
			require.NoError(t, app.Append(labels.FromStrings("__name__", "b", "job", "j"), i*15_000, float64(i)))
		}
		require.NoError(t, app.Commit())
	}
	job := labels.MustNewMatcher(labels.MatchRegexp, "__name__", "a|b")
	names := func(ctx context.Context, mint, maxt int64) (out []string) {
		q, err := db.Querier(mint, maxt)
		require.NoError(t, err)
		defer q.Close()
		got := collect(t, q.Select(ctx, true, nil, job))
		ss := q.Select(ctx, true, nil, job)
		for ss.Next() {
			l := ss.At().Labels()
			out = append(out, l.Get("__name__"))
			if len(got[l.String()]) == 0 {
				out[len(out)-1] += "(empty)"
			}
		}
		require.NoError(t, ss.Err())
		return out
	}
	for _, stage := range []string{"head", "blocks"} {
		if stage == "blocks" {
			require.NoError(t, db.FlushHead())
		}
		require.Equal(t, []string{"a", "b"}, names(context.Background(), 0, 3_000_000), stage)
		require.Equal(t, []string{"a"}, names(context.Background(), 1_600_000, 2_900_000), stage)
		require.Equal(t, []string{"a"}, names(context.Background(), 1_600_000, 3_000_000), stage) // the last row in range; b's column is sparse
		require.Equal(t, []string{"a", "b(empty)"}, names(WithEmptySeries(context.Background()), 1_600_000, 2_900_000), stage)
	}
}

// TestSharedTagsRoundTrip: series of tag-set groups (no job or instance:
// Influx lines' fields), whose head keeps their tags once per group, read
// back whole from the head, after a WAL replay, and after a flush to
// blocks; written again after the replay they are the same series.
func TestSharedTagsRoundTrip(t *testing.T) {
	opts := &Options{FlushCheckInterval: -1, PartitionRange: 3600_000}
	db, dir := openDir(t, opts)
	var lsets []labels.Labels
	for h := range 3 {
		for _, f := range []string{"usage_user", "usage_idle", "usage_system"} {
			lsets = append(lsets, labels.FromStrings("__name__", "cpu_"+f, "hostname", fmt.Sprint("host_", h), "region", "eu"))
		}
		lsets = append(lsets, labels.FromStrings("Zone", "z", "__name__", "mem_used", "hostname", fmt.Sprint("host_", h))) // Zone sorts first
	}
	want := map[string][]smp{}
	write := func(from, to int64) {
		for i := from; i < to; i++ {
			app := db.Appender(context.Background())
			for k, l := range lsets {
				v := float64(i*100 + int64(k))
				_, err := app.Append(0, l, i*15_000, v)
				require.NoError(t, err)
				want[l.String()] = append(want[l.String()], smp{i * 15_000, v})
			}
			require.NoError(t, app.Commit())
		}
	}
	all := labels.MustNewMatcher(labels.MatchRegexp, "__name__", ".+")
	write(0, 100)
	require.Equal(t, want, query(t, db, math.MinInt64, math.MaxInt64, all), "head")
	reopen(t, &db, dir, opts)
	require.Equal(t, want, query(t, db, math.MinInt64, math.MaxInt64, all), "after replay")
	write(100, 300) // past the first partition: the same series
	require.Equal(t, want, query(t, db, math.MinInt64, math.MaxInt64, all), "written again")
	require.Equal(t, len(lsets), db.head.NumSeries(), "no series made twice")
	require.NoError(t, db.FlushHead())
	require.Equal(t, want, query(t, db, math.MinInt64, math.MaxInt64, all), "after a flush")
	got := query(t, db, math.MinInt64, math.MaxInt64, labels.MustNewMatcher(labels.MatchEqual, "hostname", "host_1"), labels.MustNewMatcher(labels.MatchEqual, "Zone", "z"))
	require.Len(t, got, 1)
	require.Contains(t, got, `{Zone="z", __name__="mem_used", hostname="host_1"}`)
	require.NoError(t, db.Close())
}
