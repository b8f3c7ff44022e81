package memory

import (
	"errors"
	"testing"
)

func TestRef(t *testing.T) {
	tests := []struct {
		id  BlockID
		v   Version
		tag uint8
	}{
		{0, 1, 1},
		{1, 63, 63},
		{7, 64, 0},
		{1<<32 - 1, 65, 1},
		{12345, 1<<32 - 1, 63},
	}
	for _, tc := range tests {
		r := MakeRef(tc.id, tc.v)
		if r.Block() != tc.id || r.Version() != tc.v || r.Version().Tag() != tc.tag {
			t.Errorf("MakeRef(%d, %d) = %v: block %d version %d tag %d", tc.id, tc.v, r, r.Block(), r.Version(), r.Version().Tag())
		}
	}
}

func TestCompareTags(t *testing.T) {
	tests := []struct {
		a, b uint8
		want int
	}{
		{5, 5, 0},
		{6, 5, 1},
		{5, 6, -1},
		{0, 63, 1},  // 64 follows 63
		{63, 0, -1}, // and 63 precedes it
		{30, 63, 1}, // 31 apart across the wrap
		{31, 0, 1},  // 31 apart
		{32, 0, -1}, // 32 apart: outside the window, ambiguous
		{0, 32, -1}, // and reads as older either way round
	}
	for _, tc := range tests {
		if got := compareTags(tc.a, tc.b); got != tc.want {
			t.Errorf("compareTags(%d, %d) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestTagLayout(t *testing.T) {
	for _, a := range []Area{AreaLive, AreaHot, AreaCooling, AreaRecycled} {
		for _, v := range []Version{1, 63, 64, 100} {
			tg := tagOf(a, v)
			if tagArea(tg) != a || tg&tagMask != v.Tag() {
				t.Errorf("tagOf(%v, %d) = %#x", a, v, tg)
			}
		}
	}
	if freeTag != 0xC0 || freeWord != 0xC0C0C0C0 {
		t.Errorf("free tag %#x word %#x", freeTag, freeWord)
	}
}

// TestVersionWrap opens 100 partitions one after another, each with one
// block, releasing and reclaiming the previous one. The free list hands the
// same two blocks out in turn, so partition v+64 reuses the block of
// partition v with the same 6-bit tag: its old ref must still fail.
func TestVersionWrap(t *testing.T) {
	m := newManager(t, Options{PageSize: 256, BlockSize: 64})
	var refs []Ref
	sameTag := 0
	for p := range int64(100) {
		r := mustAlloc(t, m, p)
		if want := Version(p + 1); r.Version() != want {
			t.Fatalf("partition %d: version %d, want %d", p, r.Version(), want)
		}
		if p > 0 {
			m.SoftRelease(p - 1)
			m.HardRelease(p - 1)
			m.Advance()
			if _, n := m.Reclaim(); n != 1 {
				t.Fatalf("partition %d: recycled %d blocks, want 1", p-1, n)
			}
		}
		for i, old := range refs {
			if m.Valid(old) {
				t.Fatalf("after opening partition %d: ref %v of partition %d still valid", p, old, i)
			}
			if old.Block() == r.Block() && old.Version().Tag() == r.Version().Tag() {
				sameTag++
			}
		}
		if !m.Valid(r) {
			t.Fatalf("partition %d: own ref %v invalid", p, r)
		}
		refs = append(refs, r)
	}
	if sameTag == 0 {
		t.Fatal("no block was reused under the same tag: the test does not exercise the window check")
	}
	if s := m.Stats(); s.Pages != 1 || s.LiveBlocks != 1 || s.NewestVersion != 100 {
		t.Errorf("stats: %d pages, %d live, newest %d", s.Pages, s.LiveBlocks, s.NewestVersion)
	}
}

// TestVersionCollision: live partitions stay within VersionWindow of the
// newest; opening one more fails until the oldest is released. A hot
// partition that falls out of the window is cooled instead, and a cooling
// one pinned by a reader does not block openings.
func TestVersionCollision(t *testing.T) {
	m := newManager(t, Options{PageSize: 4096, BlockSize: 64})
	refs := make([]Ref, VersionWindow)
	for p := range int64(VersionWindow) {
		refs[p] = mustAlloc(t, m, p)
	}
	_, _, err := m.Alloc(VersionWindow)
	if !errors.Is(err, ErrVersionCollision) {
		t.Fatalf("Alloc of partition %d: %v, want ErrVersionCollision", VersionWindow, err)
	}
	if _, err := m.Reserve(VersionWindow); !errors.Is(err, ErrVersionCollision) {
		t.Fatalf("Reserve of partition %d: %v, want ErrVersionCollision", VersionWindow, err)
	}
	// The open partitions still allocate.
	mustAlloc(t, m, 0)
	mustAlloc(t, m, VersionWindow-1)

	// Partition 0 cooling and pinned: no longer in the way.
	g := m.Enter()
	m.HardRelease(0)
	r := mustAlloc(t, m, VersionWindow)
	if r.Version() != VersionWindow+1 {
		t.Errorf("version %d, want %d", r.Version(), VersionWindow+1)
	}
	// Partition 1 hot: opening the next one cools it.
	m.SoftRelease(1)
	if !m.Valid(refs[1]) {
		t.Fatal("hot partition 1 invalid before the window passed it")
	}
	if v, err := m.Reserve(VersionWindow + 1); err != nil || v != VersionWindow+2 {
		t.Fatalf("Reserve past hot partition 1: %d, %v", v, err)
	}
	if m.Valid(refs[1]) {
		t.Error("hot partition 1 still valid out of the window")
	}
	if a, ok := m.PartitionArea(1); !ok || a != AreaCooling {
		t.Errorf("partition 1: %v %v, want cooling", a, ok)
	}
	// Partition 2 live: blocks the next opening.
	if _, _, err := m.Alloc(VersionWindow + 2); !errors.Is(err, ErrVersionCollision) {
		t.Fatalf("next partition: %v, want ErrVersionCollision", err)
	}
	g.Exit()
	m.Advance()
	m.Reclaim()
	if _, ok := m.PartitionArea(0); ok {
		t.Error("partition 0 not retired after its blocks were recycled")
	}
	if err := m.Check(); err != nil {
		t.Fatal(err)
	}
}

// TestReserve: a reserved partition takes no block, and releasing it
// before any allocation retires it.
func TestReserve(t *testing.T) {
	m := newManager(t, Options{PageSize: 4096, BlockSize: 64})
	v, err := m.Reserve(7)
	if err != nil || v != 1 {
		t.Fatalf("Reserve: %d, %v", v, err)
	}
	if v2, _ := m.Reserve(7); v2 != v {
		t.Errorf("second Reserve: version %d, want %d", v2, v)
	}
	if r := mustAlloc(t, m, 7); r.Version() != v {
		t.Errorf("Alloc after Reserve: version %d, want %d", r.Version(), v)
	}
	if _, err := m.Reserve(8); err != nil {
		t.Fatal(err)
	}
	if err := m.Check(); err != nil {
		t.Fatal(err)
	}
	m.SoftRelease(8)
	if _, ok := m.PartitionArea(8); ok {
		t.Error("empty soft-released partition not retired")
	}
	m.SoftRelease(7)
	if _, err := m.Reserve(7); !errors.Is(err, ErrReleased) {
		t.Errorf("Reserve of a released partition: %v, want ErrReleased", err)
	}
	if err := m.Check(); err != nil {
		t.Fatal(err)
	}
}

// TestOvercommit: at the limit with every block live, Alloc takes a page
// beyond it and counts it, instead of failing.
func TestOvercommit(t *testing.T) {
	m := newManager(t, Options{PageSize: 256, BlockSize: 64, Limit: 256, Overcommit: true})
	for range 6 {
		mustAlloc(t, m, 0)
	}
	s := m.Stats()
	if s.Pages != 2 || s.OverLimitPages != 1 || s.LiveBlocks != 6 {
		t.Errorf("stats: %d pages, %d over the limit, %d live", s.Pages, s.OverLimitPages, s.LiveBlocks)
	}
	m2 := newManager(t, Options{PageSize: 256, BlockSize: 64, Limit: 256})
	for range 4 {
		mustAlloc(t, m2, 0)
	}
	if _, _, err := m2.Alloc(0); !errors.Is(err, ErrOutOfMemory) {
		t.Errorf("without Overcommit: %v, want ErrOutOfMemory", err)
	}
}

func TestZeroRefInvalid(t *testing.T) {
	m := newManager(t, Options{PageSize: 256, BlockSize: 64})
	r := mustAlloc(t, m, 0)
	if r.Block() != 0 {
		t.Fatalf("first block %d", r.Block())
	}
	if m.Valid(0) || m.Valid(MakeRef(0, 0)) || m.Valid(MakeRef(100, 1)) {
		t.Error("zero ref, version 0 or unknown block valid")
	}
}
