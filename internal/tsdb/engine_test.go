package tsdb

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/aerie-db/aerie/internal/memory"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestRetentionDeletesOldBlocks(t *testing.T) {
	db, dir := openDir(t, &Options{FlushCheckInterval: -1, PartitionRange: 3600_000, Retention: 2 * 3600_000})
	defer db.Close()
	fillDB(t, db, 0, 240) // 1 h
	app := db.RowAppender()
	require.NoError(t, app.Append(labels.FromStrings("__name__", "m", "job", "j", "s", "gone"), 3_000_000, 1))
	require.NoError(t, app.Commit())
	require.Equal(t, []string{"a", "b", "c", "d", "e", "gone"}, labelValues(t, db, "s"))
	require.NoError(t, db.FlushHead())
	fillDB(t, db, 240, 480)
	require.NoError(t, db.FlushHead())
	require.Len(t, db.Blocks(), 2)
	first := db.Blocks()[0]
	fillDB(t, db, 480, 1200) // up to 5 h: the first block's end is 4 h before
	require.NoError(t, db.Compact())
	for _, b := range db.Blocks() {
		require.NotEqual(t, first.ULID, b.ULID)
		require.Greater(t, b.MaxTime, db.Head().MaxTime()-2*3600_000)
	}
	_, err := os.Stat(filepath.Join(dir, blocksDirname, first.ULID))
	require.True(t, os.IsNotExist(err))
	got := query(t, db, math.MinInt64, math.MaxInt64, labels.MustNewMatcher(labels.MatchEqual, "s", "a"))
	for _, ss := range got {
		require.Greater(t, ss[0].t, int64(3600_000-1), "samples of deleted blocks are gone")
	}
	// A series whose data were only in the deleted block is gone from the
	// label APIs too: the head dropped it from its index at flush.
	require.Equal(t, []string{"a", "b", "c", "d", "e"}, labelValues(t, db, "s"))
}

func labelValues(t *testing.T, db *DB, name string) []string {
	t.Helper()
	q, err := db.Querier(math.MinInt64, math.MaxInt64)
	require.NoError(t, err)
	defer q.Close()
	vs, _, err := q.LabelValues(context.Background(), name, nil)
	require.NoError(t, err)
	return vs
}

// TestConcurrentAppendQueryFlush runs appenders, queries and flushes at
// once (run with -race) and checks every committed row is read back.
func TestConcurrentAppendQueryFlush(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts Options
	}{
		{"default", Options{}},
		// A memory limit far below the data, every flushed partition kept
		// hot, and the reclaimer running every millisecond: readers race
		// the reclamation of the blocks they read. In an invariants build
		// recycled blocks are poisoned, so a read of one fails the test.
		{"memory limit", Options{HotPartitions: 1000, ReclaimInterval: time.Millisecond,
			Memory: memory.Options{PageSize: 16 << 10, Limit: 64 << 10}}},
	} {
		t.Run(tc.name, func(t *testing.T) { testConcurrentAppendQueryFlush(t, tc.opts) })
	}
}

func testConcurrentAppendQueryFlush(t *testing.T, opts Options) {
	opts.FlushCheckInterval, opts.PartitionRange, opts.OOOWindow = -1, 60_000, 5_000
	db, _ := openDir(t, &opts)
	defer db.Close()
	const writers, rows, width = 4, 600, 8
	var wg sync.WaitGroup
	var committed atomic.Int64 // rows every writer has committed
	done := make(chan struct{})
	// Writers commit row i together (a scrape round), so none runs past
	// the others by more than the out-of-order bounds allow.
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := int64(0); i < rows; i++ {
			var round sync.WaitGroup
			for w := 0; w < writers; w++ {
				round.Add(1)
				go func(w int) {
					defer round.Done()
					app := db.RowAppender()
					for s := 0; s < width; s++ {
						l := labels.FromStrings("__name__", fmt.Sprintf("m%d", s), "job", "j", "instance", fmt.Sprint(w))
						if err := app.Append(l, i*1000, float64(i)); err != nil {
							t.Error(err)
							return
						}
					}
					if err := app.Commit(); err != nil {
						t.Error(err)
					}
				}(w)
			}
			round.Wait()
			committed.Store(i + 1)
		}
	}()
	var bg sync.WaitGroup
	// untilDone calls f in a goroutine of bg until done is closed or f
	// returns false.
	untilDone := func(f func() bool) {
		bg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				if !f() {
					return
				}
			}
		})
	}
	untilDone(func() bool { // readers
		c := committed.Load()
		q, err := db.Querier(math.MinInt64, math.MaxInt64)
		if err != nil {
			t.Error(err)
			return false
		}
		defer q.Close()
		ss := q.Select(context.Background(), false, nil, labels.MustNewMatcher(labels.MatchEqual, "__name__", "m3"))
		var it chunkenc.Iterator
		for ss.Next() {
			it = ss.At().Iterator(it)
			prev := int64(math.MinInt64)
			n := int64(0)
			for it.Next() == chunkenc.ValFloat {
				tt, v := it.At()
				if tt <= prev || v != float64(tt/1000) {
					t.Errorf("bad sample %d %v after %d", tt, v, prev)
				}
				if tt < c*1000 {
					n++
				}
				prev = tt
			}
			if it.Err() != nil {
				t.Error(it.Err())
			}
			if n != c {
				t.Errorf("%s: %d samples of the %d rows committed before the query", ss.At().Labels(), n, c)
			}
		}
		return true
	})
	untilDone(func() bool { // flusher
		if err := db.Compact(); err != nil {
			t.Error(err)
			return false
		}
		return true
	})
	wg.Wait()
	close(done)
	bg.Wait()
	require.NotEmpty(t, db.Blocks())
	got := query(t, db, math.MinInt64, math.MaxInt64, labels.MustNewMatcher(labels.MatchEqual, "job", "j"))
	require.Len(t, got, writers*width)
	for k, ss := range got {
		require.Len(t, ss, rows, k)
	}
	if opts.Memory.Limit > 0 {
		st := db.Head().Memory().Stats()
		t.Logf("%d hot blocks cooled by the policy, %d recycled, %d pages over the limit", st.ReleasedBlocks, st.ReclaimedBlocks, st.OverLimitPages)
		require.Positive(t, st.ReleasedBlocks, "the limit made the policy cool hot blocks")
		require.Positive(t, st.ReclaimedBlocks)
	}
}
