package seriesiter

import (
	"math"
	"sort"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
)

// MaxRows is the largest tuple a TupleSource may return.
const MaxRows = 32

// TupleSource is a series stored as tuples of rows.
type TupleSource interface {
	// NumTuples returns the number of tuples.
	NumTuples() int
	// First returns the first timestamp of tuple k (the group's, whether or
	// not the series is present in that row). It must not decode the tuple.
	First(k int) int64
	// Load decodes tuple k into ts and vs (len ≥ MaxRows) and returns its
	// row count and the presence bits of the series' rows.
	Load(k int, ts []int64, vs []float64) (n int, present uint32, err error)
}

// Sample is one extra sample merged into the tuple stream.
type Sample struct {
	T int64
	V float64
}

// Iterator is a chunkenc.Iterator over a TupleSource plus extra samples.
type Iterator struct {
	src        TupleSource
	extra      []Sample
	mint, maxt int64

	k       int // loaded tuple, -1 if none
	n       int
	present uint32
	i       int // row index in the loaded tuple of the next candidate
	ts      [MaxRows]int64
	vs      [MaxRows]float64

	e int // next extra sample

	t   int64
	v   float64
	err error
	end bool
}

// NewIterator returns an iterator over src and extra (sorted by T) bounded
// to [mint, maxt]. it may be nil or a previous *Iterator to reuse.
func NewIterator(it chunkenc.Iterator, src TupleSource, extra []Sample, mint, maxt int64) *Iterator {
	i, ok := it.(*Iterator)
	if !ok || i == nil {
		i = &Iterator{}
	}
	*i = Iterator{src: src, extra: extra, mint: mint, maxt: maxt, k: -1}
	if src == nil {
		i.src = emptySource{}
	}
	i.t = math.MinInt64
	return i
}

// tupleCand positions on the next present tuple row with t ≥ from and
// reports it.
func (it *Iterator) tupleCand() (int64, float64, bool) {
	for {
		if it.k >= 0 {
			for ; it.i < it.n; it.i++ {
				if it.present&(1<<it.i) != 0 {
					return it.ts[it.i], it.vs[it.i], true
				}
			}
		}
		next := it.k + 1
		if next >= it.src.NumTuples() {
			it.k = it.src.NumTuples()
			it.n = 0
			return 0, 0, false
		}
		if !it.load(next) {
			return 0, 0, false
		}
	}
}

func (it *Iterator) load(k int) bool {
	n, p, err := it.src.Load(k, it.ts[:], it.vs[:])
	if err != nil {
		it.err = err
		it.k = it.src.NumTuples()
		it.n = 0
		return false
	}
	it.k, it.n, it.present, it.i = k, n, p, 0
	return true
}

// Next advances to the next sample.
func (it *Iterator) Next() chunkenc.ValueType {
	// The usual case first, without a call: the loaded tuple's next row
	// is present, in range, and no extra sample comes at or before it.
	if i := it.i; i < it.n && it.present&(1<<i) != 0 && !it.end && it.t != math.MinInt64 {
		if t := it.ts[i]; t > it.t && t <= it.maxt && (it.e >= len(it.extra) || t < it.extra[it.e].T) {
			it.t, it.v, it.i = t, it.vs[i], i+1
			return chunkenc.ValFloat
		}
	}
	if it.end || it.err != nil {
		return chunkenc.ValNone
	}
	if it.t == math.MinInt64 {
		return it.Seek(it.mint)
	}
	return it.step()
}

// step moves past the current sample.
func (it *Iterator) step() chunkenc.ValueType {
	tt, tv, tok := it.tupleCand()
	if tok && tt <= it.t {
		it.i++
		tt, tv, tok = it.tupleCand()
	}
	for it.e < len(it.extra) && it.extra[it.e].T <= it.t {
		it.e++
	}
	return it.pick(tt, tv, tok)
}

func (it *Iterator) pick(tt int64, tv float64, tok bool) chunkenc.ValueType {
	if it.err != nil {
		it.end = true
		return chunkenc.ValNone
	}
	eok := it.e < len(it.extra)
	switch {
	case tok && (!eok || tt <= it.extra[it.e].T):
		it.t, it.v = tt, tv
		if eok && it.extra[it.e].T == tt {
			it.e++
		}
		it.i++
	case eok:
		it.t, it.v = it.extra[it.e].T, it.extra[it.e].V
		it.e++
	default:
		it.end = true
		return chunkenc.ValNone
	}
	if it.t > it.maxt {
		it.end = true
		return chunkenc.ValNone
	}
	// Keep the tuple cursor on the candidate after the current sample:
	// tupleCand reads from it.i, which pick already advanced.
	return chunkenc.ValFloat
}

// Seek advances to the first sample with timestamp ≥ t.
func (it *Iterator) Seek(t int64) chunkenc.ValueType {
	if it.end || it.err != nil {
		return chunkenc.ValNone
	}
	if t < it.mint {
		t = it.mint
	}
	if it.t != math.MinInt64 && it.t >= t {
		return chunkenc.ValFloat
	}
	// Find the last tuple whose first timestamp is ≤ t, at or after the
	// loaded one, by binary search over first timestamps.
	nt := it.src.NumTuples()
	lo := it.k
	if lo < 0 {
		lo = 0
	}
	if lo < nt {
		k := lo + sort.Search(nt-lo, func(i int) bool { return it.src.First(lo+i) > t }) - 1
		if k < lo {
			k = lo
		}
		if k != it.k {
			if !it.load(k) {
				it.end = true
				return chunkenc.ValNone
			}
		}
		for it.i < it.n && it.ts[it.i] < t {
			it.i++
		}
	}
	tt, tv, tok := it.tupleCand()
	for tok && tt < t {
		it.i++
		tt, tv, tok = it.tupleCand()
	}
	it.e += sort.Search(len(it.extra)-it.e, func(i int) bool { return it.extra[it.e+i].T >= t })
	return it.pick(tt, tv, tok)
}

// AppendSamples appends the iterator's next samples to ts and vs until
// len(ts) reaches max, and reports whether samples may remain. It is Next
// and At in a loop, without a call per sample: afterwards the iterator
// stands on the last sample appended, and Next goes on from there.
func (it *Iterator) AppendSamples(ts []int64, vs []float64, max int) ([]int64, []float64, bool) {
	if len(it.extra) > 0 || it.end || it.err != nil {
		for len(ts) < max {
			if it.Next() == chunkenc.ValNone {
				return ts, vs, false
			}
			ts = append(ts, it.t)
			vs = append(vs, it.v)
		}
		return ts, vs, true
	}
	if it.t == math.MinInt64 && len(ts) < max {
		if it.Seek(it.mint) == chunkenc.ValNone {
			return ts, vs, false
		}
		ts = append(ts, it.t)
		vs = append(vs, it.v)
	}
	return it.appendTuples(ts, vs, max, math.MaxInt64)
}

// appendBefore is AppendSamples of the samples before limit, for an
// iterator that already stands on a sample: it stops at the first sample
// at or after limit without taking it (Next then returns it). Where the
// iterator has extra samples it appends nothing; the caller goes on with
// Next.
func (it *Iterator) appendBefore(ts []int64, vs []float64, max int, limit int64) ([]int64, []float64, bool) {
	if len(it.extra) > 0 || it.end || it.err != nil || it.t == math.MinInt64 {
		return ts, vs, !it.end
	}
	return it.appendTuples(ts, vs, max, limit)
}

// appendTuples appends the loaded tuple's rows after the current sample,
// then the next tuples', while len(ts) < max and t < limit.
func (it *Iterator) appendTuples(ts []int64, vs []float64, max int, limit int64) ([]int64, []float64, bool) {
	for len(ts) < max {
		// The loaded tuple's rows after the current sample (pick leaves
		// it.i past it), then the next tuples. Rows all present, in range
		// and fitting are appended at once.
		if rest := it.n - it.i; rest > 0 && len(ts)+rest <= max && it.present>>it.i == 1<<rest-1 &&
			it.ts[it.n-1] <= it.maxt && it.ts[it.n-1] < limit {
			ts = append(ts, it.ts[it.i:it.n]...)
			vs = append(vs, it.vs[it.i:it.n]...)
			it.i = it.n
			it.t, it.v = it.ts[it.n-1], it.vs[it.n-1]
		}
		for ; it.i < it.n && len(ts) < max; it.i++ {
			if it.present&(1<<it.i) == 0 {
				continue
			}
			t := it.ts[it.i]
			if t > it.maxt {
				it.end = true
				return ts, vs, false
			}
			if t >= limit {
				return ts, vs, true
			}
			it.t, it.v = t, it.vs[it.i]
			ts = append(ts, t)
			vs = append(vs, it.v)
		}
		if len(ts) >= max {
			break
		}
		next := it.k + 1
		if next >= it.src.NumTuples() || !it.load(next) {
			it.end = true
			return ts, vs, false
		}
	}
	return ts, vs, true
}

// At returns the current sample.
func (it *Iterator) At() (int64, float64) { return it.t, it.v }

// AtT returns the current timestamp.
func (it *Iterator) AtT() int64 { return it.t }

// AtST returns 0: Aerie stores no start timestamps.
func (it *Iterator) AtST() int64 { return 0 }

// AtHistogram is not supported: Aerie stores floats only.
func (it *Iterator) AtHistogram(*histogram.Histogram) (int64, *histogram.Histogram) {
	panic("seriesiter: AtHistogram on a float series")
}

// AtFloatHistogram is not supported: Aerie stores floats only.
func (it *Iterator) AtFloatHistogram(*histogram.FloatHistogram) (int64, *histogram.FloatHistogram) {
	panic("seriesiter: AtFloatHistogram on a float series")
}

// Err returns the first decoding error, valid once Next returned ValNone.
func (it *Iterator) Err() error { return it.err }

type emptySource struct{}

func (emptySource) NumTuples() int                                    { return 0 }
func (emptySource) First(int) int64                                   { return 0 }
func (emptySource) Load(int, []int64, []float64) (int, uint32, error) { return 0, 0, nil }
