package encoding

import (
	"bytes"
	"math"
	"slices"
	"testing"

	"github.com/aerie-db/aerie/internal/fuzzbytes"
)

// Fuzz targets: (a) round trip of samples derived from the fuzz bytes,
// (b) deterministic encoding, (c) decoders fed the raw fuzz bytes must
// return an error or a consistent result, never panic. Seed corpora live in
// testdata/fuzz/FuzzX/. Run each with: go test -fuzz=FuzzX -fuzztime=10s

// timestampsFrom derives a strictly increasing sequence: a raw start, then
// deltas from one control byte each — small, jittered, or raw 64-bit.
func timestampsFrom(s *fuzzbytes.Reader, limit int) []int64 {
	t := int64(s.Uint64())
	ts := []int64{t}
	for !s.Empty() && len(ts) < limit {
		c := s.Byte()
		var d uint64
		switch c >> 6 {
		case 0:
			d = 1000
		case 1:
			d = 1000 + uint64(c&63) - 32
		case 2:
			d = uint64(c&63) + 1
		default:
			d = s.Uint64() | 1
		}
		if d > uint64(math.MaxInt64)-uint64(t) {
			break
		}
		t = int64(uint64(t) + d)
		ts = append(ts, t)
	}
	return ts
}

// valuesFrom derives float64 values: repeats, small XOR changes, counters,
// special values and raw bit patterns, chosen by one control byte each.
func valuesFrom(s *fuzzbytes.Reader, limit int) []float64 {
	var vals []float64
	prev := uint64(0)
	for !s.Empty() && len(vals) < limit {
		c := s.Byte()
		switch c % 5 {
		case 0: // repeat
		case 1:
			prev ^= uint64(s.Byte()) << (c % 57)
		case 2:
			prev = math.Float64bits(math.Float64frombits(prev) + float64(c))
		case 3:
			prev = math.Float64bits(specialFloats[int(c)%len(specialFloats)])
		default:
			prev = s.Uint64()
		}
		vals = append(vals, math.Float64frombits(prev))
	}
	return vals
}

func sameBits(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			return false
		}
	}
	return true
}

func FuzzTimeTuple(f *testing.F) {
	f.Add([]byte{})
	f.Add(AppendTimeTuple(nil, []int64{1795297874652, 1795297875652, 1795297876652}))
	f.Fuzz(func(t *testing.T, data []byte) {
		// (c) arbitrary bytes.
		if len(data) > 0 {
			got, n, err := DecodeTimeTuple(nil, data[1:], 1+int(data[0]))
			if err == nil {
				again, m, err := DecodeTimeTuple(nil, AppendTimeTuple(nil, got), len(got))
				if err != nil || m > n || !slices.Equal(got, again) {
					t.Fatalf("re-encoding decoded %v: %v %v (%d > %d?)", got, again, err, m, n)
				}
			}
		}
		// (a), (b).
		ts := timestampsFrom(fuzzbytes.NewReader(data), 1000)
		b := AppendTimeTuple(nil, ts)
		if !bytes.Equal(b, AppendTimeTuple(nil, ts)) {
			t.Fatal("non-deterministic")
		}
		got, n, err := DecodeTimeTuple(nil, b, len(ts))
		if err != nil || n != len(b) || !slices.Equal(ts, got) {
			t.Fatalf("round trip %v: got %v, %d of %d bytes, %v", ts, got, n, len(b), err)
		}
	})
}

func FuzzValueTuple(f *testing.F) {
	f.Add([]byte{})
	f.Add(AppendValueTuple(nil, 1, []float64{1, 2, 3, math.NaN()}))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 0 {
			got, n, err := DecodeValueTuple(nil, data[1:], 1.5, 1+int(data[0]))
			if err == nil && (len(got) != 1+int(data[0]) || n > len(data)-1) {
				t.Fatalf("decoded %d values from %d bytes, consumed %d", len(got), len(data)-1, n)
			}
		}
		s := fuzzbytes.NewReader(data)
		base := math.Float64frombits(s.Uint64())
		vals := valuesFrom(s, MaxTupleSize)
		if len(vals) == 0 {
			return
		}
		b := AppendValueTuple(nil, base, vals)
		if !bytes.Equal(b, AppendValueTuple(nil, base, vals)) {
			t.Fatal("non-deterministic")
		}
		if want := (ValueTupleBits(base, vals) + 7) / 8; len(b) != want {
			t.Fatalf("wrote %d bytes, plan says %d", len(b), want)
		}
		var p xorPlan
		xs := valueXORs(make([]uint64, len(vals)), math.Float64bits(base), vals)
		if g := planGreedy(xs, &p); ValueTupleBits(base, vals) > g {
			t.Fatalf("plan %d bits worse than greedy %d", ValueTupleBits(base, vals), g)
		}
		got, n, err := DecodeValueTuple(nil, b, base, len(vals))
		if err != nil || n != len(b) || !sameBits(vals, got) {
			t.Fatalf("round trip %v: got %v, %d of %d bytes, %v", vals, got, n, len(b), err)
		}
	})
}

func FuzzScaledTimestamps(f *testing.F) {
	f.Add([]byte{})
	f.Add(AppendScaledTimestamps(nil, []int64{1000, 2001, 2999, 4000}))
	f.Fuzz(func(t *testing.T, data []byte) {
		if s, n, err := ParseScaledTimestamps(data); err == nil {
			if n > len(data) {
				t.Fatalf("consumed %d of %d bytes", n, len(data))
			}
			valid := s.Validate() == nil
			for _, i := range []int{0, s.Len() / 2, s.Len() - 1} {
				at := s.At(i)
				if valid && s.Search(at) != i {
					t.Fatalf("Search(At(%d)) = %d", i, s.Search(at))
				}
			}
			if valid && s.Len() <= 1<<16 {
				all := s.AppendAll(nil)
				back, _, err := ParseScaledTimestamps(AppendScaledTimestamps(nil, all))
				if err != nil || back.Validate() != nil || !slices.Equal(all, back.AppendAll(nil)) {
					t.Fatalf("re-encoding %v failed: %v", all, err)
				}
			}
		}
		ts := timestampsFrom(fuzzbytes.NewReader(data), 2000)
		b := AppendScaledTimestamps(nil, ts)
		if !bytes.Equal(b, AppendScaledTimestamps(nil, ts)) {
			t.Fatal("non-deterministic")
		}
		s, n, err := ParseScaledTimestamps(b)
		if err != nil || n != len(b) || s.Validate() != nil || !slices.Equal(ts, s.AppendAll(nil)) {
			t.Fatalf("round trip %v: %d of %d bytes, %v", ts, n, len(b), err)
		}
		for i, x := range ts {
			if s.Search(x) != i || (i > 0 && ts[i-1]+1 < x && s.Search(x-1) != i) {
				t.Fatalf("Search around ts[%d] = %d", i, x)
			}
		}
	})
}

func FuzzColumn(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{8, 10, 0xff, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12})
	f.Fuzz(func(t *testing.T, data []byte) {
		// (c) a meta followed by data, both arbitrary.
		if m, n, err := DecodeColumnMeta(data); err == nil {
			if m.Flags&ColumnConst == 0 || m.Rows <= 1<<16 {
				vals, pres, err := DecodeColumn(nil, nil, &m, data[n:])
				if err == nil && (len(vals) != int(m.Rows) || len(pres) != int(m.Rows)) {
					t.Fatalf("decoded %d values for %d rows", len(vals), m.Rows)
				}
			}
			if nt := m.NumTuples(); nt > 0 {
				off, end := m.TupleRange(nt-1, nt-1)
				if off < 0 || end < off || end != m.DataLen() {
					t.Fatalf("bad range %d..%d, DataLen %d", off, end, m.DataLen())
				}
				tuple := data[n:]
				if int64(len(tuple)) > end-off {
					tuple = tuple[:end-off]
				}
				_, _, _ = DecodeColumnTuple(nil, nil, &m, tuple, nt-1)
			}
		}
		// (a), (b).
		s := fuzzbytes.NewReader(data)
		tupleSize := 1 + int(s.Byte())%MaxTupleSize
		blockTuples := 1 + int(s.Byte())%16
		presMode := s.Byte()
		vals := valuesFrom(s, 600)
		var present []bool
		if presMode&1 == 1 {
			present = make([]bool, len(vals))
			for i := range present {
				present[i] = (presMode>>(1+i%7))&1 == 1 || i%5 == 0
			}
		}
		b, m := AppendColumn(nil, vals, present, tupleSize, blockTuples)
		b2, m2 := AppendColumn(nil, vals, present, tupleSize, blockTuples)
		if !bytes.Equal(b, b2) || !bytes.Equal(AppendColumnMeta(nil, &m), AppendColumnMeta(nil, &m2)) {
			t.Fatal("non-deterministic")
		}
		if int64(len(b)) != m.DataLen() {
			t.Fatalf("data %d bytes, meta says %d", len(b), m.DataLen())
		}
		mb := AppendColumnMeta(nil, &m)
		dm, n, err := DecodeColumnMeta(mb)
		if err != nil || n != len(mb) {
			t.Fatalf("meta round trip: %v", err)
		}
		got, gotPres, err := DecodeColumn(nil, nil, &dm, b)
		if err != nil || len(got) != len(vals) {
			t.Fatalf("column round trip: %v", err)
		}
		for i := range vals {
			p := present == nil || present[i]
			want := vals[i]
			if !p {
				want = 0
			}
			if gotPres[i] != p || math.Float64bits(got[i]) != math.Float64bits(want) {
				t.Fatalf("row %d: got %v/%v want %v/%v", i, got[i], gotPres[i], want, p)
			}
		}
	})
}

func FuzzColumnMeta(f *testing.F) {
	f.Add([]byte{})
	_, m := AppendColumn(nil, counter(100, 0, 1), nil, 8, 3)
	f.Add(AppendColumnMeta(nil, &m))
	f.Fuzz(func(t *testing.T, data []byte) {
		// (c) arbitrary bytes; a decoded meta re-encodes to what was read,
		// apart from non-canonical uvarints.
		if m, n, err := DecodeColumnMeta(data); err == nil {
			enc := AppendColumnMeta(nil, &m)
			again, n2, err := DecodeColumnMeta(enc)
			if err != nil || n2 != len(enc) || len(enc) > n || !metaEqual(m, again) {
				t.Fatalf("re-decoding %+v: %+v %v", m, again, err)
			}
			for i := range min(m.NumTuples(), 64) {
				if off, end := m.TupleRange(i, i); off < 0 || end < off || end > m.DataLen() {
					t.Fatalf("tuple %d range %d..%d beyond %d", i, off, end, m.DataLen())
				}
			}
		}
		// (a), (b): a meta built from the bytes.
		s := fuzzbytes.NewReader(data)
		m := ColumnMeta{
			Flags:       s.Byte() % 3,
			Rows:        uint32(s.Uint64() % (1 << 16)),
			TupleSize:   1 + s.Byte()%MaxTupleSize,
			BlockTuples: 1 + s.Byte()%MaxTupleSize,
			Bases:       [2]uint64{s.Uint64(), s.Uint64()},
		}
		if m.Flags&ColumnConst != 0 {
			m.Bases[1] = m.Bases[0]
		} else {
			maxW := maxTupleWidth(int(m.TupleSize))
			for range m.NumBlocks() {
				m.Widths = append(m.Widths, uint16((int(s.Byte())<<4|int(s.Byte()))%(maxW+1)))
			}
		}
		enc := AppendColumnMeta(nil, &m)
		if !bytes.Equal(enc, AppendColumnMeta(nil, &m)) {
			t.Fatal("non-deterministic")
		}
		got, n, err := DecodeColumnMeta(enc)
		if err != nil || n != len(enc) || !metaEqual(m, got) {
			t.Fatalf("round trip %+v: %+v %v", m, got, err)
		}
	})
}

func metaEqual(a, b ColumnMeta) bool {
	return a.Bases == b.Bases && a.Flags == b.Flags && a.Rows == b.Rows && a.TupleSize == b.TupleSize &&
		a.BlockTuples == b.BlockTuples && slices.Equal(a.Widths, b.Widths)
}
