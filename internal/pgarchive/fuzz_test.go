package pgarchive

import (
	"encoding/binary"
	"math"
	"testing"
)

// FuzzRowBuilder feeds the row builder arbitrary points (the Source is
// trusted code, but its timestamps are not checked before the builder)
// and checks that every cell lands in a valid, unique place.
func FuzzRowBuilder(f *testing.F) {
	f.Add(int64(10000), int64(6), int32(4), int64(0), int64(120000), int64(0), []byte("\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f"))
	f.Add(int64(1), int64(1), int32(1), int64(-5), int64(5), int64(3), []byte{})
	f.Add(int64(60000), int64(1440), int32(200), int64(1_699_920_000_000), int64(1_699_920_600_000), int64(2), []byte("\xff\xff\xff\xff\xff\xff\xff\x7f\x00\x00\x00\x00\x00\x00\x00\x80"))
	f.Fuzz(func(t *testing.T, step, size int64, width int32, from, to, ahead int64, data []byte) {
		if step <= 0 || size <= 0 || size > MaxSlots || width <= 0 || width > maxSegmentWidth || ahead < 0 || ahead > 1<<20 || to <= from {
			t.Skip()
		}
		lay := Layout{StepMs: step, Size: size, Width: width}
		var b rowBuilder
		latest := lay.Slot(max(to-1, 0)) + ahead
		b.reset(lay, from, to, latest)
		// Each 16 bytes: a position (4 bytes), a count (1 byte) and a time
		// seed; a series gets count points from the seed on. A position
		// is one series: repeats are skipped.
		used := map[int32]bool{}
		for len(data) >= 16 {
			pos := int32(binary.LittleEndian.Uint32(data) & math.MaxInt32)
			n := int(data[4] % 8)
			t0 := int64(binary.LittleEndian.Uint64(data[8:]))
			data = data[16:]
			if used[pos] {
				continue
			}
			used[pos] = true
			ts, vs := make([]int64, n), make([]float64, n)
			for k := range ts {
				ts[k] = t0 + int64(k)*(step/2+1)
				vs[k] = float64(k)
			}
			b.add(pos, ts, vs)
		}
		r := b.build()
		if len(r.Lo) != r.Len()+1 || r.Lo[0] != 0 || r.Lo[r.Len()] != len(r.Idx) {
			t.Fatalf("bad offsets %v for %d rows, %d cells", r.Lo, r.Len(), len(r.Idx))
		}
		if len(r.Idx) != b.points {
			t.Fatalf("%d cells, %d points", len(r.Idx), b.points)
		}
		type where struct{ seg, i, idx int32 }
		seen := map[where]bool{}
		for k := range r.Len() {
			if r.Lo[k] >= r.Lo[k+1] {
				t.Fatalf("row %d is empty", k)
			}
			if r.I[k] < 0 || int64(r.I[k]) >= size || r.Seg[k] < 0 {
				t.Fatalf("row %d at (%d, %d) with size %d", k, r.Seg[k], r.I[k], size)
			}
			for c := r.Lo[k]; c < r.Lo[k+1]; c++ {
				w := where{r.Seg[k], r.I[k], r.Idx[c]}
				if r.Idx[c] < 1 || r.Idx[c] > width || seen[w] || r.Ver[c] < 0 {
					t.Fatalf("cell %+v (ver %d) invalid or twice", w, r.Ver[c])
				}
				seen[w] = true
			}
		}
	})
}
