package block

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/stretchr/testify/require"

	"github.com/aerie-db/aerie/internal/index"
)

// testBlock writes a block of groups×width series over rows rows at 15 s.
func testBlock(t testing.TB, groups, width, rows int) (string, *index.TagDict) {
	t.Helper()
	dir := t.TempDir()
	dict, err := index.OpenTagDict(filepath.Join(dir, "tagdict"))
	require.NoError(t, err)
	t.Cleanup(func() { dict.Close() })
	w, err := NewWriter(dir, 0, 7200_000, dict, WriterOptions{})
	require.NoError(t, err)
	for g := 0; g < groups; g++ {
		ts := make([]int64, rows)
		for i := range ts {
			ts[i] = int64(i)*15_000 + int64(i%5)
		}
		var cols []Column
		for s := 0; s < width; s++ {
			c := Column{Labels: labels.FromStrings("__name__", fmt.Sprintf("m%d", s), "instance", fmt.Sprint(g)), Values: make([]float64, rows), Present: make([]bool, rows)}
			for i := range c.Values {
				c.Values[i] = float64(i*s) + float64(g)
				c.Present[i] = s != 1 || i%3 != 0
			}
			cols = append(cols, c)
		}
		require.NoError(t, w.AddGroup(ts, cols))
	}
	bdir, _, err := w.Finish()
	require.NoError(t, err)
	return bdir, dict
}

// countingReaderAt counts ReadAt calls.
type countingReaderAt struct {
	r     io.ReaderAt
	reads atomic.Int64
}

func (c *countingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	c.reads.Add(1)
	return c.r.ReadAt(p, off)
}

// TestReadsPerQuery checks invariant 2: k series of one group over a time
// range cost at most 1 + k reads of data, whatever the range.
func TestReadsPerQuery(t *testing.T) {
	bdir, dict := testBlock(t, 3, 20, 480)
	var cr *countingReaderAt
	r, err := Open(bdir, dict, ReaderOptions{WrapData: func(ra io.ReaderAt) io.ReaderAt {
		cr = &countingReaderAt{r: ra}
		return cr
	}})
	require.NoError(t, err)
	defer r.Close()
	for _, tc := range []struct {
		mint, maxt int64
		re         string
	}{
		{0, math.MaxInt64, "m1|m2|m3"},
		{1_000_000, 2_000_000, "m0|m5"},
		{3_600_000, 3_600_000, "m7"},
		{0, 7200_000, "m.*"},
	} {
		before := cr.reads.Load()
		sel, err := r.Select(tc.mint, tc.maxt,
			labels.MustNewMatcher(labels.MatchEqual, "instance", "1"),
			labels.MustNewMatcher(labels.MatchRegexp, "__name__", tc.re))
		require.NoError(t, err)
		k := len(sel.Series)
		require.NotZero(t, k)
		var it chunkenc.Iterator
		n := 0
		for _, s := range sel.Series {
			it = s.Iterator(it)
			for it.Next() == chunkenc.ValFloat {
				n++
			}
			require.NoError(t, it.Err())
		}
		reads := cr.reads.Load() - before
		require.LessOrEqual(t, reads, int64(1+k), "range [%d,%d] %s: %d series, %d reads", tc.mint, tc.maxt, tc.re, k, reads)
		t.Logf("%s [%d,%d]: %d series, %d samples, %d reads", tc.re, tc.mint, tc.maxt, k, n, reads)
	}
}

// TestMappedReads checks invariant 11: a local block's columns come from
// its mapping, with the same samples as reads through the file, and a
// series read after its reader closed and its directory was deleted still
// reads the block as it was.
func TestMappedReads(t *testing.T) {
	bdir, dict := testBlock(t, 3, 6, 300)
	read := func(sel *Selection) (out []float64) {
		var it chunkenc.Iterator
		for _, s := range sel.Series {
			it = s.Iterator(it)
			for it.Next() == chunkenc.ValFloat {
				tt, v := it.At()
				out = append(out, float64(tt), v)
			}
			require.NoError(t, it.Err())
		}
		return out
	}
	all := labels.MustNewMatcher(labels.MatchRegexp, "__name__", "m.*")
	plain, err := Open(bdir, dict, ReaderOptions{WrapData: func(ra io.ReaderAt) io.ReaderAt { return ra }})
	require.NoError(t, err)
	require.Nil(t, plain.mm, "WrapData reads through the file")
	selPlain, err := plain.Select(1_000_000, 4_000_000, all)
	require.NoError(t, err)
	want := read(selPlain)
	require.NoError(t, plain.Close())

	r, err := Open(bdir, dict, ReaderOptions{})
	require.NoError(t, err)
	if runtime.GOOS == "linux" {
		require.NotNil(t, r.mm, "a local block is mapped")
	}
	sel, err := r.Select(1_000_000, 4_000_000, all)
	require.NoError(t, err)
	before := r.DataReads()
	require.Equal(t, want, read(sel))
	require.Greater(t, r.DataReads(), before, "mapped reads are counted")

	sel, err = r.Select(1_000_000, 4_000_000, all)
	require.NoError(t, err)
	require.NoError(t, r.Close())
	require.NoError(t, os.RemoveAll(bdir))
	runtime.GC()
	require.Equal(t, want, read(sel), "a selection outlives its reader's Close")
}

// TestAppendRange checks that Series.AppendRange gives what the series'
// Iterator gives, over ranges that start and end inside chunks, with
// sparse columns, and through a mapped and a read file.
func TestAppendRange(t *testing.T) {
	bdir, dict := testBlock(t, 2, 4, 470)
	for _, wrap := range []bool{false, true} {
		opts := ReaderOptions{}
		if wrap {
			opts.WrapData = func(ra io.ReaderAt) io.ReaderAt { return ra }
		}
		r, err := Open(bdir, dict, opts)
		require.NoError(t, err)
		for _, rg := range [][2]int64{{0, math.MaxInt64}, {math.MinInt64, 3_840_000}, {3_000_001, 6_000_000}, {15_000, 15_000}, {15_001, 29_999}, {9_000_000, math.MaxInt64}} {
			sel, err := r.Select(rg[0], rg[1], labels.MustNewMatcher(labels.MatchRegexp, "__name__", "m.*"))
			require.NoError(t, err)
			for _, s := range sel.Series {
				var wantT []int64
				var wantV []float64
				it := s.Iterator(nil)
				for it.Next() == chunkenc.ValFloat {
					tt, v := it.At()
					wantT, wantV = append(wantT, tt), append(wantV, v)
				}
				require.NoError(t, it.Err())
				gotT, gotV, err := s.AppendRange([]int64{-1}, []float64{-1}, math.MinInt64, math.MaxInt64)
				require.NoError(t, err)
				require.Equal(t, append([]int64{-1}, wantT...), gotT, "%s %v", s.Labels, rg)
				require.Equal(t, append([]float64{-1}, wantV...), gotV, "%s %v", s.Labels, rg)
				// A narrower range: the samples of the whole one inside it.
				lo, hi := int64(2_000_000), int64(3_870_000)
				var subT []int64
				var subV []float64
				for i, tt := range wantT {
					if tt >= lo && tt <= hi {
						subT, subV = append(subT, tt), append(subV, wantV[i])
					}
				}
				gotT, gotV, err = s.AppendRange(nil, nil, lo, hi)
				require.NoError(t, err)
				require.Equal(t, subT, gotT, "%s %v", s.Labels, rg)
				require.Equal(t, subV, gotV, "%s %v", s.Labels, rg)
			}
		}
		require.NoError(t, r.Close())
	}
}

// TestCorruptionDetected flips every byte of every file (sampled for the
// data file) and checks Open reports a CorruptionError naming the file.
func TestCorruptionDetected(t *testing.T) {
	bdir, dict := testBlock(t, 2, 5, 100)
	for _, name := range []string{MetaFilename, IndexFilename, DataFilename} {
		path := filepath.Join(bdir, name)
		orig, err := os.ReadFile(path)
		require.NoError(t, err)
		for off := 0; off < len(orig); off++ {
			b := append([]byte(nil), orig...)
			b[off] ^= 0x5a
			require.NoError(t, os.WriteFile(path, b, 0o644))
			r, err := Open(bdir, dict, ReaderOptions{})
			if err == nil {
				r.Close()
				t.Fatalf("%s: flip at %d not detected", name, off)
			}
			var ce *CorruptionError
			require.True(t, errors.As(err, &ce), "%s offset %d: %v", name, off, err)
			require.Equal(t, path, ce.File)
		}
		require.NoError(t, os.WriteFile(path, orig, 0o644))
	}
	r, err := Open(bdir, dict, ReaderOptions{})
	require.NoError(t, err)
	r.Close()
}

func TestMetricsCombine(t *testing.T) {
	bdir, dict := testBlock(t, 1, 3, 480) // 2 h at 15 s: two 1 h intervals
	r, err := Open(bdir, dict, ReaderOptions{})
	require.NoError(t, err)
	defer r.Close()
	sel, err := r.Select(0, math.MaxInt64, labels.MustNewMatcher(labels.MatchEqual, "__name__", "m2"))
	require.NoError(t, err)
	require.Len(t, sel.Series, 1)
	ms, err := r.Metrics(context.Background(), sel.Series[0].ID)
	require.NoError(t, err)
	require.Len(t, ms, 2)
	// The combined 2 h metrics equal those computed from the data.
	all := ms[0]
	all.Combine(ms[1])
	var want IntervalMetrics
	it := sel.Series[0].Iterator(nil)
	for it.Next() == chunkenc.ValFloat {
		tt, v := it.At()
		want.add(tt, v)
	}
	require.Equal(t, want.Count, all.Count)
	require.Equal(t, want.Min, all.Min)
	require.Equal(t, want.Max, all.Max)
	require.Equal(t, want.Sum, all.Sum)
	require.Equal(t, want.SumSq, all.SumSq)
	require.Equal(t, want.First, all.First)
	require.Equal(t, want.Last, all.Last)
	require.Equal(t, uint64(240), ms[0].Count)
}

// TestSelectIDs reads series by local id: Series[i] is ids[i], in the
// caller's order, with the same samples as Select gives.
func TestSelectIDs(t *testing.T) {
	bdir, dict := testBlock(t, 2, 4, 100)
	r, err := Open(bdir, dict, ReaderOptions{})
	require.NoError(t, err)
	defer r.Close()
	n := r.Index().NumSeries()
	require.Equal(t, 8, n)
	ids := []uint32{5, 0, 7, 5}
	sel, err := r.SelectIDs(30_000, 600_000, ids)
	require.NoError(t, err)
	require.Len(t, sel.Series, len(ids))
	var it chunkenc.Iterator
	for i, s := range sel.Series {
		require.Equal(t, ids[i], s.ID)
		require.Equal(t, r.Index().Labels(ids[i], nil), s.Labels)
		byLabels, err := r.Select(30_000, 600_000, labels.MustNewMatcher(labels.MatchEqual, "__name__", s.Labels.Get("__name__")),
			labels.MustNewMatcher(labels.MatchEqual, "instance", s.Labels.Get("instance")))
		require.NoError(t, err)
		require.Len(t, byLabels.Series, 1)
		var want, got [][2]float64
		it = byLabels.Series[0].Iterator(it)
		for it.Next() == chunkenc.ValFloat {
			tt, v := it.At()
			want = append(want, [2]float64{float64(tt), v})
		}
		it = s.Iterator(it)
		for it.Next() == chunkenc.ValFloat {
			tt, v := it.At()
			got = append(got, [2]float64{float64(tt), v})
		}
		require.NoError(t, it.Err())
		require.NotEmpty(t, got)
		require.Equal(t, want, got)
	}
	_, err = r.SelectIDs(0, 1, []uint32{uint32(n)})
	require.ErrorContains(t, err, "out of range")
}

// TestSurelyHasSample: the index tells a sample in range only for a
// column holding every row whose group's first or last row is in range,
// and whenever it tells one, the data hold one.
func TestSurelyHasSample(t *testing.T) {
	bdir, dict := testBlock(t, 1, 2, 100) // m0 every row, m1 every row but i%3 == 0; rows at 0 … 1,485,004
	r, err := Open(bdir, dict, ReaderOptions{})
	require.NoError(t, err)
	defer r.Close()
	for _, tc := range []struct {
		mint, maxt int64
		m0, m1     bool
	}{
		{0, 600_000, true, false},            // first row in range; m1 is sparse
		{30_000, 600_000, false, false},      // neither end: the data must tell
		{1_000_000, 2_000_000, true, false},  // last row in range
		{-1_000, 1_485_004, true, false},     // both
		{1_485_005, 3_000_000, false, false}, // after the group
	} {
		sel, err := r.Select(tc.mint, tc.maxt, labels.MustNewMatcher(labels.MatchRegexp, "__name__", "m[01]"))
		require.NoError(t, err)
		var it chunkenc.Iterator
		for _, s := range sel.Series {
			want := tc.m0
			if s.Labels.Get("__name__") == "m1" {
				want = tc.m1
			}
			require.Equal(t, want, s.SurelyHasSample(), "%s [%d, %d]", s.Labels, tc.mint, tc.maxt)
			if want {
				it = s.Iterator(it)
				require.NotEqual(t, chunkenc.ValNone, it.Next())
			}
		}
	}
}

// TestFetchWhole: a group's value columns are fetched with its timestamps
// when the range covers at least wholeShare of its span.
func TestFetchWhole(t *testing.T) {
	g := &groupInfo{minT: 1000, maxT: 4000}
	for _, tc := range []struct {
		mint, maxt int64
		want       bool
	}{
		{math.MinInt64, math.MaxInt64, true},
		{1000, 4000, true},
		{2000, 9000, true},  // 2/3 of the span
		{2001, 9000, false}, // just under
		{0, 3000, true},
		{0, 2999, false},
		{2500, 2600, false},
	} {
		require.Equal(t, tc.want, fetchWhole(g, tc.mint, tc.maxt), "%d..%d", tc.mint, tc.maxt)
	}
	require.True(t, fetchWhole(&groupInfo{minT: 5, maxT: 5}, 0, 10), "one row")
}

// TestWriterSetRange: a streaming writer narrows its block's range to
// one that holds every group, and is refused a range outside the block,
// empty, or cutting a group's rows; a refused range changes nothing.
func TestWriterSetRange(t *testing.T) {
	for _, tc := range []struct {
		name       string
		mint, maxt int64
		ok         bool
	}{
		{"the block's own", 0, 7200_000, true},
		{"tight around the rows", 1000, 5001, true},
		{"starts before the block", -1, 5001, false},
		{"ends after the block", 1000, 7200_001, false},
		{"cuts the first row", 1001, 5001, false},
		{"ends at the last row", 1000, 5000, false},
		{"empty", 5, 5, false},
		{"reversed", 5001, 1000, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			dict, err := index.OpenTagDict(filepath.Join(dir, "tagdict"))
			require.NoError(t, err)
			defer dict.Close()
			w, err := NewWriter(dir, 0, 7200_000, dict, WriterOptions{})
			require.NoError(t, err)
			c := Column{Labels: labels.FromStrings("__name__", "m"), Values: []float64{1, 2}, Present: []bool{true, true}}
			require.NoError(t, w.AddGroup([]int64{1000, 5000}, []Column{c}))
			err = w.SetRange(tc.mint, tc.maxt)
			wantMin, wantMax := int64(0), int64(7200_000)
			if tc.ok {
				require.NoError(t, err)
				wantMin, wantMax = tc.mint, tc.maxt
			} else {
				require.Error(t, err)
			}
			_, meta, err := w.Finish()
			require.NoError(t, err)
			require.Equal(t, wantMin, meta.MinTime)
			require.Equal(t, wantMax, meta.MaxTime)
		})
	}
}
