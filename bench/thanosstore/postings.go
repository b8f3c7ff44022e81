package thanosstore

import (
	"cmp"
	"context"
	"encoding/binary"
	"hash/crc32"
	"slices"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/index"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// postingGroup is what the matchers on one label name contribute, Thanos'
// postingGroup: with addAll false, the union of the postings of keys; with
// addAll true, every series except those in the postings of keys.
type postingGroup struct {
	addAll bool
	keys   []postingsRange
}

// postingGroups turns ms into posting groups, one per label name, holding
// only keys the block has (Thanos' matchersToPostingGroups, with the merge of
// several matchers on one name done by testing each value against all of
// them). It returns ok false when some group selects nothing, so no series
// can match and nothing needs fetching.
func (h *indexHeader) postingGroups(ms []*labels.Matcher) (groups []postingGroup, ok bool) {
	byName := make(map[string][]*labels.Matcher)
	var names []string
	for _, m := range ms {
		if _, seen := byName[m.Name]; !seen {
			names = append(names, m.Name)
		}
		byName[m.Name] = append(byName[m.Name], m)
	}
	slices.Sort(names)

	hasAdd := false
	for _, name := range names {
		g, ok := h.postingGroup(name, byName[name])
		if !ok {
			return nil, false
		}
		if g.addAll && len(g.keys) == 0 {
			continue // selects every series
		}
		hasAdd = hasAdd || !g.addAll
		groups = append(groups, g)
	}
	if !hasAdd {
		// Only negative matchers: subtract from all series, as Thanos does
		// by adding the all-postings key.
		all, ok := h.lookup(index.AllPostingsKey())
		if !ok {
			return nil, false
		}
		groups = append(groups, postingGroup{keys: []postingsRange{all}})
	}
	return groups, true
}

// postingGroup builds the group of the matchers ms on label name.
func (h *indexHeader) postingGroup(name string, ms []*labels.Matcher) (postingGroup, bool) {
	matchAll := func(v string) bool {
		for _, m := range ms {
			if !m.Matches(v) {
				return false
			}
		}
		return true
	}

	if matchAll("") {
		// Series without the label match; keep all but the values that
		// do not.
		g := postingGroup{addAll: true}
		for _, r := range h.postings[name] {
			if !matchAll(r.value) {
				g.keys = append(g.keys, r)
			}
		}
		return g, true
	}

	var g postingGroup
	for _, m := range ms {
		if m.Type == labels.MatchEqual {
			// One value at most can match; no need to walk the values.
			if r, ok := h.lookup(name, m.Value); ok && matchAll(r.value) {
				g.keys = append(g.keys, r)
			}
			return g, len(g.keys) > 0
		}
	}
	for _, r := range h.postings[name] {
		if matchAll(r.value) {
			g.keys = append(g.keys, r)
		}
	}
	return g, len(g.keys) > 0
}

// expandedPostings fetches the postings lists of groups in one phase and
// returns the series they select, as index offsets of the series entries
// (Thanos' ExpandedPostings without its index cache).
func (b *Block) expandedPostings(ctx context.Context, groups []postingGroup) ([]int64, error) {
	type fetch struct {
		rng  postingsRange
		list []storage.SeriesRef
	}
	var fetches []*fetch
	slots := make([][]*fetch, len(groups))
	for i, g := range groups {
		for _, r := range g.keys {
			f := &fetch{rng: r}
			fetches = append(fetches, f)
			slots[i] = append(slots[i], f)
		}
	}
	slices.SortFunc(fetches, func(a, b *fetch) int { return cmp.Compare(a.rng.start, b.rng.start) })

	name := b.hdr.name
	parts := partition(len(fetches), b.maxGap, func(i int) (int64, int64) {
		return fetches[i].rng.start, fetches[i].rng.end
	})
	err := runPhase(ctx, b.stats, len(parts), func(ctx context.Context, i int) (int, error) {
		p := parts[i]
		buf, err := getRange(ctx, b.bkt, name, p.start, p.end-p.start, &b.stats.Gets, &b.stats.BytesFetched)
		if err != nil {
			return 1, err
		}
		for _, f := range fetches[p.first:p.last] {
			if f.list, err = decodePostings(name, buf, p.start, f.rng); err != nil {
				return 1, err
			}
		}
		return 1, nil
	})
	if err != nil {
		return nil, err
	}

	var adds, removes []index.Postings
	for i, g := range groups {
		var ps []index.Postings
		for _, f := range slots[i] {
			ps = append(ps, index.NewListPostings(f.list))
		}
		if g.addAll {
			removes = append(removes, ps...)
		} else {
			adds = append(adds, index.Merge(ctx, ps...))
		}
	}
	p := index.Intersect(adds...)
	if len(removes) > 0 {
		p = index.Without(p, index.Merge(ctx, removes...))
	}
	refs, err := index.ExpandPostings(p)
	if err != nil {
		return nil, err
	}

	// Index format v2 and later pad series entries to 16 bytes and
	// reference them by offset/16.
	offs := make([]int64, len(refs))
	for i, ref := range refs {
		offs[i] = int64(ref) * 16
	}
	return offs, nil
}

// decodePostings decodes the postings list at r from buf, which holds the
// object name from offset bufOff on. A list is its length (4 bytes), the
// entry count (4 bytes), the entries (4 bytes each, ascending) and a CRC32C
// of count and entries.
func decodePostings(name string, buf []byte, bufOff int64, r postingsRange) ([]storage.SeriesRef, error) {
	lo, hi := r.start-bufOff, r.end-bufOff
	if hi > int64(len(buf)) {
		return nil, corruptf(name, r.start, "postings list of value %q: object ends at %d, before the list's range ends at %d",
			r.value, bufOff+int64(len(buf)), r.end)
	}
	b := buf[lo:hi]
	if len(b) < 4 {
		return nil, corruptf(name, r.start, "postings list of value %q: %d bytes cannot hold its length", r.value, len(b))
	}
	l := int64(binary.BigEndian.Uint32(b))
	if 4+l+crc32.Size > int64(len(b)) {
		return nil, corruptf(name, r.start, "postings list of value %q: length %d runs past its range of %d bytes", r.value, l, len(b))
	}
	data := b[4 : 4+l]
	if want, got := binary.BigEndian.Uint32(b[4+l:]), crc32.Checksum(data, castagnoli); want != got {
		return nil, corruptf(name, r.start, "postings list of value %q: checksum %#x, want %#x", r.value, got, want)
	}
	if len(data) < 4 {
		return nil, corruptf(name, r.start, "postings list of value %q: %d bytes cannot hold its count", r.value, len(data))
	}
	n := int64(binary.BigEndian.Uint32(data))
	if int64(len(data)) != 4+4*n {
		return nil, corruptf(name, r.start, "postings list of value %q: %d entries in %d bytes", r.value, n, len(data)-4)
	}
	refs := make([]storage.SeriesRef, n)
	for i := range refs {
		refs[i] = storage.SeriesRef(binary.BigEndian.Uint32(data[4+4*i:]))
		if i > 0 && refs[i] <= refs[i-1] {
			return nil, corruptf(name, r.start, "postings list of value %q: entry %d (%d) not above the one before", r.value, i, refs[i])
		}
	}
	return refs, nil
}
