package memory

import (
	"cmp"
	"slices"
)

// Stats is a snapshot of the manager, for metrics and tests.
type Stats struct {
	PageSize   int
	BlockSize  int
	LimitBytes int64 // the limit rounded down to whole pages; 0: none
	Pages      int
	Bytes      int64 // Pages * PageSize: memory held from the Go heap
	InUseBytes int64 // (LiveBlocks + HotBlocks + CoolingBlocks) * BlockSize

	LiveBlocks    int
	HotBlocks     int
	CoolingBlocks int
	// FreeBlocks counts blocks in the recycled area: reclaimed ones and
	// never used ones of the pages held.
	FreeBlocks int
	Pressure   int // see Manager.Pressure

	ReclaimedBlocks uint64 // blocks recycled since New
	ReleasedBlocks  uint64 // hot blocks cooled by the reclamation policy since New
	OverLimitPages  uint64 // pages taken beyond the limit (Options.Overcommit) since New

	Epoch          uint64 // global epoch
	MinReaderEpoch uint64 // smallest registered reader epoch; 0 without readers
	ActiveReaders  int
	NewestVersion  Version

	Partitions []PartitionStats // by ID
}

// PartitionStats describes one partition still holding blocks.
type PartitionStats struct {
	ID            int64
	Version       Version
	Area          Area // AreaLive, AreaHot or AreaCooling
	Blocks        int  // blocks in Area (0 once AreaCooling)
	CoolingBlocks int  // blocks in the cooling area, not yet recycled
}

// Stats returns a snapshot. It takes the manager's lock.
func (m *Manager) Stats() Stats {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := Stats{
		PageSize:        m.pageSize,
		BlockSize:       m.blockSize,
		LimitBytes:      int64(m.limitPages) * int64(m.pageSize),
		Pages:           len(m.pages),
		Bytes:           int64(len(m.pages)) * int64(m.pageSize),
		InUseBytes:      int64(m.live+m.hot+m.cool) * int64(m.blockSize),
		LiveBlocks:      m.live,
		HotBlocks:       m.hot,
		CoolingBlocks:   m.cool,
		FreeBlocks:      len(m.free) + int(uint64(len(m.pages))*uint64(m.bpp)-m.fresh),
		Pressure:        m.pressureLocked(),
		ReclaimedBlocks: m.reclaimed,
		ReleasedBlocks:  m.released,
		OverLimitPages:  m.overPages,
		Epoch:           m.epoch.Load(),
		NewestVersion:   Version(m.newest.Load()),
	}
	if e, n := m.minReaderEpoch(); n > 0 {
		s.MinReaderEpoch, s.ActiveReaders = e, n
	}
	for _, p := range m.parts {
		s.Partitions = append(s.Partitions, PartitionStats{
			ID: p.id, Version: p.version, Area: p.area,
			Blocks: len(p.blocks), CoolingBlocks: p.cooling,
		})
	}
	slices.SortFunc(s.Partitions, func(a, b PartitionStats) int { return cmp.Compare(a.ID, b.ID) })
	return s
}
