package head

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/stretchr/testify/require"

	"github.com/aerie-db/aerie/internal/memory"
	"github.com/aerie-db/aerie/internal/model"
	"github.com/aerie-db/aerie/internal/seriesiter"
)

func lbl(kv ...string) labels.Labels { return labels.FromStrings(kv...) }

// samplesOf returns every sample of the series matching name.
func samplesOf(t *testing.T, h *Head, name string) []seriesiter.Sample {
	t.Helper()
	guard := h.Enter()
	defer guard.Exit()
	ss, err := h.Select(math.MinInt64, math.MaxInt64, labels.MustNewMatcher(labels.MatchEqual, "__name__", name))
	require.NoError(t, err)
	if len(ss) == 0 {
		return nil
	}
	require.Len(t, ss, 1)
	var its []chunkenc.Iterator
	for _, c := range ss[0].Columns {
		its = append(its, seriesiter.NewIterator(nil, c, c.Extra, math.MinInt64, math.MaxInt64))
	}
	it := seriesiter.Merge(its...)
	var out []seriesiter.Sample
	for it.Next() == chunkenc.ValFloat {
		a, b := it.At()
		out = append(out, seriesiter.Sample{T: a, V: b})
	}
	require.NoError(t, it.Err())
	return out
}

func TestLabelErrors(t *testing.T) {
	h := mustNew(t, Options{MaxSeries: 2})
	for _, tc := range []struct {
		name string
		lset labels.Labels
		want error
	}{
		{"empty", labels.EmptyLabels(), ErrEmptyLabels},
		{"duplicate name", labels.New(labels.Label{Name: "a", Value: "1"}, labels.Label{Name: "a", Value: "2"}), ErrInvalidLabels},
		{"empty name", labels.New(labels.Label{Name: "", Value: "1"}), ErrInvalidLabels},
		{"empty value", labels.FromStrings("a", ""), ErrInvalidLabels},
		{"invalid utf8 value", labels.FromStrings("a", "\xff"), ErrInvalidLabels},
	} {
		t.Run(tc.name, func(t *testing.T) {
			app := h.Appender()
			err := app.Append(tc.lset, 1, 1)
			require.ErrorIs(t, err, tc.want)
			var le *LabelError
			if tc.want != ErrEmptyLabels {
				require.ErrorAs(t, err, &le)
			}
			require.ErrorIs(t, app.Commit(), tc.want)
		})
	}
	app := h.Appender()
	require.NoError(t, app.Append(lbl("__name__", "a"), 1, 1))
	require.NoError(t, app.Append(lbl("__name__", "b"), 1, 1))
	require.ErrorIs(t, app.Append(lbl("__name__", "c"), 1, 1), ErrSeriesLimit)
	err := app.Commit()
	var ae *AppendError
	require.ErrorAs(t, err, &ae)
	require.Equal(t, 2, ae.Accepted)
	require.Equal(t, 1, ae.Rejected)
	require.Equal(t, []int{2}, ae.RejectedSamples())
}

func TestGroupTooWide(t *testing.T) {
	h := mustNew(t, Options{MaxGroupWidth: 3})
	app := h.Appender()
	for i := 0; i < 5; i++ {
		require.NoError(t, app.Append(lbl("__name__", string(rune('a'+i)), "job", "j"), 1000, float64(i)))
	}
	err := app.Commit()
	require.ErrorIs(t, err, ErrGroupTooWide)
	var ae *AppendError
	require.ErrorAs(t, err, &ae)
	require.Equal(t, 3, ae.Accepted)
	require.Equal(t, []int{3, 4}, ae.Indexes)
	require.Equal(t, 1, h.NumGroups())
}

func TestPresenceIsNotNaN(t *testing.T) {
	h := mustNew(t, Options{})
	for i := int64(0); i < 20; i++ {
		app := h.Appender()
		require.NoError(t, app.Append(lbl("__name__", "a", "job", "j"), i*1000, float64(i)))
		if i%2 == 0 {
			require.NoError(t, app.Append(lbl("__name__", "b", "job", "j"), i*1000, math.NaN()))
		}
		require.NoError(t, app.Commit())
	}
	b := samplesOf(t, h, "b")
	require.Len(t, b, 10, "absent rows are not NaN samples")
	for _, s := range b {
		require.True(t, math.IsNaN(s.V))
		require.Zero(t, s.T%2000)
	}
	require.Len(t, samplesOf(t, h, "a"), 20)
	require.Equal(t, 1, h.NumGroups())
}

func TestSpecialValuesBitExact(t *testing.T) {
	h := mustNew(t, Options{})
	vals := []float64{math.Float64frombits(value.StaleNaN), math.Inf(1), math.Inf(-1), math.Copysign(0, -1), 0,
		math.Float64frombits(0x7ff8dead_beef0001), math.SmallestNonzeroFloat64, math.MaxFloat64, 1.5, 1.5, 1.5}
	for i, v := range vals {
		app := h.Appender()
		require.NoError(t, app.Append(lbl("__name__", "x"), int64(i)*1000, v))
		require.NoError(t, app.Commit())
	}
	got := samplesOf(t, h, "x")
	require.Len(t, got, len(vals))
	for i, v := range vals {
		require.Equal(t, math.Float64bits(v), math.Float64bits(got[i].V), "value %d", i)
	}
}

func TestOutOfOrderAndDuplicates(t *testing.T) {
	h := mustNew(t, Options{OOOWindow: 60_000, PartitionRange: 3600_000})
	put := func(t0 int64, v float64) error {
		app := h.Appender()
		require.NoError(t, app.Append(lbl("__name__", "x", "job", "j"), t0, v))
		require.NoError(t, app.Append(lbl("__name__", "y", "job", "j"), t0, v*2))
		return app.Commit()
	}
	for i := int64(0); i < 100; i++ {
		if i == 90 {
			continue // delivered late, below
		}
		require.NoError(t, put(i*1000, float64(i)))
	}
	require.NoError(t, put(90_000, 90), "inside the window")
	require.NoError(t, put(50_000, 50), "identical duplicate is idempotent")
	err := put(50_000, 51)
	require.ErrorIs(t, err, storage.ErrDuplicateSampleForTimestamp)
	require.ErrorIs(t, put(99_000, 0), storage.ErrDuplicateSampleForTimestamp, "duplicate of the last row")
	require.ErrorIs(t, put(20_000, 7), storage.ErrTooOldSample, "older than the window")
	var ae *AppendError
	require.ErrorAs(t, put(20_500, 7), &ae)
	require.Contains(t, ae.Error(), `x`)
	require.Contains(t, ae.Error(), "too old")

	got := samplesOf(t, h, "x")
	require.Len(t, got, 100)
	for i, s := range got {
		require.Equal(t, int64(i)*1000, s.T)
		require.Equal(t, float64(i), s.V)
	}

	// With out-of-order off, an older row is rejected as Prometheus does.
	h2 := mustNew(t, Options{NoOOODefault: true})
	app := h2.Appender()
	require.NoError(t, app.Append(lbl("__name__", "x"), 10_000, 1))
	require.NoError(t, app.Commit())
	app = h2.Appender()
	require.NoError(t, app.Append(lbl("__name__", "x"), 5_000, 1))
	require.True(t, errors.Is(app.Commit(), storage.ErrOutOfOrderSample))
}

func TestMisfitSeriesMovesToOwnGroup(t *testing.T) {
	h := mustNew(t, Options{MisfitLimit: 3})
	for i := int64(0); i < 10; i++ {
		app := h.Appender()
		require.NoError(t, app.Append(lbl("__name__", "a", "job", "j"), i*1000, 1))
		require.NoError(t, app.Append(lbl("__name__", "b", "job", "j"), i*1000, 2))
		require.NoError(t, app.Commit())
		app = h.Appender()
		// c's timestamps never agree with the group's rows.
		require.NoError(t, app.Append(lbl("__name__", "c", "job", "j"), i*1000+500, 3))
		require.NoError(t, app.Commit())
	}
	require.Equal(t, 2, h.NumGroups(), "c moved to a group of its own")
	require.Len(t, samplesOf(t, h, "c"), 10, "its samples in both groups are merged")
	require.Len(t, samplesOf(t, h, "a"), 10)
}

// TestTupleSizes checks every tuple size gives the same samples.
func TestTupleSizes(t *testing.T) {
	for _, ts := range []int{1, 4, 8} {
		h := mustNew(t, Options{TupleSize: ts})
		for i := int64(0); i < 37; i++ {
			app := h.Appender()
			require.NoError(t, app.Append(lbl("__name__", "x"), i*15_000, float64(i)*0.1))
			require.NoError(t, app.Commit())
		}
		got := samplesOf(t, h, "x")
		require.Len(t, got, 37)
		for i, s := range got {
			require.Equal(t, float64(i)*0.1, s.V)
		}
	}
}

func TestAppendRow(t *testing.T) {
	h := mustNew(t, Options{})
	var gid0 uint32
	for s := 0; s < 4; s++ {
		gid, slot, err := h.Join(lbl("__name__", string(rune('a'+s)), "job", "j", "instance", "i"))
		require.NoError(t, err)
		require.Equal(t, s, int(slot))
		gid0 = uint32(gid)
	}
	_, _, err := h.Join(labels.EmptyLabels())
	require.ErrorIs(t, err, ErrEmptyLabels)
	for i := int64(0); i < 30; i++ {
		vals := []float64{float64(i), math.NaN(), float64(-i), 7}
		pres := []bool{true, i%3 == 0, true, i%2 == 0}
		require.NoError(t, h.AppendRow(model.GroupID(gid0), i*1000, vals, pres))
	}
	require.Len(t, samplesOf(t, h, "a"), 30)
	require.Len(t, samplesOf(t, h, "b"), 10)
	require.Len(t, samplesOf(t, h, "d"), 15)
	require.ErrorIs(t, h.AppendRow(model.GroupID(gid0), 99_000, make([]float64, 5), []bool{false, false, false, false, true}), ErrTooManyRows)
	require.ErrorIs(t, h.AppendRow(model.GroupID(gid0), 0, []float64{1}, []bool{true}), storage.ErrDuplicateSampleForTimestamp)
	require.Error(t, h.AppendRow(99, 0, nil, nil))
}

// TestAppendRowAfterMove: once a series that sat alone in its rows moved
// to a group of its own, rows of the old group that include its slot take
// the general path and lose nothing.
func TestAppendRowAfterMove(t *testing.T) {
	h := mustNew(t, Options{})
	gid, _, err := h.Join(lbl("__name__", "a", "job", "j", "instance", "i"))
	require.NoError(t, err)
	_, _, err = h.Join(lbl("__name__", "b", "job", "j", "instance", "i"))
	require.NoError(t, err)
	for i := int64(0); i < 20; i++ {
		pres := []bool{true, i >= 5} // "a" alone for 5 rows: it moves
		require.NoError(t, h.AppendRow(gid, i*1000, []float64{float64(i), -float64(i)}, pres))
	}
	require.GreaterOrEqual(t, h.NumGroups(), 2)
	a, b := samplesOf(t, h, "a"), samplesOf(t, h, "b")
	require.Len(t, a, 20)
	require.Len(t, b, 15)
	for i, s := range a {
		require.Equal(t, int64(i)*1000, s.T)
		require.Equal(t, float64(i), s.V)
	}
}

func TestBytesGrows(t *testing.T) {
	h := mustNew(t, Options{})
	require.Zero(t, h.Bytes())
	for i := int64(0); i < 100; i++ {
		app := h.Appender()
		require.NoError(t, app.Append(lbl("__name__", "x"), i*1000, float64(i)))
		require.NoError(t, app.Commit())
	}
	b := h.Bytes()
	require.Greater(t, b, int64(100))
	require.Less(t, b, int64(100*16), "compressed: well under 16 B per sample")
}

func mustNew(t testing.TB, opts Options) *Head {
	t.Helper()
	h, err := New(opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestPartitionLimit: while VersionWindow-1 older partitions are still
// unflushed (live in the memory manager), rows of a new partition are
// rejected before they are logged, with ErrPartitionLimit, and the rows of
// partitions already open are still accepted; releasing the oldest makes
// room again.
func TestPartitionLimit(t *testing.T) {
	h := mustNew(t, Options{PartitionRange: 1000, OOOWindow: 5000})
	l := lbl("__name__", "m", "job", "j")
	app := h.Appender()
	for p := range int64(memory.VersionWindow) {
		require.NoError(t, app.Append(l, p*1000, float64(p)))
		require.NoError(t, app.Commit(), "partition %d", p)
	}
	require.NoError(t, app.Append(l, memory.VersionWindow*1000, 1))
	err := app.Commit()
	require.ErrorIs(t, err, ErrPartitionLimit)
	require.ErrorContains(t, err, "version window")
	require.NoError(t, app.Append(l, memory.VersionWindow*1000-500, 2), "the newest open partition")
	require.NoError(t, app.Commit())

	h.DropPartition(0)
	require.NoError(t, app.Append(l, memory.VersionWindow*1000, 1))
	require.NoError(t, app.Commit())
	require.Len(t, samplesOf(t, h, "m"), memory.VersionWindow+1) // partitions 1..31 and the two later rows; 0 was dropped
}

// TestSharedTimes: the columns of one partition a Select returns share one
// decoded time column, and series read through it, concurrently, hold
// exactly what each read alone holds.
func TestSharedTimes(t *testing.T) {
	h := mustNew(t, Options{})
	names := []string{"a", "b", "c", "d"}
	for i := range 300 {
		app := h.Appender()
		for j, n := range names {
			if j == 3 && i%4 == 0 {
				continue // d is sparse
			}
			require.NoError(t, app.Append(lbl("__name__", n, "host", "h"), int64(i)*10_000+int64(i%3), float64(i*j)))
		}
		require.NoError(t, app.Commit())
	}
	alone := map[string][]seriesiter.Sample{}
	for _, n := range names {
		alone[n] = samplesOf(t, h, n)
		require.NotEmpty(t, alone[n])
	}
	guard := h.Enter()
	defer guard.Exit()
	ss, err := h.Select(math.MinInt64, math.MaxInt64, labels.MustNewMatcher(labels.MatchEqual, "host", "h"))
	require.NoError(t, err)
	require.Len(t, ss, len(names))
	shared := 0
	for _, s := range ss {
		for _, c := range s.Columns {
			if c.tc != nil {
				shared++
			}
		}
	}
	require.Positive(t, shared, "no column shares its partition's times")
	got := make([][]seriesiter.Sample, len(ss))
	var wg sync.WaitGroup
	for i, s := range ss {
		wg.Go(func() {
			var its []chunkenc.Iterator
			for _, c := range s.Columns {
				its = append(its, seriesiter.NewIterator(nil, c, c.Extra, math.MinInt64, math.MaxInt64))
			}
			it := seriesiter.Merge(its...)
			for it.Next() == chunkenc.ValFloat {
				a, b := it.At()
				got[i] = append(got[i], seriesiter.Sample{T: a, V: b})
			}
		})
	}
	wg.Wait()
	for i, s := range ss {
		require.Equal(t, alone[s.Labels.Get("__name__")], got[i], s.Labels.String())
	}
}

// TestColumnSize: a column, which every series written to a partition
// has, stays in its 80-byte size class.
func TestColumnSize(t *testing.T) {
	if n := unsafe.Sizeof(column{}); n > 80 {
		t.Errorf("column is %d bytes, over its 80-byte size class", n)
	}
}

// TestMemSeriesSize: a series' struct stays in the 80-byte size class of
// Go's allocator (8 bytes are free there); a field more costs 16 B a
// series.
func TestMemSeriesSize(t *testing.T) {
	if n := unsafe.Sizeof(memSeries{}); n > 80 {
		t.Errorf("memSeries is %d bytes, over its 80-byte size class", n)
	}
}

// TestPendingSorted: the loop answers as slices.IsSortedFunc with
// cmpPending.
func TestPendingSorted(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		ps := make([]pending, r.IntN(6))
		for i := range ps {
			ps[i] = pending{t: int64(r.IntN(3)), slot: model.Slot(r.IntN(3)), idx: i}
		}
		if got, want := pendingSorted(ps), slices.IsSortedFunc(ps, cmpPending); got != want {
			t.Fatalf("%v: %v, want %v", ps, got, want)
		}
	}
}

// TestSortPending: counting sorts, merged runs and sorted fallbacks order
// samples as a sort by cmpPendingIdx does.
func TestSortPending(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var sorter pendingSort
	for range 6000 {
		n := r.IntN(40)
		if r.IntN(10) == 0 {
			n = r.IntN(3000)
		}
		ps := make([]pending, n)
		switch r.IntN(5) {
		case 0: // random
			for i := range ps {
				ps[i] = pending{t: int64(r.IntN(4)), slot: model.Slot(r.IntN(4))}
			}
		case 1: // many times (past byCounting's), wide slots
			for i := range ps {
				ps[i] = pending{t: int64(r.IntN(3 * maxRowTimes)), slot: model.Slot(r.IntN(maxCountSlot + 10))}
			}
		case 2: // series after series, a few scrapes each (remote write)
			for i := range ps {
				ps[i] = pending{t: int64(1000 + 15*(i%(1+n%5))), slot: model.Slot(i / (1 + n%5))}
			}
			r.Shuffle(len(ps)/(1+n%5), func(a, b int) { // series in any order
				k := 1 + n%5
				for j := range k {
					ps[a*k+j], ps[b*k+j] = ps[b*k+j], ps[a*k+j]
				}
			})
		default: // a few sorted runs
			i := 0
			for i < n {
				run := 1 + r.IntN(n)
				t0, s0 := int64(r.IntN(3)), model.Slot(0)
				for k := 0; k < run && i < n; k++ {
					if r.IntN(3) == 0 {
						t0++
						s0 = 0
					} else {
						s0 += model.Slot(r.IntN(2))
					}
					ps[i] = pending{t: t0, slot: s0}
					i++
				}
			}
		}
		for i := range ps {
			ps[i].idx = i
		}
		want := slices.Clone(ps)
		slices.SortFunc(want, cmpPendingIdx)
		sorter.sortPending(ps)
		if !slices.EqualFunc(ps, want, func(a, b pending) bool { return a.t == b.t && a.slot == b.slot && a.idx == b.idx }) {
			t.Fatalf("got %v, want %v", ps, want)
		}
	}
}

// TestSharedTags: the series of a tag-set group keep only their names and
// share the group's tags; every way of reading their labels gives them
// whole, also for a label that sorts before __name__ and for a series that
// moved out of its group.
func TestSharedTags(t *testing.T) {
	h := mustNew(t, Options{MisfitLimit: 2})
	sets := []labels.Labels{
		lbl("__name__", "a", "host", "h1", "x", "1"),
		lbl("__name__", "b", "host", "h1", "x", "1"),
		lbl("Zone", "z", "__name__", "a", "host", "h1"), // Zone sorts before __name__
		lbl("Zone", "z", "__name__", "b", "host", "h1"),
		lbl("__name__", "c", "host", "h1", "x", "1"), // will move
		lbl("host", "h2"), // no name: not split
	}
	for i := int64(0); i < 6; i++ {
		app := h.Appender()
		for k, l := range sets {
			ts := i * 1000
			if k == 4 {
				ts += 500 // c's timestamps never agree with the group's rows
			}
			require.NoError(t, app.Append(l, ts, float64(k)))
		}
		require.NoError(t, app.Commit())
	}
	series := func(l labels.Labels) *memSeries {
		h.regMu.RLock()
		defer h.regMu.RUnlock()
		return h.findLocked(l.Hash(), l)
	}
	a, b := series(sets[0]), series(sets[1])
	require.NotNil(t, a)
	require.NotNil(t, b)
	require.NotNil(t, a.tags, "a's tags are its group's")
	require.Same(t, a.tags, b.tags, "a and b share their tags")
	require.Equal(t, a.own.Get(labels.MetricName), "a")
	require.Nil(t, series(sets[5]).tags, "a series without a name keeps its labels whole")
	c := series(sets[4])
	h.regMu.RLock()
	require.Len(t, h.groupsLocked(c, nil), 2, "c moved")
	require.Len(t, h.groupsLocked(a, nil), 1, "a did not")
	h.regMu.RUnlock()
	for _, l := range sets {
		s := series(l)
		require.NotNil(t, s, "%s found by its labels", l)
		got, ok := h.SeriesLabels(s.ref)
		require.True(t, ok)
		require.True(t, labels.Equal(l, got), "SeriesLabels %s, want %s", got, l)
		hash, ok := h.SeriesHash(s.ref)
		require.True(t, ok)
		require.Equal(t, l.Hash(), hash)
		l.Range(func(lb labels.Label) { require.Equal(t, lb.Value, s.labelValue(lb.Name)) })
		require.Equal(t, "", s.labelValue("nope"))
		ss, err := h.Select(math.MinInt64, math.MaxInt64, matchersOf(l)...)
		require.NoError(t, err)
		require.Len(t, ss, 1, "Select %s", l)
		require.True(t, labels.Equal(l, ss[0].Labels), "Select %s: %s", l, ss[0].Labels)
	}
	// Labels that differ from a series only in a shared tag, or only in
	// its name, are not that series.
	require.Nil(t, series(lbl("__name__", "a", "host", "h1", "x", "2")))
	require.Nil(t, series(lbl("__name__", "d", "host", "h1", "x", "1")))
	require.Nil(t, series(lbl("__name__", "a", "host", "h1")))
	st := h.Index()
	require.Equal(t, len(sets), st.NumSeries())
	require.Equal(t, []string{"Zone", "__name__", "host", "x"}, st.LabelNames(nil))
	require.Equal(t, []string{"h1", "h2"}, st.LabelValues("host", nil))
}

// TestHashCollisions: series whose labels hash alike are told apart.
func TestHashCollisions(t *testing.T) {
	h := mustNew(t, Options{})
	h.regMu.Lock()
	defer h.regMu.Unlock()
	g := h.newGroupLocked(0, "t:x=1,")
	var made []*memSeries
	for i, l := range []labels.Labels{lbl("__name__", "a", "x", "1"), lbl("__name__", "b", "x", "1"), lbl("__name__", "c", "x", "1")} {
		require.Nil(t, h.findLocked(42, l))
		made = append(made, h.newSeriesLocked(model.SeriesRef(i+1), l, 42, g))
	}
	for i, l := range []labels.Labels{lbl("__name__", "a", "x", "1"), lbl("__name__", "b", "x", "1"), lbl("__name__", "c", "x", "1")} {
		require.Same(t, made[i], h.findLocked(42, l))
	}
	require.Len(t, h.byHash.more[42], 2)
	// Same name, other tags; same tags, other name: neither is found.
	require.Nil(t, h.findLocked(42, lbl("__name__", "a", "x", "2")))
	require.Nil(t, h.findLocked(42, lbl("__name__", "d", "x", "1")))
	require.Nil(t, h.findLocked(42, lbl("x", "1")))
}

func matchersOf(l labels.Labels) []*labels.Matcher {
	var ms []*labels.Matcher
	l.Range(func(lb labels.Label) { ms = append(ms, labels.MustNewMatcher(labels.MatchEqual, lb.Name, lb.Value)) })
	return ms
}

// TestSlotIndex: a group's slots are found by a scan up to slotScanMax
// series and by its map beyond, and each series reads back its own values.
func TestSlotIndex(t *testing.T) {
	h := mustNew(t, Options{})
	const width = 3 * slotScanMax
	for i := int64(0); i < 3; i++ {
		app := h.Appender()
		for k := range width {
			require.NoError(t, app.Append(lbl("__name__", fmt.Sprintf("m%02d", k), "host", "a"), i*1000, float64(k)))
		}
		require.NoError(t, app.Commit())
	}
	require.Equal(t, 1, h.NumGroups())
	g := h.groupList()[0]
	require.NotNil(t, g.slotIdx, "a group of %d has its map", width)
	for k := range width {
		name := fmt.Sprintf("m%02d", k)
		got := samplesOf(t, h, name)
		require.Len(t, got, 3, name)
		for _, s := range got {
			require.Equal(t, float64(k), s.V, name)
		}
		g.mu.RLock()
		slot, ok := g.slotOfLocked(g.slots[k])
		g.mu.RUnlock()
		require.True(t, ok)
		require.Equal(t, model.Slot(k), slot)
	}
}

// gateWAL is a head.WAL whose Wait for its first ticket blocks until gate
// is closed.
type gateWAL struct {
	mu      sync.Mutex
	writes  uint64
	waiting chan struct{} // closed when Wait(1) blocks
	gate    chan struct{}
}

func (w *gateWAL) Write(int64, ...[]byte) (uint64, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writes++
	return w.writes, nil
}

func (w *gateWAL) Wait(ticket uint64) error {
	if ticket == 1 {
		close(w.waiting)
		<-w.gate
	}
	return nil
}

// TestCommitWaitsUnlocked: a commit waits for its WAL records' fsync after
// releasing its groups, so a commit into the same group writes, applies
// and returns meanwhile (the two then share an fsync) instead of queueing
// behind it. Both the row path and the general path.
func TestCommitWaitsUnlocked(t *testing.T) {
	for _, rows := range []bool{false, true} {
		w := &gateWAL{waiting: make(chan struct{}), gate: make(chan struct{})}
		h, err := New(Options{}, w)
		require.NoError(t, err)
		l := lbl("__name__", "a", "job", "j")
		gid, _, err := h.Join(l)
		require.NoError(t, err)
		write := func(ts int64) error {
			if rows {
				return h.AppendRow(gid, ts, []float64{1}, []bool{true})
			}
			app := h.Appender()
			if err := app.Append(l, ts, 1); err != nil {
				return err
			}
			return app.Commit()
		}
		first := make(chan error, 1)
		go func() { first <- write(1000) }()
		<-w.waiting
		second := make(chan error, 1)
		go func() { second <- write(2000) }()
		select {
		case err := <-second:
			require.NoError(t, err)
		case <-time.After(10 * time.Second):
			t.Fatalf("rows=%v: the second commit waited for the first's fsync", rows)
		}
		select {
		case <-first:
			t.Fatalf("rows=%v: the first commit returned before its fsync", rows)
		default:
		}
		close(w.gate)
		require.NoError(t, <-first)
		require.Len(t, samplesOf(t, h, "a"), 2)
	}
}
