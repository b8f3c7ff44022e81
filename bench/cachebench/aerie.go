package cachebench

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync/atomic"

	"github.com/aerie-db/aerie/internal/cache"
)

// aeriePartialMin is the cache's PartialMinBytes: every partial hit is
// used (the default, 512 KiB, is larger than most answers here; a
// partial hit still saves the database the covered part).
const aeriePartialMin = -1

// aerieCache is Aerie's time-series cache (internal/cache) opened in this
// process over a file of the run's scratch directory, in front of db.
type aerieCache struct {
	db        *influx
	keys      []Key
	ckeys     []cache.Key
	c         *cache.Cache
	setErrors atomic.Int64
}

// openAerie opens a fresh cache of size bytes under dir.
func openAerie(dir string, size int64, db *influx, keys []Key) (system, error) {
	slab := aerieSlabSize(size)
	c, err := cache.Open(cache.Options{
		Path:            filepath.Join(dir, "aerie.cache"),
		Size:            max(size, 4*int64(slab)),
		SlabSize:        slab,
		PartialMinBytes: aeriePartialMin,
		Name:            "bench",
	})
	if err != nil {
		return nil, fmt.Errorf("open Aerie's cache: %w", err)
	}
	s := &aerieCache{db: db, keys: keys, c: c}
	for _, k := range keys {
		s.ckeys = append(s.ckeys, cache.KeyOf(k.Statement()))
	}
	return s, nil
}

func (s *aerieCache) answer(q Query) (Answer, outcome, error) {
	k, ck := s.keys[q.Key], s.ckeys[q.Key]
	r, err := s.c.Get(ck, q.Start, q.End, k.Fields)
	if err != nil {
		return nil, outcome{}, fmt.Errorf("cache get: %w", err)
	}
	switch r.Status {
	case cache.Hit:
		a := fromCache(r.Fields, k.Fields)
		return a, outcome{status: hit, cacheBytes: a.Bytes()}, nil
	case cache.Partial:
		cached := fromCache(r.Fields, k.Fields)
		out := outcome{status: partial, cacheBytes: cached.Bytes()}
		if r.Start <= q.Start { // the head is cached: ask for the tail
			rest, err := s.fetch(q.Key, r.End+1, q.End)
			return concat(cached, rest), out, err
		}
		rest, err := s.fetch(q.Key, q.Start, r.Start-1)
		return concat(rest, cached), out, err
	default:
		a, err := s.fetch(q.Key, q.Start, q.End)
		return a, outcome{status: miss}, err
	}
}

// fetch asks InfluxDB for key's [start, end] and stores the answer.
func (s *aerieCache) fetch(key int, start, end int64) (Answer, error) {
	a, err := s.db.query(s.keys[key], start, end)
	if err != nil {
		return nil, err
	}
	if err := s.c.Set(s.ckeys[key], start, end, toCacheFields(a)); err != nil {
		if !errors.Is(err, cache.ErrTooLarge) {
			return nil, fmt.Errorf("cache set: %w", err)
		}
		s.setErrors.Add(1) // more than half the cache: not cached
	}
	return a, nil
}

// toCacheFields is a in the cache's terms.
func toCacheFields(a Answer) []cache.Field {
	fields := make([]cache.Field, len(a))
	for i, c := range a {
		fields[i].Name = c.Name
		fields[i].Points = make([]cache.Point, len(c.Points))
		for j, p := range c.Points {
			fields[i].Points[j] = cache.Point{T: p.T, V: []byte(p.V)}
		}
	}
	return fields
}

// fromCache orders a Get's fields as asked; fields without points in the
// range are left out by the cache and come back empty.
func fromCache(got []cache.Field, names []string) Answer {
	a := make(Answer, len(names))
	for i, n := range names {
		a[i].Name = n
		for _, f := range got {
			if f.Name != n {
				continue
			}
			a[i].Points = make([]Point, len(f.Points))
			for j, p := range f.Points {
				a[i].Points[j] = Point{T: p.T, V: string(p.V)}
			}
		}
	}
	return a
}

func (s *aerieCache) stats() map[string]int64 {
	st := s.c.Stats()
	return map[string]int64{
		"set_errors": s.setErrors.Load(), "evictions": int64(st.Evictions), "compactions": int64(st.Compactions),
		"slabs": int64(st.Slabs), "slabs_used": int64(st.SlabsUsed), "keys": int64(st.Keys), "lru_target": int64(st.LRUTarget),
	}
}

func (s *aerieCache) close() error { return s.c.Close() }
