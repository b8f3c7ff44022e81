package tsdb

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/stretchr/testify/require"

	"github.com/aerie-db/aerie/internal/memory"
)

// writeHours appends rows of n series every 15 s over [from, to) hours and
// records them in want. Values are a deterministic walk, so tuples
// compress as real gauges do.
func writeHours(t *testing.T, db *DB, n int, from, to int64, want map[string][]smp) {
	t.Helper()
	for ts := from * 3600_000; ts < to*3600_000; ts += 15_000 {
		app := db.RowAppender()
		for s := range n {
			l := labels.FromStrings("__name__", "g", "job", "j", "instance", "a", "s", fmt.Sprint(s))
			v := float64((ts/15_000)%97*int64(s+1)) / 4
			require.NoError(t, app.Append(l, ts, v))
			want[l.String()] = append(want[l.String()], smp{ts, v})
		}
		require.NoError(t, app.Commit())
	}
}

var allG = labels.MustNewMatcher(labels.MatchEqual, "__name__", "g")

// TestHotPartitionLifecycle follows a partition through Heracles' two
// release lines: after its flush it stays in memory (hot) and queries read
// it there instead of from its block; once dropped (hard release), new
// queries read the block, while a querier opened before keeps reading the
// memory, which is not recycled until that querier closes.
func TestHotPartitionLifecycle(t *testing.T) {
	db, err := Open(t.TempDir(), &Options{FlushCheckInterval: -1, PartitionRange: 3600_000, ReclaimInterval: time.Hour})
	require.NoError(t, err)
	defer db.Close()
	want := map[string][]smp{}
	writeHours(t, db, 20, 0, 4, want)
	require.NoError(t, db.Compact()) // partitions 0 and 1 are closed (the out-of-order window keeps 2 open)
	require.Equal(t, []int64{1}, db.Head().FlushedPartitions(), "one hot partition kept")
	require.Len(t, db.Blocks(), 2)
	mem := db.Head().Memory()
	require.Positive(t, mem.Stats().HotBlocks)

	hot0 := db.Stats().HotReads
	require.Equal(t, want, query(t, db, math.MinInt64, math.MaxInt64, allG))
	require.Equal(t, int64(20), db.Stats().HotReads-hot0, "each series' partition 1 read from memory")

	// A querier opened now holds partition 1's memory.
	q, err := db.Querier(math.MinInt64, math.MaxInt64)
	require.NoError(t, err)
	ss := q.Select(context.Background(), true, nil, allG)

	db.Head().DropPartition(1) // hard release
	require.Empty(t, db.Head().FlushedPartitions())
	mem.Advance()
	mem.Reclaim()
	st := mem.Stats()
	require.Positive(t, st.CoolingBlocks, "the open querier pins the cooled blocks")
	require.Zero(t, st.HotBlocks)

	// New queries read the block.
	hot0 = db.Stats().HotReads
	require.Equal(t, want, query(t, db, math.MinInt64, math.MaxInt64, allG))
	require.Zero(t, db.Stats().HotReads-hot0)

	// The old querier still reads the memory it found valid.
	require.Equal(t, want, collect(t, ss))
	require.NoError(t, q.Close())
	mem.Advance()
	mem.Reclaim()
	st = mem.Stats()
	require.Zero(t, st.CoolingBlocks, "recycled once the querier closed")
	require.Positive(t, st.ReclaimedBlocks)
	require.NoError(t, mem.Check())
}

// TestMemoryLimitBoundsHead: with a memory limit and hot partitions kept
// without a count bound, a steady ingest over many partitions stays within
// the limit: the manager cools the oldest hot partitions' blocks
// (45/35/20 %) and recycles them, and queries over partly reclaimed
// partitions read those series from the blocks. No page is taken beyond
// the limit.
func TestMemoryLimitBoundsHead(t *testing.T) {
	const pageSize = 64 << 10
	limit := int64(8 * pageSize)
	db, err := Open(t.TempDir(), &Options{
		FlushCheckInterval: -1, PartitionRange: 3600_000, HotPartitions: 1000,
		Memory: memory.Options{PageSize: pageSize, Limit: limit}, ReclaimInterval: time.Millisecond,
	})
	require.NoError(t, err)
	defer db.Close()
	mem := db.Head().Memory()
	want := map[string][]smp{}
	maxInUse := int64(0)
	for h := int64(0); h < 16; h++ {
		writeHours(t, db, 100, h, h+1, want)
		require.NoError(t, db.Compact())
		st := mem.Stats()
		maxInUse = max(maxInUse, st.InUseBytes)
		require.LessOrEqual(t, st.Bytes, limit, "hour %d: %d pages", h, st.Pages)
		if h%5 == 4 {
			require.Equal(t, want, query(t, db, math.MinInt64, math.MaxInt64, allG), "hour %d", h)
		}
	}
	st := mem.Stats()
	t.Logf("in use at most %d of %d bytes; %d hot blocks cooled by the policy, %d recycled; %d hot partitions in the head",
		maxInUse, limit, st.ReleasedBlocks, st.ReclaimedBlocks, db.Stats().HotPartitions)
	require.Zero(t, st.OverLimitPages)
	require.Positive(t, st.ReleasedBlocks, "the limit made the policy cool hot blocks")
	require.Positive(t, st.ReclaimedBlocks)
	require.Less(t, db.Stats().HotPartitions, 14, "fully reclaimed partitions were dropped from the head")
	require.Equal(t, want, query(t, db, math.MinInt64, math.MaxInt64, allG))
	require.NoError(t, mem.Check())
}

// TestHotPartitionsInCompactedBlock: once the blocks that hot partitions
// were flushed into are compacted, a query reads the compacted block and
// skips those partitions' columns in memory (they hold the same rows), so
// a series' sources do not overlap and AppendSpan appends them without a
// merge; the answers are those written.
func TestHotPartitionsInCompactedBlock(t *testing.T) {
	db, err := Open(t.TempDir(), &Options{FlushCheckInterval: -1, PartitionRange: 3600_000, HotPartitions: 1000, ReclaimInterval: time.Hour})
	require.NoError(t, err)
	defer db.Close()
	want := map[string][]smp{}
	writeHours(t, db, 5, 0, 16, want)
	require.NoError(t, db.Compact())
	var levels []int
	for _, b := range db.Blocks() {
		levels = append(levels, b.Compaction.Level)
	}
	require.Contains(t, levels, 1, "a 12 h window was compacted")
	require.Contains(t, db.Head().FlushedPartitions(), int64(3), "partitions of the compacted window stay hot")
	require.Equal(t, want, query(t, db, math.MinInt64, math.MaxInt64, allG))

	q, err := db.Querier(math.MinInt64, math.MaxInt64)
	require.NoError(t, err)
	defer q.Close()
	ss := q.Select(WithoutReadAhead(context.Background()), true, nil, allG)
	n := 0
	for ss.Next() {
		s := ss.At().(*series)
		ts, vs, ok, err := s.AppendSpan(nil, nil, math.MinInt64, math.MaxInt64)
		require.NoError(t, err)
		require.True(t, ok, "%s: sources overlap", s.Labels())
		got := make([]smp, len(ts))
		for i := range ts {
			got[i] = smp{ts[i], vs[i]}
		}
		require.Equal(t, want[s.Labels().String()], got, s.Labels().String())
		n++
	}
	require.NoError(t, ss.Err())
	require.Equal(t, len(want), n)

	// Over the partitions still in the head only, the series' Iterator
	// serves (AppendSpan declines).
	qh, err := db.Querier(15*3600_000, math.MaxInt64)
	require.NoError(t, err)
	defer qh.Close()
	ss = qh.Select(WithoutReadAhead(context.Background()), true, nil, allG)
	require.True(t, ss.Next())
	_, _, ok, err := ss.At().(*series).AppendSpan(nil, nil, math.MinInt64, math.MaxInt64)
	require.NoError(t, err)
	require.False(t, ok, "a series of head columns only")
}
