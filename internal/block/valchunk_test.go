package block

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/aerie-db/aerie/internal/fuzzbytes"
)

// staleNaN is Prometheus' stale marker.
var staleNaN = math.Float64frombits(0x7ff0000000000002)

// valueCase is a column of rows built by gen.
type valueCase struct {
	name string
	rows int
	gen  func(i int, rng *rand.Rand) (float64, bool)
	kind byte // the kind every full chunk must take; 0xff: any
}

func valueCases() []valueCase {
	all := func(f func(i int, rng *rand.Rand) float64) func(int, *rand.Rand) (float64, bool) {
		return func(i int, rng *rand.Rand) (float64, bool) { return f(i, rng), true }
	}
	return []valueCase{
		{"const", 600, all(func(int, *rand.Rand) float64 { return 42.5 }), chunkConst},
		{"const NaN payload", 300, all(func(int, *rand.Rand) float64 { return math.Float64frombits(0x7ff8000000000123) }), chunkConst},
		{"one row", 1, all(func(int, *rand.Rand) float64 { return 3 }), chunkConst},
		{"counter", 700, all(func(i int, _ *rand.Rand) float64 { return float64(1_000_000 + 10*i) }), chunkDecimal},
		{"counter, jitter", 700, all(func(i int, rng *rand.Rand) float64 { return float64(1e9 + 1000*i + rng.IntN(7)) }), chunkDecimal},
		{"pages", 513, all(func(_ int, rng *rand.Rand) float64 { return float64(4096 * (1e6 + rng.IntN(1000))) }), chunkDecimal},
		{"cpu seconds", 512, all(func(i int, rng *rand.Rand) float64 { return float64(123456+i*97+rng.IntN(5)) / 100 }), chunkDecimal},
		{"percent random walk", 257, func() func(int, *rand.Rand) (float64, bool) {
			x := 50
			return func(_ int, rng *rand.Rand) (float64, bool) { x += rng.IntN(11) - 5; return float64(x), true }
		}(), chunkDecimal},
		{"tsbs walk", 1000, func() func(int, *rand.Rand) (float64, bool) {
			x := 50.0 // TSBS' clamped random walk, truncated
			return func(_ int, rng *rand.Rand) (float64, bool) {
				x = min(100, max(0, x+rng.NormFloat64()))
				return math.Trunc(x), true
			}
		}(), chunkDecimal},
		{"min int run", 300, all(func(i int, _ *rand.Rand) float64 { return []float64{-(1 << 63), 0}[i%2] }), 0xff},
		{"big integers", 300, all(func(i int, _ *rand.Rand) float64 { return float64(int64(1)<<60 + int64(i)<<12) }), chunkDecimal},
		{"min int", 3, all(func(i int, _ *rand.Rand) float64 { return []float64{-(1 << 63), 1 << 62, 0}[i] }), 0xff},
		{"real floats", 400, all(func(_ int, rng *rand.Rand) float64 { return rng.Float64() }), chunkXOR},
		{"stale marker", 300, all(func(i int, _ *rand.Rand) float64 {
			if i == 299 {
				return staleNaN
			}
			return float64(i)
		}), 0xff},
		{"edges", len(edgeFloats) * 3, all(func(i int, _ *rand.Rand) float64 { return edgeFloats[i%len(edgeFloats)] }), 0xff},
		{"negative zero", 10, all(func(int, *rand.Rand) float64 { return math.Copysign(0, -1) }), chunkConst},
		{"zero and negative zero", 10, all(func(i int, _ *rand.Rand) float64 { return math.Copysign(0, float64(i%2)-0.5) }), chunkXOR},
		{"absent", 300, func(int, *rand.Rand) (float64, bool) { return 0, false }, chunkEmpty},
		{"starts late", 600, func(i int, _ *rand.Rand) (float64, bool) { return float64(i), i >= 300 }, 0xff},
		{"every third", 600, func(i int, _ *rand.Rand) (float64, bool) { return float64(i) / 10, i%3 == 0 }, 0xff},
		{"random presence", 777, func(i int, rng *rand.Rand) (float64, bool) { return float64(i), rng.IntN(2) == 0 }, 0xff},
	}
}

func (tc valueCase) build(seed uint64) ([]float64, []bool) {
	rng := rand.New(rand.NewPCG(seed, 7))
	vals, pres := make([]float64, tc.rows), make([]bool, tc.rows)
	for i := range vals {
		vals[i], pres[i] = tc.gen(i, rng)
		if !pres[i] {
			vals[i] = 0
		}
	}
	return vals, pres
}

// checkRoundTrip encodes a column, decodes it and compares bit for bit.
func checkRoundTrip(t *testing.T, vals []float64, pres []bool) ([]byte, chunkMeta) {
	t.Helper()
	e := valueEncoder{rice: true}
	data, m := e.appendColumn(nil, vals, pres)
	if again, _ := e.appendColumn(nil, vals, pres); !bytes.Equal(data, again) {
		t.Fatal("encoding is not deterministic")
	}
	var mb []byte
	mb = appendChunkMeta(mb, &m)
	d := &decbuf{b: mb}
	m2 := d.chunkMeta(len(vals), nil)
	if d.err != nil || d.pos != len(mb) || m2.sparse != m.sparse {
		t.Fatalf("meta does not round-trip: %v", d.err)
	}
	got, gotPres, err := decodeColumn(&m2, data, len(vals))
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	for i := range vals {
		if gotPres[i] != pres[i] || pres[i] && math.Float64bits(got[i]) != math.Float64bits(vals[i]) || !pres[i] && got[i] != 0 {
			t.Fatalf("row %d: got %v (%x, present %v), want %v (%x, present %v)", i, got[i], math.Float64bits(got[i]), gotPres[i], vals[i], math.Float64bits(vals[i]), pres[i])
		}
	}
	return data, m
}

func TestValueColumnRoundTrip(t *testing.T) {
	for _, tc := range valueCases() {
		t.Run(tc.name, func(t *testing.T) {
			vals, pres := tc.build(1)
			data, m := checkRoundTrip(t, vals, pres)
			if tc.kind == 0xff {
				return
			}
			for ci := range m.ends {
				if ci == len(m.ends)-1 && tc.rows%ChunkRows != 0 && tc.rows > ChunkRows {
					continue // a short last chunk may code otherwise
				}
				off, _ := m.chunkRange(ci, ci)
				if got := data[off] & 7; got != tc.kind {
					t.Errorf("chunk %d is of kind %d, want %d", ci, got, tc.kind)
				}
			}
		})
	}
}

// TestValueColumnSize holds the codec to the sizes it exists for: a
// constant or exact-step counter costs almost nothing, an integer random
// walk a few bits a sample.
func TestValueColumnSize(t *testing.T) {
	for _, tc := range []struct {
		name string
		max  float64 // bytes a sample
	}{{"const", 0.06}, {"counter", 0.05}, {"percent random walk", 0.6}, {"tsbs walk", 0.36}, {"cpu seconds", 0.6}, {"pages", 1.5}} {
		for _, vc := range valueCases() {
			if vc.name != tc.name {
				continue
			}
			vals, pres := vc.build(1)
			data, m := checkRoundTrip(t, vals, pres)
			size := float64(len(data)+len(appendChunkMeta(nil, &m))) / float64(len(vals))
			var v2 valueEncoder // data version 2: no Rice codes
			d2, m2 := v2.appendColumn(nil, vals, pres)
			size2 := float64(len(d2)+len(appendChunkMeta(nil, &m2))) / float64(len(vals))
			t.Logf("%s: %.3f B a sample (data version 2: %.3f)", tc.name, size, size2)
			if tc.name == "tsbs walk" {
				// A random walk's steps are light-tailed: Rice codes.
				if size >= size2 {
					t.Errorf("tsbs walk: %.3f B a sample with Rice codes, %.3f without", size, size2)
				}
				// A data version 2 decoder refuses them.
				old := valueDecoder{}
				if _, _, err := old.appendColumn(nil, nil, &m, data, len(vals)); err == nil {
					t.Errorf("tsbs walk: Rice codes decoded as data version 2")
				}
			}
			if size > tc.max {
				t.Errorf("%s: %.3f B a sample, want ≤ %.3f", tc.name, size, tc.max)
			}
		}
	}
}

// TestValueChunkCorrupt changes every byte of valid columns and truncates
// them: decoding returns a *CorruptionError inside the chunk or values
// that the codec could have written, never panics.
func TestValueChunkCorrupt(t *testing.T) {
	for _, tc := range valueCases() {
		vals, pres := tc.build(3)
		e := valueEncoder{rice: true}
		data, m := e.appendColumn(nil, vals, pres)
		off, end := m.chunkRange(0, 0)
		chunk := data[off:end]
		rows := min(ChunkRows, tc.rows)
		dec := valueDecoder{rice: true}
		for i := range chunk {
			for _, x := range []byte{0x01, 0x80, 0xff} {
				b := bytes.Clone(chunk)
				b[i] ^= x
				checkDecodeErr(t, &dec, b, rows)
			}
			checkDecodeErr(t, &dec, chunk[:i], rows)
		}
	}
}

func checkDecodeErr(t *testing.T, dec *valueDecoder, b []byte, rows int) {
	t.Helper()
	err := dec.decode(b, rows, 1000)
	if err == nil {
		return
	}
	var ce *CorruptionError
	if !errors.As(err, &ce) {
		t.Fatalf("error %v is not a *CorruptionError", err)
	}
	if ce.Offset < 1000 || ce.Offset > 1000+int64(len(b)) {
		t.Fatalf("error offset %d outside the chunk [1000, %d]: %v", ce.Offset, 1000+len(b), err)
	}
}

// FuzzValueColumn encodes columns built from the fuzzer's bytes (values in
// the styles of the metrics fuzzer, runs of repeats, steps and absent rows)
// and decodes them bit for bit, and decodes the raw bytes as a chunk.
func FuzzValueColumn(f *testing.F) {
	for _, tc := range valueCases() {
		vals, pres := tc.build(1)
		e := valueEncoder{rice: true}
		data, _ := e.appendColumn(nil, vals[:min(len(vals), ChunkRows)], pres[:min(len(pres), ChunkRows)])
		f.Add(data)
	}
	f.Add([]byte{0, 1, 2, 3, 100, 200, 255, 60, 61, 62})
	f.Fuzz(func(t *testing.T, b []byte) {
		dec := valueDecoder{rice: true}
		for _, rows := range []int{1, 7, 100, ChunkRows} {
			checkDecodeErr(t, &dec, b, rows)
		}
		r := &fuzzReader{Reader: fuzzbytes.NewReader(b), unit: 1}
		rows := 1 + int(r.Byte())*3
		digits := int(r.Byte()) % (maxDigits + 1)
		vals, pres := make([]float64, rows), make([]bool, rows)
		v := 0.0
		for i := range rows {
			switch c := r.Byte(); {
			case c < 30:
				pres[i] = false
				continue
			case c < 120: // repeat
			case c < 200:
				v = toDecimal(int64(i)*int64(c), digits)
			default:
				v = r.float(digits)
			}
			vals[i], pres[i] = v, true
		}
		checkRoundTrip(t, vals, pres)
	})
}

// BenchmarkValueColumnDecode decodes real-shaped columns a chunk at a time.
func BenchmarkValueColumnDecode(b *testing.B) {
	for _, tc := range valueCases() {
		if tc.rows < ChunkRows {
			continue
		}
		vals, pres := tc.build(1)
		e := valueEncoder{rice: true}
		data, m := e.appendColumn(nil, vals, pres)
		b.Run(tc.name, func(b *testing.B) {
			dec := valueDecoder{rice: true}
			for b.Loop() {
				for ci := range m.ends {
					off, end := m.chunkRange(ci, ci)
					if err := dec.decode(data[off:end], min(ChunkRows, tc.rows-ci*ChunkRows), off); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(tc.rows)*float64(b.N)/b.Elapsed().Seconds()/1e6, "Msamples/s")
			b.ReportMetric(float64(len(data))/float64(tc.rows), "B/sample")
		})
	}
}

// BenchmarkValueColumnEncode encodes real-shaped columns, as a flush
// does.
func BenchmarkValueColumnEncode(b *testing.B) {
	for _, tc := range valueCases() {
		if tc.rows < ChunkRows {
			continue
		}
		vals, pres := tc.build(1)
		b.Run(tc.name, func(b *testing.B) {
			e := valueEncoder{rice: true}
			var buf []byte
			for b.Loop() {
				buf, _ = e.appendColumn(buf[:0], vals, pres)
			}
			b.ReportMetric(b.Elapsed().Seconds()*1e9/float64(b.N)/float64(tc.rows), "ns/sample")
		})
	}
}

// TestDivisor checks exact division by shifts and multiplications against
// Go's division, for both signs and the extremes.
func TestDivisor(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, g := range []uint64{1, 2, 3, 7, 10, 12, 4096, 1000, 1 << 31, 3 << 29, maxUnit} {
		d := newDivisor(g)
		for range 2000 {
			q := rng.Int64N(math.MaxInt64/int64(g)) * (1 - 2*rng.Int64N(2))
			x := q * int64(g)
			if !d.divides(absU(x)) || d.quo(x) != q {
				t.Fatalf("g %d: %d = %d·g: divides %v, quo %d", g, x, q, d.divides(absU(x)), d.quo(x))
			}
			if y := x + 1 + rng.Int64N(int64(g)-1+1)%max(int64(g)-1, 1); g > 1 && y%int64(g) != 0 && d.divides(absU(y)) {
				t.Fatalf("g %d: %d is not a multiple, divides says it is", g, y)
			}
		}
		if !d.divides(0) || d.quo(0) != 0 {
			t.Fatalf("g %d: 0", g)
		}
	}
}
