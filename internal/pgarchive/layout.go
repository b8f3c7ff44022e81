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

// cell is one dp[idx]/ver[idx] assignment: the point of the series at
// (seg, idx) in absolute slot slot.
type cell struct {
	seg, idx int32
	slot     int64
	v        float64
}

// rows is a set of ts row updates ordered by segment, then slot: row k
// updates (Seg[k], I[k]) with the assignments Idx[Lo[k]:Lo[k+1]],
// Dp[...], Ver[...] (in the order the series were added). The flat arrays
// let pgx encode each row's parameters as sub-slices.
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
	maxSeg   int32
	cells    []cell
	counts   []int32 // build's scratch
	points   int     // points kept
	dropped  map[string]int
}

// reset prepares b for the points of [from, to) of a level whose bundle's
// newest slot (after these points) is latestSlot.
func (b *rowBuilder) reset(lay Layout, from, to, latestSlot int64) {
	b.lay, b.from, b.to = lay, from, to
	b.minSlot = latestSlot - lay.Size + 1
	b.cells = b.cells[:0]
	b.maxSeg = 0
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
	b.maxSeg = max(b.maxSeg, seg)
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
		b.cells = append(b.cells, cell{seg: seg, idx: idx, slot: s, v: vs[k]})
		b.points++
	}
	if len(ts) != len(vs) {
		b.drop(DropOutOfRange, max(len(ts), len(vs))-n)
	}
}

// build returns the cells as row updates. A counting sort over the dense
// row number seg·slots + (slot − first slot) groups them in two passes;
// when that range is much larger than the cells (few series spread over
// many segments), a comparison sort does instead.
func (b *rowBuilder) build() rows {
	n := len(b.cells)
	dst := rows{Idx: make([]int32, n), Ver: make([]int32, n), Dp: make([]float64, n)}
	first := max(b.minSlot, b.from/b.lay.StepMs)
	nslots := (b.to-1)/b.lay.StepMs - first + 1
	nrows := (int64(b.maxSeg) + 1) * nslots
	if n == 0 || nslots <= 0 || nrows > 4*int64(n)+4096 {
		slices.SortStableFunc(b.cells, func(x, y cell) int {
			if c := cmp.Compare(x.seg, y.seg); c != 0 {
				return c
			}
			return cmp.Compare(x.slot, y.slot)
		})
		for k, c := range b.cells {
			if k == 0 || c.seg != b.cells[k-1].seg || c.slot != b.cells[k-1].slot {
				b.appendRow(&dst, c, k)
			}
			b.put(&dst, k, c)
		}
		dst.Lo = append(dst.Lo, n)
		return dst
	}
	counts := slices.Grow(b.counts[:0], int(nrows)+1)[:nrows+1]
	clear(counts)
	for _, c := range b.cells {
		counts[int64(c.seg)*nslots+c.slot-first+1]++
	}
	// counts[r] becomes the first cell of dense row r.
	for r := 1; r < len(counts); r++ {
		counts[r] += counts[r-1]
	}
	for r := range nrows {
		if lo := counts[r]; lo != counts[r+1] {
			seg, slot := int32(r/nslots), first+r%nslots
			b.appendRow(&dst, cell{seg: seg, slot: slot}, int(lo))
		}
	}
	for _, c := range b.cells {
		r := int64(c.seg)*nslots + c.slot - first
		b.put(&dst, int(counts[r]), c)
		counts[r]++
	}
	dst.Lo = append(dst.Lo, n)
	b.counts = counts
	return dst
}

// appendRow starts a row for c's segment and slot at cell lo.
func (b *rowBuilder) appendRow(dst *rows, c cell, lo int) {
	dst.Seg = append(dst.Seg, c.seg)
	dst.I = append(dst.I, int32(c.slot%b.lay.Size))
	dst.Lo = append(dst.Lo, lo)
}

// put stores c as cell k of dst.
func (b *rowBuilder) put(dst *rows, k int, c cell) {
	dst.Idx[k] = c.idx
	dst.Ver[k] = Version(c.slot / b.lay.Size)
	dst.Dp[k] = c.v
}
