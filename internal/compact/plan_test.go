package compact

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aerie-db/aerie/internal/block"
)

const h = int64(3600 * 1000)

func meta(id string, mint, maxt int64, seq uint64, level int, parents ...string) block.Meta {
	return block.Meta{ULID: id, MinTime: mint, MaxTime: maxt, Seq: seq, Compaction: block.Compaction{Level: level, Parents: parents}}
}

func TestRanges(t *testing.T) {
	for _, tc := range []struct {
		base, max int64
		want      []int64
	}{
		{2 * h, 2 * h, []int64{2 * h}},
		{2 * h, 12*h - 1, []int64{2 * h}},
		{2 * h, 12 * h, []int64{2 * h, 12 * h}},
		{2 * h, 31 * 24 * h, []int64{2 * h, 12 * h, 48 * h, 8 * 24 * h}},
		{2 * h, 32 * 24 * h, []int64{2 * h, 12 * h, 48 * h, 8 * 24 * h, 32 * 24 * h}},
		{1000, 1000, []int64{1000}},
		{0, 100, nil},
	} {
		require.Equal(t, tc.want, Ranges(tc.base, tc.max), "Ranges(%d, %d)", tc.base, tc.max)
	}
	// No overflow: the last range is the largest that fits.
	rs := Ranges(2*h, math.MaxInt64)
	for i := 1; i < len(rs); i++ {
		require.Greater(t, rs[i], rs[i-1])
	}
	require.Greater(t, rs[len(rs)-1], int64(math.MaxInt64/levelFactor))
}

func TestPlan(t *testing.T) {
	ranges := Ranges(2*h, 32*24*h) // 2h 12h 2d 8d 32d
	day := 24 * h
	// six flushed partitions filling [0, 12h)
	six := func(prefix string) []block.Meta {
		var ms []block.Meta
		for i := int64(0); i < 6; i++ {
			ms = append(ms, meta(prefix+string(rune('a'+i)), i*2*h, (i+1)*2*h, 0, 0))
		}
		return ms
	}
	// x spans the edge of the 12h windows [0, 12h) and [12h, 24h).
	acrossEdge := []block.Meta{
		meta("a", 0, 2*h, 0, 0),
		meta("b", 2*h, 4*h, 0, 0),
		meta("x", 10*h, 14*h, 0, 1),
		meta("c", 14*h, 16*h, 0, 0),
		meta("d", 16*h, 18*h, 0, 0),
	}
	for _, tc := range []struct {
		name    string
		metas   []block.Meta
		horizon int64
		want    []Job
	}{
		{name: "empty", horizon: math.MaxInt64},
		{
			name:    "one block",
			metas:   []block.Meta{meta("a", 0, 2*h, 0, 0)},
			horizon: math.MaxInt64,
		},
		{
			name: "overlap is vertical, inputs by seq then ULID, level at least 1",
			metas: []block.Meta{
				meta("c", 0, 2*h, 3, 0),
				meta("b", h, 2*h, 0, 0),
				meta("a", 0, 2*h, 3, 0),
			},
			horizon: 0, // vertical merges ignore the horizon
			want:    []Job{{Inputs: []string{"b", "a", "c"}, MinTime: 0, MaxTime: 2 * h, Level: 1}},
		},
		{
			name: "overlap is transitive; range is the union; level the greatest",
			metas: []block.Meta{
				meta("a", 0, 12*h, 0, 1),
				meta("b", 11*h, 14*h, 2, 0),
				meta("c", 13*h, 16*h, 1, 0),
				meta("d", 16*h, 18*h, 0, 0), // touches, does not overlap
			},
			horizon: 0,
			want:    []Job{{Inputs: []string{"a", "c", "b"}, MinTime: 0, MaxTime: 16 * h, Level: 1}},
		},
		{
			name:    "six partitions become one level-1 block",
			metas:   six(""),
			horizon: 12 * h,
			want:    []Job{{Inputs: []string{"a", "b", "c", "d", "e", "f"}, MinTime: 0, MaxTime: 12 * h, Level: 1}},
		},
		{
			name:    "a window not past the horizon waits",
			metas:   six(""),
			horizon: 12*h - 1,
		},
		{
			name:    "a window needs two blocks, not all its partitions",
			metas:   append(six("")[:1], six("")[4:]...),
			horizon: day,
			want:    []Job{{Inputs: []string{"a", "e", "f"}, MinTime: 0, MaxTime: 12 * h, Level: 1}},
		},
		{
			name:    "a block across a window edge blocks both windows until a larger window holds it",
			metas:   acrossEdge,
			horizon: 2 * day,
			want:    []Job{{Inputs: []string{"a", "b", "c", "d", "x"}, MinTime: 0, MaxTime: 2 * day, Level: 2}},
		},
		{
			name:    "same, before the larger window is past the horizon",
			metas:   acrossEdge,
			horizon: 2*day - 1,
		},
		{
			name: "a vertical merge inside a window holds the window back",
			metas: []block.Meta{
				meta("a", 0, 2*h, 0, 0),
				meta("b", 0, 2*h, 1, 0),
				meta("c", 2*h, 4*h, 0, 0),
				meta("d", 4*h, 6*h, 0, 0),
			},
			horizon: math.MaxInt64,
			want:    []Job{{Inputs: []string{"a", "b"}, MinTime: 0, MaxTime: 2 * h, Level: 1}},
		},
		{
			name: "level 1 planned this round holds level 2 back; level 2 of level-1 blocks",
			metas: append(six("p"),
				meta("q", 12*h, 24*h, 0, 1),
				meta("r", 2*day, 2*day+12*h, 0, 1),
				meta("s", 2*day+12*h, 3*day, 0, 1),
				meta("t", 3*day+12*h, 4*day, 0, 1),
			),
			horizon: 4 * day,
			want: []Job{
				{Inputs: []string{"pa", "pb", "pc", "pd", "pe", "pf"}, MinTime: 0, MaxTime: 12 * h, Level: 1},
				{Inputs: []string{"r", "s", "t"}, MinTime: 2 * day, MaxTime: 4 * day, Level: 2},
			},
		},
		{
			name: "a block larger than the window stays; new blocks after it compact",
			metas: []block.Meta{
				meta("big", 0, 2*day, 0, 2),
				meta("a", 2*day, 2*day+2*h, 0, 0),
				meta("b", 2*day+2*h, 2*day+4*h, 0, 0),
			},
			horizon: 3 * day,
			want:    []Job{{Inputs: []string{"a", "b"}, MinTime: 2 * day, MaxTime: 2*day + 12*h, Level: 1}},
		},
		{
			name: "negative times align to epoch 0",
			metas: []block.Meta{
				meta("a", -4*h, -2*h, 0, 0),
				meta("b", -2*h, 0, 0, 0),
				meta("c", 0, 2*h, 0, 0),
			},
			horizon: 0,
			want:    []Job{{Inputs: []string{"a", "b"}, MinTime: -12 * h, MaxTime: 0, Level: 1}},
		},
		{
			name: "oldest first",
			metas: []block.Meta{
				meta("z1", 36*h, 38*h, 0, 0),
				meta("z2", 38*h, 40*h, 0, 0),
				meta("y1", 24*h, 26*h, 5, 0),
				meta("y2", 25*h, 26*h, 4, 0),
				meta("x1", 0, 2*h, 0, 0),
				meta("x2", 2*h, 4*h, 0, 0),
			},
			horizon: 48 * h,
			want: []Job{
				{Inputs: []string{"x1", "x2"}, MinTime: 0, MaxTime: 12 * h, Level: 1},
				{Inputs: []string{"y2", "y1"}, MinTime: 24 * h, MaxTime: 26 * h, Level: 1},
				{Inputs: []string{"z1", "z2"}, MinTime: 36 * h, MaxTime: 48 * h, Level: 1},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Plan(tc.metas, ranges, tc.horizon)
			require.Equal(t, tc.want, got)
			seen := map[string]bool{}
			for _, j := range got {
				for _, id := range j.Inputs {
					require.False(t, seen[id], "block %s planned twice", id)
					seen[id] = true
				}
			}
		})
	}
}

func TestObsolete(t *testing.T) {
	for _, tc := range []struct {
		name  string
		metas []block.Meta
		want  []string
	}{
		{name: "none"},
		{
			name:  "parents deleted: nothing to do",
			metas: []block.Meta{meta("c", 0, 12*h, 0, 1, "a", "b")},
		},
		{
			name:  "crash after rename: all parents remain",
			metas: []block.Meta{meta("a", 0, 2*h, 0, 0), meta("b", 2*h, 4*h, 0, 0), meta("c", 0, 12*h, 0, 1, "b", "a")},
			want:  []string{"a", "b"},
		},
		{
			name:  "crash while deleting: some parents remain",
			metas: []block.Meta{meta("b", 2*h, 4*h, 0, 0), meta("c", 0, 12*h, 0, 1, "a", "b")},
			want:  []string{"b"},
		},
		{
			name: "chain: grandparent and parent",
			metas: []block.Meta{
				meta("a", 0, 2*h, 0, 0),
				meta("b", 0, 12*h, 0, 1, "a", "x"),
				meta("c", 0, 48*h, 0, 2, "b", "y"),
			},
			want: []string{"a", "b"},
		},
		{
			name:  "a parent named by two outputs is listed once",
			metas: []block.Meta{meta("a", 0, 2*h, 0, 0), meta("b", 0, 2*h, 0, 1, "a"), meta("c", 0, 2*h, 0, 1, "a")},
			want:  []string{"a"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, Obsolete(tc.metas))
		})
	}
}
