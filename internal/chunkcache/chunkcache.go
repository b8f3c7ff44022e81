// Package chunkcache is the chunk cache of the bucket tier (DESIGN.md
// §2.7): range GETs of data objects answered from a TSCache slab store
// (internal/cache) on local disk, so repeated history queries stop paying
// the object store's per-request latency.
//
// The cache's time axis is the byte offset in an object: an object is a
// key (the SHA-1 of its name), a page of PageSize bytes at offset o is a
// point at time o, and a GET of [off, off+n) is a Get of the pages from
// off's page start to off+n-1. A hit is assembled from the pages; a
// partial hit (the head or the tail of the range, TSCache §3.3) fetches
// only the rest, from a page start; a miss fetches the range from its
// page start. Every fetched range is Set, page-aligned at its start and
// exact at its end (the object's size is not known, and a GET past it
// fails), so a page may be cached shorter than PageSize; the longest copy
// of a page is used.
//
// Invariants:
//
//  1. GetRange returns exactly the bytes the underlying store holds at
//     [off, off+n): data objects are written once under unique names,
//     and Delete drops the object's key before it deletes the object.
//  2. A failed fetch returns its error and stores nothing.
//  3. Everything else (Get, Upload, Exists, Iter) goes to the underlying
//     store unchanged.
package chunkcache

import (
	"context"
	"fmt"

	"github.com/aerie-db/aerie/internal/bucket"
	"github.com/aerie-db/aerie/internal/cache"
)

// PageSize is the unit of caching in an object.
const PageSize = 16 << 10

// Store is a bucket.RangeStore whose GetRange goes through a cache.
type Store struct {
	bucket.RangeStore
	c *cache.Cache
}

// New returns st with its range GETs cached in c.
func New(st bucket.RangeStore, c *cache.Cache) *Store { return &Store{RangeStore: st, c: c} }

func keyOf(name string) cache.Key { return cache.KeyOf("object\x00" + name) }

// GetRange returns length bytes of object name at off.
func (s *Store) GetRange(ctx context.Context, name string, off, length int64) ([]byte, error) {
	if off < 0 || length <= 0 {
		return s.RangeStore.GetRange(ctx, name, off, length)
	}
	key := keyOf(name)
	a, e := off/PageSize*PageSize, off+length-1
	res, err := s.c.Get(key, a, e, nil)
	if err != nil {
		return s.RangeStore.GetRange(ctx, name, off, length)
	}
	out := make([]byte, length)
	have := newPages(res)
	switch res.Status {
	case cache.Hit:
		if have.copyTo(out, off, a, e) {
			return out, nil
		}
		// a page shorter than the range claims: refetch all of it
	case cache.Partial:
		lo, hi := a, e // what to fetch
		if res.Start == a {
			lo = (res.End + 1) / PageSize * PageSize
		} else {
			hi = res.Start - 1
		}
		got, err := s.fetch(ctx, key, name, lo, hi)
		if err != nil {
			return nil, err
		}
		have.add(lo, got)
		if have.copyTo(out, off, a, e) {
			return out, nil
		}
	}
	got, err := s.fetch(ctx, key, name, a, e)
	if err != nil {
		return nil, err
	}
	return got[off-a:], nil
}

// fetch reads [lo, hi] (lo a page start) from the store and caches it.
func (s *Store) fetch(ctx context.Context, key cache.Key, name string, lo, hi int64) ([]byte, error) {
	b, err := s.RangeStore.GetRange(ctx, name, lo, hi-lo+1)
	if err != nil {
		return nil, err
	}
	if int64(len(b)) != hi-lo+1 {
		return nil, fmt.Errorf("chunk cache: %s at %d: got %d bytes, want %d", name, lo, len(b), hi-lo+1)
	}
	var pts []cache.Point
	for p := int64(0); p < int64(len(b)); p += PageSize {
		pts = append(pts, cache.Point{T: lo + p, V: b[p:min(p+PageSize, int64(len(b)))]})
	}
	// a failed Set (a range larger than the cache takes) only costs the
	// next GET
	_ = s.c.Set(key, lo, hi, []cache.Field{{Points: pts}})
	return b, nil
}

// Delete drops the object's cached pages, then the object.
func (s *Store) Delete(ctx context.Context, name string) error {
	s.c.Delete(keyOf(name))
	return s.RangeStore.Delete(ctx, name)
}

// pages holds the longest copy of each cached page.
type pages map[int64][]byte

func newPages(res cache.Result) pages {
	p := pages{}
	for _, f := range res.Fields {
		for _, pt := range f.Points {
			if len(pt.V) > len(p[pt.T]) {
				p[pt.T] = pt.V
			}
		}
	}
	return p
}

func (p pages) add(lo int64, b []byte) {
	for o := int64(0); o < int64(len(b)); o += PageSize {
		v := b[o:min(o+PageSize, int64(len(b)))]
		if len(v) > len(p[lo+o]) {
			p[lo+o] = v
		}
	}
}

// copyTo fills out (the bytes at [off, off+len(out))) from the pages of
// [a, e]; false if a page is missing or short.
func (p pages) copyTo(out []byte, off, a, e int64) bool {
	for t := a; t <= e; t += PageSize {
		v := p[t]
		from, to := max(off, t), min(e, t+PageSize-1) // the bytes wanted of this page
		if int64(len(v)) < to-t+1 {
			return false
		}
		copy(out[from-off:], v[from-t:to-t+1])
	}
	return true
}
