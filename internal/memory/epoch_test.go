package memory

import (
	"errors"
	"testing"

	"github.com/aerie-db/aerie/internal/invariants"
)

// epochStep is one action of an epoch-rule scenario: "enter" registers a
// reader (pushed), "exit" deregisters the oldest one still registered,
// "hard" hard-releases partition 1, "advance" advances the epoch, and
// "reclaim" runs Reclaim and expects recycled blocks.
type epochStep struct {
	op       string
	recycled int
}

func TestEpochRules(t *testing.T) {
	tests := []struct {
		name  string
		steps []epochStep
	}{
		{"no reader: recycled after an advance", []epochStep{
			{op: "hard"}, {op: "reclaim"}, {op: "advance"}, {op: "reclaim", recycled: 4},
		}},
		{"reader before release pins across advances", []epochStep{
			{op: "enter"}, {op: "hard"}, {op: "advance"}, {op: "reclaim"}, {op: "advance"}, {op: "advance"}, {op: "reclaim"},
			{op: "exit"}, {op: "reclaim", recycled: 4},
		}},
		{"reader exits before the advance", []epochStep{
			{op: "enter"}, {op: "hard"}, {op: "exit"}, {op: "reclaim"}, {op: "advance"}, {op: "reclaim", recycled: 4},
		}},
		{"reader entered after release at the same epoch also pins", []epochStep{
			{op: "hard"}, {op: "enter"}, {op: "advance"}, {op: "reclaim"}, {op: "exit"}, {op: "reclaim", recycled: 4},
		}},
		{"reader entered after release and advance does not pin", []epochStep{
			{op: "hard"}, {op: "advance"}, {op: "enter"}, {op: "reclaim", recycled: 4}, {op: "exit"},
		}},
		{"oldest of two readers decides", []epochStep{
			{op: "enter"}, {op: "advance"}, {op: "enter"}, {op: "hard"}, {op: "advance"}, {op: "reclaim"},
			{op: "exit"}, {op: "reclaim"}, {op: "exit"}, {op: "reclaim", recycled: 4},
		}},
		{"reader of an older epoch pins newer releases", []epochStep{
			{op: "enter"}, {op: "advance"}, {op: "advance"}, {op: "hard"}, {op: "advance"}, {op: "reclaim"},
			{op: "exit"}, {op: "reclaim", recycled: 4},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := newManager(t, Options{PageSize: 1024, BlockSize: 64})
			var refs []Ref
			for range 4 {
				refs = append(refs, mustAlloc(t, m, 1))
			}
			var guards []Guard
			for i, s := range tc.steps {
				switch s.op {
				case "enter":
					guards = append(guards, m.Enter())
				case "exit":
					guards[0].Exit()
					guards = guards[1:]
				case "hard":
					m.HardRelease(1)
					for _, r := range refs {
						if m.Valid(r) {
							t.Fatalf("step %d: %v valid after HardRelease", i, r)
						}
					}
				case "advance":
					m.Advance()
				case "reclaim":
					if _, n := m.Reclaim(); n != s.recycled {
						t.Fatalf("step %d: recycled %d, want %d (stats %+v)", i, n, s.recycled, m.Stats())
					}
				}
				// Blocks not recycled keep the writer's bytes.
				if m.Stats().ReclaimedBlocks == 0 {
					for _, r := range refs {
						if off := checkPattern(m.blockForTest(r.Block()), r); off >= 0 {
							t.Fatalf("step %d: block %d changed at byte %d before it was recycled", i, r.Block(), off)
						}
					}
				}
			}
			if len(guards) != 0 {
				t.Fatalf("scenario leaves %d readers registered", len(guards))
			}
			if s := m.Stats(); s.ReclaimedBlocks != 4 || s.FreeBlocks != 16 || len(s.Partitions) != 0 {
				t.Errorf("end: %d reclaimed, %d free, partitions %v", s.ReclaimedBlocks, s.FreeBlocks, s.Partitions)
			}
		})
	}
}

// blockForTest returns a block's bytes whatever its area.
func (m *Manager) blockForTest(id BlockID) []byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.blockLocked(id)
}

// TestHardReleaseHidesFromNewReaders: a reader registered before the
// release keeps reading intact memory from the slice it got; readers that
// start after see nothing; the memory is poisoned (invariants builds) only
// after the old reader exits.
func TestHardReleaseHidesFromNewReaders(t *testing.T) {
	m := newManager(t, Options{PageSize: 1024, BlockSize: 64})
	r := mustAlloc(t, m, 7)
	m.SoftRelease(7)

	old := m.Enter()
	b, ok := m.Bytes(r)
	if !ok {
		t.Fatal("hot block not valid")
	}
	m.HardRelease(7)
	late := m.Enter()
	if m.Valid(r) {
		t.Fatal("valid for a reader that entered after HardRelease")
	}
	late.Exit()
	for range 3 {
		m.Advance()
		m.Reclaim()
	}
	if off := checkPattern(b, r); off >= 0 {
		t.Fatalf("pre-registered reader sees byte %d changed", off)
	}
	if err := CheckNotPoisoned(b); err != nil {
		t.Fatal(err)
	}
	old.Exit()
	if _, n := m.Reclaim(); n != 1 {
		t.Fatalf("recycled %d after the reader exited, want 1", n)
	}
	if invariants.Enabled {
		if err := CheckNotPoisoned(b); !errors.Is(err, ErrPoisoned) {
			t.Fatalf("recycled block not poisoned: %v", err)
		}
	}
}

func TestSoftReleaseKeepsValid(t *testing.T) {
	m := newManager(t, Options{PageSize: 1024, BlockSize: 64})
	r := mustAlloc(t, m, 3)
	m.SoftRelease(3)
	m.SoftRelease(3) // idempotent
	m.SoftRelease(99)
	m.HardRelease(99) // unknown partitions are ignored
	m.Advance()
	m.Reclaim()
	b, ok := m.Bytes(r)
	if !ok || checkPattern(b, r) >= 0 {
		t.Fatalf("hot block: ok %v", ok)
	}
	if s := m.Stats(); s.HotBlocks != 1 || s.LiveBlocks != 0 || s.Partitions[0].Area != AreaHot {
		t.Errorf("stats %+v", s)
	}
}

// TestSharedSlots: with more readers than slots, readers share a slot and
// the slot keeps the oldest epoch until all of them exit.
func TestSharedSlots(t *testing.T) {
	m := newManager(t, Options{PageSize: 1024, BlockSize: 64, ReaderSlots: 2})
	g1 := m.Enter()
	m.Advance()
	g2 := m.Enter()
	m.Advance()
	g3 := m.Enter() // shares with g1 or g2, inheriting its epoch
	if g3.Epoch() != g1.Epoch() && g3.Epoch() != g2.Epoch() {
		t.Fatalf("shared guard at epoch %d, slots at %d and %d", g3.Epoch(), g1.Epoch(), g2.Epoch())
	}
	if s := m.Stats(); s.ActiveReaders != 3 || s.MinReaderEpoch != 1 {
		t.Fatalf("%d readers, min epoch %d", s.ActiveReaders, s.MinReaderEpoch)
	}
	g1.Exit()
	g3.Exit()
	if s := m.Stats(); s.ActiveReaders != 1 || s.MinReaderEpoch != 2 {
		t.Fatalf("after two exits: %d readers, min epoch %d", s.ActiveReaders, s.MinReaderEpoch)
	}
	g2.Exit()
	if s := m.Stats(); s.ActiveReaders != 0 || s.MinReaderEpoch != 0 {
		t.Fatalf("after all exits: %d readers, min epoch %d", s.ActiveReaders, s.MinReaderEpoch)
	}
}

func TestDoubleExitPanics(t *testing.T) {
	m := newManager(t, Options{PageSize: 1024, BlockSize: 64})
	g := m.Enter()
	g.Exit()
	defer func() {
		if recover() == nil {
			t.Error("second Exit did not panic")
		}
	}()
	g.Exit()
}
