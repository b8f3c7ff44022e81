package cache

import (
	"slices"
	"sort"
)

// span is an inclusive time range.
type span struct{ lo, hi int64 }

// keyEntry is the key index's entry of a key (TSCache §3.5): the time
// ranges whose data are cached, ordered, disjoint and not touching (an
// ordered slice searched by bisection: the skip list's job with less
// memory per range), the fields seen, and the data density for the size
// estimate of partial hits.
type keyEntry struct {
	epoch   uint64 // slab key entries of another epoch are not this key's
	ranges  []span
	fields  []string // sorted
	density float64  // bytes per time unit, of the latest Set
	used    uint64   // access tick, for the key cap
}

// find returns the index of the range holding t, or -1.
func (e *keyEntry) find(t int64) int {
	i := sort.Search(len(e.ranges), func(i int) bool { return e.ranges[i].hi >= t })
	if i < len(e.ranges) && e.ranges[i].lo <= t {
		return i
	}
	return -1
}

// add merges [lo, hi] into the ranges, joining overlapping and touching
// ones.
func (e *keyEntry) add(lo, hi int64) {
	i := sort.Search(len(e.ranges), func(i int) bool { return lo == minInt64 || e.ranges[i].hi >= lo-1 })
	j := i
	for j < len(e.ranges) && (e.ranges[j].lo <= hi || e.ranges[j].lo-1 == hi) {
		lo, hi = min(lo, e.ranges[j].lo), max(hi, e.ranges[j].hi)
		j++
	}
	e.ranges = slices.Replace(e.ranges, i, j, span{lo, hi})
}

// remove takes [lo, hi] out of the ranges.
func (e *keyEntry) remove(lo, hi int64) {
	out := e.ranges[:0:0]
	for _, r := range e.ranges {
		if r.hi < lo || r.lo > hi {
			out = append(out, r)
			continue
		}
		if r.lo < lo {
			out = append(out, span{r.lo, lo - 1})
		}
		if r.hi > hi {
			out = append(out, span{hi + 1, r.hi})
		}
	}
	e.ranges = out
}

// addField records a field name.
func (e *keyEntry) addField(name string) {
	i, ok := slices.BinarySearch(e.fields, name)
	if !ok {
		e.fields = slices.Insert(e.fields, i, name)
	}
}

const (
	maxInt64 = int64(^uint64(0) >> 1)
	minInt64 = -maxInt64 - 1
)
