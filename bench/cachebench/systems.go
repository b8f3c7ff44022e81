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
// power of two up to size/256, between 64 KiB and 1 MiB (the default), so
// that the cache holds at least 256 slabs where it can (the results
// cache's default: 256 MiB of 1 MiB slabs). An eviction takes a whole slab
// — pieces of the ranges of every key with points in it — so a cache of
// few large slabs loses far more than the bytes it needs: replaying the
// medium scale's full workload in process at 10 % of the data, 64 KiB
// slabs (224 of them) hit 51.6 % of the bytes where 128 KiB ones (112)
// hit 29.5 %. An open slab (one per field being written) also holds a slot
// until it is sealed.
func aerieSlabSize(size int64) int {
	s := 64 << 10
	for s < 1<<20 && int64(2*s) <= size/256 {
		s *= 2
	}
	return s
}
