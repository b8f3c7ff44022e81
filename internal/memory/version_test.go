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

// TestVersionCollision: at most VersionWindow partitions hold blocks;
// opening one more fails until the oldest is released and recycled, and a
// cooling partition pinned by a reader still counts.
func TestVersionCollision(t *testing.T) {
	m := newManager(t, Options{PageSize: 4096, BlockSize: 64})
	for p := range int64(VersionWindow) {
		mustAlloc(t, m, p)
	}
	_, _, err := m.Alloc(VersionWindow)
	if !errors.Is(err, ErrVersionCollision) {
		t.Fatalf("Alloc of partition %d: %v, want ErrVersionCollision", VersionWindow, err)
	}
	// The open partitions still allocate.
	mustAlloc(t, m, 0)
	mustAlloc(t, m, VersionWindow-1)

	g := m.Enter()
	m.HardRelease(0)
	m.Advance()
	m.Reclaim()
	if _, _, err := m.Alloc(VersionWindow); !errors.Is(err, ErrVersionCollision) {
		t.Fatalf("with partition 0 cooling but pinned: %v, want ErrVersionCollision", err)
	}
	g.Exit()
	m.Reclaim()
	r := mustAlloc(t, m, VersionWindow)
	if r.Version() != VersionWindow+1 {
		t.Errorf("version %d, want %d", r.Version(), VersionWindow+1)
	}
	if _, _, err := m.Alloc(VersionWindow + 1); !errors.Is(err, ErrVersionCollision) {
		t.Fatalf("next partition: %v, want ErrVersionCollision", err)
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
