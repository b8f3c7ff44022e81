package block

import (
	"encoding/binary"
	"math/bits"
	"math/rand/v2"
	"slices"
	"testing"
)

// readRiceModel is the decoder readRice replaced: one unaligned load a
// code, at the code's bit position.
// It starts at bit p of src.
func readRiceModel(src []byte, xs []int64, k, p, end uint) (int, uint) {
	for i := range xs {
		if p >= end {
			return i, p
		}
		w := binary.LittleEndian.Uint64(src[p>>3:]) >> (p & 7)
		z := uint(bits.TrailingZeros64(w))
		n := z + 1 + k
		if z >= riceMaxQ || p+n > end {
			return i, p
		}
		xs[i] = unzigzag(uint64(z)<<k | w>>(z+1)&(1<<k-1))
		p += n
	}
	return len(xs), p
}

// TestReadRice holds readRice to the model on valid streams of every
// order, their truncations, bit flips and random bytes, with garbage past
// the stream's end as a block's next bytes: what readRice decodes is what
// the model decodes, up to where readRice stops (readGolomb goes on from
// there with the model's loop), and a valid stream is decoded whole.
func TestReadRice(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	check := func(src []byte, k uint, n int, whole bool) {
		t.Helper()
		padded := append(slices.Clone(src), 0, 0, 0, 0, 0, 0, 0, 0)
		for i := len(src); i < len(padded); i++ {
			padded[i] = byte(rng.Uint32())
		}
		end := uint(len(src)) * 8
		got, want := make([]int64, n), make([]int64, n)
		gi, gp := readRice(padded, got, k, end)
		wi, wp := readRiceModel(padded, want, k, 0, end)
		if gi > wi || !slices.Equal(got[:gi], want[:gi]) {
			t.Fatalf("k %d, %x: readRice %d codes %v; the model %d codes %v", k, src, gi, got[:gi], wi, want[:wi])
		}
		// The model from readRice's stop on ends where the model alone does.
		ri, rp := readRiceModel(padded, got[gi:], k, gp, end)
		if gi+ri != wi || rp != wp || !slices.Equal(got[:wi], want[:wi]) {
			t.Fatalf("k %d, %x: readRice to code %d at bit %d, then the model to %d at bit %d; the model alone to %d at bit %d", k, src, gi, gp, gi+ri, rp, wi, wp)
		}
		// A valid stream of codes of at most 56 bits (orders below 32)
		// is read by readRice but for its last bytes, where the buffer's
		// refill would load past the padding.
		if whole && k+riceMaxQ <= 56 && gi < n && gp+128 < end {
			t.Fatalf("k %d, %x: readRice stops at code %d of %d, bit %d of %d", k, src, gi, n, gp, end)
		}
	}
	for range 3000 {
		k := uint(rng.IntN(maxGolombOrder + 1))
		n := 1 + rng.IntN(200)
		xs := make([]int64, n)
		maxQ := int64(riceMaxQ) // a quotient a valid stream may hold …
		if rng.IntN(2) == 0 {
			k = uint(rng.IntN(riceTableMaxK + 2))
			maxQ = 1 + rng.Int64N(6) // … or, as data near their Rice order have, short ones (riceTables)
		}
		for i := range xs {
			u := uint64(rng.Int64N(maxQ))<<k | rng.Uint64()&(1<<k-1)
			xs[i] = unzigzag(u)
		}
		src := appendRice(nil, xs, int(k))
		want := make([]int64, n)
		if i, _ := readRiceModel(append(slices.Clone(src), make([]byte, 8)...), want, k, 0, uint(len(src))*8); i != n || !slices.Equal(want, xs) {
			t.Fatalf("k %d: the model reads %d of %d codes written: %v, want %v", k, i, n, want[:3], xs[:3])
		}
		check(src, k, n, true)
		for range 4 {
			check(src[:rng.IntN(len(src)+1)], k, n, false)
			flipped := slices.Clone(src)
			flipped[rng.IntN(len(flipped))] ^= 1 << rng.IntN(8)
			check(flipped, k, n, false)
		}
		junk := make([]byte, rng.IntN(64))
		for i := range junk {
			junk[i] = byte(rng.Uint32())
		}
		check(junk, k, n, false)
	}
}
