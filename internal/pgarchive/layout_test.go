package pgarchive

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestLevelLayout(t *testing.T) {
	f := func(l Level, want Layout, wantErr string) {
		t.Helper()
		got, err := l.layout(200)
		if wantErr != "" {
			require.ErrorContains(t, err, wantErr)
			return
		}
		require.NoError(t, err)
		require.Equal(t, want, got)
	}
	f(Level{Name: "10s", Step: 10 * time.Second, Retention: 6 * time.Hour}, Layout{StepMs: 10000, Size: 2160, Width: 200}, "")
	f(Level{Name: "1h", Step: time.Hour, Retention: 365 * 24 * time.Hour}, Layout{StepMs: 3600000, Size: 8760, Width: 200}, "")
	f(Level{Step: time.Second, Retention: time.Minute}, Layout{}, "empty name")
	f(Level{Name: "x", Step: 0, Retention: time.Minute}, Layout{}, "not a positive whole number of milliseconds")
	f(Level{Name: "x", Step: 1500 * time.Microsecond, Retention: time.Minute}, Layout{}, "not a positive whole number of milliseconds")
	f(Level{Name: "x", Step: time.Second, Retention: 1500 * time.Millisecond}, Layout{}, "not a positive multiple")
	f(Level{Name: "x", Step: time.Second, Retention: 0}, Layout{}, "not a positive multiple")
	f(Level{Name: "x", Step: time.Millisecond, Retention: (MaxSlots + 1) * time.Millisecond}, Layout{}, "slots")
}

func TestSegment(t *testing.T) {
	lay := Layout{StepMs: 1000, Size: 10, Width: 200}
	f := func(pos, seg, idx int32) {
		t.Helper()
		s, i := lay.Segment(pos)
		require.Equal(t, [2]int32{seg, idx}, [2]int32{s, i}, "position %d", pos)
	}
	f(0, 0, 1)
	f(199, 0, 200)
	f(200, 1, 1)
	f(401, 2, 2)
	f(math.MaxInt32, math.MaxInt32/200, math.MaxInt32%200+1)
}

func TestVersion(t *testing.T) {
	require.Equal(t, int32(0), Version(0))
	require.Equal(t, int32(VersionModulus-1), Version(VersionModulus-1))
	require.Equal(t, int32(0), Version(VersionModulus))
	require.Equal(t, int32(5), Version(3*VersionModulus+5))
}

// testCell is one assignment of a built row.
type testCell struct {
	seg, i, idx, ver int32
	v                float64
}

// cellsOf flattens built rows for comparison, ordering each row's cells
// by subscript (their order within a row does not matter).
func cellsOf(r rows) []testCell {
	var out []testCell
	for k := range r.Len() {
		lo := len(out)
		for c := r.Lo[k]; c < r.Lo[k+1]; c++ {
			out = append(out, testCell{seg: r.Seg[k], i: r.I[k], idx: r.Idx[c], ver: r.Ver[c], v: r.Dp[c]})
		}
		slices.SortFunc(out[lo:], func(x, y testCell) int { return cmp.Compare(x.idx, y.idx) })
	}
	return out
}

func TestRowBuilder(t *testing.T) {
	// 4 slots of 10 s, segments of 2 positions.
	lay := Layout{StepMs: 10000, Size: 4, Width: 2}
	type series struct {
		pos int32
		ts  []int64
		vs  []float64
	}
	f := func(from, to, latestSlot int64, in []series, want []testCell, wantDropped map[string]int) {
		t.Helper()
		var b rowBuilder
		b.reset(lay, from, to, latestSlot)
		for _, s := range in {
			b.add(s.pos, s.ts, s.vs)
		}
		r := b.build()
		require.Equal(t, want, cellsOf(r))
		require.Len(t, r.Lo, r.Len()+1)
		for k := range r.Len() {
			require.Less(t, r.Lo[k], r.Lo[k+1], "row %d is empty", k)
			if k > 0 {
			}
		}
		require.Equal(t, len(want), b.points)
		if wantDropped == nil {
			wantDropped = map[string]int{}
		}
		got := map[string]int{}
		for k, v := range b.dropped {
			if v != 0 {
				got[k] = v
			}
		}
		require.Equal(t, wantDropped, got)
	}
	// Lap 2 (slots 8..11) of three series; positions 0 and 1 share segment
	// 0, position 2 is in segment 1. Rows come out by (seg, i), cells by
	// subscript.
	f(80000, 120000, 11, []series{
		{pos: 1, ts: []int64{80000, 90000}, vs: []float64{1, 2}},
		{pos: 0, ts: []int64{80000, 110000}, vs: []float64{3, 4}},
		{pos: 2, ts: []int64{100000}, vs: []float64{5}},
	}, []testCell{
		{seg: 0, i: 0, idx: 1, ver: 2, v: 3},
		{seg: 0, i: 0, idx: 2, ver: 2, v: 1},
		{seg: 0, i: 1, idx: 2, ver: 2, v: 2},
		{seg: 0, i: 3, idx: 1, ver: 2, v: 4},
		{seg: 1, i: 2, idx: 1, ver: 2, v: 5},
	}, nil)
	// A range across a lap boundary: slot 3 is lap 0, slot 4 lap 1 at i=0.
	f(30000, 50000, 4, []series{{pos: 0, ts: []int64{30000, 40000}, vs: []float64{7, 8}}},
		[]testCell{{seg: 0, i: 3, idx: 1, ver: 0, v: 7}, {seg: 0, i: 0, idx: 1, ver: 1, v: 8}}, nil)
	// Unaligned times fall in their slot; a later point in the same slot
	// replaces the earlier one.
	f(0, 40000, 3, []series{{pos: 0, ts: []int64{1000, 9999, 10001}, vs: []float64{1, 2, 3}}},
		[]testCell{{seg: 0, i: 0, idx: 1, ver: 0, v: 2}, {seg: 0, i: 1, idx: 1, ver: 0, v: 3}},
		map[string]int{DropSameSlot: 1})
	// Outside [from, to), before the epoch, out of order, or without a
	// value: out of range.
	f(10000, 30000, 3, []series{{pos: 0, ts: []int64{-5, 5000, 10000, 30000, 20000, 15000, 25000}, vs: []float64{1, 2, 3, 4, 5, 6}}},
		[]testCell{{seg: 0, i: 1, idx: 1, ver: 0, v: 3}, {seg: 0, i: 2, idx: 1, ver: 0, v: 5}},
		map[string]int{DropOutOfRange: 5})
	// The bundle's newest slot is 9 (another level went ahead): slots
	// below 6 have been overwritten by lap 2.
	f(40000, 80000, 9, []series{{pos: 0, ts: []int64{40000, 50000, 60000, 70000}, vs: []float64{1, 2, 3, 4}}},
		[]testCell{{seg: 0, i: 2, idx: 1, ver: 1, v: 3}, {seg: 0, i: 3, idx: 1, ver: 1, v: 4}},
		map[string]int{DropTooOld: 2})
}

func TestRowBuilderKeepsBits(t *testing.T) {
	in := []float64{math.Float64frombits(0x7ff8000000000001), math.Float64frombits(0x7ff0000000000002), math.Copysign(0, -1), math.Inf(-1), 5e-324}
	var b rowBuilder
	b.reset(Layout{StepMs: 1, Size: 10, Width: 3}, 0, 10, 9)
	b.add(0, []int64{0, 1, 2, 3, 4}, in)
	r := b.build()
	require.Equal(t, 5, r.Len())
	for k, v := range in {
		require.Equal(t, math.Float64bits(v), math.Float64bits(r.Dp[k]), "value %d", k)
	}
}

// TestRowBuilderRandom compares the builder with a direct computation on
// random chunks, dense (counting sort) and sparse (comparison sort).
func TestRowBuilderRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for iter := range 200 {
		lay := Layout{StepMs: 1 + rng.Int64N(1000), Size: 1 + rng.Int64N(50), Width: 1 + rng.Int32N(20)}
		from := rng.Int64N(100000)
		to := from + 1 + rng.Int64N(lay.StepMs*lay.Size*2)
		latest := lay.Slot(to-1) + rng.Int64N(3)
		maxPos := int32(50)
		if iter%2 == 1 {
			maxPos = 1 << 20 // sparse
		}
		var b rowBuilder
		b.reset(lay, from, to, latest)
		want := map[testCell]bool{}
		used := map[int32]bool{}
		for range rng.IntN(30) {
			pos := rng.Int32N(maxPos)
			if used[pos] {
				continue
			}
			used[pos] = true
			var ts []int64
			var vs []float64
			last := map[int64]float64{}
			for t := from + rng.Int64N(lay.StepMs); t < to; t += 1 + rng.Int64N(2*lay.StepMs) {
				v := rng.Float64()
				ts, vs = append(ts, t), append(vs, v)
				if s := t / lay.StepMs; s > latest-lay.Size {
					last[s] = v
				}
			}
			b.add(pos, ts, vs)
			seg, idx := lay.Segment(pos)
			for s, v := range last {
				want[testCell{seg: seg, i: int32(s % lay.Size), idx: idx, ver: Version(s / lay.Size), v: v}] = true
			}
		}
		r := b.build()
		got := map[testCell]bool{}
		for _, c := range cellsOf(r) {
			require.False(t, got[c], "iteration %d: cell %+v twice", iter, c)
			got[c] = true
		}
		require.Equal(t, want, got, "iteration %d", iter)
		for k := 1; k < r.Len(); k++ {
			require.True(t, r.Seg[k-1] < r.Seg[k] || r.Seg[k-1] == r.Seg[k] && r.I[k-1] != r.I[k], "iteration %d: rows %d and %d", iter, k-1, k)
		}
	}
}
