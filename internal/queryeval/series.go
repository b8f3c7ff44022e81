package queryeval

import (
	"slices"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/util/annotations"
)

// synthSeries is a rollup's output for one input series: a point per step
// where the function had one, stale markers after each run.
type synthSeries struct {
	lset  labels.Labels
	order int // the input series' place in the storage's answer
	t     []int64
	f     []float64
}

func sortByOrder(ss []*synthSeries) {
	slices.SortFunc(ss, func(a, b *synthSeries) int { return a.order - b.order })
}

func (s *synthSeries) Labels() labels.Labels { return s.lset }

func (s *synthSeries) Iterator(it chunkenc.Iterator) chunkenc.Iterator {
	if si, ok := it.(*synthIterator); ok {
		*si = synthIterator{s: s, i: -1}
		return si
	}
	return &synthIterator{s: s, i: -1}
}

// synthSet iterates a rollup's series.
type synthSet struct {
	series []*synthSeries
	i      int
}

func (s *synthSet) Next() bool                        { s.i++; return s.i < len(s.series) }
func (s *synthSet) At() storage.Series                { return s.series[s.i] }
func (s *synthSet) Err() error                        { return nil }
func (s *synthSet) Warnings() annotations.Annotations { return nil }

// synthIterator iterates a synthSeries' points.
type synthIterator struct {
	s *synthSeries
	i int
}

func (it *synthIterator) Next() chunkenc.ValueType {
	if it.i+1 >= len(it.s.t) {
		it.i = len(it.s.t)
		return chunkenc.ValNone
	}
	it.i++
	return chunkenc.ValFloat
}

func (it *synthIterator) Seek(t int64) chunkenc.ValueType {
	if it.i < 0 {
		it.i = 0
	}
	if it.i >= len(it.s.t) {
		return chunkenc.ValNone
	}
	if it.s.t[it.i] >= t {
		return chunkenc.ValFloat
	}
	j, _ := slices.BinarySearch(it.s.t[it.i:], t)
	it.i += j
	if it.i >= len(it.s.t) {
		return chunkenc.ValNone
	}
	return chunkenc.ValFloat
}

func (it *synthIterator) At() (int64, float64) { return it.s.t[it.i], it.s.f[it.i] }

// AtHistogram and AtFloatHistogram are never called: Next and Seek
// report floats only.
func (it *synthIterator) AtHistogram(*histogram.Histogram) (int64, *histogram.Histogram) {
	return it.s.t[it.i], nil
}
func (it *synthIterator) AtFloatHistogram(*histogram.FloatHistogram) (int64, *histogram.FloatHistogram) {
	return it.s.t[it.i], nil
}
func (it *synthIterator) AtT() int64  { return it.s.t[it.i] }
func (it *synthIterator) AtST() int64 { return 0 }
func (it *synthIterator) Err() error  { return nil }
