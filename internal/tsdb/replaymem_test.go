package tsdb

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/stretchr/testify/require"
)

// TestReplayMemoryBounded checks that WAL replay streams: the heap while
// replaying stays close to the heap of the head it rebuilds (Prometheus
// users hit OOM when replay held decoded records: prometheus#6934). The GC
// is made eager so the peak reflects live memory, not garbage.
func TestReplayMemoryBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	opts := &Options{FlushCheckInterval: -1, PartitionRange: 24 * 3600_000}
	db, dir := openDir(t, opts)
	const targets, width, rows = 20, 100, 1000
	lsets := make([][]labels.Labels, targets)
	for g := range lsets {
		for s := 0; s < width; s++ {
			lsets[g] = append(lsets[g], labels.FromStrings("__name__", fmt.Sprintf("metric_%d", s), "job", "node", "instance", fmt.Sprintf("host-%d", g)))
		}
	}
	for i := int64(0); i < rows; i++ {
		for g := range lsets {
			app := db.RowAppender()
			for s, l := range lsets[g] {
				require.NoError(t, app.Append(l, i*15_000, float64(i*int64(s))*0.25))
			}
			require.NoError(t, app.Commit())
		}
	}
	require.NoError(t, db.Close())
	db = nil

	old := debug.SetGCPercent(10)
	defer debug.SetGCPercent(old)
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc

	stopPeak := sampleHeapPeak(2*time.Millisecond, func(m *runtime.MemStats) uint64 { return m.HeapAlloc })
	db, err := Open(dir, opts)
	require.NoError(t, err)
	peak := stopPeak()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	live := ms.HeapAlloc - base
	over := peak - base
	t.Logf("%d samples replayed: head %.1f MiB live, replay peak %.1f MiB (%.2f×)", targets*width*rows,
		float64(live)/(1<<20), float64(over)/(1<<20), float64(over)/float64(live))
	require.Less(t, float64(over), 1.5*float64(live)+4<<20, "replay used much more memory than the head it built")
	require.Equal(t, targets*width, db.Head().NumSeries())
	require.NoError(t, db.Close())
}

// sampleHeapPeak reads the heap's statistics every interval until stop is
// called, which returns the greatest value of stat seen.
func sampleHeapPeak(every time.Duration, stat func(*runtime.MemStats) uint64) (stop func() uint64) {
	var peak uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			peak = max(peak, stat(&m))
			select {
			case <-done:
				return
			case <-time.After(every):
			}
		}
	}()
	return func() uint64 {
		close(done)
		wg.Wait()
		return peak
	}
}
