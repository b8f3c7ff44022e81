package cache

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// world is the "database" behind the cache in the model test: each key's
// result is a pure function of the key, the field, the time and the key's
// version, which a Delete (an invalidation after a write) bumps.
type world struct {
	keys    int
	version []int
}

var modelFields = []string{"a", "b", "c"}

func (w *world) key(k int) Key { return KeyOf(fmt.Sprintf("query %d", k)) }

// truth is the result of key k over [lo, hi]: per field, points every
// step (key-dependent); key 0 mod 4 has two points at some timestamps;
// keys of one family (k mod 3) share points while their versions agree.
func (w *world) truth(k int, lo, hi int64) []Field {
	step := int64(7 + k%5)
	var out []Field
	for fi, name := range modelFields {
		if (k+fi)%4 == 3 {
			continue // this key has no such field
		}
		var pts []Point
		for t := (lo + step - 1) / step * step; t <= hi; t += step {
			if t < 0 {
				continue
			}
			// padded so that the sets fill slabs enough to evict and
			// compact (the time deltas take a byte or two a point)
			v := fmt.Sprintf("%s|%d|fam%d|v%d|%024d", name, t, k%3, w.version[k], t)
			pts = append(pts, Point{T: t, V: []byte(v)})
			if k%4 == 0 && t%3 == 0 {
				pts = append(pts, Point{T: t, V: []byte(v + "+second")})
			}
		}
		slices.SortFunc(pts, func(a, b Point) int { return bytes.Compare(a.V, b.V) })
		if len(pts) > 0 {
			out = append(out, Field{Name: name, Points: pts})
		}
	}
	return out
}

func sortedFields(fs []Field) []Field {
	for _, f := range fs {
		slices.SortFunc(f.Points, func(a, b Point) int {
			if a.T != b.T {
				if a.T < b.T {
					return -1
				}
				return 1
			}
			return bytes.Compare(a.V, b.V)
		})
	}
	return fs
}

// checkGet checks a Get's answer against the world: a hit holds exactly
// the truth of the range, a partial hit exactly the truth of its head or
// tail and nothing else.
func (w *world) checkGet(t *testing.T, k int, lo, hi int64, res Result) {
	t.Helper()
	switch res.Status {
	case Miss:
		require.Empty(t, res.Fields)
		return
	case Hit:
		require.Equal(t, lo, res.Start)
		require.Equal(t, hi, res.End)
	case Partial:
		require.True(t, (res.Start == lo && res.End < hi) || (res.End == hi && res.Start > lo), "partial %d-%d of %d-%d", res.Start, res.End, lo, hi)
		require.LessOrEqual(t, res.Start, res.End)
	}
	want := sortedFields(w.truth(k, res.Start, res.End))
	require.Equal(t, fmtFields(want), fmtFields(res.Fields), "key %d %s %d-%d (asked %d-%d)", k, res.Status, res.Start, res.End, lo, hi)
}

func fmtFields(fs []Field) string {
	var b bytes.Buffer
	for _, f := range fs {
		fmt.Fprintf(&b, "%s:", f.Name)
		for _, p := range f.Points {
			fmt.Fprintf(&b, " %d=%s", p.T, p.V)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// TestModel runs random sets, gets, deletes, compactions, clean restarts,
// crashes and corruptions against the world: whatever the cache answers
// is the truth of the range it claims (invariants 1-5).
func TestModel(t *testing.T) {
	for _, tc := range []struct {
		name    string
		opts    Options
		ops     int
		noEvict bool // the cache is large enough never to evict: every set range must hit
	}{
		{name: "small cache", opts: Options{Size: 8 * 64 << 10, SlabSize: 64 << 10, CompactSlabs: 2, PartialMinBytes: -1, NoDirectIO: true}, ops: 3000},
		{name: "few keys per slab", opts: Options{Size: 16 * 64 << 10, SlabSize: 64 << 10, MaxKeysPerSlab: 3, CompactSlabs: 4, PartialMinBytes: 2000, NoDirectIO: true, KeepCoveredPoints: true}, ops: 3000},
		{name: "no eviction", opts: Options{Size: 256 * 64 << 10, SlabSize: 64 << 10, CompactSlabs: 3, PartialMinBytes: -1, NoDirectIO: true}, ops: 2000, noEvict: true},
		{name: "direct io", opts: Options{Size: 10 * 64 << 10, SlabSize: 64 << 10, CompactSlabs: 2, PartialMinBytes: -1}, ops: 1500},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if testing.Short() {
				tc.ops /= 3
			}
			runModel(t, tc.opts, tc.ops, tc.noEvict, 1)
		})
	}
}

func runModel(t *testing.T, opts Options, ops int, noEvict bool, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 7))
	dir := t.TempDir()
	opts.Path = filepath.Join(dir, "cache")
	w := &world{keys: 12, version: make([]int, 12)}
	c, err := Open(opts)
	require.NoError(t, err)
	defer func() { c.Close() }()
	set := make([][]span, w.keys) // for noEvict: the ranges set since the key's last delete
	const horizon = 20000
	randRange := func() (int64, int64) {
		lo := rng.Int64N(horizon)
		return lo, lo + rng.Int64N(min(3000, horizon-lo)+1)
	}
	var hits, partials int
	var evictions, compactions uint64
	tally := func() {
		st := c.Stats()
		evictions += st.Evictions
		compactions += st.Compactions
	}
	for op := 0; op < ops; op++ {
		k := rng.IntN(w.keys)
		switch x := rng.IntN(100); {
		case x < 40: // set
			lo, hi := randRange()
			require.NoError(t, c.Set(w.key(k), lo, hi, w.truth(k, lo, hi)))
			set[k] = append(set[k], span{lo, hi})
		case x < 85: // get: often inside or across a range set before
			lo, hi := randRange()
			if n := len(set[k]); n > 0 && rng.IntN(3) > 0 {
				r := set[k][rng.IntN(n)]
				lo = r.lo + rng.Int64N(r.hi-r.lo+1)
				hi = lo + rng.Int64N(r.hi-lo+1)
				if rng.IntN(3) == 0 { // past the tail or before the head
					hi += rng.Int64N(2000)
				} else if rng.IntN(2) == 0 {
					lo -= rng.Int64N(2000)
				}
			}
			var fields []string
			if rng.IntN(3) == 0 {
				fields = []string{modelFields[rng.IntN(3)]}
			}
			res, err := c.Get(w.key(k), lo, hi, fields)
			require.NoError(t, err)
			if fields != nil {
				res.Fields = slices.DeleteFunc(res.Fields, func(f Field) bool { return f.Name != fields[0] })
				wantAll := w.truth(k, res.Start, res.End)
				wantAll = slices.DeleteFunc(wantAll, func(f Field) bool { return f.Name != fields[0] })
				if res.Status != Miss {
					require.Equal(t, fmtFields(sortedFields(wantAll)), fmtFields(res.Fields))
				}
			} else {
				w.checkGet(t, k, lo, hi, res)
			}
			if noEvict {
				for _, r := range set[k] {
					if r.lo <= lo && hi <= r.hi {
						require.Equal(t, Hit, res.Status, "key %d %d-%d inside the set range %d-%d", k, lo, hi, r.lo, r.hi)
					}
				}
			}
			switch res.Status {
			case Hit:
				hits++
			case Partial:
				partials++
			}
		case x < 90: // the database changed under key k: invalidate
			w.version[k]++
			c.Delete(w.key(k))
			set[k] = nil
		case x < 93:
			require.NoError(t, c.Compact())
		case x < 96: // clean restart
			tally()
			require.NoError(t, c.Close())
			c, err = Open(opts)
			require.NoError(t, err)
		case x < 98: // crash: the file stays, the process did not close
			tally()
			c.file.f.Close()
			c, err = Open(opts)
			require.NoError(t, err)
			require.Zero(t, c.Stats().Keys, "a crashed cache starts empty")
			set = make([][]span, w.keys)
		case noEvict: // a dropped corrupt slab may take ranges set after the corruption along
		default: // corruption of the file between runs
			tally()
			require.NoError(t, c.Close())
			corrupt(t, opts.Path, rng)
			c, err = Open(opts)
			require.NoError(t, err)
			set = make([][]span, w.keys) // a corrupt slab may drop ranges
		}
	}
	tally()
	t.Logf("hits %d partial %d evictions %d compactions %d; last %+v", hits, partials, evictions, compactions, c.Stats())
	require.Positive(t, hits)
	if !noEvict {
		require.Positive(t, evictions)
	}
	require.Positive(t, compactions)
}

// corrupt flips a few bytes of a used part of the file.
func corrupt(t *testing.T, path string, rng *rand.Rand) {
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	for range 1 + rng.IntN(4) {
		i := rng.IntN(len(b))
		for b[i] == 0 && rng.IntN(50) > 0 { // prefer written bytes
			i = rng.IntN(len(b))
		}
		b[i] ^= byte(1 + rng.IntN(255))
	}
	require.NoError(t, os.WriteFile(path, b, 0o644))
}

// TestConcurrent runs sets and gets of several goroutines on a small
// cache (evictions and compactions under way while Gets read without the
// lock): every answer is still the truth of the range it claims.
func TestConcurrent(t *testing.T) {
	c, err := Open(Options{Path: filepath.Join(t.TempDir(), "c"), Size: 10 * 64 << 10, SlabSize: 64 << 10, CompactSlabs: 2, PartialMinBytes: -1})
	require.NoError(t, err)
	defer c.Close()
	w := &world{keys: 12, version: make([]int, 12)} // read-only here: no deletes
	ops := 1500
	if testing.Short() {
		ops = 400
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for g := range 4 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 9))
			for range ops {
				k := rng.IntN(w.keys)
				lo := rng.Int64N(20000)
				hi := lo + rng.Int64N(3000)
				if rng.IntN(2) == 0 {
					if err := c.Set(w.key(k), lo, hi, w.truth(k, lo, hi)); err != nil {
						errs <- err
						return
					}
					continue
				}
				res, err := c.Get(w.key(k), lo, hi, nil)
				if err != nil {
					errs <- err
					return
				}
				if res.Status == Miss {
					continue
				}
				if got, want := fmtFields(res.Fields), fmtFields(sortedFields(w.truth(k, res.Start, res.End))); got != want {
					errs <- fmt.Errorf("key %d %s %d-%d: got\n%s\nwant\n%s", k, res.Status, res.Start, res.End, got, want)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	st := c.Stats()
	require.Positive(t, st.Evictions)
	require.Positive(t, st.Hits+st.Partials)
}
