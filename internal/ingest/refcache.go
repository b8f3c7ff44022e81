package ingest

import (
	"hash/maphash"
	"slices"
	"sync"

	"github.com/prometheus/prometheus/storage"
)

// refCache maps a series as written on the wire to what an earlier
// storage.Appender.Append said of it, so that the samples of a known
// series are appended by ref: no labels built, sorted or hashed, no
// registry lookup. Remote write keys a series' label fields and keeps a
// refVal; Influx keys a line's measurement and tags and keeps its fields
// (lineFields). Keys are two 64-bit maphash digests with seeds of this
// process (a false hit needs both to collide: odds 2^-128 a pair). A ref
// names its series for the life of the storage (tsdb.DB), which outlives
// the handler that owns the cache.
//
// Locking: each shard has its own mutex; get and put lock one shard.
type refCache[V any] struct {
	seeds    [2]maphash.Seed
	perShard int
	shards   [refShards]refShard[V]
}

const refShards = 64

// refShard maps a key's first word to its second and its value: a map
// of one-word keys hashes a word, where one of refKey would hash 16 bytes
// again (a key whose first word is another's replaces it, as a miss).
type refShard[V any] struct {
	mu sync.Mutex
	m  map[uint64]refEntry[V]
	_  [40]byte // keep shards' mutexes on separate cache lines
}

type refEntry[V any] struct {
	b uint64 // refKey.b
	v V
}

// refKey is the 128-bit digest of a series as written.
type refKey struct{ a, b uint64 }

// refVal is what the cache knows of a series.
type refVal struct {
	ref   storage.SeriesRef
	lhash uint64 // labels.Labels.Hash
}

// newRefCache returns a cache of up to about max keys; a full shard is
// emptied (its series then take the label path once more).
func newRefCache[V any](max int) *refCache[V] {
	c := &refCache[V]{seeds: [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}, perShard: max/refShards + 1}
	for i := range c.shards {
		c.shards[i].m = map[uint64]refEntry[V]{}
	}
	return c
}

// seriesKey digests a series as written (e.g. a line's measurement and
// tags).
func (c *refCache[V]) seriesKey(b []byte) refKey {
	return refKey{maphash.Bytes(c.seeds[0], b), maphash.Bytes(c.seeds[1], b)}
}

func (c *refCache[V]) shard(k refKey) *refShard[V] { return &c.shards[k.a%refShards] }

// get returns what the cache knows of k: the zero V if nothing.
func (c *refCache[V]) get(k refKey) V {
	s := c.shard(k)
	s.mu.Lock()
	e, ok := s.m[k.a]
	s.mu.Unlock()
	if !ok || e.b != k.b {
		var zero V
		return zero
	}
	return e.v
}

// put records k's value.
func (c *refCache[V]) put(k refKey, v V) {
	s := c.shard(k)
	s.mu.Lock()
	if len(s.m) >= c.perShard {
		clear(s.m)
	}
	s.m[k.a] = refEntry[V]{k.b, v}
	s.mu.Unlock()
}

// lineFields is what the Influx cache knows of one measurement-and-tags
// as written: the fields seen with it, each one series. A value in the
// cache is never changed: a line with a new field puts a copy with it.
type lineFields struct{ fields []lineField }

// lineField is one field name as written (without escapes) and its
// series.
type lineField struct {
	name string
	refVal
}

// find returns the series of the field name; i is where it is expected
// (fields usually come in the same order line after line).
func (lf *lineFields) find(name []byte, i int) refVal {
	if lf == nil {
		return refVal{}
	}
	if i < len(lf.fields) && lf.fields[i].name == string(name) {
		return lf.fields[i].refVal
	}
	for _, f := range lf.fields {
		if f.name == string(name) {
			return f.refVal
		}
	}
	return refVal{}
}

// with returns a copy of lf (which may be nil) with the fields of add that
// it does not have.
func (lf *lineFields) with(add []lineField) *lineFields {
	out := &lineFields{}
	if lf != nil {
		out.fields = lf.fields
	}
	// Sized for what it will hold: it is cached for as long as its line's
	// series are written (append's doubling left 16 places for a TSBS
	// host's 10 fields).
	out.fields = slices.Grow(slices.Clip(out.fields), len(add))
	for _, f := range add {
		if out.find([]byte(f.name), len(out.fields)).ref == 0 {
			out.fields = append(out.fields, f)
		}
	}
	return out
}
