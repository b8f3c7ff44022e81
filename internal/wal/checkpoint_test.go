package wal

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func yieldAll(rs ...[]byte) func(func([]byte) error) error {
	return func(yield func([]byte) error) error {
		for _, r := range rs {
			if err := yield(r); err != nil {
				return err
			}
		}
		return nil
	}
}

func TestCheckpoint(t *testing.T) {
	dir := t.TempDir()
	w := openT(t, dir, Options{SegmentSize: 200})
	for i := range 40 {
		require.NoError(t, w.Log(testRecord(i, 30)))
	}
	n, err := w.Cut()
	require.NoError(t, err)
	require.Greater(t, n, 3)

	require.Error(t, w.Checkpoint(n+1, yieldAll(), nil), "beyond the active segment")
	require.Error(t, w.Checkpoint(0, yieldAll(), nil))
	boom := errors.New("boom")
	require.ErrorIs(t, w.Checkpoint(n, func(func([]byte) error) error { return boom }, nil), boom)
	require.ErrorContains(t, w.Checkpoint(n, yieldAll(nil), nil), "empty record")
	first, _, err := w.Segments()
	require.NoError(t, err)
	require.Equal(t, 1, first, "a failed checkpoint deletes nothing")
	assertNoTmp(t, dir)

	live := [][]byte{[]byte("series 1"), []byte("series 2")}
	require.NoError(t, w.Checkpoint(n, yieldAll(live...), nil))
	first, last, err := w.Segments()
	require.NoError(t, err)
	require.Equal(t, [2]int{n, n}, [2]int{first, last})
	require.FileExists(t, CheckpointName(dir, n))
	require.NoError(t, w.Log([]byte("after")))

	check := func(w *WAL) {
		t.Helper()
		got := mustReplay(t, w)
		require.Equal(t, []replayed{{n - 1, live[0]}, {n - 1, live[1]}, {n, []byte("after")}}, got)
	}
	check(w)
	require.NoError(t, w.Close())
	w = openT(t, dir, Options{SegmentSize: 200})
	check(w)

	// A second checkpoint replaces the first.
	m, err := w.Cut()
	require.NoError(t, err)
	require.Equal(t, n+1, m)
	require.NoError(t, w.Checkpoint(m, yieldAll([]byte("series 3")), nil))
	require.NoFileExists(t, CheckpointName(dir, n))
	require.Error(t, w.Checkpoint(n, yieldAll(), nil), "older than the newest checkpoint")
	require.NoError(t, w.Log([]byte("later")))
	got := mustReplay(t, w)
	require.Equal(t, []replayed{{m - 1, []byte("series 3")}, {m, []byte("later")}}, got)
	require.NoError(t, w.Close())
}

func TestCheckpointWithoutActiveSegment(t *testing.T) {
	dir := t.TempDir()
	writeWAL(t, dir, Options{}, [][]byte{[]byte("a")})
	w := openT(t, dir, Options{})
	require.NoError(t, w.Checkpoint(2, yieldAll([]byte("ckpt")), nil))
	first, last, err := w.Segments()
	require.NoError(t, err)
	require.Equal(t, [2]int{0, 0}, [2]int{first, last})
	require.NoError(t, w.Close())

	w = openT(t, dir, Options{})
	defer w.Close()
	require.NoError(t, w.Log([]byte("b")))
	got := mustReplay(t, w)
	require.Equal(t, []replayed{{1, []byte("ckpt")}, {2, []byte("b")}}, got)
}

func TestCheckpointLeftovers(t *testing.T) {
	dir := t.TempDir()
	w := openT(t, dir, Options{})
	require.NoError(t, w.Log([]byte("a")))
	n, err := w.Cut()
	require.NoError(t, err)
	require.NoError(t, w.Log([]byte("b")))
	require.NoError(t, w.Close())
	// A crash after writing the checkpoint but before deleting segment 1,
	// and an unfinished checkpoint.
	w = openT(t, dir, Options{})
	require.NoError(t, w.writeCheckpoint(CheckpointName(dir, n), yieldAll([]byte("ckpt"))))
	require.NoError(t, w.Close())
	require.NoError(t, os.WriteFile(CheckpointName(dir, 9)+".tmp", []byte("junk"), 0o666))

	w = openT(t, dir, Options{})
	defer w.Close()
	assertNoTmp(t, dir)
	got := mustReplay(t, w)
	require.Equal(t, []replayed{{n - 1, []byte("ckpt")}, {n, []byte("b")}}, got)
}

func TestCorruptCheckpoint(t *testing.T) {
	dir := t.TempDir()
	w := openT(t, dir, Options{})
	require.NoError(t, w.Log([]byte("a")))
	n, err := w.Cut()
	require.NoError(t, err)
	require.NoError(t, w.Checkpoint(n, yieldAll([]byte("series 1"), []byte("series 2")), nil))
	require.NoError(t, w.Close())
	name := CheckpointName(dir, n)
	b, err := os.ReadFile(name)
	require.NoError(t, err)
	// Even a torn-looking tail is corruption in a checkpoint: it was
	// complete when renamed.
	require.NoError(t, os.WriteFile(name, b[:len(b)-1], 0o666))

	w = openT(t, dir, Options{})
	defer w.Close()
	_, err = replayAll(w)
	var cerr *CorruptionError
	require.ErrorAs(t, err, &cerr)
	require.Equal(t, name, cerr.Segment)
	require.Equal(t, int64(SegmentHeaderSize), cerr.Offset) // both records are in the first frame
	require.ErrorContains(t, w.Repair(err), "cannot repair corrupt checkpoint")
}

func assertNoTmp(t *testing.T, dir string) {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "*.tmp"))
	require.NoError(t, err)
	require.Empty(t, m)
}

// TestCheckpointCarry checks that a checkpoint keeps, after the records of
// recs, what carry yields of the previous checkpoint and of the segments it
// replaces, in log order; and that carry's errors change nothing.
func TestCheckpointCarry(t *testing.T) {
	dir := t.TempDir()
	w := openT(t, dir, Options{SegmentSize: 100})
	for _, r := range []string{"drop 1", "keep 1", "drop 2", "keep 2"} {
		require.NoError(t, w.Log([]byte(r)))
		_, err := w.Cut()
		require.NoError(t, err)
	}
	keep := func(rec []byte, yield func([]byte) error) error {
		if bytes.HasPrefix(rec, []byte("keep")) {
			return yield(rec)
		}
		return nil
	}
	n, err := w.Cut()
	require.NoError(t, err)
	boom := errors.New("boom")
	require.ErrorIs(t, w.Checkpoint(n, yieldAll(), func([]byte, func([]byte) error) error { return boom }), boom)
	first, _, err := w.Segments()
	require.NoError(t, err)
	require.Equal(t, 1, first, "a failed checkpoint deletes nothing")
	assertNoTmp(t, dir)

	require.NoError(t, w.Checkpoint(n, yieldAll([]byte("defs")), keep))
	require.NoError(t, w.Log([]byte("keep 3")))
	require.NoError(t, w.Log([]byte("drop 3")))
	m, err := w.Cut()
	require.NoError(t, err)
	// The second checkpoint carries from the first one too; its own
	// definitions come first, the definitions of the first are not kept.
	require.NoError(t, w.Checkpoint(m, yieldAll([]byte("defs 2")), keep))
	require.NoError(t, w.Log([]byte("after")))
	require.NoError(t, w.Close())

	w = openT(t, dir, Options{})
	defer w.Close()
	got := mustReplay(t, w)
	want := []replayed{{m - 1, []byte("defs 2")}, {m - 1, []byte("keep 1")}, {m - 1, []byte("keep 2")}, {m - 1, []byte("keep 3")}, {m, []byte("after")}}
	require.Equal(t, want, got)
	first, last, err := w.Segments()
	require.NoError(t, err)
	require.Equal(t, [2]int{m, m}, [2]int{first, last})
}
