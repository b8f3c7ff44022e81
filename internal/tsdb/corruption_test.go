package tsdb

import (
	"bytes"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/stretchr/testify/require"

	"github.com/aerie-db/aerie/internal/block"
)

// fillDB writes rows of 5 series at 15 s from row from to row to.
func fillDB(t *testing.T, db *DB, from, to int64) {
	t.Helper()
	for i := from; i < to; i++ {
		app := db.RowAppender()
		for s := 0; s < 5; s++ {
			require.NoError(t, app.Append(labels.FromStrings("__name__", "m", "job", "j", "s", string(rune('a'+s))), i*15_000, float64(i+int64(s))))
		}
		require.NoError(t, app.Commit())
	}
}

func TestCorruptBlockQuarantined(t *testing.T) {
	opts := &Options{FlushCheckInterval: -1, PartitionRange: 3600_000}
	db, dir := openDir(t, opts)
	fillDB(t, db, 0, 960) // 4 h: four 1 h partitions
	require.NoError(t, db.FlushHead())
	metas := db.Blocks()
	require.Len(t, metas, 4)
	require.NoError(t, db.Close())

	// Flip one byte in the data file of the second block.
	victim := filepath.Join(dir, blocksDirname, metas[1].ULID, block.DataFilename)
	b, err := os.ReadFile(victim)
	require.NoError(t, err)
	b[len(b)/2] ^= 0xff
	require.NoError(t, os.WriteFile(victim, b, 0o644))

	var logs bytes.Buffer
	opts.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	db, err = Open(dir, opts)
	require.NoError(t, err)
	defer db.Close()
	require.Len(t, db.Blocks(), 3)
	require.Equal(t, int64(1), db.Stats().Quarantined)
	require.Contains(t, logs.String(), "block quarantined")
	require.Contains(t, logs.String(), victim)
	_, err = os.Stat(filepath.Join(dir, quarantineDirname, metas[1].ULID))
	require.NoError(t, err)

	// The rest keeps serving: hours 0, 2 and 3 are all there.
	got := query(t, db, math.MinInt64, math.MaxInt64, labels.MustNewMatcher(labels.MatchEqual, "s", "a"))
	require.Len(t, got, 1)
	for _, ss := range got {
		require.Len(t, ss, 720)
		for _, s := range ss {
			require.False(t, s.t >= 3600_000 && s.t < 7200_000)
		}
	}
}

func TestCorruptWALTailTruncated(t *testing.T) {
	opts := &Options{FlushCheckInterval: -1}
	db, dir := openDir(t, opts)
	fillDB(t, db, 0, 100)
	require.NoError(t, db.Close())

	segs, err := filepath.Glob(filepath.Join(dir, walDirname, "0*"))
	require.NoError(t, err)
	sort.Strings(segs)
	last := segs[len(segs)-1]
	b, err := os.ReadFile(last)
	require.NoError(t, err)
	b[len(b)-3] ^= 0xff // inside the last record
	require.NoError(t, os.WriteFile(last, b, 0o644))

	db, err = Open(dir, opts)
	require.NoError(t, err)
	got := query(t, db, math.MinInt64, math.MaxInt64, labels.MustNewMatcher(labels.MatchEqual, "s", "a"))
	require.Len(t, got, 1)
	for _, ss := range got {
		require.Len(t, ss, 99, "everything but the torn last row")
	}
	// Appending continues after the truncation point and survives.
	fillDB(t, db, 100, 110)
	reopen(t, &db, dir, opts)
	defer db.Close()
	got = query(t, db, math.MinInt64, math.MaxInt64, labels.MustNewMatcher(labels.MatchEqual, "s", "a"))
	for _, ss := range got {
		require.Len(t, ss, 109)
	}
}
