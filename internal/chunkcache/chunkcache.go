// Package chunkcache is the chunk cache of the bucket tier (DESIGN.md
// §2.7): range GETs of data objects answered from a TSCache slab store
// (internal/cache) on local disk, so repeated history queries stop paying
// the object store's per-request latency.
//
// The cache's time axis is the byte offset in an object: an object is a
// key (the SHA-1 of its name), and fetched bytes are points, pieces cut at
// the multiples of PageSize (a piece at offset o is a point at time o). A
// GET of [off, off+n) is a Get from off's page start to off+n-1, so every
// piece holding a byte of it is returned. A hit is assembled from the
// pieces; a partial hit (the head or the tail of the range, TSCache §3.3)
// fetches exactly the rest; a miss fetches from off's page start. Ranges
// end exactly where asked: the object's size is not known, and a GET past
// it fails.
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
	"cmp"
	"context"
	"fmt"
	"slices"

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

// New returns st with its range GETs cached in c, which must keep
// covered points (cache.Options.KeepCoveredPoints): a piece may start in a
// cached range and reach past it.
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
	var have pieces
	for _, f := range res.Fields {
		for _, pt := range f.Points {
			have = append(have, piece{pt.T, pt.V})
		}
	}
	switch res.Status {
	case cache.Hit:
		if have.fill(out, off) {
			return out, nil
		}
	case cache.Partial:
		lo, hi := a, e // what to fetch: exactly what is not cached
		if res.Start == a {
			lo = res.End + 1
		} else {
			hi = res.Start - 1
		}
		got, err := s.fetch(ctx, key, name, lo, hi)
		if err != nil {
			return nil, err
		}
		have = append(have, splitPieces(lo, got)...)
		if have.fill(out, off) {
			return out, nil
		}
	}
	got, err := s.fetch(ctx, key, name, a, e)
	if err != nil {
		return nil, err
	}
	return got[off-a:], nil
}

// fetch reads [lo, hi] from the store and caches it.
func (s *Store) fetch(ctx context.Context, key cache.Key, name string, lo, hi int64) ([]byte, error) {
	b, err := s.RangeStore.GetRange(ctx, name, lo, hi-lo+1)
	if err != nil {
		return nil, err
	}
	if int64(len(b)) != hi-lo+1 {
		return nil, fmt.Errorf("chunk cache: %s at %d: got %d bytes, want %d", name, lo, len(b), hi-lo+1)
	}
	var pts []cache.Point
	for _, p := range splitPieces(lo, b) {
		pts = append(pts, cache.Point{T: p.off, V: p.b})
	}
	// a failed Set (a range larger than the cache takes) only costs the
	// next GET
	_ = s.c.Set(key, lo, hi, []cache.Field{{Points: pts}})
	return b, nil
}

// Delete drops the object's cached pieces, then the object.
func (s *Store) Delete(ctx context.Context, name string) error {
	s.c.Delete(keyOf(name))
	return s.RangeStore.Delete(ctx, name)
}

// piece is bytes of an object at an offset: a point of the cache.
type piece struct {
	off int64
	b   []byte
}

// splitPieces cuts the bytes at lo into pieces ending at page boundaries.
func splitPieces(lo int64, b []byte) []piece {
	var out []piece
	for len(b) > 0 {
		n := min(int64(len(b)), (lo/PageSize+1)*PageSize-lo)
		out = append(out, piece{lo, b[:n]})
		lo, b = lo+n, b[n:]
	}
	return out
}

type pieces []piece

// fill copies the pieces' bytes over out (the object's bytes from off);
// false if a byte is not in any piece.
func (ps pieces) fill(out []byte, off int64) bool {
	slices.SortFunc(ps, func(a, b piece) int { return cmp.Compare(a.off, b.off) })
	next := off // the first byte of out not filled yet
	end := off + int64(len(out))
	for _, p := range ps {
		if p.off > next {
			return false // a hole
		}
		if pe := p.off + int64(len(p.b)); pe > next {
			copy(out[next-off:], p.b[next-p.off:min(int64(len(p.b)), end-p.off)])
			next = min(pe, end)
		}
		if next == end {
			return true
		}
	}
	return next == end
}
