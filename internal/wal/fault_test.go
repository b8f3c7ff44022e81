package wal

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// waitFor polls cond; a generous deadline keeps a broken test from hanging.
func waitFor(cond func() bool) {
	deadline := time.Now().Add(10 * time.Second)
	for !cond() && time.Now().Before(deadline) {
		time.Sleep(20 * time.Microsecond)
	}
}

// logConcurrently runs n Logs at once and returns their errors.
func logConcurrently(w *WAL, n int) []error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs[i] = w.Log(fmt.Appendf(nil, "rec-%d", i)) })
	}
	wg.Wait()
	return errs
}

// TestFsyncFailure: a failing fsync fails every waiting Log, every later
// call, and Close; nothing is acknowledged.
func TestFsyncFailure(t *testing.T) {
	const n = 6
	var writes atomic.Int64
	hooks := &fileHooks{
		write: func(f *os.File, p []byte) (int, error) {
			if !isHeader(p) {
				writes.Add(1)
			}
			return f.Write(p)
		},
	}
	hooks.sync = func(f *os.File) error {
		if writes.Load() == 0 {
			return f.Sync() // the new segment's header
		}
		waitFor(func() bool { return writes.Load() == n })
		return errSync
	}
	w := openHooked(t, t.TempDir(), Options{}, hooks)
	for i, err := range logConcurrently(w, n) {
		require.ErrorIs(t, err, errSync, "Log %d", i)
	}
	require.ErrorIs(t, w.Log([]byte("later")), errSync)
	_, err := w.Cut()
	require.ErrorIs(t, err, errSync)
	require.ErrorIs(t, w.Close(), errSync)
}

// TestShortWrite: a short write fails the WAL; the callers waiting for an
// fsync that covered their (complete) records are not acknowledged either.
// On reopen the partial frame is a torn tail.
func TestShortWrite(t *testing.T) {
	const n = 5
	var writes atomic.Int64
	var short atomic.Bool
	hooks := &fileHooks{
		write: func(f *os.File, p []byte) (int, error) {
			if isHeader(p) {
				return f.Write(p)
			}
			if writes.Add(1) == n {
				m, _ := f.Write(p[:len(p)/2])
				short.Store(true)
				return m, io.ErrShortWrite
			}
			return f.Write(p)
		},
	}
	hooks.sync = func(f *os.File) error {
		if writes.Load() > 0 {
			waitFor(short.Load)
		}
		return f.Sync()
	}
	dir := t.TempDir()
	w := openHooked(t, dir, Options{}, hooks)
	for i, err := range logConcurrently(w, n) {
		require.ErrorIs(t, err, io.ErrShortWrite, "Log %d", i)
	}
	require.ErrorIs(t, w.Log([]byte("later")), io.ErrShortWrite)
	require.ErrorIs(t, w.Close(), io.ErrShortWrite)

	w = openT(t, dir, Options{})
	defer w.Close()
	got := mustReplay(t, w)
	require.Len(t, got, n-1, "the complete frames replay, the partial one is cut")
	frameOffsets(t, SegmentName(dir, 1))
}

// errSync is the fsync failure failingSync injects.
var errSync = errors.New("injected fsync failure")

// failingSync returns hooks whose fsyncs fail with errSync once fail is
// set.
func failingSync() (hooks *fileHooks, fail *atomic.Bool) {
	fail = new(atomic.Bool)
	hooks = &fileHooks{sync: func(f *os.File) error {
		if fail.Load() {
			return errSync
		}
		return f.Sync()
	}}
	return hooks, fail
}

// TestCutFsyncFailure: the fsync that closes a segment fails the WAL too.
func TestCutFsyncFailure(t *testing.T) {
	hooks, fail := failingSync()
	w := openHooked(t, t.TempDir(), Options{SegmentSize: 64}, hooks)
	require.NoError(t, w.Log(testRecord(0, 40)))
	fail.Store(true)
	require.ErrorIs(t, w.Log(testRecord(1, 40)), errSync) // needs a cut
	require.ErrorIs(t, w.Close(), errSync)
}

// TestSyncIntervalFsyncFailure: in SyncInterval mode a background fsync
// failure is reported by the next Log.
func TestSyncIntervalFsyncFailure(t *testing.T) {
	hooks, fail := failingSync()
	w := openHooked(t, t.TempDir(), Options{Sync: SyncInterval, SyncInterval: time.Millisecond}, hooks)
	require.NoError(t, w.Log([]byte("a")))
	fail.Store(true)
	// The background fsync may fail before or after this Log: either it
	// is accepted (written, fsync pending) or it already reports the failure.
	if err := w.Log([]byte("b")); err != nil {
		require.ErrorIs(t, err, errSync)
	}
	var err error
	waitFor(func() bool { err = w.Log([]byte("c")); return err != nil })
	require.ErrorIs(t, err, errSync)
	require.ErrorIs(t, w.Close(), errSync)
}

func TestCreateSegmentFailure(t *testing.T) {
	errCreate := errors.New("injected create failure")
	w, err := open(t.TempDir(), Options{}, func(string) (segmentFile, error) { return nil, errCreate })
	require.NoError(t, err)
	require.ErrorIs(t, w.Log([]byte("a")), errCreate)
	require.ErrorIs(t, w.Close(), errCreate)
}

// TestWriteWait: Write returns increasing tickets and the batches replay
// in Write order; Wait returns nil once a batch is fsync'd (several
// written batches share the fsyncs), at once for ticket 0 and in interval
// mode, and the WAL's error when the fsync covering the batch failed.
func TestWriteWait(t *testing.T) {
	dir := t.TempDir()
	var fsyncs atomic.Int64
	w := openT(t, dir, Options{OnFsync: func(time.Duration) { fsyncs.Add(1) }})
	var tickets []uint64
	var want [][]byte
	for i := range 20 {
		r := testRecord(i, 40)
		tk, err := w.Write(r)
		require.NoError(t, err)
		if len(tickets) > 0 {
			require.Greater(t, tk, tickets[len(tickets)-1])
		}
		tickets = append(tickets, tk)
		want = append(want, r)
	}
	require.NoError(t, w.Wait(0))
	require.NoError(t, w.Wait(tickets[len(tickets)-1]))
	require.NoError(t, w.Wait(tickets[0]), "an earlier batch is durable too")
	require.LessOrEqual(t, fsyncs.Load(), int64(len(tickets)), "no more fsyncs than batches")
	require.NoError(t, w.Close())
	w = openT(t, dir, Options{})
	require.Equal(t, want, recs(mustReplay(t, w)))
	require.NoError(t, w.Close())

	wi := openT(t, t.TempDir(), Options{Sync: SyncInterval, SyncInterval: time.Hour})
	tk, err := wi.Write([]byte("x"))
	require.NoError(t, err)
	require.NoError(t, wi.Wait(tk), "interval mode: written is enough")
	require.NoError(t, wi.Close())

	hooks, fail := failingSync()
	wf := openHooked(t, t.TempDir(), Options{}, hooks)
	tk, err = wf.Write([]byte("w")) // creates the segment (fsync'd)
	require.NoError(t, err)
	require.NoError(t, wf.Wait(tk))
	fail.Store(true)
	tk, err = wf.Write([]byte("y"))
	require.NoError(t, err, "the write itself succeeds")
	require.ErrorIs(t, wf.Wait(tk), errSync)
	_, err = wf.Write([]byte("z"))
	require.ErrorIs(t, err, errSync, "a failed WAL takes no more writes")
}
