package index

import (
	"slices"
	"strings"
	"sync"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/prometheus/prometheus/model/labels"
)

// MemIndex is the mutable index of the head: series ref → labels, and
// postings name → value → series refs. It is safe for concurrent use:
// appenders Add and Delete while queries read.
//
// A MemIndex made by NewMemIndexOf keeps no labels of its own: it asks its
// Labeler (the head's registry, which holds every series' labels anyway),
// so a series' labels are not kept twice. The postings' names and values
// are copies, never substrings of the labels they came from.
type MemIndex struct {
	labeler Labeler // nil: series holds the labels

	mu       sync.RWMutex // guards the following
	series   map[uint32]labels.Labels
	postings map[string]map[string]*roaring.Bitmap // no empty bitmaps or maps
	all      *roaring.Bitmap
}

// Labeler holds the labels of the series a MemIndex of NewMemIndexOf
// indexes. A ref's labels never change while it is indexed.
type Labeler interface {
	// IndexLabels returns ref's labels and whether ref is a series.
	IndexLabels(ref uint32) (labels.Labels, bool)
	// IndexLabelValue returns ref's value of label name ("" if none) and
	// whether ref is a series, without allocating.
	IndexLabelValue(ref uint32, name string) (string, bool)
}

// NewMemIndex returns an empty MemIndex that keeps the labels it is given.
func NewMemIndex() *MemIndex {
	return &MemIndex{
		series:   map[uint32]labels.Labels{},
		postings: map[string]map[string]*roaring.Bitmap{},
		all:      roaring.New(),
	}
}

// NewMemIndexOf returns an empty MemIndex that reads the labels of its
// series from l.
func NewMemIndexOf(l Labeler) *MemIndex {
	m := NewMemIndex()
	m.labeler, m.series = l, nil
	return m
}

// labelsLocked returns the labels ref was indexed with. Called with mu
// held.
func (m *MemIndex) labelsLocked(ref uint32) (labels.Labels, bool) {
	if m.labeler == nil {
		lset, ok := m.series[ref]
		return lset, ok
	}
	if !m.all.Contains(ref) {
		return labels.EmptyLabels(), false
	}
	lset, ok := m.labeler.IndexLabels(ref)
	return canonicalLabels(lset), ok
}

// Add indexes series ref with labels lset. Labels with empty values are
// dropped, as Prometheus' head does. Adding a ref again with other labels
// replaces the old ones.
func (m *MemIndex) Add(ref uint32, lset labels.Labels) {
	lset = canonicalLabels(lset)
	m.mu.Lock()
	defer m.mu.Unlock()
	if old, ok := m.labelsLocked(ref); ok {
		if labels.Equal(old, lset) {
			return
		}
		m.deleteLocked(ref, old)
	}
	if m.labeler == nil {
		m.series[ref] = lset
	}
	m.all.Add(ref)
	lset.Range(func(l labels.Label) {
		vals := m.postings[l.Name]
		if vals == nil {
			vals = map[string]*roaring.Bitmap{}
			m.postings[strings.Clone(l.Name)] = vals
		}
		p := vals[l.Value]
		if p == nil {
			p = roaring.New()
			vals[strings.Clone(l.Value)] = p
		}
		p.Add(ref)
	})
}

// Delete removes series ref; it is a no-op for an unknown ref.
func (m *MemIndex) Delete(ref uint32) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if lset, ok := m.labelsLocked(ref); ok {
		m.deleteLocked(ref, lset)
	}
}

func (m *MemIndex) deleteLocked(ref uint32, lset labels.Labels) {
	if m.labeler == nil {
		delete(m.series, ref)
	}
	m.all.Remove(ref)
	lset.Range(func(l labels.Label) {
		vals := m.postings[l.Name]
		p := vals[l.Value]
		p.Remove(ref)
		if p.IsEmpty() {
			delete(vals, l.Value)
			if len(vals) == 0 {
				delete(m.postings, l.Name)
			}
		}
	})
}

// Labels returns the labels of series ref.
func (m *MemIndex) Labels(ref uint32) (labels.Labels, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.labelsLocked(ref)
}

// NumSeries returns the number of indexed series.
func (m *MemIndex) NumSeries() int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return int(m.all.GetCardinality())
}

// AllPostings returns the refs of all series. The caller owns the result.
func (m *MemIndex) AllPostings() *roaring.Bitmap {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.all.Clone()
}

// Postings returns the series with label name set to any of values. The
// caller owns the result.
func (m *MemIndex) Postings(name string, values ...string) *roaring.Bitmap {
	m.mu.RLock()
	defer m.mu.RUnlock()
	vals := m.postings[name]
	var ps []*roaring.Bitmap
	for _, v := range values {
		if p := vals[v]; p != nil {
			ps = append(ps, p)
		}
	}
	return union(ps)
}

// EqualPostings returns the series with every label ms[i].Name set to
// ms[i].Value (the matchers' types are not looked at). It copies the
// shortest postings list and intersects the others with it, so a query for
// one series of a large job allocates next to nothing. The caller owns the
// result.
func (m *MemIndex) EqualPostings(ms []*labels.Matcher) *roaring.Bitmap {
	m.mu.RLock()
	defer m.mu.RUnlock()
	ps := make([]*roaring.Bitmap, len(ms))
	short := 0
	for i, mt := range ms {
		ps[i] = m.postings[mt.Name][mt.Value]
		if ps[i] == nil {
			return roaring.New()
		}
		if ps[i].GetCardinality() < ps[short].GetCardinality() {
			short = i
		}
	}
	res := ps[short].Clone()
	for i, p := range ps {
		if i != short {
			res.And(p)
			if res.IsEmpty() {
				break
			}
		}
	}
	return res
}

// EqualRefs appends to dst, ascending, the series with every label
// ms[i].Name set to ms[i].Value, and reports true, when every matcher is an
// equality with a non-empty value (the common query for known series);
// otherwise it returns dst, false and the caller uses Select. The result is
// Select's, without building a bitmap: it walks the shortest postings list
// and keeps the refs the others contain.
func (m *MemIndex) EqualRefs(dst []uint32, ms []*labels.Matcher) ([]uint32, bool) {
	if len(ms) == 0 || len(ms) > 8 {
		return dst, false
	}
	for _, mt := range ms {
		if mt.Type != labels.MatchEqual || mt.Value == "" {
			return dst, false
		}
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	var ps [8]*roaring.Bitmap
	short := 0
	for i, mt := range ms {
		ps[i] = m.postings[mt.Name][mt.Value]
		if ps[i] == nil {
			return dst, true
		}
		if ps[i].GetCardinality() < ps[short].GetCardinality() {
			short = i
		}
	}
	others := ps[:len(ms)]
	ps[short].Iterate(func(x uint32) bool {
		for i, p := range others {
			if i != short && !p.Contains(x) {
				return true
			}
		}
		dst = append(dst, x)
		return true
	})
	return dst, true
}

// PostingsForLabelMatching returns the series whose label name is set to a
// value for which match returns true. match runs under the read lock and
// must not call back into m.
func (m *MemIndex) PostingsForLabelMatching(name string, match func(value string) bool) *roaring.Bitmap {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var ps []*roaring.Bitmap
	for v, p := range m.postings[name] {
		if match(v) {
			ps = append(ps, p)
		}
	}
	return union(ps)
}

// LabelNames returns the sorted label names of the series in ids, or of all
// series when ids is nil.
func (m *MemIndex) LabelNames(ids *roaring.Bitmap) []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var out []string
	if ids == nil {
		for name := range m.postings {
			out = append(out, name)
		}
		slices.Sort(out)
		return out
	}
	seen := map[string]struct{}{}
	it := ids.Iterator()
	for it.HasNext() {
		lset, _ := m.labelsLocked(it.Next())
		lset.Range(func(l labels.Label) { seen[l.Name] = struct{}{} })
	}
	for name := range seen {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// LabelValues returns the sorted values of label name among the series in
// ids, or among all series when ids is nil.
func (m *MemIndex) LabelValues(name string, ids *roaring.Bitmap) []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var out []string
	for v, p := range m.postings[name] {
		if ids == nil || p.Intersects(ids) {
			out = append(out, v)
		}
	}
	slices.Sort(out)
	return out
}

// LabelValue returns series ref's value of label name ("" if it has none)
// and whether the index holds ref.
func (m *MemIndex) LabelValue(ref uint32, name string) (string, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.labeler == nil {
		lset, ok := m.series[ref]
		return lset.Get(name), ok
	}
	if !m.all.Contains(ref) {
		return "", false
	}
	return m.labeler.IndexLabelValue(ref, name)
}
