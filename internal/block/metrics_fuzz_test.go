package block

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/aerie-db/aerie/internal/fuzzbytes"
)

// edgeFloats are values a metrics codec gets wrong first.
var edgeFloats = []float64{
	0, math.Copysign(0, -1), 1, -1, 0.1, 0.3, -2.5, 1.0 / 3,
	math.Inf(1), math.Inf(-1), math.MaxFloat64, -math.MaxFloat64,
	math.SmallestNonzeroFloat64, -math.SmallestNonzeroFloat64, 0x1p-1022,
	1 << 53, 1<<53 + 2, -(1 << 63), 1 << 63, 1e22, 1e-22, 123456789.987654321,
	12345.678901, 1e300, -1e-300, math.NaN(), math.Float64frombits(0x7ff0000000000001),
	math.Float64frombits(0xfff8000000000000),
}

// fuzzReader hands out the fuzzer's bytes. Its decimals are multiples of
// unit (values in pages, say).
type fuzzReader struct {
	*fuzzbytes.Reader
	unit int64
}

// float returns a value in a style chosen by the next byte: an edge
// value, raw bits, or a decimal of up to 22 digits (style digits).
func (r *fuzzReader) float(digits int) float64 {
	switch c := r.Byte(); {
	case c < 40:
		return edgeFloats[int(c)%len(edgeFloats)]
	case c < 60:
		return math.Float64frombits(r.Uint64())
	default:
		m := int64(r.Uint64()>>(11+c%50)) - int64(r.Byte())<<8
		return toDecimal(m*r.unit, digits)
	}
}

// fuzzMetrics builds metrics from b: arbitrary fields, or fields computed
// by add from arbitrary samples, in sorted or arbitrary interval order.
func fuzzMetrics(b []byte) (ms []IntervalMetrics, base int64) {
	r := &fuzzReader{Reader: fuzzbytes.NewReader(b), unit: 1}
	n := int(r.Byte())
	if n&0x80 != 0 {
		n = n<<2 + int(r.Byte()) // up to ~600: several column blocks
	}
	n &= 0x3ff
	style := r.Byte()
	digits := int(style>>3) % (maxDigits + 1)
	if style&4 != 0 {
		r.unit = 1 << (r.Byte() % 13)
	}
	base = int64(r.Uint64())
	iv := base + int64(int8(r.Byte()))
	for range n {
		var m IntervalMetrics
		switch gap := r.Byte(); {
		case gap < 200:
			iv++
		case gap < 250:
			iv += int64(gap)
		default:
			iv = int64(r.Uint64())
		}
		m.Interval = iv
		if style&1 == 0 {
			k := int(r.Byte()%7) + 1
			for j := range k {
				m.add(int64(j), r.float(digits))
			}
			if style&2 != 0 {
				m.Count = uint64(r.Byte()) // a count that does not match
			}
		} else {
			m.Count = uint64(r.Byte())
			if m.Count == 255 {
				m.Count = r.Uint64()
			}
			m.First, m.Last, m.Min, m.Max = r.float(digits), r.float(digits), r.float(digits), r.float(digits)
			m.Sum, m.SumSq = r.float(digits), r.float(2*digits%(maxDigits+1))
		}
		// Clear the writer-only state: decoded metrics have none.
		ms = append(ms, IntervalMetrics{Interval: m.Interval, Count: m.Count, Min: m.Min, Max: m.Max,
			Sum: m.Sum, SumSq: m.SumSq, First: m.First, Last: m.Last})
	}
	return ms, base
}

// FuzzMetricsCodec checks invariant 8: metrics built from the fuzzer's
// bytes round-trip bit for bit and encode the same way twice; the bytes
// themselves, fed to the decoder, give a *CorruptionError within them or
// metrics that round-trip too.
func FuzzMetricsCodec(f *testing.F) {
	for _, seed := range metricsSeeds(f) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		ms, base := fuzzMetrics(b)
		enc := roundTrip(t, ms, base)
		if again := AppendMetrics(nil, ms, base); !bytes.Equal(enc, again) {
			t.Fatalf("encoding is not deterministic:\n%x\n%x", enc, again)
		}

		got, n, err := DecodeMetrics(nil, b, 7)
		if err != nil {
			var ce *CorruptionError
			if !errors.As(err, &ce) {
				t.Fatalf("decode error %v is not a *CorruptionError", err)
			}
			if ce.Offset < 0 || ce.Offset > int64(len(b)) {
				t.Fatalf("error offset %d outside the %d bytes", ce.Offset, len(b))
			}
			return
		}
		if n <= 0 || n > len(b) {
			t.Fatalf("decoded %d of %d bytes", n, len(b))
		}
		roundTrip(t, got, 7)
	})
}

// metricsSeeds returns the seeds of FuzzMetricsCodec: inputs of
// fuzzMetrics in each style, and valid encodings (for the decoder).
func metricsSeeds(t testing.TB) [][]byte {
	var seeds [][]byte
	for style := range 8 {
		for _, n := range []byte{1, 2, 3, 9, 0x81} {
			b := []byte{n, byte(style | 2<<3), 1, 2, 3, 4, 5, 6, 7, 8, 0}
			for i := range 200 {
				b = append(b, byte(i*37+style), byte(i*11+60), byte(i), byte(200+i%3))
			}
			seeds = append(seeds, b)
		}
	}
	for _, spec := range sensorSpecs {
		ms := sensorMetrics(spec, 30)
		seeds = append(seeds, AppendMetrics(nil, ms, 7))
	}
	seeds = append(seeds, AppendMetrics(nil, []IntervalMetrics{{Interval: 8, Count: 1, Min: math.Copysign(0, -1), Max: 1, First: 0.5, Last: 1.0 / 3, Sum: math.Inf(1), SumSq: math.NaN()}}, 7))
	return seeds
}

// TestWriteMetricsSeeds writes the seed corpus of FuzzMetricsCodec under
// testdata/fuzz with -update, and checks it is there.
func TestWriteMetricsSeeds(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzMetricsCodec")
	if *update {
		if testing.Short() {
			t.Fatal("-update needs the full seeds: run without -short")
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for i, s := range metricsSeeds(t) {
			body := fmt.Appendf(nil, "go test fuzz v1\n[]byte(%q)\n", s)
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("seed-%02d", i)), body, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	m, err := filepath.Glob(filepath.Join(dir, "seed-*"))
	if err != nil || len(m) == 0 {
		t.Fatalf("no seed corpus in %s (%v): run go test -run TestWriteMetricsSeeds -update", dir, err)
	}
}
