package encoding

import (
	"math"
	"testing"
)

// The bit-at-a-time XOR decoder that readXOR replaced, kept as the model
// readXOR must agree with on every input: same values, same error reason,
// same position in the stream and same sticky failure.

type refBitReader struct {
	src  []byte
	pos  int
	acc  uint64
	n    uint
	fail bool
}

func (r *refBitReader) readBits(n uint) uint64 {
	if n > 32 {
		hi := r.readBits(n - 32)
		return hi<<32 | r.readBits(32)
	}
	if n == 0 {
		return 0
	}
	for r.n <= 56 && r.pos < len(r.src) {
		r.acc |= uint64(r.src[r.pos]) << (56 - r.n)
		r.pos++
		r.n += 8
	}
	if r.n < n {
		r.fail, r.n, r.acc = true, 0, 0
		return 0
	}
	v := r.acc >> (64 - n)
	r.acc <<= n
	r.n -= n
	return v
}

func (r *refBitReader) bitPos() int { return r.pos*8 - int(r.n) }

func readXORRef(r *refBitReader, dst []float64, ref uint64) string {
	var lz, l uint
	for i := range dst {
		if r.readBits(1) == 1 {
			if r.readBits(1) == 1 {
				hdr := uint(r.readBits(11))
				lz, l = hdr>>6, hdr&63
				if l == 0 {
					l = 64
				}
				if lz+l > 64 {
					return "significant-bits window exceeds 64 bits"
				}
			} else if l == 0 {
				return "case 2 before any window was set"
			}
			ref ^= r.readBits(l) << (64 - lz - l)
		}
		if r.fail {
			return ""
		}
		dst[i] = math.Float64frombits(ref)
	}
	return ""
}

// checkAgainstRef decodes n values from src with readXOR and with the
// model and fails on any difference.
func checkAgainstRef(t *testing.T, src []byte, ref uint64, n int) {
	t.Helper()
	got, want := make([]float64, n), make([]float64, n)
	r := newBitReader(src)
	m := refBitReader{src: src}
	gotReason, wantReason := readXOR(&r, got, ref), readXORRef(&m, want, ref)
	if gotReason != wantReason || r.fail != m.fail || r.bitPos() != m.bitPos() {
		t.Fatalf("src %x, %d values: reason %q fail %v at bit %d, model %q %v at bit %d",
			src, n, gotReason, r.fail, r.bitPos(), wantReason, m.fail, m.bitPos())
	}
	if gotReason == "" && !r.fail && !sameBits(got, want) {
		t.Fatalf("src %x, %d values: got %v, model %v", src, n, got, want)
	}
}

// TestReadXORMatchesModel runs readXOR against the model on encoded
// tuples, their truncations and bit flips, and on random bytes.
func TestReadXORMatchesModel(t *testing.T) {
	r := newRand(23)
	for range 2000 {
		vals := make([]float64, 1+r.IntN(40))
		for i := range vals {
			switch r.IntN(5) {
			case 0:
				vals[i] = specialFloats[r.IntN(len(specialFloats))]
			case 1:
				vals[i] = math.Float64frombits(r.Uint64())
			case 2, 3:
				if i > 0 {
					vals[i] = vals[i-1]
				}
			default:
				vals[i] = float64(r.IntN(1000)) / 10
			}
		}
		base := math.Float64frombits(r.Uint64())
		enc := AppendValueTuple(nil, base, vals)
		checkAgainstRef(t, enc, math.Float64bits(base), len(vals))
		checkAgainstRef(t, append(enc, 0xff, 0x00, 0xaa), math.Float64bits(base), len(vals)+r.IntN(30))
		checkAgainstRef(t, enc[:r.IntN(len(enc)+1)], math.Float64bits(base), len(vals))
		flipped := append([]byte(nil), enc...)
		flipped[r.IntN(len(flipped))] ^= 1 << r.IntN(8)
		checkAgainstRef(t, flipped, math.Float64bits(base), len(vals))
		random := make([]byte, r.IntN(40))
		for i := range random {
			random[i] = byte(r.Uint32())
		}
		checkAgainstRef(t, random, r.Uint64(), 1+r.IntN(MaxTupleSize))
	}
}

// FuzzReadXOR: readXOR agrees with the model on arbitrary bytes. Run with
// go test -fuzz=FuzzReadXOR -fuzztime=60s ./internal/encoding/
func FuzzReadXOR(f *testing.F) {
	f.Add([]byte{0})
	f.Add(append([]byte{7}, AppendValueTuple(nil, 1, []float64{1, 2, 3, math.NaN(), 4, 4, 4, 5})...))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		checkAgainstRef(t, data[1:], 0x3ff8000000000000, 1+int(data[0]))
	})
}
