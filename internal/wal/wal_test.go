package wal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestLogReplay(t *testing.T) {
	for _, mode := range []SyncMode{SyncBatch, SyncInterval} {
		t.Run(mode.String(), func(t *testing.T) {
			dir := t.TempDir()
			w := openT(t, dir, Options{Sync: mode, SyncInterval: time.Millisecond})
			got := mustReplay(t, w)
			require.Empty(t, got)
			var want [][]byte
			for i := range 20 {
				batch := [][]byte{testRecord(i, 10+i), testRecord(100+i, 3)}
				want = append(want, batch...)
				require.NoError(t, w.Log(batch...))
			}
			require.NoError(t, w.Log()) // empty batch: nothing
			require.Error(t, w.Log([]byte{}))
			// Replay sees what this process logged, too.
			got = mustReplay(t, w)
			require.Equal(t, want, recs(got))
			require.NoError(t, w.Close())
			require.ErrorIs(t, w.Close(), ErrClosed)
			require.ErrorIs(t, w.Log([]byte("x")), ErrClosed)

			w = openT(t, dir, Options{})
			defer w.Close()
			got = mustReplay(t, w)
			require.Equal(t, want, recs(got))
			for _, r := range got {
				require.Equal(t, 1, r.seg)
			}
			first, last, err := w.Segments()
			require.NoError(t, err)
			require.Equal(t, [2]int{1, 1}, [2]int{first, last})
		})
	}
}

func TestSegmentsCutAndOrder(t *testing.T) {
	dir := t.TempDir()
	const segSize = 300
	opts := Options{SegmentSize: segSize}
	w := openT(t, dir, opts)
	first, last, err := w.Segments()
	require.NoError(t, err)
	require.Equal(t, [2]int{0, 0}, [2]int{first, last})

	var want [][]byte
	for i := range 60 {
		r := testRecord(i, 20+i%40)
		want = append(want, r)
		require.NoError(t, w.Log(r))
	}
	// A batch too big for any segment gets one of its own.
	big := [][]byte{testRecord(1000, segSize), testRecord(1001, 10)}
	want = append(want, big...)
	require.NoError(t, w.Log(big...))
	n, err := w.Cut()
	require.NoError(t, err)
	_, last, err = w.Segments()
	require.NoError(t, err)
	require.Equal(t, n, last)
	want = append(want, []byte("after cut"))
	require.NoError(t, w.Log(want[len(want)-1]))
	require.NoError(t, w.Close())

	first, last, err = w.Segments()
	require.NoError(t, err)
	require.Equal(t, 1, first)
	require.Greater(t, last, 5)
	for i := first; i <= last; i++ {
		st, err := os.Stat(SegmentName(dir, i))
		require.NoError(t, err)
		if i != last-1 { // the oversized batch
			require.LessOrEqual(t, st.Size(), int64(segSize), "segment %d", i)
		}
		frameOffsets(t, SegmentName(dir, i)) // whole frames only
	}

	w = openT(t, dir, opts)
	defer w.Close()
	got := mustReplay(t, w)
	require.Equal(t, want, recs(got))
	for i := 1; i < len(got); i++ {
		require.GreaterOrEqual(t, got[i].seg, got[i-1].seg)
	}
	require.Equal(t, last, got[len(got)-1].seg)
	// Records really are in the segment Replay names.
	require.Equal(t, last-1, got[len(got)-2].seg)
}

func TestCutOnFreshWAL(t *testing.T) {
	dir := t.TempDir()
	writeWAL(t, dir, Options{}, [][]byte{[]byte("a")})
	w := openT(t, dir, Options{})
	defer w.Close()
	n, err := w.Cut()
	require.NoError(t, err)
	require.Equal(t, 2, n)
	n, err = w.Cut()
	require.NoError(t, err)
	require.Equal(t, 3, n)
	require.NoError(t, w.Log([]byte("b")))
	got := mustReplay(t, w)
	require.Equal(t, []replayed{{1, []byte("a")}, {3, []byte("b")}}, got)
}

// TestGroupCommit runs N goroutines × M Logs in SyncBatch mode. A file hook
// holds each fsync until every running goroutine has written its batch,
// so the test shows batching by behaviour, not by timing.
func TestGroupCommit(t *testing.T) {
	const n, m = 8, 25
	var (
		writes, returned, finished atomic.Int64
		fsyncs                     atomic.Int64
		dirty                      atomic.Bool
	)
	hooks := &fileHooks{
		write: func(f *os.File, p []byte) (int, error) {
			if !isHeader(p) {
				dirty.Store(true)
				writes.Add(1)
			}
			return f.Write(p)
		},
		sync: func(f *os.File) error {
			if dirty.Swap(false) {
				deadline := time.Now().Add(10 * time.Second)
				for writes.Load()-returned.Load() != n-finished.Load() && time.Now().Before(deadline) {
					time.Sleep(20 * time.Microsecond)
				}
			}
			return f.Sync()
		},
	}
	dir := t.TempDir()
	w := openHooked(t, dir, Options{OnFsync: func(time.Duration) { fsyncs.Add(1) }}, hooks)
	var wg sync.WaitGroup
	errs := make(chan error, n*m)
	for g := range n {
		wg.Go(func() {
			defer finished.Add(1)
			for i := range m {
				errs <- w.Log(fmt.Appendf(nil, "g%d-%d", g, i))
				returned.Add(1)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	logs := int64(n * m)
	t.Logf("%d Log calls, %d fsyncs", logs, fsyncs.Load())
	require.Less(t, fsyncs.Load(), logs)
	require.NoError(t, w.Close())

	w = openT(t, dir, Options{})
	defer w.Close()
	got := mustReplay(t, w)
	require.Len(t, got, n*m)
	next := make([]int, n)
	for _, r := range got {
		var g, i int
		_, err := fmt.Sscanf(string(r.rec), "g%d-%d", &g, &i)
		require.NoError(t, err)
		require.Equal(t, next[g], i, "goroutine %d out of order", g)
		next[g]++
	}
}

// TestConcurrentLogAcrossSegments mixes concurrent Logs, cuts and a tiny
// segment size (a race detector workout); everything must replay.
func TestConcurrentLogAcrossSegments(t *testing.T) {
	for _, mode := range []SyncMode{SyncBatch, SyncInterval} {
		t.Run(mode.String(), func(t *testing.T) {
			dir := t.TempDir()
			w := openT(t, dir, Options{SegmentSize: 256, Sync: mode, SyncInterval: time.Millisecond})
			var wg sync.WaitGroup
			const n, m = 4, 40
			for g := range n {
				wg.Go(func() {
					for i := range m {
						if err := w.Log(fmt.Appendf(nil, "g%d-%d", g, i), testRecord(i, 30)); err != nil {
							t.Error(err)
						}
						if g == 0 && i%10 == 0 {
							if _, err := w.Cut(); err != nil {
								t.Error(err)
							}
						}
					}
				})
			}
			wg.Wait()
			require.NoError(t, w.Close())
			w = openT(t, dir, Options{})
			defer w.Close()
			got := mustReplay(t, w)
			require.Len(t, got, 2*n*m)
			for i := 0; i < len(got); i += 2 {
				// Batches stay whole and in one segment.
				require.Equal(t, got[i].seg, got[i+1].seg)
				require.Equal(t, byte('g'), got[i].rec[0])
			}
		})
	}
}

func TestSyncIntervalFsyncsInBackground(t *testing.T) {
	var fsyncs atomic.Int64
	dir := t.TempDir()
	w := openT(t, dir, Options{Sync: SyncInterval, SyncInterval: time.Millisecond,
		OnFsync: func(time.Duration) { fsyncs.Add(1) }})
	require.NoError(t, w.Log([]byte("a"))) // creates the segment: one fsync
	base := fsyncs.Load()
	require.NoError(t, w.Log([]byte("b")))
	deadline := time.Now().Add(10 * time.Second)
	for fsyncs.Load() == base && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	require.Greater(t, fsyncs.Load(), base)
	require.NoError(t, w.Close())
}

func TestReplayCallbackError(t *testing.T) {
	dir := t.TempDir()
	writeWAL(t, dir, Options{}, [][]byte{[]byte("a"), []byte("b")})
	w := openT(t, dir, Options{})
	defer w.Close()
	boom := errors.New("boom")
	calls := 0
	err := w.Replay(func(int, []byte) error { calls++; return boom })
	require.ErrorIs(t, err, boom)
	require.Equal(t, 1, calls)
}

func TestReplayMissingSegment(t *testing.T) {
	dir := t.TempDir()
	w := openT(t, dir, Options{})
	for range 3 {
		require.NoError(t, w.Log([]byte("x")))
		_, err := w.Cut()
		require.NoError(t, err)
	}
	require.NoError(t, w.Close())
	require.NoError(t, os.Remove(SegmentName(dir, 2)))
	w = openT(t, dir, Options{})
	defer w.Close()
	_, err := replayAll(w)
	require.ErrorContains(t, err, filepath.Join(dir, "00000002")+" is missing")
}

func TestOpenRejectsBadOptions(t *testing.T) {
	for _, o := range []Options{{SegmentSize: -1}, {Sync: 7}, {Sync: SyncInterval, SyncInterval: -time.Second}} {
		_, err := Open(t.TempDir(), o)
		require.Error(t, err, "%+v", o)
	}
}

// TestReplayMemoryBounded replays a log much larger than its largest record
// and checks the heap does not grow with it (prometheus#6934).
func TestReplayMemoryBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 32 MiB")
	}
	dir := t.TempDir()
	w := openT(t, dir, Options{Sync: SyncInterval, SegmentSize: 4 << 20})
	rec := testRecord(0, 64<<10)
	for range 512 {
		require.NoError(t, w.Log(rec))
	}
	require.NoError(t, w.Close())
	w = openT(t, dir, Options{})
	defer w.Close()
	var maxHeap uint64
	var ms runtimeMemStats
	base := ms.heapInUse()
	n := 0
	require.NoError(t, w.Replay(func(int, []byte) error {
		n++
		if n%64 == 0 {
			maxHeap = max(maxHeap, ms.heapInUse())
		}
		return nil
	}))
	require.Equal(t, 512, n)
	t.Logf("heap in use during replay of 32 MiB: %d KiB, before: %d KiB", maxHeap>>10, base>>10)
	require.Less(t, maxHeap, base+4<<20)
}

// TestLogSegmentReportsItsSegment checks that the index LogSegment returns
// is the segment Replay later finds the batch in, across cuts.
func TestLogSegmentReportsItsSegment(t *testing.T) {
	dir := t.TempDir()
	w := openT(t, dir, Options{SegmentSize: 200})
	where := map[string]int{}
	for i := range 40 {
		r := testRecord(i, 30)
		seg, err := w.LogSegment(r)
		require.NoError(t, err)
		where[string(r)] = seg
	}
	require.NoError(t, w.Close())
	w = openT(t, dir, Options{SegmentSize: 200})
	defer w.Close()
	seen := 0
	require.NoError(t, w.Replay(func(seg int, rec []byte) error {
		require.Equal(t, where[string(rec)], seg)
		seen++
		return nil
	}))
	require.Equal(t, 40, seen)
	require.Greater(t, where[string(testRecord(39, 30))], where[string(testRecord(0, 30))], "the test crossed segments")
}
