package ingest

import (
	"encoding/binary"
	"hash/maphash"
	"sync"

	"github.com/prometheus/prometheus/storage"
)

// refCache maps a series as written on the wire (an Influx line's
// measurement and tags, as bytes, and one field name) to the ref that
// storage.Appender.Append returned for it and the hash of its labels, so that the samples of a known
// series are appended by ref: no labels built, sorted or hashed, no
// registry lookup. Keys are two 64-bit maphash digests with seeds of this
// process (a false hit needs both to collide: odds 2^-128 a pair). A ref
// names its series for the life of the storage (tsdb.DB), which outlives
// the handler that owns the cache.
//
// Locking: each shard has its own mutex; get and put lock one shard.
type refCache struct {
	seeds    [2]maphash.Seed
	perShard int
	shards   [refShards]refShard
}

const refShards = 64

type refShard struct {
	mu sync.Mutex
	m  map[refKey]refVal
	_  [40]byte // keep shards' mutexes on separate cache lines
}

// refKey is the 128-bit digest of a series as written.
type refKey struct{ a, b uint64 }

// refVal is what the cache knows of a series.
type refVal struct {
	ref   storage.SeriesRef
	lhash uint64 // labels.Labels.Hash
}

// newRefCache returns a cache of up to about max series; a full shard is
// emptied (its series then take the label path once more).
func newRefCache(max int) *refCache {
	c := &refCache{seeds: [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}, perShard: max/refShards + 1}
	for i := range c.shards {
		c.shards[i].m = map[refKey]refVal{}
	}
	return c
}

// seriesKey digests the series part of a key (e.g. a line's measurement
// and tags).
func (c *refCache) seriesKey(b []byte) refKey {
	return refKey{maphash.Bytes(c.seeds[0], b), maphash.Bytes(c.seeds[1], b)}
}

// fieldKey digests the series part's digest with a field name.
func (c *refCache) fieldKey(series refKey, field []byte) refKey {
	var buf [64]byte
	if len(field) > len(buf)-8 {
		h := maphash.Bytes(c.seeds[0], field)
		binary.LittleEndian.PutUint64(buf[8:], h^maphash.Bytes(c.seeds[1], field))
		field = buf[8:16]
	} else {
		copy(buf[8:], field)
		field = buf[8 : 8+len(field)]
	}
	binary.LittleEndian.PutUint64(buf[:8], series.a)
	a := maphash.Bytes(c.seeds[0], buf[:8+len(field)])
	binary.LittleEndian.PutUint64(buf[:8], series.b)
	b := maphash.Bytes(c.seeds[1], buf[:8+len(field)])
	return refKey{a, b}
}

func (c *refCache) shard(k refKey) *refShard { return &c.shards[k.a%refShards] }

// get returns what the cache knows of k; its ref is 0 if nothing.
func (c *refCache) get(k refKey) refVal {
	s := c.shard(k)
	s.mu.Lock()
	r := s.m[k]
	s.mu.Unlock()
	return r
}

// put records k's series.
func (c *refCache) put(k refKey, r refVal) {
	if r.ref == 0 {
		return
	}
	s := c.shard(k)
	s.mu.Lock()
	if len(s.m) >= c.perShard {
		clear(s.m)
	}
	s.m[k] = r
	s.mu.Unlock()
}
