package memory

import (
	"fmt"
	"strings"
)

// Check verifies the manager's bookkeeping against its version array: every
// block handed out is in exactly one place (a partition, a cooling batch or
// the free list) with the version byte that place implies, the counters
// add up, and the partitions' versions lie within the window. It takes the
// lock and walks every block; tests call it after writing, and invariants
// builds after every release and reclaim.
func (m *Manager) Check() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.checkLocked()
}

func (m *Manager) mustCheckLocked() {
	if err := m.checkLocked(); err != nil {
		panic(err)
	}
}

func (m *Manager) checkLocked() error {
	var errs []string
	fail := func(format string, args ...any) {
		if len(errs) < 10 {
			errs = append(errs, fmt.Sprintf(format, args...))
		}
	}
	total := uint64(len(m.pages)) * uint64(m.bpp)
	if m.fresh > total {
		fail("fresh %d beyond the %d blocks of %d pages", m.fresh, total, len(m.pages))
	}
	if d := m.dir.Load(); len(d.pages) != len(m.pages) {
		fail("published %d pages, hold %d", len(d.pages), len(m.pages))
	}
	seen := make([]bool, m.fresh)
	visit := func(id BlockID, want uint8, where string) {
		if uint64(id) >= m.fresh {
			fail("block %d (%s) was never handed out (fresh %d)", id, where, m.fresh)
			return
		}
		if seen[id] {
			fail("block %d (%s) is in two places", id, where)
		}
		seen[id] = true
		if t, _, _, _ := m.loadTag(id); t != want {
			fail("block %d (%s): version byte %#x, want %#x", id, where, t, want)
		}
	}
	newest := Version(m.newest.Load())
	live, hot := 0, 0
	cooling := make(map[*partition]int)
	for id, p := range m.parts {
		where := fmt.Sprintf("partition %d v%d %s", p.id, p.version, p.area)
		switch {
		case id != p.id:
			fail("%s filed under id %d", where, id)
		case len(p.blocks)+p.cooling == 0 && p.area != AreaLive:
			fail("%s holds no blocks but was not retired", where)
		case p.area == AreaCooling && len(p.blocks) > 0:
			fail("%s still has %d visible blocks", where, len(p.blocks))
		case uint32(newest-p.version) >= VersionWindow && p.area != AreaCooling:
			fail("%s is %d versions behind the newest %d", where, uint32(newest-p.version), newest)
		}
		switch p.area {
		case AreaLive:
			live += len(p.blocks)
		case AreaHot:
			hot += len(p.blocks)
		}
		for _, b := range p.blocks {
			visit(b, tagOf(p.area, p.version), where)
		}
		for id2, q := range m.parts {
			if id2 == id || p.area == AreaCooling || q.area == AreaCooling {
				continue // only visible partitions need distinct tags (invariant 3)
			}
			if p.version.Tag() == q.version.Tag() {
				fail("partitions %d and %d share tag %d", p.id, q.id, p.version.Tag())
			}
			if c := compareTags(p.version.Tag(), q.version.Tag()); (c > 0) != (int32(p.version-q.version) > 0) {
				fail("tags of versions %d and %d compare %d", p.version, q.version, c)
			}
		}
	}
	var last uint64
	nc := 0
	for _, b := range m.cooling {
		if b.epoch < last || b.epoch > m.epoch.Load() {
			fail("cooling batch epoch %d after %d (global %d)", b.epoch, last, m.epoch.Load())
		}
		last = b.epoch
		if m.parts[b.part.id] != b.part {
			fail("cooling batch of retired partition %d", b.part.id)
		}
		for _, id := range b.blocks {
			visit(id, tagOf(AreaCooling, b.part.version), fmt.Sprintf("cooling, partition %d", b.part.id))
		}
		cooling[b.part] += len(b.blocks)
		nc += len(b.blocks)
	}
	for p, n := range cooling {
		if p.cooling != n {
			fail("partition %d counts %d cooling blocks, batches hold %d", p.id, p.cooling, n)
		}
	}
	for _, p := range m.parts {
		if p.cooling != 0 && cooling[p] == 0 {
			fail("partition %d counts %d cooling blocks, batches hold none", p.id, p.cooling)
		}
	}
	for _, id := range m.free {
		visit(id, freeTag, "free")
	}
	for id := range seen {
		if !seen[id] {
			fail("block %d was lost", id)
		}
	}
	for id := m.fresh; id < total; id++ {
		if t, _, _, _ := m.loadTag(BlockID(id)); t != freeTag {
			fail("unused block %d: version byte %#x", id, t)
		}
	}
	if live != m.live || hot != m.hot || nc != m.cool {
		fail("counters live/hot/cooling %d/%d/%d, blocks %d/%d/%d", m.live, m.hot, m.cool, live, hot, nc)
	}
	if errs != nil {
		return fmt.Errorf("memory: inconsistent manager: %s", strings.Join(errs, "; "))
	}
	return nil
}
