package tsdb

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// walBytes is the size of every file of the WAL directory.
func walBytes(t *testing.T, dir string) int64 {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(dir, walDirname))
	require.NoError(t, err)
	var n int64
	for _, e := range ents {
		fi, err := e.Info()
		require.NoError(t, err)
		n += fi.Size()
	}
	return n
}

// TestWALTruncatedAfterFlush checks that a flush lets go of every WAL
// segment written before it, the rows not yet in a block carried into the
// checkpoint, and that every sample survives reopening, twice (the second
// checkpoint carries rows of the first).
func TestWALTruncatedAfterFlush(t *testing.T) {
	opts := &Options{FlushCheckInterval: -1, WALSegmentSize: 16 << 10}
	db, dir := openDir(t, opts)
	want := map[string][]smp{}
	writeHostDay(t, db, 0, 50*day, 50*day+7*hour, 10_000, want, nil)
	first, last, err := db.wal.Segments()
	require.NoError(t, err)
	require.Greater(t, last, first, "several segments before the flush")
	full := walBytes(t, dir)

	require.NoError(t, db.Compact())
	require.NotEmpty(t, db.Blocks())
	first, last, err = db.wal.Segments()
	require.NoError(t, err)
	require.Equal(t, first, last, "only the segment cut at the flush is left")
	ckpts, err := filepath.Glob(filepath.Join(dir, walDirname, "checkpoint.*"))
	require.NoError(t, err)
	require.Len(t, ckpts, 1)
	// Of 7 hours, the last (after the newest flushed partition) stays.
	require.Less(t, walBytes(t, dir), full/3)
	require.NoError(t, db.Close())

	db, err = Open(dir, opts)
	require.NoError(t, err)
	requireSamples(t, db, want, "reopened after the first flush")
	writeHostDay(t, db, 0, 50*day+7*hour, 50*day+11*hour, 10_000, want, nil)
	require.NoError(t, db.Compact())
	require.NoError(t, db.Close())

	db, err = Open(dir, opts)
	require.NoError(t, err)
	defer db.Close()
	requireSamples(t, db, want, "reopened after the second flush")
	require.NoError(t, db.FlushHead())
	requireSamples(t, db, want, "after flushing the head")
}
