package cache

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/aerie-db/aerie/internal/formatdoc"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestFormatDoc: docs/format/cache.md lists exactly the format constants
// of this package, with their values.
func TestFormatDoc(t *testing.T) {
	formatdoc.Check(t, "../../docs/format/cache.md", ".", "Miss", "Partial", "Hit")
}

func TestKeyRanges(t *testing.T) {
	f := func(ops [][3]int64, want []span) {
		t.Helper()
		var e keyEntry
		for _, op := range ops {
			if op[0] > 0 {
				e.add(op[1], op[2])
			} else {
				e.remove(op[1], op[2])
			}
		}
		require.Equal(t, fmt.Sprint(want), fmt.Sprint(e.ranges))
	}
	f([][3]int64{{1, 10, 20}, {1, 30, 40}}, []span{{10, 20}, {30, 40}})
	f([][3]int64{{1, 10, 20}, {1, 21, 29}, {1, 30, 40}}, []span{{10, 40}}) // touching ranges join
	f([][3]int64{{1, 10, 20}, {1, 30, 40}, {1, 15, 35}}, []span{{10, 40}})
	f([][3]int64{{1, 30, 40}, {1, 10, 20}, {1, 0, 5}}, []span{{0, 5}, {10, 20}, {30, 40}})
	f([][3]int64{{1, 10, 40}, {-1, 20, 30}}, []span{{10, 19}, {31, 40}})
	f([][3]int64{{1, 10, 40}, {-1, 0, 100}}, []span{})
	f([][3]int64{{1, 10, 20}, {1, 30, 40}, {-1, 15, 35}}, []span{{10, 14}, {36, 40}})
	f([][3]int64{{1, minInt64, 0}, {1, 1, maxInt64}}, []span{{minInt64, maxInt64}})
}

func TestCover(t *testing.T) {
	e := keyEntry{ranges: []span{{100, 199}, {300, 399}}, density: 10}
	f := func(start, end, partialMin int64, wantLo, wantHi int64, want Status) {
		t.Helper()
		lo, hi, st := e.cover(start, end, partialMin)
		require.Equal(t, want, st, "%d-%d", start, end)
		if st != Miss {
			require.Equal(t, [2]int64{wantLo, wantHi}, [2]int64{lo, hi})
		}
	}
	f(120, 180, 0, 120, 180, Hit)
	f(100, 199, 0, 100, 199, Hit)
	f(150, 250, 0, 150, 199, Partial) // head covered
	f(250, 350, 0, 300, 350, Partial) // tail covered
	f(150, 350, 0, 300, 350, Partial) // both: the larger (51 ≥ 50)
	f(190, 390, 0, 300, 390, Partial) // both: the tail is larger
	f(200, 299, 0, 0, 0, Miss)        // the middle is never returned
	f(50, 450, 0, 0, 0, Miss)         // the cached part is in the middle
	f(150, 250, 501, 0, 0, Miss)      // 50 units × 10 bytes = 500 bytes: too small
	f(150, 250, 500, 150, 199, Partial)
}

func openTest(t *testing.T, o Options) *Cache {
	t.Helper()
	if o.Path == "" {
		o.Path = filepath.Join(t.TempDir(), "cache")
	}
	if o.Size == 0 {
		o.Size = 16 * 64 << 10
		o.SlabSize = 64 << 10
	}
	c, err := Open(o)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

func TestSetGet(t *testing.T) {
	c := openTest(t, Options{PartialMinBytes: -1})
	k := KeyOf("select mean(v) from m group by time(1m)")
	pts := func(lo, hi int64) []Point {
		var out []Point
		for t := lo; t <= hi; t += 10 {
			out = append(out, Point{T: t, V: []byte(fmt.Sprint(t * 2))})
		}
		return out
	}
	require.NoError(t, c.Set(k, 0, 1000, []Field{{Name: "v", Points: pts(0, 1000)}, {Name: "empty"}}))
	res, err := c.Get(k, 100, 200, nil)
	require.NoError(t, err)
	require.Equal(t, Hit, res.Status)
	require.Equal(t, []Field{{Name: "v", Points: pts(100, 200)}}, res.Fields)

	res, err = c.Get(k, 900, 1100, []string{"v"})
	require.NoError(t, err)
	require.Equal(t, Result{Status: Partial, Start: 900, End: 1000, Fields: []Field{{Name: "v", Points: pts(900, 1000)}}}, res)

	res, err = c.Get(KeyOf("other"), 0, 10, nil)
	require.NoError(t, err)
	require.Equal(t, Miss, res.Status)

	// errors name what is wrong
	require.ErrorContains(t, c.Set(k, 10, 5, nil), "start after end")
	require.ErrorContains(t, c.Set(k, 0, 10, []Field{{Name: "v", Points: []Point{{T: 11}}}}), `field "v" point 0 at 11: outside the set range 0-10`)
	require.ErrorIs(t, c.Set(k, 0, 10, []Field{{Name: "v", Points: []Point{{T: 1, V: make([]byte, 64<<10)}}}}), ErrTooLarge)
	require.ErrorIs(t, c.Set(k, 0, 10, []Field{{Name: string(make([]byte, MaxFieldLen+1))}}), ErrTooLarge)

	require.True(t, c.Delete(k))
	res, err = c.Get(k, 100, 200, nil)
	require.NoError(t, err)
	require.Equal(t, Miss, res.Status)
	require.False(t, c.Delete(k))
}

// TestDeleteHidesOldPoints: points set before a Delete are never returned
// after the key is set again, even where they overlap (invariant 1).
func TestDeleteHidesOldPoints(t *testing.T) {
	c := openTest(t, Options{PartialMinBytes: -1})
	k := KeyOf("q")
	require.NoError(t, c.Set(k, 0, 100, []Field{{Name: "v", Points: []Point{{T: 50, V: []byte("old")}}}}))
	c.Delete(k)
	require.NoError(t, c.Set(k, 0, 100, []Field{{Name: "v", Points: []Point{{T: 50, V: []byte("new")}}}}))
	res, err := c.Get(k, 0, 100, nil)
	require.NoError(t, err)
	require.Equal(t, []Field{{Name: "v", Points: []Point{{T: 50, V: []byte("new")}}}}, res.Fields)
}

// TestPolicy: a re-read old slab moves to the LRU partition and outlives
// newer FIFO slabs; the FIFO evicts its oldest data first.
func TestPolicy(t *testing.T) {
	c := openTest(t, Options{Size: 8 * 64 << 10, SlabSize: 64 << 10, CompactSlabs: 100, PartialMinBytes: -1})
	big := make([]byte, 14000)
	set := func(i int) {
		t.Helper()
		k := KeyOf(fmt.Sprint(i))
		var pts []Point
		for j := range 4 {
			pts = append(pts, Point{T: int64(i*100 + j), V: big})
		}
		require.NoError(t, c.Set(k, int64(i*100), int64(i*100+99), []Field{{Name: "f", Points: pts}}))
	}
	get := func(i int) Status {
		t.Helper()
		res, err := c.Get(KeyOf(fmt.Sprint(i)), int64(i*100), int64(i*100+99), nil)
		require.NoError(t, err)
		return res.Status
	}
	for i := range 6 {
		set(i) // one slab each (sealed when the next one comes)
	}
	require.Equal(t, Hit, get(0)) // in the older half: promoted
	require.Equal(t, 1, c.Stats().LRUSlabs)
	for i := 6; i < 12; i++ {
		set(i)
	}
	require.Equal(t, Hit, get(0), "the promoted slab stays")
	require.NotEqual(t, Hit, get(1), "the oldest FIFO slab went first (the range after its last point stays: nothing is there)")
	require.Positive(t, c.Stats().Evictions)
}

// TestRestart: a clean close keeps the content; a crash empties it.
func TestRestart(t *testing.T) {
	dir := t.TempDir()
	o := Options{Path: filepath.Join(dir, "c"), Size: 8 * 64 << 10, SlabSize: 64 << 10, PartialMinBytes: -1}
	c, err := Open(o)
	require.NoError(t, err)
	k := KeyOf("q")
	want := []Field{{Name: "v", Points: []Point{{T: 5, V: []byte("five")}}}}
	require.NoError(t, c.Set(k, 0, 9, want))
	require.NoError(t, c.Close())

	c, err = Open(o)
	require.NoError(t, err)
	res, err := c.Get(k, 0, 9, nil)
	require.NoError(t, err)
	require.Equal(t, Result{Status: Hit, Start: 0, End: 9, Fields: want}, res)
	c.file.f.Close() // crash

	c, err = Open(o)
	require.NoError(t, err)
	res, err = c.Get(k, 0, 9, nil)
	require.NoError(t, err)
	require.Equal(t, Miss, res.Status)
	require.NoError(t, c.Close())
}

func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := openTest(t, Options{Registerer: reg, Name: "results"})
	_, err := c.Get(KeyOf("q"), 0, 1, nil)
	require.NoError(t, err)
	require.NoError(t, testutil.GatherAndCompare(reg, bytes.NewBufferString(`
# HELP aerie_cache_misses_total Gets that found nothing worth returning.
# TYPE aerie_cache_misses_total counter
aerie_cache_misses_total{cache="results"} 1
`), "aerie_cache_misses_total"))
}

// TestPointLen: pointLen counts the uvarints' bytes as the encoder writes
// them.
func TestPointLen(t *testing.T) {
	for _, n := range []int{0, 1, 127, 128, 16383, 16384, 1<<21 - 1, 1 << 21, 1 << 28} {
		for _, dt := range []uint64{0, 60, 127, 128, 1 << 40, math.MaxUint64} {
			var b, d [binary.MaxVarintLen64]byte
			require.Equal(t, binary.PutUvarint(d[:], dt)+1+binary.PutUvarint(b[:], uint64(n))+n, pointLen(dt, n), "%d %d", dt, n)
		}
	}
}

// TestSortPoints: the natural merge sort orders like a plain sort, over
// inputs made of sorted runs (as a Get gathers them) and random ones.
func TestSortPoints(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for n := range 300 {
		var pts []Point
		switch n % 3 {
		case 0: // a few sorted runs
			for range 1 + rng.IntN(6) {
				var run []Point
				for range rng.IntN(40) {
					run = append(run, Point{T: rng.Int64N(50), V: []byte{byte(rng.IntN(4))}})
				}
				slices.SortFunc(run, pointLess)
				pts = append(pts, run...)
			}
		default: // random
			for range rng.IntN(60) {
				pts = append(pts, Point{T: rng.Int64N(20), V: []byte{byte(rng.IntN(4))}})
			}
		}
		want := slices.Clone(pts)
		slices.SortStableFunc(want, pointLess)
		got := sortPoints(slices.Clone(pts))
		require.Equal(t, len(want), len(got))
		for i := range want {
			require.Zero(t, pointLess(want[i], got[i]), "n=%d i=%d", n, i)
		}
	}
}
