package resultcache

import (
	"github.com/prometheus/prometheus/model/labels"

	"github.com/aerie-db/aerie/internal/cache"
)

// registry remembers, for each cached key, the selectors of its query
// and the data window of its split interval, so that a write can find the
// keys it makes stale. Keys whose selectors all name a metric are indexed
// by those names; the others are checked against every write.
type registry struct {
	entries map[cache.Key]*regEntry
	byName  map[string]map[cache.Key]*regEntry
	any     map[cache.Key]*regEntry
}

type regEntry struct {
	selectors [][]*labels.Matcher
	names     []string // the metric names the selectors require (nil: some selector requires none)
	winLo     int64
	winHi     int64
}

func newRegistry() registry {
	return registry{entries: map[cache.Key]*regEntry{}, byName: map[string]map[cache.Key]*regEntry{}, any: map[cache.Key]*regEntry{}}
}

func (r *registry) add(k cache.Key, selectors [][]*labels.Matcher, winLo, winHi int64) {
	if _, ok := r.entries[k]; ok {
		return
	}
	e := &regEntry{selectors: selectors, winLo: winLo, winHi: winHi}
	for _, sel := range selectors {
		name := ""
		for _, m := range sel {
			if m.Name == labels.MetricName && m.Type == labels.MatchEqual {
				name = m.Value
			}
		}
		if name == "" {
			e.names = nil
			break
		}
		e.names = append(e.names, name)
	}
	r.entries[k] = e
	if e.names == nil {
		r.any[k] = e
		return
	}
	for _, n := range e.names {
		if r.byName[n] == nil {
			r.byName[n] = map[cache.Key]*regEntry{}
		}
		r.byName[n][k] = e
	}
}

func (r *registry) remove(k cache.Key) {
	e := r.entries[k]
	if e == nil {
		return
	}
	delete(r.entries, k)
	delete(r.any, k)
	for _, n := range e.names {
		delete(r.byName[n], k)
		if len(r.byName[n]) == 0 {
			delete(r.byName, n)
		}
	}
}

// affected returns the keys whose queries select lset and read data in
// [mint, maxt].
// empty says no part is registered: no write can affect one.
func (r *registry) empty() bool { return len(r.entries) == 0 }

func (r *registry) affected(lset labels.Labels, mint, maxt int64) []cache.Key {
	var out []cache.Key
	check := func(k cache.Key, e *regEntry) {
		if e.winLo > maxt || e.winHi < mint {
			return
		}
		for _, sel := range e.selectors {
			if matchesAll(sel, lset) {
				out = append(out, k)
				return
			}
		}
	}
	for k, e := range r.byName[lset.Get(labels.MetricName)] {
		check(k, e)
	}
	for k, e := range r.any {
		check(k, e)
	}
	return out
}

func matchesAll(ms []*labels.Matcher, lset labels.Labels) bool {
	for _, m := range ms {
		if !m.Matches(lset.Get(m.Name)) {
			return false
		}
	}
	return true
}

// overlapping returns the keys whose data windows overlap [mint, maxt].
func (r *registry) overlapping(mint, maxt int64) []cache.Key {
	var out []cache.Key
	for k, e := range r.entries {
		if e.winLo <= maxt && e.winHi >= mint {
			out = append(out, k)
		}
	}
	return out
}
