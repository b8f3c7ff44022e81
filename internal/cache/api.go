package cache

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
)

// Key identifies a query without its time range: the SHA-1 of the query
// text, as in TSCache §3.2.
type Key [sha1.Size]byte

// KeyOf is the key of a query statement (without its time range).
func KeyOf(query string) Key { return sha1.Sum([]byte(query)) }

// ParseKey reads a key written as 40 hexadecimal digits (String's form).
func ParseKey(s string) (Key, error) {
	var k Key
	if len(s) != 2*len(k) {
		return k, fmt.Errorf("key %q: want %d hexadecimal digits", s, 2*len(k))
	}
	if _, err := hex.Decode(k[:], []byte(s)); err != nil {
		return k, fmt.Errorf("key %q: %w", s, err)
	}
	return k, nil
}

func (k Key) String() string { return hex.EncodeToString(k[:]) }

// Point is one data point of a field: a timestamp (in whatever unit the
// client uses for its ranges) and an opaque value. A field may hold several
// points with the same timestamp; two points of a key and field with the
// same timestamp and value are one point.
type Point struct {
	T int64
	V []byte
}

// Field is the points of one field (column) of a query's result, in time
// order (then in value byte order) when the cache returns them.
type Field struct {
	Name   string
	Points []Point
}

// Status is how much of a requested range a Get found.
type Status uint8

const (
	// Miss: nothing returned; the client asks the database for the range.
	Miss Status = iota
	// Partial: the head or the tail of the range is returned (Result.Start
	// and Result.End say which); the client asks the database for the rest.
	Partial
	// Hit: the whole range is returned.
	Hit
)

func (s Status) String() string {
	switch s {
	case Miss:
		return "miss"
	case Partial:
		return "partial"
	case Hit:
		return "hit"
	}
	return fmt.Sprintf("Status(%d)", uint8(s))
}

// Result is the answer of Get.
type Result struct {
	Status Status
	// Start and End (inclusive) are the range the returned fields cover
	// completely: the requested range on a hit, its head or tail on a
	// partial hit.
	Start, End int64
	// Fields holds the requested fields that have points in [Start, End],
	// in the order asked (by name when all were asked).
	Fields []Field
}

// Options configure a cache.
type Options struct {
	// Path is the cache file. It is created if missing and truncated or
	// extended to Size.
	Path string
	// Size is the cache file's size in bytes (rounded down to a multiple
	// of SlabSize, at least 4 slabs). Default 256 MiB.
	Size int64
	// SlabSize is the size of a slab in bytes, a multiple of 4096 between
	// 64 KiB and 64 MiB. Default 1 MiB.
	SlabSize int
	// MaxKeysPerSlab bounds a slab's key array (default 128, at most 4096):
	// a slab whose key array is full is sealed and the next one opened.
	MaxKeysPerSlab int
	// PartialMinBytes is the smallest estimated size of a partial hit's
	// covered part worth returning; smaller partial hits are misses
	// (TSCache §3.3). Default 512 KiB; negative: every partial hit counts.
	PartialMinBytes int64
	// CompactSlabs is the number of slabs of one virtual time range above
	// which it is compacted (TSCache §3.7). Default 16.
	CompactSlabs int
	// NoDirectIO turns off O_DIRECT even where the filesystem allows it.
	NoDirectIO bool
	// KeepCoveredPoints makes Set store every point, also those at times
	// its key has cached already (which Set otherwise skips: they are in
	// the slabs). For clients whose points are extents rather than
	// instants, as the chunk cache's pieces of objects, a piece starting
	// in a cached range may reach past it.
	KeepCoveredPoints bool
	// Logger and Registerer (both optional) take the cache's log lines and
	// metrics (aerie_cache_*{cache=Name}).
	Logger     *slog.Logger
	Registerer prometheus.Registerer
	// Name labels the metrics (e.g. "results", "chunks", "server").
	Name string
}

// Stats are counters since Open.
type Stats struct {
	Hits, Partials, Misses   uint64
	SetBytes, GetBytes       uint64 // value and timestamp bytes stored and returned
	Slabs, SlabsUsed         int    // slots in the file, slots holding a slab
	FIFOSlabs, LRUSlabs      int
	LRUTarget                int // the auto-tuned LRU partition size, in slabs
	Evictions, Compactions   uint64
	Keys                     int
	CorruptSlabs             uint64 // slabs dropped for failing their CRC (with the key ranges they backed)
	DuplicatePointsCompacted uint64
}
