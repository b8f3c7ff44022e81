package pgarchive

import (
	"cmp"
	"math"
	"slices"
)

// Layout is the round-robin geometry of one rra_bundle: Size slots of
// StepMs each, series positions cut into segments of Width. Slot s of the
// time axis (s = t / StepMs, counted from the Unix epoch) lies in lap
// s / Size at index s % Size; position p lies in segment p / Width at the
// 1-based array subscript p % Width + 1.
type Layout struct {
	StepMs int64
	Size   int64
	Width  int32
}

// VersionModulus is what a lap is reduced by to fit the INT ver[] array.
// Two laps that differ by a multiple of it (2^31 laps: 68 years at a 1 ms
// step with a single slot) would be confused; real levels never get there.
const VersionModulus = 2147483648

// Version returns the ver[] entry of a point in lap.
func Version(lap int64) int32 { return int32(lap % VersionModulus) }

// Segment returns the segment of position pos and its 1-based subscript.
func (l Layout) Segment(pos int32) (seg, idx int32) {
	return pos / l.Width, pos%l.Width + 1
}

// Slot returns the absolute slot number of time t (ms, t >= 0).
func (l Layout) Slot(t int64) int64 { return t / l.StepMs }

// Drop reasons, the values of the reason label of
// aerie_pgarchive_dropped_points_total.
const (
	// DropTooOld: the point's slot has already been taken by a newer lap
	// (it is outside the round-robin window that ends at the bundle's
	// latest slot).
	DropTooOld = "too_old"
	// DropOutOfRange: the source returned a point outside the range asked
	// for, before the epoch, out of time order, or a timestamp without a
	// value.
	DropOutOfRange = "out_of_range"
	// DropSameSlot: a later point of the same series fell in the same slot
	// and replaced it.
	DropSameSlot = "same_slot"
)

// cell is one dp[idx]/ver[idx] assignment of one ts row.
type cell struct {
	seg, i int32 // the ts row
	idx    int32 // 1-based subscript
	ver    int32
	v      float64
}

// rows is a set of ts row updates in the order (seg, i): row k updates
// (Seg[k], I[k]) with the assignments Idx[Lo[k]:Lo[k+1]], Dp[...], Ver[...].
// The flat arrays let pgx encode each row's parameters as sub-slices.
type rows struct {
	Seg, I []int32
	Lo     []int // len(Seg)+1 offsets
	Idx    []int32
	Ver    []int32
	Dp     []float64
}

// Len returns the number of rows.
func (r *rows) Len() int { return len(r.Seg) }

// rowBuilder turns a level's points into ts row updates. Points must come
// series by series; it is not safe for concurrent use.
type rowBuilder struct {
	lay      Layout
	from, to int64 // the source range read: points outside it are dropped
	minSlot  int64 // the oldest slot still in the window
	cells    []cell
	points   int // points kept
	dropped  map[string]int
}

// reset prepares b for the points of [from, to) of a level whose bundle's
// newest slot (after these points) is latestSlot.
func (b *rowBuilder) reset(lay Layout, from, to, latestSlot int64) {
	b.lay, b.from, b.to = lay, from, to
	b.minSlot = latestSlot - lay.Size + 1
	b.cells = b.cells[:0]
	b.points = 0
	clear(b.dropped)
}

func (b *rowBuilder) drop(reason string, n int) {
	if b.dropped == nil {
		b.dropped = map[string]int{}
	}
	b.dropped[reason] += n
}

// add places one series' points (in time order) at position pos.
func (b *rowBuilder) add(pos int32, ts []int64, vs []float64) {
	seg, idx := b.lay.Segment(pos)
	last := int64(math.MinInt64)
	n := min(len(ts), len(vs))
	for k := 0; k < n; k++ {
		t := ts[k]
		if t < b.from || t >= b.to || t < 0 {
			b.drop(DropOutOfRange, 1)
			continue
		}
		s := t / b.lay.StepMs
		if s < b.minSlot {
			b.drop(DropTooOld, 1)
			continue
		}
		if s < last {
			b.drop(DropOutOfRange, 1)
			continue
		}
		if s == last {
			// Same slot as the point before: the later one wins.
			b.cells[len(b.cells)-1].v = vs[k]
			b.drop(DropSameSlot, 1)
			continue
		}
		last = s
		b.cells = append(b.cells, cell{seg: seg, i: int32(s % b.lay.Size), idx: idx, ver: Version(s / b.lay.Size), v: vs[k]})
		b.points++
	}
	if len(ts) != len(vs) {
		b.drop(DropOutOfRange, max(len(ts), len(vs))-n)
	}
}

// build sorts the cells and returns them as row updates.
func (b *rowBuilder) build() rows {
	n := len(b.cells)
	dst := rows{Idx: make([]int32, 0, n), Ver: make([]int32, 0, n), Dp: make([]float64, 0, n)}
	slices.SortFunc(b.cells, func(x, y cell) int {
		if c := cmp.Compare(x.seg, y.seg); c != 0 {
			return c
		}
		if c := cmp.Compare(x.i, y.i); c != 0 {
			return c
		}
		return cmp.Compare(x.idx, y.idx)
	})
	for k, c := range b.cells {
		if k == 0 || c.seg != b.cells[k-1].seg || c.i != b.cells[k-1].i {
			dst.Seg = append(dst.Seg, c.seg)
			dst.I = append(dst.I, c.i)
			dst.Lo = append(dst.Lo, len(dst.Idx))
		}
		dst.Idx = append(dst.Idx, c.idx)
		dst.Ver = append(dst.Ver, c.ver)
		dst.Dp = append(dst.Dp, c.v)
	}
	dst.Lo = append(dst.Lo, len(dst.Idx))
	return dst
}
