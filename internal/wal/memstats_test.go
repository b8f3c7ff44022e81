package wal

import "runtime"

type runtimeMemStats struct{ runtime.MemStats }

func (m *runtimeMemStats) heapInUse() uint64 {
	runtime.GC()
	runtime.ReadMemStats(&m.MemStats)
	return m.HeapInuse
}
