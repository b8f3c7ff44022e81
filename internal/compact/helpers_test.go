package compact

import (
	"math"
	"path/filepath"
	"slices"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/stretchr/testify/require"

	"github.com/aerie-db/aerie/internal/block"
	"github.com/aerie-db/aerie/internal/index"
)

type sample struct {
	t int64
	v float64
}

// ser is one series of a test block.
type ser struct {
	lset    labels.Labels
	samples []sample // sorted by t
}

// spec describes a test block: its groups hold the given series, each
// group's timestamp column the union of its series' timestamps.
type spec struct {
	mint, maxt int64
	seq        uint64
	level      int
	headMaxT   int64
	groups     [][]ser
}

func newDict(t testing.TB) (*index.TagDict, string) {
	t.Helper()
	dir := t.TempDir()
	dict, err := index.OpenTagDict(filepath.Join(dir, "tagdict"))
	require.NoError(t, err)
	t.Cleanup(func() { dict.Close() })
	return dict, dir
}

// writeBlock writes sp under dir and opens it; the reader is closed at the
// end of the test.
func writeBlock(t testing.TB, dir string, dict *index.TagDict, sp spec) *block.Reader {
	t.Helper()
	w, err := block.NewWriter(dir, sp.mint, sp.maxt, dict, block.WriterOptions{
		Seq: sp.seq, Compaction: block.Compaction{Level: sp.level}, HeadMaxTime: sp.headMaxT,
	})
	require.NoError(t, err)
	for _, g := range sp.groups {
		var ts []int64
		for _, s := range g {
			for _, x := range s.samples {
				ts = append(ts, x.t)
			}
		}
		slices.Sort(ts)
		ts = slices.Compact(ts)
		if len(ts) == 0 {
			continue
		}
		cols := make([]block.Column, len(g))
		for k, s := range g {
			c := block.Column{Labels: s.lset, Values: make([]float64, len(ts)), Present: make([]bool, len(ts))}
			for _, x := range s.samples {
				i, _ := slices.BinarySearch(ts, x.t)
				c.Values[i], c.Present[i] = x.v, true
			}
			cols[k] = c
		}
		require.NoError(t, w.AddGroup(ts, cols))
	}
	bdir, _, err := w.Finish()
	require.NoError(t, err)
	return openBlock(t, bdir, dict)
}

func openBlock(t testing.TB, dir string, dict *index.TagDict) *block.Reader {
	t.Helper()
	r, err := block.Open(dir, dict, block.ReaderOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { r.Close() })
	return r
}

// readAll returns every sample of the block, by series (labels string).
func readAll(t testing.TB, r *block.Reader) map[string][]sample {
	t.Helper()
	ids := make([]uint32, r.Index().NumSeries())
	for i := range ids {
		ids[i] = uint32(i)
	}
	sel, err := r.SelectIDs(math.MinInt64, math.MaxInt64, ids)
	require.NoError(t, err)
	out := map[string][]sample{}
	var it chunkenc.Iterator
	for _, s := range sel.Series {
		it = s.Iterator(it)
		var got []sample
		for it.Next() == chunkenc.ValFloat {
			tt, v := it.At()
			got = append(got, sample{tt, v})
		}
		require.NoError(t, it.Err())
		if len(got) > 0 {
			out[s.Labels.String()] = got
		}
	}
	return out
}

// requireSamples checks got equals want bit for bit.
func requireSamples(t testing.TB, want, got map[string][]sample) {
	t.Helper()
	for k := range want {
		if len(want[k]) == 0 {
			delete(want, k)
		}
	}
	require.Equal(t, len(want), len(got), "series count")
	for k, ws := range want {
		gs, ok := got[k]
		require.True(t, ok, "series %s missing", k)
		require.Equal(t, len(ws), len(gs), "series %s: samples", k)
		for i := range ws {
			require.Equal(t, ws[i].t, gs[i].t, "series %s sample %d", k, i)
			require.Equal(t, math.Float64bits(ws[i].v), math.Float64bits(gs[i].v),
				"series %s at %d: want %v (%#x), got %v (%#x)", k, ws[i].t, ws[i].v, math.Float64bits(ws[i].v), gs[i].v, math.Float64bits(gs[i].v))
		}
	}
}

// byInstance groups series by their instance label.
func byInstance(l labels.Labels) string { return l.Get("instance") }

func series(name, instance string, samples ...sample) ser {
	return ser{lset: labels.FromStrings("__name__", name, "instance", instance), samples: samples}
}

// regular returns n samples from t0 every step, valued v0, v0+1, ….
func regular(t0, step int64, n int, v0 float64) []sample {
	out := make([]sample, n)
	for i := range out {
		out[i] = sample{t0 + int64(i)*step, v0 + float64(i)}
	}
	return out
}

func merge(t testing.TB, dict *index.TagDict, inputs []*block.Reader, opts Options) (*block.Reader, block.Meta) {
	t.Helper()
	if opts.GroupKey == nil {
		opts.GroupKey = byInstance
	}
	if opts.DropBefore == 0 {
		opts.DropBefore = math.MinInt64
	}
	dir, meta, err := Merge(t.TempDir(), inputs, dict, opts)
	require.NoError(t, err)
	r := openBlock(t, dir, dict)
	require.Equal(t, meta, r.Meta())
	return r, meta
}
