package cache

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"math"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzSlab round-trips points through the slab codec: every point comes
// back from a full scan and from the time markers' partial reads, and
// encoding twice gives the same bytes.
func FuzzSlab(f *testing.F) {
	f.Add([]byte("\x01\x00\x05hello\x02\x01\x00\x00"), uint8(3))
	f.Add(bytes.Repeat([]byte("\x07\x03\x10abcdefghijklmnop"), 300), uint8(130))
	f.Fuzz(func(t *testing.T, in []byte, nkeys uint8) {
		if nkeys == 0 {
			nkeys = 1
		}
		// points from the input: (time delta, key, value length, value)
		var pts []slabPoint
		tm := int64(0)
		for len(in) >= 3 {
			tm += int64(in[0])
			k := uint16(in[1]) % uint16(nkeys)
			n := min(int(in[2]), len(in)-3)
			ks := []uint16{k}
			if in[0]&0x80 != 0 && nkeys > 1 { // a point of two keys
				ks = append(ks, (k+uint16(in[0]&0x7f)+1)%uint16(nkeys))
				if ks[1] == k {
					ks = ks[:1]
				}
			}
			pts = append(pts, slabPoint{t: tm, v: in[3 : 3+n], keys: ks})
			in = in[3+n:]
		}
		pts = mergePoints(pts)
		keys := make([]slabKey, nkeys)
		for i := range keys {
			keys[i].key[0] = byte(i)
			keys[i].minT = math.MaxInt64
		}
		for _, p := range pts {
			for _, k := range p.keys {
				keys[k].minT = min(keys[k].minT, p.t)
			}
		}
		const slabSize = 64 << 10
		dataOff := dataOffFor(slabSize, 256)
		b, err := appendSlab(nil, slabSize, dataOff, 7, "f", keys, pts)
		if err != nil {
			require.ErrorContains(t, err, "slab overflow")
			return
		}
		b2, _ := appendSlab(nil, slabSize, dataOff, 7, "f", keys, pts)
		require.Equal(t, b, b2)
		h, reason := decodeSlabHeader(b, slabSize)
		require.Empty(t, reason)
		require.Equal(t, len(pts), h.npoints)
		if len(pts) == 0 {
			return
		}
		for k := 0; k < int(nkeys); k++ {
			var want []Point
			for _, p := range pts {
				if slices.Contains(p.keys, uint16(k)) {
					want = append(want, Point{p.t, p.v})
				}
			}
			mint, maxt := pts[len(pts)/3].t, pts[2*len(pts)/3].t
			sp := h.readSpan(k, mint, maxt)
			var got []Point
			data := b[dataOff+sp.b0*BlockSize : dataOff+sp.b1*BlockSize]
			require.Empty(t, scanPoints(&h, data, sp, mint, maxt, func(t int64, ks keySet, v []byte) {
				if ks.has(k) {
					got = append(got, Point{t, v})
				}
			}))
			if !sp.sorted { // a scattered key's points come run by run
				slices.SortStableFunc(got, func(a, b Point) int {
					if a.T != b.T {
						return cmp.Compare(a.T, b.T)
					}
					return bytes.Compare(a.V, b.V)
				})
			}
			want = slices.DeleteFunc(want, func(p Point) bool { return p.T < mint || p.T > maxt })
			require.Equal(t, len(want), len(got), "key %d %d-%d span %+v", k, mint, maxt, sp)
			for i := range want {
				require.Equal(t, want[i].T, got[i].T)
				require.True(t, bytes.Equal(want[i].V, got[i].V))
			}
		}
	})
}

// FuzzSlabHeader: any bytes decode to a header or a reason, never a panic,
// and a decoded header's markers and keys are within the slab.
func FuzzSlabHeader(f *testing.F) {
	keys := []slabKey{{key: KeyOf("a"), epoch: 1, minT: 1, maxT: 2}}
	b, _ := appendSlab(nil, 64<<10, BlockSize, 1, "f", keys, []slabPoint{{t: 1, v: []byte("x"), keys: []uint16{0}}, {t: 2, keys: []uint16{0}}})
	f.Add(b[:BlockSize])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, reason := decodeSlabHeader(b, 64<<10)
		if reason != "" {
			return
		}
		require.LessOrEqual(t, h.dataOff+h.dataLen, 64<<10)
		for _, m := range h.markers {
			if m.off != noPoint {
				_ = m.off
			}
		}
	})
}

// FuzzSnapshot: a damaged key index snapshot is refused, never a panic,
// and a cache opened over it works (empty).
func FuzzSnapshot(f *testing.F) {
	dir := f.TempDir()
	o := Options{Path: filepath.Join(dir, "c"), Size: 4 * 64 << 10, SlabSize: 64 << 10, NoDirectIO: true}
	c, err := Open(o)
	require.NoError(f, err)
	require.NoError(f, c.Set(KeyOf("q"), 0, 10, []Field{{Name: "v", Points: []Point{{T: 3, V: []byte("3")}}}}))
	c.mu.Lock()
	for _, fi := range c.fields {
		require.NoError(f, c.sealLocked(fi))
	}
	snap := c.appendSnapshot(nil)
	c.mu.Unlock()
	f.Add(snap)
	f.Add(binary.LittleEndian.AppendUint32(nil, SnapshotMagic))
	f.Fuzz(func(t *testing.T, b []byte) {
		c.mu.Lock()
		if err := c.decodeSnapshot(b); err != nil {
			c.reset()
		}
		c.mu.Unlock()
		_, err := c.Get(KeyOf("q"), 0, 10, nil)
		require.NoError(t, err)
	})
	c.Close()
}
