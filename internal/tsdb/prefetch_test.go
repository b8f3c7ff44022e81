package tsdb

import (
	"context"
	"fmt"
	"math"
	"math/rand"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/stretchr/testify/require"
)

// prefetchDB holds 6 series over 3 h in blocks, the head and a second
// write of some rows (a backfill generation), so that a series has several
// sources, and a tombstone on one series.
func prefetchDB(t *testing.T) (*DB, map[string][]smp) {
	t.Helper()
	db, err := Open(t.TempDir(), &Options{FlushCheckInterval: -1, PartitionRange: 3600_000})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	want := map[string][]smp{}
	lset := func(s int) labels.Labels {
		return labels.FromStrings("__name__", "m", "s", fmt.Sprint(s))
	}
	for i := int64(0); i < 3*1800; i++ { // 5,400 samples a series: several batches
		if i == 2*1800 {
			require.NoError(t, db.FlushHead())
		}
		app := db.RowAppender()
		for s := 0; s < 6; s++ {
			if s == 2 && i%3 == 0 {
				continue
			}
			v := float64(i*int64(s+1)) / 7
			require.NoError(t, app.Append(lset(s), i*2000, v))
			want[lset(s).String()] = append(want[lset(s).String()], smp{i * 2000, v})
		}
		require.NoError(t, app.Commit())
	}
	return db, want
}

// samplesOf reads it to the end.
func samplesOf(t *testing.T, it chunkenc.Iterator) []smp {
	t.Helper()
	var out []smp
	for it.Next() == chunkenc.ValFloat {
		a, b := it.At()
		out = append(out, smp{a, b})
	}
	require.NoError(t, it.Err())
	return out
}

// TestPrefetchOrders: the read-ahead answers as the plain iterators
// whatever order the series are read in, and when an iterator is kept
// after the next series was asked for, or sought around.
func TestPrefetchOrders(t *testing.T) {
	db, want := prefetchDB(t)
	all := labels.MustNewMatcher(labels.MatchEqual, "__name__", "m")
	open := func() ([]storage.Series, func()) {
		q, err := db.Querier(math.MinInt64, math.MaxInt64)
		require.NoError(t, err)
		ss := q.Select(context.Background(), true, nil, all)
		var out []storage.Series
		for ss.Next() {
			out = append(out, ss.At())
		}
		require.Len(t, out, 6)
		require.NotNil(t, out[0].(*series).pf, "read ahead")
		return out, func() { require.NoError(t, q.Close()) }
	}
	check := func(s storage.Series, got []smp) {
		t.Helper()
		require.Equal(t, want[s.Labels().String()], got, s.Labels().String())
	}

	t.Run("in order, iterators reused", func(t *testing.T) {
		ss, done := open()
		defer done()
		var it chunkenc.Iterator
		for _, s := range ss {
			it = s.Iterator(it)
			check(s, samplesOf(t, it))
		}
	})
	t.Run("backwards", func(t *testing.T) {
		ss, done := open()
		defer done()
		for i := len(ss) - 1; i >= 0; i-- {
			check(ss[i], samplesOf(t, ss[i].Iterator(nil)))
		}
	})
	t.Run("kept after the next", func(t *testing.T) {
		ss, done := open()
		defer done()
		a := ss[0].Iterator(nil)
		var got []smp
		for range 3000 { // past the first batch
			require.Equal(t, chunkenc.ValFloat, a.Next())
			t0, v := a.At()
			got = append(got, smp{t0, v})
		}
		b := ss[1].Iterator(nil)
		check(ss[0], append(got, samplesOf(t, a)...))
		check(ss[1], samplesOf(t, b))
		check(ss[2], samplesOf(t, ss[2].Iterator(nil)))
	})
	t.Run("seeks", func(t *testing.T) {
		ss, done := open()
		defer done()
		rng := rand.New(rand.NewSource(1))
		for _, s := range ss {
			it := s.Iterator(nil)
			w := want[s.Labels().String()]
			pos := -1
			for range 40 {
				if rng.Intn(3) == 0 {
					pos++
					if pos >= len(w) {
						require.Equal(t, chunkenc.ValNone, it.Next())
						break
					}
					require.Equal(t, chunkenc.ValFloat, it.Next())
				} else {
					target := int64(rng.Intn(3*3600_000 + 20_000))
					j := max(pos, 0)
					for j < len(w) && w[j].t < target {
						j++
					}
					if j >= len(w) {
						require.Equal(t, chunkenc.ValNone, it.Seek(target))
						break
					}
					require.Equal(t, chunkenc.ValFloat, it.Seek(target))
					pos = j
				}
				t0, v := it.At()
				require.Equal(t, w[pos], smp{t0, v}, "%s at %d", s.Labels(), pos)
			}
		}
	})
	t.Run("batches then samples", func(t *testing.T) {
		ss, done := open()
		defer done()
		for i, s := range ss {
			it := s.Iterator(nil)
			b, ok := it.(interface{ NextBatch() ([]int64, []float64) })
			require.True(t, ok)
			var got []smp
			for n := 0; n <= i; n++ { // a few batches, more for later series
				ts, vs := b.NextBatch()
				if ts == nil {
					break
				}
				for j := range ts {
					got = append(got, smp{ts[j], vs[j]})
				}
				t0, v := it.At()
				require.Equal(t, got[len(got)-1], smp{t0, v}, "the batch's last is current")
			}
			check(s, append(got, samplesOf(t, it)...))
		}
	})
	t.Run("closed unread", func(t *testing.T) {
		ss, done := open()
		_ = ss[0].Iterator(nil) // starts the producer, which fills its queue
		done()                  // stops it (goleak checks none is left)
	})
	t.Run("tombstones", func(t *testing.T) {
		require.NoError(t, db.Delete(context.Background(), 1000_000, 2000_000, labels.MustNewMatcher(labels.MatchEqual, "s", "3")))
		ss, done := open()
		defer done()
		for _, s := range ss {
			got := samplesOf(t, s.Iterator(nil))
			if s.Labels().Get("s") != "3" {
				check(s, got)
				continue
			}
			var w []smp
			for _, x := range want[s.Labels().String()] {
				if x.t < 1000_000 || x.t > 2000_000 {
					w = append(w, x)
				}
			}
			require.Equal(t, w, got)
		}
	})
}

// TestFillMergesSources: a series held by several sources (the head and
// overlapping blocks) is merged by the producer as seriesiter.Merge does:
// on a timestamp in several, the earliest source wins.
func TestFillMergesSources(t *testing.T) {
	db, err := Open(t.TempDir(), &Options{FlushCheckInterval: -1, PartitionRange: 3600_000})
	require.NoError(t, err)
	defer func() { require.NoError(t, db.Close()) }()
	l := labels.FromStrings("__name__", "m", "s", "x")
	l2 := labels.FromStrings("__name__", "m", "s", "y")
	write := func(from, to, step int64, v float64) {
		for ts := from; ts < to; ts += step {
			app := db.RowAppender()
			require.NoError(t, app.Append(l, ts, v))
			require.NoError(t, app.Append(l2, ts, v))
			require.NoError(t, app.Commit())
		}
	}
	write(0, 3600_000, 10_000, 1)
	require.NoError(t, db.FlushHead())
	write(3600_000, 7200_000, 10_000, 2)
	plain := func() map[string][]smp {
		q, err := db.Querier(math.MinInt64, math.MaxInt64)
		require.NoError(t, err)
		defer q.Close()
		out := map[string][]smp{}
		ss := q.Select(context.Background(), true, nil, labels.MustNewMatcher(labels.MatchEqual, "__name__", "m"))
		for ss.Next() {
			s := ss.At().(*series)
			require.Greater(t, len(s.sources), 1)
			out[s.Labels().String()] = samplesOf(t, s.rawIterator(nil))
		}
		return out
	}
	want := plain()
	got := query(t, db, math.MinInt64, math.MaxInt64, labels.MustNewMatcher(labels.MatchEqual, "__name__", "m"))
	require.Equal(t, want, got)
	require.Len(t, got[l.String()], 720)
}
