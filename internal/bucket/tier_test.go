package bucket

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/stretchr/testify/require"

	"github.com/aerie-db/aerie/internal/tsdb"
)

// dbSamples reads every sample of every series of db in [mint, maxt].
func dbSamples(t *testing.T, db *tsdb.DB, mint, maxt int64) map[string][][2]float64 {
	t.Helper()
	q, err := db.Querier(mint, maxt)
	require.NoError(t, err)
	defer q.Close()
	return querierSamples(t, q)
}

// querierSamples reads every sample of every series through q.
func querierSamples(t *testing.T, q storage.Querier) map[string][][2]float64 {
	t.Helper()
	ss := q.Select(context.Background(), true, nil, labels.MustNewMatcher(labels.MatchRegexp, "__name__", ".+"))
	out := map[string][][2]float64{}
	var it chunkenc.Iterator
	for ss.Next() {
		s := ss.At()
		it = s.Iterator(it)
		for it.Next() != chunkenc.ValNone {
			ts, v := it.At()
			out[s.Labels().String()] = append(out[s.Labels().String()], [2]float64{float64(ts), v})
		}
		require.NoError(t, it.Err())
	}
	require.NoError(t, ss.Err())
	return out
}

// writeHosts writes hours of 10 s rows of 4 metrics on 3 hosts, and
// commits each row.
func writeHosts(t *testing.T, db *tsdb.DB, hours int64) {
	t.Helper()
	for i := int64(0); i < hours*360; i++ {
		app := db.RowAppender()
		for host := range 3 {
			for m := range 4 {
				l := labels.FromStrings("__name__", fmt.Sprintf("m%d", m), "job", "node", "instance", fmt.Sprintf("h%d", host))
				require.NoError(t, app.Append(l, i*10_000, float64(i+int64(m*host))))
			}
		}
		require.NoError(t, app.Commit())
	}
}

// TestTierDisasterRecovery: blocks older than the local retention are
// uploaded by the engine; a node with an empty data directory on the same
// bucket serves them, answering as the first node does, and keeps taking
// writes with codes that do not clash with the bucket's.
func TestTierDisasterRecovery(t *testing.T) {
	st := newMemStore()
	tier := NewTier(st, 4096, 1<<20)
	opts := func() *tsdb.Options {
		return &tsdb.Options{FlushCheckInterval: -1, PartitionRange: 3600_000, Remote: tier, LocalRetention: 3600_000}
	}
	db, err := tsdb.Open(t.TempDir(), opts())
	require.NoError(t, err)
	writeHosts(t, db, 4)
	require.NoError(t, db.FlushHead())
	before := dbSamples(t, db, math.MinInt64, math.MaxInt64)
	require.NoError(t, db.ShipBlocks(context.Background()))
	// The uploaded blocks' local copies are gone, and the node answers as
	// before, from the bucket.
	require.Equal(t, before, dbSamples(t, db, math.MinInt64, math.MaxInt64))
	entries, err := os.ReadDir(filepath.Join(db.Dir(), "blocks"))
	require.NoError(t, err)
	for _, e := range entries {
		ok, err := st.Exists(context.Background(), MetaObjectName(e.Name()))
		require.NoError(t, err)
		require.False(t, ok, "block %s is both local and uploaded", e.Name())
	}
	ulids, err := ListBlocks(context.Background(), st)
	require.NoError(t, err)
	require.NotEmpty(t, ulids)
	rs := db.RemoteStats()
	require.Equal(t, int64(len(ulids)), rs.ShippedBlocks)
	require.Equal(t, len(ulids), rs.Blocks)
	require.Zero(t, rs.UploadLag)
	var shippedMax int64 = math.MinInt64
	for _, m := range db.Blocks() {
		for _, id := range ulids {
			if id == m.ULID {
				shippedMax = max(shippedMax, m.MaxTime-1)
			}
		}
	}
	require.Less(t, shippedMax, int64(4*3600_000), "the newest hour stays local")
	want := dbSamples(t, db, 0, shippedMax)
	require.NoError(t, db.Close())

	fresh, err := tsdb.Open(t.TempDir(), opts())
	require.NoError(t, err)
	defer fresh.Close()
	got := dbSamples(t, fresh, 0, shippedMax)
	require.Equal(t, want, got)
	require.Positive(t, tier.Stats.Gets.Load())

	// New writes on the recovered node: a new label pair gets a code after
	// the bucket's, and old ones keep theirs.
	app := fresh.RowAppender()
	require.NoError(t, app.Append(labels.FromStrings("__name__", "m0", "job", "node", "instance", "h9"), 5*3600_000, 1))
	require.NoError(t, app.Commit())
	require.Equal(t, want, dbSamples(t, fresh, 0, shippedMax))

	// A block whose metadata object is damaged is skipped and counted;
	// the node starts and serves the others.
	st.corrupt = func(name string) bool { return name == MetaObjectName(ulids[0]) }
	other, err := tsdb.Open(t.TempDir(), opts())
	require.NoError(t, err)
	defer other.Close()
	require.Equal(t, int64(1), other.Stats().Quarantined)
	require.Len(t, other.Blocks(), len(ulids)-1)
}

// TestTierRetention: retention drops remote blocks and deletes them from
// the bucket, metadata object first, leaving no object of theirs.
func TestTierRetention(t *testing.T) {
	st := newMemStore()
	tier := NewTier(st, 4096, 1<<20)
	db, err := tsdb.Open(t.TempDir(), &tsdb.Options{FlushCheckInterval: -1, PartitionRange: 3600_000, Remote: tier, LocalRetention: 3600_000, Retention: 3 * 3600_000})
	require.NoError(t, err)
	defer db.Close()
	write := func(from, to int64) {
		for i := from; i < to; i++ {
			app := db.RowAppender()
			require.NoError(t, app.Append(labels.FromStrings("__name__", "m", "job", "j"), i*10_000, float64(i)))
			require.NoError(t, app.Commit())
		}
	}
	write(0, 3*360)
	require.NoError(t, db.FlushHead())
	require.NoError(t, db.ShipBlocks(context.Background()))
	ulids, err := ListBlocks(context.Background(), st)
	require.NoError(t, err)
	require.NotEmpty(t, ulids)
	oldest := ulids[0]
	write(3*360, 6*360) // the newest data move past the retention of the first hours
	require.NoError(t, db.FlushHead())
	require.NoError(t, db.ShipBlocks(context.Background()))
	for _, name := range st.names() {
		require.NotContains(t, name, oldest, "object of a block past retention")
	}
	got := dbSamples(t, db, math.MinInt64, math.MaxInt64)
	for _, s := range got {
		require.GreaterOrEqual(t, s[0][0], float64(3*3600_000-3600_000), "samples past retention still answered")
	}
}

// TestTierShipsCompacted: blocks that a compaction would still merge (an
// upload of history written twice over one range) stay local until they
// are merged; the bucket gets the merged block.
func TestTierShipsCompacted(t *testing.T) {
	tier := NewTier(newMemStore(), 4096, 1<<20)
	db, err := tsdb.Open(t.TempDir(), &tsdb.Options{FlushCheckInterval: -1, PartitionRange: 3600_000, Remote: tier, LocalRetention: 3600_000})
	require.NoError(t, err)
	defer db.Close()
	write := func(name string, from, to, step int64) {
		app := db.Appender(context.Background())
		for ts := from; ts < to; ts += step {
			_, err := app.Append(0, labels.FromStrings("__name__", name), ts, float64(ts/1000))
			require.NoError(t, err)
		}
		require.NoError(t, app.Commit())
	}
	const day = 24 * 3600_000
	write("now", 10*day, 10*day+3600_000, 60_000)
	require.NoError(t, db.FlushHead())
	// Two uploads over the same old hours: overlapping backfill blocks.
	write("old", day, day+4*3600_000, 60_000)
	require.NoError(t, db.FlushBackfill())
	write("old", day+30_000, day+4*3600_000, 60_000)
	require.NoError(t, db.FlushBackfill())
	want := dbSamples(t, db, math.MinInt64, math.MaxInt64)

	require.NoError(t, db.ShipBlocks(context.Background()))
	require.Zero(t, db.RemoteStats().Blocks, "blocks due for a merge were shipped")
	require.NoError(t, db.CompactBlocks())
	require.NoError(t, db.ShipBlocks(context.Background()))
	require.Positive(t, db.RemoteStats().Blocks)
	for _, m := range db.Blocks() {
		if m.MaxTime < 5*day {
			require.Positive(t, m.Compaction.Level+len(m.Compaction.Parents), "block %s of the old range is not a merge", m.ULID)
		}
	}
	require.Equal(t, want, dbSamples(t, db, math.MinInt64, math.MaxInt64))
}

// TestTierMetadataBound: with RemoteMetadataBytes below one block's
// metadata, a node keeps one bucket block's metadata in memory, opens the
// others again as reads need them, answers as a node that keeps them all,
// and a querier keeps reading a block dropped while it held it.
func TestTierMetadataBound(t *testing.T) {
	st := newMemStore()
	tier := NewTier(st, 4096, 1<<20)
	opts := func(budget int64) *tsdb.Options {
		return &tsdb.Options{FlushCheckInterval: -1, PartitionRange: 3600_000, Remote: tier, LocalRetention: 3600_000, RemoteMetadataBytes: budget}
	}
	db, err := tsdb.Open(t.TempDir(), opts(0))
	require.NoError(t, err)
	writeHosts(t, db, 5)
	require.NoError(t, db.FlushHead())
	require.NoError(t, db.ShipBlocks(context.Background()))
	rs := db.RemoteStats()
	require.GreaterOrEqual(t, rs.Blocks, 3)
	require.Equal(t, rs.Blocks, db.RemoteMetadataStats().Loaded, "unbounded: every shipped block stays in memory")
	require.NoError(t, db.Close())

	// Nodes with empty data directories serve the bucket's blocks.
	all, err := tsdb.Open(t.TempDir(), opts(0))
	require.NoError(t, err)
	defer all.Close()
	want := dbSamples(t, all, math.MinInt64, math.MaxInt64)
	require.Len(t, want, 12)

	bounded, err := tsdb.Open(t.TempDir(), opts(1))
	require.NoError(t, err)
	defer bounded.Close()
	ms := bounded.RemoteMetadataStats()
	require.Equal(t, 1, ms.Loaded, "a budget below one block's metadata holds one block")
	require.Positive(t, ms.Bytes)

	// A querier that acquired every block, reading after the others were
	// dropped and loaded again by other reads.
	q, err := bounded.Querier(math.MinInt64, math.MaxInt64)
	require.NoError(t, err)
	defer q.Close()
	names, _, err := q.LabelValues(context.Background(), "instance", nil)
	require.NoError(t, err)
	require.Equal(t, []string{"h0", "h1", "h2"}, names)
	// A querier opened now finds stand-ins; the reads below load and drop
	// each block again, so by its first read the stand-ins it noted are
	// replaced by others.
	q2, err := bounded.Querier(math.MinInt64, math.MaxInt64)
	require.NoError(t, err)
	defer q2.Close()
	for range 3 {
		require.Equal(t, want, dbSamples(t, bounded, math.MinInt64, math.MaxInt64))
	}
	require.Equal(t, want, querierSamples(t, q2))
	ms = bounded.RemoteMetadataStats()
	require.Equal(t, 1, ms.Loaded)
	require.Positive(t, ms.Loads)
	require.Positive(t, ms.Drops)
	require.Equal(t, rs.Blocks, bounded.RemoteStats().Blocks, "stand-ins still count as the bucket's blocks")

	require.Equal(t, want, querierSamples(t, q))
	require.NoError(t, q.Close())
	for range 2 {
		require.Equal(t, want, dbSamples(t, bounded, math.MinInt64, math.MaxInt64))
	}

	// A dropped block that cannot be opened again fails the read that
	// needs it, rather than leaving its samples out.
	st.corrupt = func(name string) bool { return strings.HasSuffix(name, "/"+metaName) }
	bad, err := bounded.Querier(math.MinInt64, math.MaxInt64)
	require.NoError(t, err)
	defer bad.Close()
	ss := bad.Select(context.Background(), true, nil, labels.MustNewMatcher(labels.MatchRegexp, "__name__", ".+"))
	for ss.Next() {
	}
	require.Error(t, ss.Err(), "a block that could not be opened again")
	st.corrupt = nil
	require.Equal(t, want, dbSamples(t, bounded, math.MinInt64, math.MaxInt64))
}
