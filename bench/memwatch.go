package bench

import (
	"os"
	"runtime/metrics"
	"slices"
	"time"

	"github.com/aerie-db/aerie/bench/harness"
)

// memWatch records the peak resident set size and Go heap of the process
// over an interval, above what they were at its start. The kernel's
// high-water mark (VmHWM) is reset at the start where /proc/self/clear_refs
// allows it, and read at the end; VmRSS and the heap are also sampled
// every 10 ms, which catches the peak where the reset is not allowed.
type memWatch struct {
	stop, done        chan struct{}
	hwmReset          bool
	baseRSS, baseHeap int64
	maxRSS, maxHeap   int64 // written by the sampler until done is closed
}

// heapMetric is the bytes of heap objects, live or not yet swept: what
// runtime.MemStats.HeapAlloc reports, without stopping the world.
const heapMetric = "/memory/classes/heap/objects:bytes"

func startMemWatch() *memWatch {
	w := &memWatch{stop: make(chan struct{}), done: make(chan struct{})}
	// "5" resets the peak RSS to the current RSS (proc(5), Linux ≥ 4.0).
	w.hwmReset = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
	w.baseRSS, w.baseHeap = procStatusBytes("VmRSS"), heapBytes()
	w.maxRSS, w.maxHeap = w.baseRSS, w.baseHeap
	go func() {
		defer close(w.done)
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			w.maxRSS = max(w.maxRSS, procStatusBytes("VmRSS"))
			w.maxHeap = max(w.maxHeap, heapBytes())
			select {
			case <-w.stop:
				return
			case <-t.C:
			}
		}
	}()
	return w
}

// finish stops the sampler and returns the peaks above the start.
func (w *memWatch) finish() (rss, heap int64) {
	close(w.stop)
	<-w.done
	if w.hwmReset {
		w.maxRSS = max(w.maxRSS, procStatusBytes("VmHWM"))
	}
	return w.maxRSS - w.baseRSS, w.maxHeap - w.baseHeap
}

func heapBytes() int64 {
	s := []metrics.Sample{{Name: heapMetric}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return int64(s[0].Value.Uint64())
}

// procStatusBytes reads a "Key:   N kB" line of /proc/self/status; 0 if
// there is none.
func procStatusBytes(key string) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	n, _ := harness.StatusBytes(b, key)
	return n
}

// allocatedBytes is the bytes the process has allocated on the heap so
// far (a counter; the difference over a query is what it allocated,
// including what the collector already freed).
func allocatedBytes() int64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return int64(s[0].Value.Uint64())
}

// median is the middle of xs (sorted in place); 0 if empty.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	return xs[len(xs)/2]
}
