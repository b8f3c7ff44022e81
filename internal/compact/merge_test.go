package compact

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/stretchr/testify/require"

	"github.com/aerie-db/aerie/internal/block"
)

// TestMergeDuplicates overlaps three blocks holding samples of one series
// at equal timestamps, with equal and different values: the input of the
// lowest Seq wins, ties going to the earlier input, whatever the order of
// the inputs.
func TestMergeDuplicates(t *testing.T) {
	dict, dir := newDict(t)
	a := series("m", "i")
	// seq 2, first in the slice
	b2 := writeBlock(t, dir, dict, spec{mint: 0, maxt: 2 * h, seq: 2, groups: [][]ser{{
		{lset: a.lset, samples: []sample{{0, 20}, {1000, 21}, {2000, 22}, {5000, 25}}},
	}}})
	// seq 0, the head's
	b0 := writeBlock(t, dir, dict, spec{mint: 0, maxt: 2 * h, seq: 0, groups: [][]ser{{
		{lset: a.lset, samples: []sample{{1000, 1}, {3000, 3}}},
		series("other", "i", sample{1000, 7}),
	}}})
	// seq 2 again, after b2 in the slice: loses ties with b2
	b2late := writeBlock(t, dir, dict, spec{mint: 0, maxt: 3 * h, seq: 2, groups: [][]ser{{
		{lset: a.lset, samples: []sample{{2000, 99}, {3000, 99}, {4000, 24}, {h, 30}}},
	}}})
	// seq 1 agrees with b2 at 0 (equal values) and differs at 5000
	b1 := writeBlock(t, dir, dict, spec{mint: 0, maxt: 2 * h, seq: 1, groups: [][]ser{{
		{lset: a.lset, samples: []sample{{0, 20}, {5000, 15}}},
	}}})
	out, meta := merge(t, dict, []*block.Reader{b2, b0, b2late, b1}, Options{})
	requireSamples(t, map[string][]sample{
		a.lset.String(): {{0, 20}, {1000, 1}, {2000, 22}, {3000, 3}, {4000, 24}, {5000, 15}, {h, 30}},
		labels.FromStrings("__name__", "other", "instance", "i").String(): {{1000, 7}},
	}, readAll(t, out))
	require.Equal(t, int64(0), meta.MinTime)
	require.Equal(t, 3*h, meta.MaxTime)
	require.Equal(t, uint64(2), meta.Seq)
	require.Zero(t, meta.Backfill)
	// b0 has no headMaxTime but is a head flush (written before the field).
	require.Equal(t, 2*h, meta.HeadMaxTime)
	require.Equal(t, 1, meta.Compaction.Level)
	parents := []string{b2.Meta().ULID, b0.Meta().ULID, b2late.Meta().ULID, b1.Meta().ULID}
	slices.Sort(parents)
	require.Equal(t, parents, meta.Compaction.Parents)
	require.Equal(t, 8, meta.Stats.Samples)
	// One instance, one group; "other", on one row of seven, leaves it.
	require.Equal(t, 2, meta.Stats.Groups)
	require.Equal(t, 7+1, meta.Stats.Rows)
}

// TestMergeLevel merges six adjacent partitions into one block whose
// groups each have one timestamp column over the whole range.
func TestMergeLevel(t *testing.T) {
	dict, dir := newDict(t)
	var inputs []*block.Reader
	want := map[string][]sample{}
	const step, rows = 15_000, 480 // 2 h at 15 s
	for p := int64(0); p < 6; p++ {
		var groups [][]ser
		for _, inst := range []string{"a", "b"} {
			var g []ser
			for _, name := range []string{"cpu", "mem", "disk"} {
				s := series(name, inst, regular(p*2*h, step, rows, float64(p*1000))...)
				want[s.lset.String()] = append(want[s.lset.String()], s.samples...)
				g = append(g, s)
			}
			groups = append(groups, g)
		}
		sp := spec{mint: p * 2 * h, maxt: (p + 1) * 2 * h, groups: groups}
		if p < 4 {
			sp.headMaxT = sp.maxt
		} else {
			sp.seq = 1 // backfilled: holds no head partition
		}
		inputs = append(inputs, writeBlock(t, dir, dict, sp))
	}
	require.Equal(t, 2, inputs[0].Meta().Stats.Groups)
	out, meta := merge(t, dict, inputs, Options{MinTime: 0, MaxTime: 12 * h, Level: 1})
	requireSamples(t, want, readAll(t, out))
	require.Equal(t, 8*h, meta.HeadMaxTime)
	require.Equal(t, uint64(1), meta.Seq)
	require.Equal(t, 2, meta.Stats.Groups)
	require.Equal(t, 2*6*rows, meta.Stats.Rows)
	require.Equal(t, 6, meta.Stats.Series)
	require.Equal(t, 6*6*rows, meta.Stats.Samples)
	require.Equal(t, int64(0), meta.Stats.MinSampleTime)
	require.Equal(t, 12*h-step, meta.Stats.MaxSampleTime)
	// Block metrics are recomputed: 12 one-hour intervals of 240 samples.
	for id := uint32(0); id < uint32(meta.Stats.Series); id++ {
		ms, err := out.Metrics(context.Background(), id)
		require.NoError(t, err)
		require.Len(t, ms, 12)
		for _, m := range ms {
			require.Equal(t, uint64(240), m.Count)
		}
	}
}

// TestMergeDrops drops tombstoned intervals and samples past retention
// physically.
func TestMergeDrops(t *testing.T) {
	dict, dir := newDict(t)
	a := series("a", "i", regular(0, 1000, 100, 0)...)
	b := series("b", "i", regular(0, 1000, 100, 0)...)
	c := series("c", "j", regular(0, 1000, 100, 0)...)
	in1 := writeBlock(t, dir, dict, spec{mint: 0, maxt: h, groups: [][]ser{{a, b}, {c}}})
	in2 := writeBlock(t, dir, dict, spec{mint: h, maxt: 2 * h, groups: [][]ser{{series("a", "i", sample{h, 1})}}})
	deleted := map[string][][2]int64{
		a.lset.String(): {{50_000, 59_000}, {10_000, 19_500}, {15_000, 30_000}, {h, h}},
		c.lset.String(): {{math.MinInt64, math.MaxInt64}},
	}
	out, meta := merge(t, dict, []*block.Reader{in1, in2}, Options{
		DropBefore: 5000,
		Deleted:    func(l labels.Labels) [][2]int64 { return deleted[l.String()] },
	})
	var wantA []sample
	for _, s := range a.samples {
		if s.t >= 5000 && (s.t < 10_000 || s.t > 30_000) && (s.t < 50_000 || s.t > 59_000) {
			wantA = append(wantA, s)
		}
	}
	requireSamples(t, map[string][]sample{
		a.lset.String(): wantA,
		b.lset.String(): b.samples[5:],
	}, readAll(t, out))
	require.Equal(t, 2, meta.Stats.Series) // c is gone entirely
	require.Equal(t, len(wantA)+95, meta.Stats.Samples)
	require.Equal(t, int64(5000), meta.Stats.MinSampleTime)
}

// TestMergeRegroup checks that a sparse series leaves its group, and that
// wide or long groups are split.
func TestMergeRegroup(t *testing.T) {
	dict, dir := newDict(t)
	var dense []ser
	for _, n := range []string{"d0", "d1", "d2"} {
		dense = append(dense, series(n, "i", regular(0, 10_000, 100, 0)...))
	}
	shared := series("shared", "i", regular(0, 100_000, 10, 0)...) // on dense rows, 10 of 100
	offset := series("offset", "i", regular(5000, 100_000, 10, 0)...)
	most := series("most", "i") // on 3 of every 5 dense rows: stays
	for i, x := range regular(0, 10_000, 100, 0) {
		if i%5 < 3 {
			most.samples = append(most.samples, x)
		}
	}
	late := series("late", "i", regular(900_000, 10_000, 10, 0)...)
	in1 := writeBlock(t, dir, dict, spec{mint: 0, maxt: h, groups: [][]ser{dense[:2], {dense[2], shared}}})
	in2 := writeBlock(t, dir, dict, spec{mint: 0, maxt: h, seq: 1, groups: [][]ser{{offset}, {most, late}}})
	want := map[string][]sample{}
	for _, s := range append(dense, shared, offset, most, late) {
		want[s.lset.String()] = s.samples
	}
	for _, tc := range []struct {
		name         string
		opts         Options
		groups, rows int
	}{
		// d0-2 and most on 100 rows; shared, offset, late alone.
		{name: "sparse", groups: 4, rows: 100 + 10 + 10 + 10},
		// By label order d0,d1 | d2,late | most,offset | shared; late and
		// offset leave their pairs.
		{name: "width", opts: Options{MaxGroupWidth: 2}, groups: 6, rows: 100 + 100 + 10 + 60 + 10 + 10},
		// The first 14 rows (100 cells / 7 series) include offset's first
		// sample; shared, offset and late leave, and the 4 others take 25
		// rows at a time: dense groups of 12, 25, 25, 25 and 13 rows.
		{name: "cells", opts: Options{MaxGroupCells: 100}, groups: 5 + 3, rows: 100 + 10 + 10 + 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			groups := 0
			tc.opts.Pace = func() { groups++ }
			out, meta := merge(t, dict, []*block.Reader{in1, in2}, tc.opts)
			requireSamples(t, want, readAll(t, out))
			require.Equal(t, tc.groups, meta.Stats.Groups)
			require.Equal(t, tc.rows, meta.Stats.Rows)
			require.Equal(t, tc.groups, groups, "Pace calls")
		})
	}
}

// TestMergeBitExact keeps every float bit pattern: NaN payloads, stale
// markers, infinities, negative zero; and takes the winner's bits on a
// duplicate.
func TestMergeBitExact(t *testing.T) {
	dict, dir := newDict(t)
	stale := math.Float64frombits(value.StaleNaN)
	nan1 := math.Float64frombits(0x7ff8000000000123)
	nan2 := math.Float64frombits(0xfff4000000000001) // signalling, negative
	vals := []float64{stale, nan1, nan2, math.Inf(1), math.Inf(-1), math.Copysign(0, -1), 0, math.SmallestNonzeroFloat64, math.MaxFloat64}
	var first, second []sample
	for i, v := range vals {
		first = append(first, sample{int64(i) * 1000, v})
		second = append(second, sample{int64(i) * 1000, vals[(i+1)%len(vals)]})
	}
	s := series("bits", "i")
	in0 := writeBlock(t, dir, dict, spec{mint: 0, maxt: h, seq: 0, groups: [][]ser{{{lset: s.lset, samples: first}}}})
	in1 := writeBlock(t, dir, dict, spec{mint: 0, maxt: h, seq: 1, groups: [][]ser{{{lset: s.lset, samples: second}, series("more", "i", first...)}}})
	out, _ := merge(t, dict, []*block.Reader{in1, in0}, Options{})
	requireSamples(t, map[string][]sample{
		s.lset.String(): first,
		labels.FromStrings("__name__", "more", "instance", "i").String(): first,
	}, readAll(t, out))
}

func TestMergeErrors(t *testing.T) {
	dict, dir := newDict(t)
	in := writeBlock(t, dir, dict, spec{mint: h, maxt: 2 * h, groups: [][]ser{{series("a", "i", sample{h, 1})}}})
	closed := writeBlock(t, dir, dict, spec{mint: h, maxt: 2 * h, groups: [][]ser{{series("a", "i", sample{h, 1})}}})
	closed.Close()
	for _, tc := range []struct {
		name   string
		inputs []*block.Reader
		opts   Options
		err    string
	}{
		{name: "no inputs", opts: Options{GroupKey: byInstance}, err: "no input blocks"},
		{name: "no group key", inputs: []*block.Reader{in}, err: "GroupKey is required"},
		{name: "input outside range", inputs: []*block.Reader{in}, opts: Options{GroupKey: byInstance, MinTime: 0, MaxTime: h + 1}, err: "outside output range"},
		{name: "input twice", inputs: []*block.Reader{in, in}, opts: Options{GroupKey: byInstance}, err: "given twice"},
		{name: "closed input", inputs: []*block.Reader{in, closed}, opts: Options{GroupKey: byInstance}, err: "is closed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parent := t.TempDir()
			_, _, err := Merge(parent, tc.inputs, dict, tc.opts)
			require.ErrorContains(t, err, tc.err)
			left, err := os.ReadDir(parent)
			require.NoError(t, err)
			require.Empty(t, left)
		})
	}
	// The inputs' references are balanced: in closes cleanly.
	require.NoError(t, in.Close())
	require.False(t, in.Acquire())
}

// TestMergeThenObsolete runs the crash protocol's open step over a block
// directory where the process stopped after the output's rename.
func TestMergeThenObsolete(t *testing.T) {
	dict, dir := newDict(t)
	a := writeBlock(t, dir, dict, spec{mint: 0, maxt: 2 * h, groups: [][]ser{{series("m", "i", sample{0, 1})}}})
	b := writeBlock(t, dir, dict, spec{mint: 2 * h, maxt: 4 * h, groups: [][]ser{{series("m", "i", sample{2 * h, 2})}}})
	keep := writeBlock(t, dir, dict, spec{mint: 12 * h, maxt: 14 * h, groups: [][]ser{{series("m", "i", sample{12 * h, 3})}}})
	outDir, _, err := Merge(dir, []*block.Reader{a, b}, dict, Options{GroupKey: byInstance, MinTime: 0, MaxTime: 12 * h, DropBefore: math.MinInt64})
	require.NoError(t, err)
	metas := func() []block.Meta {
		ents, err := os.ReadDir(dir)
		require.NoError(t, err)
		var ms []block.Meta
		for _, e := range ents {
			if !e.IsDir() {
				continue
			}
			r := openBlock(t, filepath.Join(dir, e.Name()), dict)
			ms = append(ms, r.Meta())
		}
		return ms
	}
	want := []string{a.Meta().ULID, b.Meta().ULID}
	slices.Sort(want)
	require.Equal(t, want, Obsolete(metas()))
	// Only b was deleted before the crash.
	require.NoError(t, os.RemoveAll(b.Dir()))
	require.Equal(t, []string{a.Meta().ULID}, Obsolete(metas()))
	require.NoError(t, os.RemoveAll(a.Dir()))
	require.Empty(t, Obsolete(metas()))
	require.DirExists(t, outDir)
	require.DirExists(t, keep.Dir())
}

// readHook calls f on every ReadAt.
type readHook struct {
	r io.ReaderAt
	f func()
}

func (h readHook) ReadAt(p []byte, off int64) (int, error) {
	h.f()
	return h.r.ReadAt(p, off)
}

// TestMergeReadsInputsInTurn checks the memory bound of a level merge: an
// input's columns are read when the merge reaches its range, not all at
// the start. A stream is positioned one sample ahead, so it opens the next
// input (dropping the previous one) as it takes the last sample of a batch
// of rows that ends with an input.
func TestMergeReadsInputsInTurn(t *testing.T) {
	dict, dir := newDict(t)
	var events []string
	var inputs []*block.Reader
	for p := int64(0); p < 3; p++ {
		r := writeBlock(t, dir, dict, spec{mint: p * 2 * h, maxt: (p + 1) * 2 * h, groups: [][]ser{{
			series("a", "i", regular(p*2*h, 60_000, 120, 0)...),
			series("b", "i", regular(p*2*h, 60_000, 120, 0)...),
		}}})
		name := fmt.Sprint("read ", p)
		r, err := block.Open(r.Dir(), dict, block.ReaderOptions{WrapData: func(ra io.ReaderAt) io.ReaderAt {
			return readHook{r: ra, f: func() {
				if len(events) == 0 || events[len(events)-1] != name {
					events = append(events, name)
				}
			}}
		}})
		require.NoError(t, err)
		t.Cleanup(func() { r.Close() })
		inputs = append(inputs, r)
	}
	_, meta := merge(t, dict, inputs, Options{MaxGroupCells: 2 * 120, Pace: func() { events = append(events, "group") }})
	require.Equal(t, 3, meta.Stats.Groups)
	require.Equal(t, []string{"read 0", "read 1", "group", "read 2", "group", "group"}, events)
}
