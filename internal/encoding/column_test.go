package encoding

import (
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// checkColumn encodes a column, checks the meta's geometry, and decodes it
// whole, tuple by tuple, and through an encoded meta.
func checkColumn(t *testing.T, vals []float64, present []bool, tupleSize, blockTuples int) ColumnMeta {
	t.Helper()
	data, m := AppendColumn([]byte{0xcc}, vals, present, tupleSize, blockTuples)
	require.Equal(t, byte(0xcc), data[0])
	data = data[1:]
	again, m2 := AppendColumn([]byte{}, vals, present, tupleSize, blockTuples)
	require.Equal(t, data, again, "deterministic")
	require.Equal(t, m, m2)
	require.EqualValues(t, len(data), m.DataLen())
	require.Equal(t, len(vals), int(m.Rows))
	require.Len(t, m.Widths, map[bool]int{true: 0, false: m.NumBlocks()}[m.Flags&ColumnConst != 0])

	// The expected decoding: absent rows are 0 and not present.
	wantVals := make([]float64, len(vals))
	wantPres := make([]bool, len(vals))
	sparse := false
	for i := range vals {
		if present == nil || present[i] {
			wantVals[i], wantPres[i] = vals[i], true
		} else {
			sparse = true
		}
	}
	require.Equal(t, sparse, m.Flags&ColumnSparse != 0)

	gotVals, gotPres, err := DecodeColumn([]float64{1}, []bool{false}, &m, data)
	require.NoError(t, err)
	requireSameBits(t, append([]float64{1}, wantVals...), gotVals)
	require.Equal(t, append([]bool{false}, wantPres...), gotPres)

	// Tuple by tuple through an encoded meta; ranges tile the data.
	mb := AppendColumnMeta([]byte{0xdd}, &m)
	dm, n, err := DecodeColumnMeta(append(mb[1:], 0xee))
	require.NoError(t, err)
	require.Equal(t, len(mb)-1, n)
	if m.Flags&ColumnConst != 0 || len(m.Widths) == 0 {
		require.Empty(t, dm.Widths)
		dm.Widths = m.Widths
	}
	require.Equal(t, m, dm)
	var vs []float64
	var ps []bool
	var prevEnd int64
	for i := range m.NumTuples() {
		off, end := m.TupleRange(i, i)
		require.Equal(t, prevEnd, off, "tuple %d", i)
		prevEnd = end
		vs, ps, err = DecodeColumnTuple(vs, ps, &dm, data[off:end], i)
		require.NoError(t, err, "tuple %d", i)
		require.Len(t, vs, min((i+1)*tupleSize, len(vals)))
	}
	require.Equal(t, m.DataLen(), prevEnd)
	requireSameBits(t, wantVals, vs)
	require.Equal(t, wantPres, ps)
	if nt := m.NumTuples(); nt > 0 {
		off, end := m.TupleRange(0, nt-1)
		require.Zero(t, off)
		require.Equal(t, m.DataLen(), end)
	}
	return m
}

func TestColumn(t *testing.T) {
	r := newRand(6)
	f := func(vals []float64, present []bool) {
		t.Helper()
		for _, ts := range []int{1, 4, 8, 16, 255} {
			for _, bt := range []int{1, 3, DiskBlockTuples} {
				checkColumn(t, vals, present, ts, bt)
			}
		}
	}
	f([]float64{42}, nil)           // 1 row
	f([]float64{42}, []bool{false}) // 1 absent row
	f(specialFloats, nil)           //
	f(counter(1000, 1e6, 1), nil)   // monotone counter
	f(counter(99, 0, 0.25), nil)    // short last tuple
	f(randomUnit(r, 1000), nil)     // random [0,1)
	f(gauge(r, 777), nil)           //
	f(constVals(500, math.Float64frombits(staleNaN)), nil)
	sparse := make([]bool, 300)
	for i := range sparse {
		sparse[i] = r.IntN(3) != 0
	}
	f(randomUnit(r, 300), sparse)
	f(constVals(300, 7), sparse) // sparse constant keeps its bitmaps
	f(specialFloats, []bool{true, false, true, true, false, true, false, true, true, true, true, false, true, true, true, true, true, true, true})
	allAbsent := make([]bool, 20)
	f(randomUnit(r, 20), allAbsent)
	// Present values can be anything; absent rows' values are ignored.
	noise := randomUnit(r, 300)
	m1 := checkColumn(t, noise, sparse, 8, 10)
	for i := range noise {
		if !sparse[i] {
			noise[i] = math.NaN()
		}
	}
	m2 := checkColumn(t, noise, sparse, 8, 10)
	require.Equal(t, m1, m2)
}

func TestColumnConst(t *testing.T) {
	for _, v := range []float64{0, 1, math.Float64frombits(staleNaN), math.Inf(-1), math.Copysign(0, -1)} {
		m := checkColumn(t, constVals(7200, v), nil, 8, 10)
		require.Equal(t, ColumnConst, m.Flags)
		require.Zero(t, m.DataLen())
		require.Equal(t, [2]uint64{math.Float64bits(v), math.Float64bits(v)}, m.Bases)
		require.Len(t, AppendColumnMeta(nil, &m), 1+2+2+8)
	}
	// −0 and +0 are equal floats but different bits: not constant.
	vals := constVals(16, 0)
	vals[5] = math.Copysign(0, -1)
	m := checkColumn(t, vals, nil, 8, 10)
	require.Zero(t, m.Flags)
}

func TestColumnBases(t *testing.T) {
	f := func(vals []float64, present []bool, b0, b1 float64) {
		t.Helper()
		bases, _, _ := columnBases(vals, present)
		require.Equal(t, [2]uint64{math.Float64bits(b0), math.Float64bits(b1)}, bases)
	}
	f([]float64{4, 3, 2, 1, 0, 7, 6, 5}, nil, 2, 6) // sorted[2], sorted[6]
	f([]float64{4, 3, 2, 1, 0, 7, 6, 5}, []bool{true, true, true, true, false, false, false, false}, 2, 4)
	f([]float64{math.NaN(), math.NaN(), math.NaN(), 1}, nil, math.NaN(), math.NaN()) // NaNs sort last
	f([]float64{math.NaN(), -1, math.Inf(1), math.Inf(-1)}, nil, -1, math.NaN())
	f([]float64{0, math.Copysign(0, -1), 0, 0}, nil, 0, 0)
	f([]float64{math.Copysign(0, -1), math.Copysign(0, -1), 0, 0}, nil, math.Copysign(0, -1), 0)
	nan1 := math.Float64frombits(0xfff8000000000001)
	f([]float64{nan1, math.Float64frombits(staleNaN), 5, 6}, nil, 6, nan1) // NaNs by bits: stale (0x7ff…) < 0xfff…
}

// TestColumnBothBases checks that each tuple's first value is XORed with the
// base that codes it in fewer bits — base 1 as well as base 0 — unlike
// Heracles' code, which always picks base 0.
func TestColumnBothBases(t *testing.T) {
	// Tuples alternate between a level near 1 and a level near 1000: the
	// quartiles fall into each level.
	var vals []float64
	for tu := range 20 {
		level := 1.0
		if tu%2 == 1 {
			level = 1000
		}
		for i := range 8 {
			vals = append(vals, level+float64(i%3)/8)
		}
	}
	m := checkColumn(t, vals, nil, 8, DiskBlockTuples)
	require.NotEqual(t, m.Bases[0], m.Bases[1])
	data, _ := AppendColumn(nil, vals, nil, 8, DiskBlockTuples)
	seen := map[uint64]int{}
	for i := range m.NumTuples() {
		off, end := m.TupleRange(i, i)
		r := newBitReader(data[off:end])
		ind := r.readBits(1)
		seen[ind]++
		// The chosen base is never worse than the other one.
		tuple := vals[i*8 : (i+1)*8]
		first := math.Float64bits(tuple[0])
		xs := valueXORs(make([]uint64, 8), first, tuple)
		var p xorPlan
		xs[0] = first ^ m.Bases[ind]
		chosen := planXOR(xs, &p)
		xs[0] = first ^ m.Bases[1-ind]
		require.LessOrEqual(t, chosen, planXOR(xs, &p))
	}
	require.Equal(t, map[uint64]int{0: 10, 1: 10}, seen)

	// Forcing base 0 for every tuple, as Heracles' code does, costs more.
	forced := m
	forced.Bases[1] = forced.Bases[0]
	var bits0 int
	for i := range m.NumTuples() {
		bits0 += len(appendColumnTuple(nil, vals[i*8:(i+1)*8], nil, &forced))
	}
	require.Less(t, m.DataLen(), int64(bits0))
}

func TestColumnMetaGeometry(t *testing.T) {
	m := ColumnMeta{Rows: 95, TupleSize: 4, BlockTuples: 10, Widths: []uint16{3, 5, 7}}
	require.Equal(t, 24, m.NumTuples())
	require.Equal(t, 3, m.NumBlocks())
	require.Equal(t, 3, m.TupleRows(23))
	require.Equal(t, 4, m.TupleRows(0))
	require.Zero(t, m.TupleRows(24))
	f := func(i, j int, off, end int64) {
		t.Helper()
		o, e := m.TupleRange(i, j)
		require.Equal(t, [2]int64{off, end}, [2]int64{o, e})
	}
	f(0, 0, 0, 3)
	f(9, 9, 27, 30)
	f(10, 10, 30, 35)
	f(19, 20, 75, 87)
	f(23, 23, 101, 108)
	f(0, 23, 0, 108)
	f(-1, 0, 0, 0)
	f(3, 2, 0, 0)
	f(0, 24, 0, 0)
	require.EqualValues(t, 3*10+5*10+7*4, m.DataLen())
	require.Zero(t, (&ColumnMeta{}).DataLen())
	require.Zero(t, (&ColumnMeta{Rows: 10}).NumBlocks())
}

func TestColumnArgs(t *testing.T) {
	vals := counter(20, 0, 1)
	_, m := AppendColumn(nil, vals, nil, 0, 300)
	require.EqualValues(t, DefaultTupleSize, m.TupleSize)
	require.EqualValues(t, DiskBlockTuples, m.BlockTuples)
	_, m = AppendColumn(nil, vals, []bool{true, true, true}, 4, 4)
	require.EqualValues(t, 3, m.Rows)
	data, m := AppendColumn([]byte{1}, nil, nil, 8, 10)
	require.Equal(t, []byte{1}, data)
	require.Zero(t, m.Rows)
	v, p, err := DecodeColumn(nil, nil, &m, nil)
	require.NoError(t, err)
	require.Empty(t, v)
	require.Empty(t, p)
}

func TestDecodeColumnErrors(t *testing.T) {
	vals := counter(40, 0, 1.5)
	present := make([]bool, 40)
	for i := range present {
		present[i] = i%3 != 0
	}
	data, m := AppendColumn(nil, vals, present, 8, 2)

	badMeta := func(mod func(*ColumnMeta)) {
		t.Helper()
		bm := m
		bm.Widths = append([]uint16(nil), m.Widths...)
		mod(&bm)
		_, _, err := DecodeColumn(nil, nil, &bm, data)
		require.ErrorIs(t, err, ErrArgument)
		_, _, err = DecodeColumnTuple(nil, nil, &bm, data, 0)
		require.ErrorIs(t, err, ErrArgument)
	}
	badMeta(func(m *ColumnMeta) { m.TupleSize = 0 })
	badMeta(func(m *ColumnMeta) { m.BlockTuples = 0 })
	badMeta(func(m *ColumnMeta) { m.Flags = ColumnSparse | ColumnConst })
	badMeta(func(m *ColumnMeta) { m.Flags = 4 })
	badMeta(func(m *ColumnMeta) { m.Rows = MaxRows + 1 })
	badMeta(func(m *ColumnMeta) { m.Widths = m.Widths[1:] })
	_, _, err := DecodeColumnTuple(nil, nil, &m, data, m.NumTuples())
	require.ErrorIs(t, err, ErrArgument)

	v, p, err := DecodeColumn([]float64{1}, []bool{true}, &m, data[:len(data)-1])
	require.ErrorIs(t, err, ErrCorrupt)
	require.Equal(t, []float64{1}, v)
	require.Equal(t, []bool{true}, p)
	_, _, err = DecodeColumnTuple(nil, nil, &m, nil, 0)
	require.ErrorIs(t, err, ErrCorrupt) // shorter than the bitmap
	_, _, err = DecodeColumnTuple(nil, nil, &m, []byte{0xff}, 0)
	require.ErrorIs(t, err, ErrCorrupt) // 8 values announced, no bits

	// A dense column whose first tuple claims case 2 before any window.
	dense := ColumnMeta{Rows: 8, TupleSize: 8, BlockTuples: 1, Widths: []uint16{1}}
	_, _, err = DecodeColumn(nil, nil, &dense, []byte{0b01000000})
	var de *DecodeError
	require.ErrorAs(t, err, &de)
	require.Equal(t, fmtColumn, de.Format)
}

func TestDecodeColumnMetaErrors(t *testing.T) {
	_, good := AppendColumn(nil, counter(100, 0, 1), nil, 8, 2)
	enc := AppendColumnMeta(nil, &good)
	f := func(src []byte) {
		t.Helper()
		m, n, err := DecodeColumnMeta(src)
		require.ErrorIs(t, err, ErrCorrupt)
		require.Zero(t, n)
		require.Zero(t, m.Rows)
	}
	f(nil)
	f([]byte{4})
	f([]byte{ColumnSparse | ColumnConst})
	f([]byte{0, 0x80})
	f([]byte{0, 0x80, 0x80, 0x80, 0x80, 0x10}) // rows > MaxRows
	f([]byte{0, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0})
	f([]byte{0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	for i := range enc {
		f(enc[:i]) // every truncation
	}
	// Huge row count, few bytes: rejected before allocating widths.
	huge := []byte{0, 0xff, 0xff, 0xff, 0x07, 1, 1}
	huge = append(huge, make([]byte, 16)...)
	f(huge)
	// A width larger than any tuple could be.
	wide := append([]byte(nil), enc[:len(enc)-1]...)
	wide = append(wide, 0xff, 0x7f)
	f(wide)
}

func TestNthSmallest(t *testing.T) {
	r := newRand(8)
	for _, n := range []int{1, 2, 3, 16, 17, 100, 1000, 5000} {
		for _, mode := range []string{"random", "sorted", "reversed", "few", "equal"} {
			a := make([]uint64, n)
			for i := range a {
				switch mode {
				case "random":
					a[i] = r.Uint64()
				case "sorted":
					a[i] = uint64(i)
				case "reversed":
					a[i] = uint64(n - i)
				case "few":
					a[i] = uint64(r.IntN(3))
				}
			}
			sorted := slices.Clone(a)
			slices.Sort(sorted)
			for _, k := range []int{0, n / 4, n / 2, 3 * n / 4, n - 1} {
				b := slices.Clone(a)
				require.Equal(t, sorted[k], nthSmallest(b, k), "n=%d %s k=%d", n, mode, k)
				for i := range b {
					require.True(t, (i <= k) == (b[i] <= b[k]) || b[i] == b[k], "not partitioned at %d", i)
				}
			}
		}
	}
}

// TestColumnMetaIndex: an indexed meta gives the same tuple ranges as the
// sum over blocks.
func TestColumnMetaIndex(t *testing.T) {
	m := ColumnMeta{Rows: 8 * 10 * 50, TupleSize: 8, BlockTuples: 10}
	for b := range m.NumBlocks() {
		m.Widths = append(m.Widths, uint16(3+b%17))
	}
	plain := m
	m.Index()
	require.Len(t, m.starts, m.NumBlocks()+1)
	for i := 0; i < m.NumTuples(); i++ {
		for _, j := range []int{i, min(i+13, m.NumTuples()-1)} {
			o1, e1 := plain.TupleRange(i, j)
			o2, e2 := m.TupleRange(i, j)
			require.Equal(t, [2]int64{o1, e1}, [2]int64{o2, e2}, "tuples %d..%d", i, j)
		}
	}
	require.Equal(t, plain.DataLen(), m.DataLen())
}
