package memory

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestNewOptions(t *testing.T) {
	tests := []struct {
		name    string
		opts    Options
		wantErr string // substring; "" for success
	}{
		{"defaults", Options{}, ""},
		{"small blocks", Options{PageSize: 4096, BlockSize: 16, Limit: 1 << 20}, ""},
		{"page not a multiple of block", Options{PageSize: 1000, BlockSize: 64}, "multiple of the block size"},
		{"page smaller than block", Options{PageSize: 32, BlockSize: 64}, "multiple of the block size"},
		{"negative block", Options{BlockSize: -1}, "block size"},
		{"negative page", Options{PageSize: -256}, "page size"},
		{"limit below a page", Options{PageSize: 4096, Limit: 100}, "at least one page"},
		{"negative limit", Options{Limit: -1}, "limit"},
		{"threshold above 1", Options{ReclaimThreshold: 1.5}, "threshold"},
		{"negative threshold", Options{ReclaimThreshold: -0.5}, "threshold"},
		{"negative split weight", Options{ReclaimSplit: []float64{0.5, -0.1}}, "weight 1"},
		{"empty split", Options{ReclaimSplit: []float64{}}, "positive sum"},
		{"zero split", Options{ReclaimSplit: []float64{0, 0}}, "positive sum"},
		{"negative slots", Options{ReaderSlots: -1}, "reader slots"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.opts)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("New: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("New: %v, want error containing %q", err, tc.wantErr)
			}
		})
	}
}

// allocStep is one action of an allocation scenario: "alloc" n times for
// part, each returning err; "soft" and "hard" release part; "enter" and
// "exit" a reader; "advance"; "reclaim".
type allocStep struct {
	op   string
	part int64
	n    int
	err  error
}

type areaCounts struct{ pages, live, hot, cooling, free int }

func TestAllocLimits(t *testing.T) {
	// 16 blocks of 64 B per page; a limit of 2 pages is 32 blocks, and a
	// threshold of 0.75 is 24.
	small := Options{PageSize: 1024, BlockSize: 64}
	limited := Options{PageSize: 1024, BlockSize: 64, Limit: 2048, ReclaimThreshold: 0.75}
	tests := []struct {
		name  string
		opts  Options
		steps []allocStep
		want  areaCounts
	}{
		{"unlimited grows pages", small, []allocStep{
			{op: "alloc", part: 1, n: 40},
		}, areaCounts{pages: 3, live: 40, free: 8}},
		{"limit rounds down to pages", Options{PageSize: 1024, BlockSize: 64, Limit: 2047}, []allocStep{
			{op: "alloc", part: 1, n: 16}, {op: "alloc", part: 1, n: 1, err: ErrOutOfMemory},
		}, areaCounts{pages: 1, live: 16}},
		{"live blocks are never reclaimed", limited, []allocStep{
			{op: "alloc", part: 1, n: 20}, {op: "alloc", part: 2, n: 12},
			{op: "alloc", part: 2, n: 2, err: ErrOutOfMemory},
		}, areaCounts{pages: 2, live: 32}},
		{"at the limit alloc cools hot blocks and reuses them", limited, []allocStep{
			{op: "alloc", part: 1, n: 32}, {op: "soft", part: 1},
			// pressure 32-24 = 8 hot blocks cooled, 1 reused
			{op: "alloc", part: 2, n: 1},
		}, areaCounts{pages: 2, live: 1, hot: 24, free: 7}},
		{"a reader pins the cooled blocks", limited, []allocStep{
			{op: "alloc", part: 1, n: 32}, {op: "soft", part: 1}, {op: "enter"},
			{op: "alloc", part: 2, n: 1, err: ErrOutOfMemory},
		}, areaCounts{pages: 2, hot: 24, cooling: 8}},
		{"the reader's exit frees them", limited, []allocStep{
			{op: "alloc", part: 1, n: 32}, {op: "soft", part: 1}, {op: "enter"},
			{op: "alloc", part: 2, n: 1, err: ErrOutOfMemory}, {op: "exit"},
			{op: "alloc", part: 2, n: 8},
		}, areaCounts{pages: 2, live: 8, hot: 24}},
		{"a second shortfall cools more", limited, []allocStep{
			{op: "alloc", part: 1, n: 32}, {op: "soft", part: 1},
			{op: "alloc", part: 2, n: 9},
		}, areaCounts{pages: 2, live: 9, hot: 16, free: 7}},
		{"recycled blocks come before new pages", small, []allocStep{
			{op: "alloc", part: 1, n: 16}, {op: "hard", part: 1}, {op: "advance"}, {op: "reclaim"},
			{op: "alloc", part: 2, n: 16},
		}, areaCounts{pages: 1, live: 16}},
		{"released partition takes no blocks", small, []allocStep{
			{op: "alloc", part: 1, n: 1}, {op: "soft", part: 1}, {op: "alloc", part: 1, n: 1, err: ErrReleased},
			{op: "hard", part: 1}, {op: "alloc", part: 1, n: 1, err: ErrReleased},
			{op: "advance"}, {op: "reclaim"},
			{op: "alloc", part: 1, n: 1}, // forgotten: opens again
		}, areaCounts{pages: 1, live: 1, free: 15}},
		{"hard release of a live partition", small, []allocStep{
			{op: "alloc", part: 1, n: 3}, {op: "hard", part: 1},
		}, areaCounts{pages: 1, cooling: 3, free: 13}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := newManager(t, tc.opts)
			var guards []Guard
			for i, s := range tc.steps {
				switch s.op {
				case "alloc":
					for j := range s.n {
						id, v, err := m.Alloc(s.part)
						if !errors.Is(err, s.err) || (s.err != nil) != (err != nil) {
							t.Fatalf("step %d alloc %d: %v, want %v", i, j, err, s.err)
						}
						if err == nil && !m.Valid(MakeRef(id, v)) {
							t.Fatalf("step %d alloc %d: %d@v%d not valid", i, j, id, v)
						}
					}
				case "soft":
					m.SoftRelease(s.part)
				case "hard":
					m.HardRelease(s.part)
				case "enter":
					guards = append(guards, m.Enter())
				case "exit":
					guards[0].Exit()
					guards = guards[1:]
				case "advance":
					m.Advance()
				case "reclaim":
					m.Reclaim()
				default:
					t.Fatalf("step %d: unknown op %q", i, s.op)
				}
			}
			for _, g := range guards {
				g.Exit()
			}
			s := m.Stats()
			got := areaCounts{s.Pages, s.LiveBlocks, s.HotBlocks, s.CoolingBlocks, s.FreeBlocks}
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestSplitPlan(t *testing.T) {
	heracles := []float64{0.45, 0.35, 0.20}
	tests := []struct {
		name  string
		need  int
		avail []int
		split []float64
		want  []int
	}{
		{"even", 100, []int{100, 100, 100, 100}, heracles, []int{45, 35, 20, 0}},
		{"rounding goes to the oldest", 10, []int{10, 10, 10}, heracles, []int{5, 3, 2}},
		{"one block", 1, []int{10, 10, 10}, heracles, []int{1, 0, 0}},
		{"shortfall passes on", 100, []int{30, 100, 100}, heracles, []int{30, 50, 20}},
		{"shortfall passes past the split", 100, []int{10, 10, 10, 100}, heracles, []int{10, 10, 10, 70}},
		{"missing partitions: oldest gives the rest", 100, []int{100}, heracles, []int{100}},
		{"two partitions", 100, []int{60, 100}, heracles, []int{60, 40}},
		{"not enough blocks", 100, []int{10, 20}, heracles, []int{10, 20}},
		{"nothing needed", 0, []int{10}, heracles, []int{0}},
		{"no hot partition", 10, nil, heracles, []int{}},
		{"weights need not sum to one", 10, []int{10, 10}, []float64{1, 1}, []int{5, 5}},
		{"zero weight skipped by rounding", 3, []int{10, 10, 10}, []float64{0, 1, 1}, []int{0, 2, 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := splitPlan(tc.need, tc.avail, tc.split)
			if !slices.Equal(got, tc.want) {
				t.Errorf("splitPlan(%d, %v, %v) = %v, want %v", tc.need, tc.avail, tc.split, got, tc.want)
			}
		})
	}
}

// TestReclaimSplit: with 100 blocks of pressure, Reclaim cools 45, 35 and
// 20 blocks of the three oldest hot partitions, leaves live partitions
// alone even when older, and recycles them after an Advance.
func TestReclaimSplit(t *testing.T) {
	// 64 blocks per page, limit 256 blocks, threshold 128.
	m := newManager(t, Options{PageSize: 4096, BlockSize: 64, Limit: 4 * 4096, ReclaimThreshold: 0.5})
	for range 48 {
		mustAlloc(t, m, 5) // oldest, but live
	}
	for _, p := range []int64{10, 20, 30} {
		for range 60 {
			mustAlloc(t, m, p)
		}
		m.SoftRelease(p)
	}
	if got := m.Pressure(); got != 100 {
		t.Fatalf("pressure %d, want 100", got)
	}
	released, recycled := m.Reclaim()
	if released != 100 || recycled != 0 {
		t.Fatalf("Reclaim = %d released, %d recycled; want 100, 0", released, recycled)
	}
	want := []PartitionStats{
		{ID: 5, Version: 1, Area: AreaLive, Blocks: 48},
		{ID: 10, Version: 2, Area: AreaHot, Blocks: 15, CoolingBlocks: 45},
		{ID: 20, Version: 3, Area: AreaHot, Blocks: 25, CoolingBlocks: 35},
		{ID: 30, Version: 4, Area: AreaHot, Blocks: 40, CoolingBlocks: 20},
	}
	if got := m.Stats().Partitions; !slices.Equal(got, want) {
		t.Fatalf("partitions\n got %+v\nwant %+v", got, want)
	}
	// The cooling blocks cover the pressure: nothing more is released.
	if released, recycled := m.Reclaim(); released != 0 || recycled != 0 {
		t.Fatalf("second Reclaim = %d, %d; want 0, 0", released, recycled)
	}
	m.Advance()
	if released, recycled := m.Reclaim(); released != 0 || recycled != 100 {
		t.Fatalf("Reclaim after Advance = %d, %d; want 0, 100", released, recycled)
	}
	if s := m.Stats(); s.Pressure != 0 || s.ReleasedBlocks != 100 || s.ReclaimedBlocks != 100 {
		t.Errorf("stats %+v", s)
	}
}

// TestReclaimDrainsPartition: a hot partition whose last block is cooled
// counts as hard-released and is forgotten once recycled.
func TestReclaimDrainsPartition(t *testing.T) {
	m := newManager(t, Options{PageSize: 1024, BlockSize: 64, Limit: 1024, ReclaimThreshold: 0.5})
	for range 10 {
		mustAlloc(t, m, 1)
	}
	m.SoftRelease(1)
	mustAlloc(t, m, 2)
	if released, _ := m.Reclaim(); released != 3 {
		t.Fatalf("released %d, want 3", released)
	}
	m.HardRelease(2)
	m.Advance()
	m.Reclaim()
	for _, p := range m.Stats().Partitions {
		if p.ID != 1 || p.Blocks != 7 {
			t.Fatalf("partition %+v", p)
		}
	}
	m.SoftRelease(1) // no-op on a hot partition
	for range 8 {
		mustAlloc(t, m, 3)
	}
	// 7 hot + 8 live is 7 over the threshold: all 7 hot blocks go.
	m.Reclaim()
	if s := m.Stats(); s.HotBlocks != 0 || s.CoolingBlocks != 7 || s.Partitions[0].Area != AreaCooling {
		t.Fatalf("stats %+v", s)
	}
	m.Advance()
	m.Reclaim()
	if s := m.Stats(); len(s.Partitions) != 1 || s.Partitions[0].ID != 3 {
		t.Fatalf("partitions %+v", s.Partitions)
	}
}

func TestStats(t *testing.T) {
	m := newManager(t, Options{PageSize: 1024, BlockSize: 64, Limit: 4096, ReclaimThreshold: 0.5, ReaderSlots: 4})
	for range 20 {
		mustAlloc(t, m, 100)
	}
	m.SoftRelease(100)
	for range 12 {
		mustAlloc(t, m, 200)
	}
	for range 3 {
		mustAlloc(t, m, 300)
	}
	m.Advance()
	g := m.Enter()
	defer g.Exit()
	m.HardRelease(300)
	m.Advance()
	got := m.Stats()
	want := Stats{
		PageSize: 1024, BlockSize: 64, LimitBytes: 4096,
		Pages: 3, Bytes: 3072, InUseBytes: 35 * 64,
		LiveBlocks: 12, HotBlocks: 20, CoolingBlocks: 3, FreeBlocks: 13,
		Pressure: 3, Epoch: 3, MinReaderEpoch: 2, ActiveReaders: 1, NewestVersion: 3,
		Partitions: []PartitionStats{
			{ID: 100, Version: 1, Area: AreaHot, Blocks: 20},
			{ID: 200, Version: 2, Area: AreaLive, Blocks: 12},
			{ID: 300, Version: 3, Area: AreaCooling, CoolingBlocks: 3},
		},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Stats\n got %+v\nwant %+v", got, want)
	}
	m.Reclaim() // pressure 3 is covered by the 3 pinned cooling blocks
	if s := m.Stats(); s.ReclaimedBlocks != 0 || s.ReleasedBlocks != 0 {
		t.Fatalf("reclaimed %d released %d while pinned", s.ReclaimedBlocks, s.ReleasedBlocks)
	}
}

func TestStartClose(t *testing.T) {
	m := newManager(t, Options{PageSize: 1024, BlockSize: 64})
	if err := m.Start(0); err == nil {
		t.Fatal("Start(0) succeeded")
	}
	if err := m.Start(time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if err := m.Start(time.Millisecond); err == nil {
		t.Fatal("second Start succeeded")
	}
	mustAlloc(t, m, 1)
	m.HardRelease(1)
	waitFor(t, func() bool { return m.Stats().ReclaimedBlocks == 1 })
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if err := m.Start(time.Hour); err != nil {
		t.Fatalf("restart: %v", err)
	}
}

// TestBackgroundKick: an Alloc above the threshold wakes the background
// reclaimer without waiting for its (hour-long) tick.
func TestBackgroundKick(t *testing.T) {
	m := newManager(t, Options{PageSize: 1024, BlockSize: 64, Limit: 2048, ReclaimThreshold: 0.5})
	if err := m.Start(time.Hour); err != nil {
		t.Fatal(err)
	}
	for range 16 {
		mustAlloc(t, m, 1)
	}
	m.SoftRelease(1)
	mustAlloc(t, m, 2) // 17 in use > 16: kick
	waitFor(t, func() bool { return m.Stats().ReleasedBlocks == 1 })
	mustAlloc(t, m, 2) // kicks again: the cooled block is recycled
	waitFor(t, func() bool { return m.Stats().ReclaimedBlocks >= 1 })
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 10s")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestOddBlocksPerPage covers the division path of block addressing (15
// blocks a page).
func TestOddBlocksPerPage(t *testing.T) {
	m := newManager(t, Options{PageSize: 960, BlockSize: 64})
	var refs []Ref
	for p := range int64(3) {
		for range 14 {
			refs = append(refs, mustAlloc(t, m, p))
		}
	}
	for _, r := range refs {
		b, ok := m.Bytes(r)
		if !ok || len(b) != 64 || checkPattern(b, r) >= 0 {
			t.Fatalf("%v: ok %v, %d bytes, pattern at %d", r, ok, len(b), checkPattern(b, r))
		}
	}
	m.HardRelease(1)
	m.Advance()
	m.Reclaim()
	if s := m.Stats(); s.Pages != 3 || s.LiveBlocks != 28 || s.FreeBlocks != 17 {
		t.Errorf("stats %+v", s)
	}
}
