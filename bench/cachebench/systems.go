package cachebench

import (
	"crypto/sha1"
	"encoding/hex"
)

// Systems, in the order each workload runs them.
const (
	NoCache   = "no-cache"
	Memcached = "memcached-4h"
	Aerie     = "aerie-cache"
)

// status is how much of a query's answer a cache held.
type status uint8

const (
	miss status = iota
	partial
	hit
)

// outcome is how one query was answered.
type outcome struct {
	status     status
	cacheBytes int64 // of the answer, served from the cache
}

// system answers queries: InfluxDB alone, or a cache in front of it.
// answer is called from many goroutines.
type system interface {
	answer(q Query) (Answer, outcome, error)
	// stats returns counters of the cache worth reporting (evictions,
	// failed sets), nil for none.
	stats() map[string]int64
	close() error
}

// noCache sends every query to InfluxDB.
type noCache struct {
	db   *influx
	keys []Key
}

func (s *noCache) answer(q Query) (Answer, outcome, error) {
	a, err := s.db.query(s.keys[q.Key], q.Start, q.End)
	return a, outcome{status: miss}, err
}

func (s *noCache) stats() map[string]int64 { return nil }
func (s *noCache) close() error            { return nil }

// statementKey is the hexadecimal SHA-1 of a key's statement, as
// internal/cache's KeyOf hashes it.
func statementKey(k Key) string {
	h := sha1.Sum([]byte(k.Statement()))
	return hex.EncodeToString(h[:])
}

// aerieSlabSize picks the cache's slab size for size bytes: the largest
// power of two up to size/64, between 64 KiB and 1 MiB (the default). An
// open slab (one per field being written) holds a slot of the file until
// it is sealed, so with a few large slabs the eight fields' open slabs
// would take most of a small cache.
func aerieSlabSize(size int64) int {
	s := 64 << 10
	for s < 1<<20 && int64(2*s) <= size/64 {
		s *= 2
	}
	return s
}
