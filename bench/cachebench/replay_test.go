package cachebench

import (
	"flag"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aerie-db/aerie/internal/cache"
)

// The replay of bench/NOTES.md's TSCache section: a workload's query
// stream through Aerie's cache in this process, answers computed from the
// dataset instead of InfluxDB, and through ideal unbounded caches. Off
// unless -cachebench.replay is given:
//
//	go test -run TestReplay -v ./bench/cachebench/ -args -cachebench.replay=full,small -cachebench.queries=5000 -cachebench.align=0
var (
	replayWorkloads = flag.String("cachebench.replay", "", "workloads to replay (comma-separated); empty: skip")
	replayQueries   = flag.Int("cachebench.queries", 5000, "queries per workload")
	replayShare     = flag.Float64("cachebench.share", 0.1, "cache size as a share of the dataset")
	replaySlab      = flag.Int("cachebench.slab", 0, "slab size (0: aerieSlabSize's)")
	replayAlign     = flag.Int64("cachebench.align", 0, "widen every fetch to multiples of this many seconds (0: fetch what is missing)")
)

func TestReplay(t *testing.T) {
	if *replayWorkloads == "" {
		t.Skip("no -cachebench.replay")
	}
	d := newDataset(Scales["medium"])
	keys := d.Keys()
	size := memcachedMB(int64(float64(d.Bytes())*(*replayShare))) << 20
	slab := *replaySlab
	if slab == 0 {
		slab = aerieSlabSize(size)
	}
	for _, name := range strings.Split(*replayWorkloads, ",") {
		w, ok := workloadNamed(name)
		if !ok {
			t.Fatalf("no workload %q", name)
		}
		qs := Generate(d, w, *replayQueries, 1)
		exact, chunks := idealBounds(qs, keys)
		c, err := cache.Open(cache.Options{Path: filepath.Join(t.TempDir(), "c"), Size: size, SlabSize: slab, PartialMinBytes: aeriePartialMin})
		if err != nil {
			t.Fatal(err)
		}
		ck := make([]cache.Key, len(keys))
		for i, k := range keys {
			ck[i] = cache.KeyOf(k.Statement())
		}
		set := func(q int, lo, hi int64) {
			if a := *replayAlign; a > 0 {
				lo = max(d.Start, lo-((lo%a)+a)%a)
				hi = min(d.End(), hi-((hi%a)+a)%a+a-1)
			}
			if err := c.Set(ck[q], lo, hi, toCacheFields(d.Expected(keys[q], lo, hi))); err != nil && !strings.Contains(err.Error(), "too large") {
				t.Fatal(err)
			}
		}
		var total, cached int64
		for _, q := range qs {
			k := keys[q.Key]
			r, err := c.Get(ck[q.Key], q.Start, q.End, k.Fields)
			if err != nil {
				t.Fatal(err)
			}
			full := d.Expected(k, q.Start, q.End)
			total += full.Bytes()
			got := fromCache(r.Fields, k.Fields)
			cached += got.Bytes()
			switch r.Status {
			case cache.Hit:
				if diff := got.Diff(full); diff != "" {
					t.Fatalf("a hit differs from the data: %s", diff)
				}
			case cache.Partial:
				if r.Start <= q.Start {
					set(q.Key, r.End+1, q.End)
				} else {
					set(q.Key, q.Start, r.Start-1)
				}
			default:
				set(q.Key, q.Start, q.End)
			}
		}
		st := c.Stats()
		t.Logf("%s, %d queries: Aerie's cache (%d slabs of %d KiB) %.1f %% of the bytes (%d evictions); unbounded exact ranges %.1f %%, unbounded 4 h chunks %.1f %%",
			name, len(qs), st.Slabs, slab>>10, 100*float64(cached)/float64(total), st.Evictions, 100*exact, 100*chunks)
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// idealBounds is the share of the stream's values an unbounded cache
// could serve: one holding every range asked before (counting any
// overlap, middle parts too), and one holding every 4 h chunk fetched
// before.
func idealBounds(qs []Query, keys []Key) (exact, chunks float64) {
	const step, unit = 60, 4 * 3600
	type span struct{ lo, hi int64 }
	had := map[int][]span{}
	seen := map[[2]int64]bool{}
	var total, e, ch float64
	for _, q := range qs {
		nf := float64(len(keys[q.Key].Fields))
		total += float64((q.End-q.Start)/step+1) * nf
		for _, r := range had[q.Key] {
			if lo, hi := max(r.lo, q.Start), min(r.hi, q.End); lo <= hi {
				e += float64((hi-lo)/step+1) * nf
			}
		}
		rs := append(had[q.Key], span{q.Start, q.End})
		slices.SortFunc(rs, func(a, b span) int { return int(a.lo - b.lo) })
		merged := rs[:1]
		for _, r := range rs[1:] {
			if l := &merged[len(merged)-1]; r.lo <= l.hi+step {
				l.hi = max(l.hi, r.hi)
			} else {
				merged = append(merged, r)
			}
		}
		had[q.Key] = merged
		for c := q.Start / unit; c <= q.End/unit; c++ {
			id := [2]int64{int64(q.Key), c}
			if seen[id] {
				lo, hi := max(c*unit, q.Start), min(c*unit+unit-1, q.End)
				ch += float64((hi-lo)/step+1) * nf
			}
			seen[id] = true
		}
	}
	return e / total, ch / total
}
