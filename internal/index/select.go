package index

import (
	"cmp"
	"errors"
	"math"
	"slices"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/prometheus/prometheus/model/labels"
)

// Reader is what matching needs from an index. BlockIndex and MemIndex
// implement it. Every bitmap returned is owned by the caller, never nil, and
// holds series ids (local ids of a block, refs of the head).
type Reader interface {
	// AllPostings returns every series.
	AllPostings() *roaring.Bitmap
	// Postings returns the series with label name set to any of values.
	Postings(name string, values ...string) *roaring.Bitmap
	// PostingsForLabelMatching returns the series whose label name is set to
	// a value for which match returns true.
	PostingsForLabelMatching(name string, match func(value string) bool) *roaring.Bitmap
	// LabelValues returns the sorted values of name among ids (nil: all series).
	LabelValues(name string, ids *roaring.Bitmap) []string
	// LabelNames returns the sorted label names among ids (nil: all series).
	LabelNames(ids *roaring.Bitmap) []string
}

var (
	_ Reader      = (*BlockIndex)(nil)
	_ Reader      = (*MemIndex)(nil)
	_ valueReader = (*BlockIndex)(nil)
	_ valueReader = (*MemIndex)(nil)
)

// valueReader is implemented by indexes that tell one series' value of a
// label: Select tests a few candidate series' values against a matcher
// rather than uniting the postings of every value it accepts.
type valueReader interface {
	// LabelValue returns series id's value of label name ("" if it has
	// none) and whether id is a series of the index.
	LabelValue(id uint32, name string) (string, bool)
}

// filterBelow is the most candidates Select tests one by one against a
// matcher (valueReader) instead of reading the matcher's postings: a
// postings list of a common value or the union of a set of values
// (TSBS's ten metric names over 250 hosts: 2,500 series, per block) costs
// far more than a label lookup for each of a few candidates. A variable
// for the tests.
var filterBelow uint64 = 64

// errAllPostings mirrors Prometheus, which refuses a matcher with empty name
// and value unless it is the only one.
var errAllPostings = errors.New("unexpected all postings")

// Select returns the series that match all of ms, with Prometheus' semantics
// (tsdb.PostingsForMatchers): a missing label has the empty value, so a
// matcher that matches "" also selects series without the label; no matchers
// select nothing; a single matcher with empty name and value selects all.
//
// Against a MemIndex that changes during the call, the result holds every
// matching series that existed throughout, no series added during the call
// unless it matches, and possibly series deleted during the call: callers
// resolve refs with Labels and skip the missing ones, as with Prometheus'
// head.
func Select(r Reader, ms ...*labels.Matcher) (*roaring.Bitmap, error) {
	if len(ms) == 0 {
		return roaring.New(), nil
	}
	if len(ms) == 1 && ms[0].Name == "" && ms[0].Value == "" {
		return r.AllPostings(), nil
	}

	// A name with a matcher that rejects "" must be set on every result.
	mustBeSet := make(map[string]bool, len(ms))
	for _, m := range ms {
		if !m.Matches("") {
			mustBeSet[m.Name] = true
		}
	}
	// Intersecting matchers narrow the result to series that have the label
	// with a matching value; subtracting ones remove series that have the
	// label with a value they reject. Prometheus evaluates intersecting
	// matchers first, each in input order; so do we, so that early returns
	// and errors agree.
	var inter, sub []*labels.Matcher
	for _, m := range ms {
		if !mustBeSet[m.Name] || (isNegative(m) && m.Matches("")) {
			sub = append(sub, m)
		} else {
			inter = append(inter, m)
		}
	}

	// The equalities first (one postings list each; the rest may then
	// test few candidates), unless Prometheus' error for an empty name
	// and value is due in input order.
	if len(inter) > 1 && !slices.ContainsFunc(inter, emptyMatcher) {
		costs := make(map[*labels.Matcher]int, len(inter))
		for _, m := range inter {
			costs[m] = matcherCost(m)
		}
		slices.SortStableFunc(inter, func(a, b *labels.Matcher) int { return cmp.Compare(costs[a], costs[b]) })
	}
	vr, _ := r.(valueReader)

	var res *roaring.Bitmap
	if len(inter) == 0 {
		res = r.AllPostings()
	}
	if ei, ok := r.(equalIntersecter); ok && len(inter) > 1 && allEqual(inter) {
		res = ei.EqualPostings(inter)
		if res.IsEmpty() {
			return res, nil
		}
		inter = nil
	}
	for _, m := range inter {
		if emptyMatcher(m) {
			return nil, errAllPostings
		}
		switch {
		case res == nil:
			res = valuePostings(r, m, false)
		case vr != nil && res.GetCardinality() <= filterBelow:
			// A series lacking the label is not selected: the index
			// holds no empty values (invariant 6).
			filter(vr, res, m.Name, func(v string) bool { return v != "" && m.Matches(v) })
		default:
			res.And(valuePostings(r, m, false))
		}
		if res.IsEmpty() {
			return res, nil
		}
	}
	for _, m := range sub {
		if emptyMatcher(m) {
			return nil, errAllPostings
		}
		switch {
		case m.Type == labels.MatchRegexp && m.Value == ".*":
			// Rejects nothing.
		case vr != nil && res.GetCardinality() <= filterBelow:
			// m accepts "" (a subtracting matcher): a series lacking
			// the label stays.
			filter(vr, res, m.Name, m.Matches)
		default:
			res.AndNot(valuePostings(r, m, true))
		}
	}
	return res, nil
}

// filter removes from ids the series whose value of label name keep
// rejects, and those the index no longer holds (a head series deleted
// meanwhile, which invariant 8 lets Select return or not).
func filter(vr valueReader, ids *roaring.Bitmap, name string, keep func(value string) bool) {
	var buf [64]uint32
	drop := buf[:0]
	for it := ids.Iterator(); it.HasNext(); {
		id := it.Next()
		if v, ok := vr.LabelValue(id, name); !ok || !keep(v) {
			drop = append(drop, id)
		}
	}
	for _, id := range drop {
		ids.Remove(id)
	}
}

func emptyMatcher(m *labels.Matcher) bool { return m.Name == "" && m.Value == "" }

// matcherCost orders intersecting matchers by the postings lists they
// read: an equality one, a set of values one each (Grafana's `=~"$host"`
// of one value is an equality), any other regexp tests every value of its
// label.
func matcherCost(m *labels.Matcher) int {
	switch {
	case m.Type == labels.MatchEqual:
		return 1
	case m.Type == labels.MatchRegexp:
		if n := len(m.SetMatches()); n > 0 {
			return n
		}
	}
	return math.MaxInt
}

// equalIntersecter is implemented by indexes that intersect equality
// matchers without copying every postings list: the head's MemIndex copies
// only the shortest and intersects the others with it in place. The result
// is the same as Select's matcher by matcher.
type equalIntersecter interface {
	// EqualPostings returns the series having every label ms[i].Name set to
	// ms[i].Value; the caller owns the result.
	EqualPostings(ms []*labels.Matcher) *roaring.Bitmap
}

func allEqual(ms []*labels.Matcher) bool {
	for _, m := range ms {
		if m.Type != labels.MatchEqual {
			return false
		}
	}
	return true
}

func isNegative(m *labels.Matcher) bool {
	return m.Type == labels.MatchNotEqual || m.Type == labels.MatchNotRegexp
}

// valuePostings returns the series that have label m.Name with a value m
// accepts or, rejecting, with a value m rejects. Where those values are
// m's own (an equality or a regexp of a set of values; negated ones when
// rejecting) they are looked up; otherwise every value of the label is
// tested.
func valuePostings(r Reader, m *labels.Matcher, rejecting bool) *roaring.Bitmap {
	if isNegative(m) == rejecting {
		switch m.Type {
		case labels.MatchEqual, labels.MatchNotEqual:
			return r.Postings(m.Name, m.Value)
		case labels.MatchRegexp, labels.MatchNotRegexp:
			if set := m.SetMatches(); len(set) > 0 {
				return r.Postings(m.Name, set...)
			}
		}
	}
	if rejecting {
		return r.PostingsForLabelMatching(m.Name, func(v string) bool { return !m.Matches(v) })
	}
	return r.PostingsForLabelMatching(m.Name, m.Matches)
}

// LabelValues returns the sorted values of label name among the series that
// match ms, as Prometheus' querier does: with no matchers, all values; with
// matchers only on name, the values they accept; otherwise the accepted
// values that occur in a series selected by ms.
func LabelValues(r Reader, name string, ms ...*labels.Matcher) ([]string, error) {
	vals := r.LabelValues(name, nil)
	other := false
	for _, m := range ms {
		if m.Name != name {
			other = true
			continue
		}
		kept := vals[:0]
		for _, v := range vals {
			if m.Matches(v) {
				kept = append(kept, v)
			}
		}
		vals = kept
	}
	if len(vals) == 0 {
		return nil, nil
	}
	if !other {
		return vals, nil
	}
	p, err := Select(r, ms...)
	if err != nil {
		return nil, err
	}
	present := r.LabelValues(name, p)
	kept := vals[:0]
	for i, j := 0, 0; i < len(vals) && j < len(present); {
		switch {
		case vals[i] < present[j]:
			i++
		case vals[i] > present[j]:
			j++
		default:
			kept = append(kept, vals[i])
			i++
			j++
		}
	}
	if len(kept) == 0 {
		return nil, nil
	}
	return kept, nil
}

// LabelNames returns the sorted label names of the series that match ms, or
// of all series when ms is empty.
func LabelNames(r Reader, ms ...*labels.Matcher) ([]string, error) {
	if len(ms) == 0 {
		return r.LabelNames(nil), nil
	}
	p, err := Select(r, ms...)
	if err != nil {
		return nil, err
	}
	return r.LabelNames(p), nil
}
