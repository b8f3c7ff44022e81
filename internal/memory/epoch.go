package memory

import (
	"math"
	"math/rand/v2"
	"sync/atomic"
)

// A reader slot holds epoch<<slotCountBits | readers, or 0 when free. The
// global epoch starts at 1, so a registered slot is never 0. Several readers
// share a slot only when every slot is taken (see Enter).
const (
	slotCountBits = 16
	slotCountMask = 1<<slotCountBits - 1
	cacheLine     = 64
)

// slot sits alone on its cache line, so readers entering on different CPUs
// do not contend (Heracles' per-thread local epochs).
type slot struct {
	v atomic.Uint64
	_ [cacheLine - 8]byte
}

// Guard is a reader's registration, from Enter to Exit. It is a small value;
// copy it freely, but call Exit exactly once.
type Guard struct {
	m     *Manager
	slot  uint32
	epoch uint64
}

// Enter registers a reader at the current global epoch. Until the returned
// guard's Exit, no block that the reader can see as valid (via Valid or
// Bytes, called after Enter) is recycled. Enter and Exit take no lock and
// touch no per-block state.
//
// Enter claims a free slot with a compare-and-swap, starting at a random one.
// When all slots are busy it joins an occupied slot; the slot keeps its
// older epoch, which protects the joining reader as well (it only delays
// reclamation until the slot empties), so Enter never blocks.
func (m *Manager) Enter() Guard {
	e := m.epoch.Load()
	n := uint32(len(m.slots))
	start := uint32(uint64(rand.Uint32()) * uint64(n) >> 32) // in [0, n); the bias does not matter
	want := e<<slotCountBits | 1
	for i := range n {
		j := start + i
		if j >= n {
			j -= n
		}
		s := &m.slots[j].v
		if s.Load() == 0 && s.CompareAndSwap(0, want) {
			return Guard{m: m, slot: j, epoch: e}
		}
	}
	for j := start; ; j = (j + 1) % n {
		s := &m.slots[j].v
		v := s.Load()
		switch {
		case v == 0:
			if s.CompareAndSwap(0, want) {
				return Guard{m: m, slot: j, epoch: e}
			}
		case v&slotCountMask != slotCountMask:
			if s.CompareAndSwap(v, v+1) {
				return Guard{m: m, slot: j, epoch: v >> slotCountBits}
			}
		}
	}
}

// Exit deregisters the reader. Slices obtained from Bytes under the guard
// must not be used after Exit.
func (g Guard) Exit() {
	if g.m == nil {
		panic("memory: Exit of a zero Guard")
	}
	s := &g.m.slots[g.slot].v
	for {
		v := s.Load()
		if v>>slotCountBits != g.epoch || v&slotCountMask == 0 {
			panic("memory: Guard.Exit without a matching Enter (double Exit?)")
		}
		nv := v - 1
		if nv&slotCountMask == 0 {
			nv = 0
		}
		if s.CompareAndSwap(v, nv) {
			return
		}
	}
}

// Epoch returns the epoch the guard is registered at. It can be older than
// the global epoch at Enter when the guard shares a slot.
func (g Guard) Epoch() uint64 { return g.epoch }

// Advance increments the global epoch and returns the new value. Blocks
// cooled at an earlier epoch become reclaimable once the readers registered
// at or before their epoch have exited.
func (m *Manager) Advance() uint64 { return m.epoch.Add(1) }

// Epoch returns the current global epoch.
func (m *Manager) Epoch() uint64 { return m.epoch.Load() }

// minReaderEpoch scans the slots: the smallest registered epoch
// (math.MaxUint64 if none) and the number of registered readers.
func (m *Manager) minReaderEpoch() (min uint64, readers int) {
	min = math.MaxUint64
	for i := range m.slots {
		v := m.slots[i].v.Load()
		if v == 0 {
			continue
		}
		readers += int(v & slotCountMask)
		if e := v >> slotCountBits; e < min {
			min = e
		}
	}
	return min, readers
}

// reclaimBound is the epoch below which cooling blocks may be recycled: the
// smallest registered reader epoch, or the global epoch if it is smaller
// (no reader at all). Using the global epoch when nobody reads keeps one
// rule for both cases: a block cooled at epoch e is recycled only after an
// Advance past e.
func (m *Manager) reclaimBound() uint64 {
	bound := m.epoch.Load()
	if r, _ := m.minReaderEpoch(); r < bound {
		bound = r
	}
	return bound
}
