package rendercache

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// counter is a counter the Store counts in and Stats reads; exported as
// a prometheus CounterFunc.
type counter struct{ atomic.Uint64 }

func (c *counter) Inc()           { c.Add(1) }
func (c *counter) AddN(n int)     { c.Uint64.Add(uint64(n)) }
func (c *counter) value() float64 { return float64(c.Load()) }

type metrics struct {
	hits, partials, misses, uncached counter // per Points call
	reads, readBuckets, stored       counter
	invalidations, skipped           counter
}

func newMetrics() *metrics { return &metrics{} }

func (m *metrics) register(reg prometheus.Registerer) error {
	for _, c := range []struct {
		c          *counter
		name, help string
	}{
		{&m.hits, "hits_total", "Series fetches of /render whose cacheable buckets the cache had whole."},
		{&m.partials, "partial_hits_total", "Series fetches whose cacheable buckets the cache had in part (head or tail); the rest was read from the store."},
		{&m.misses, "misses_total", "Series fetches with cacheable buckets the cache had none of."},
		{&m.uncached, "uncached_total", "Series fetches with no cacheable bucket (all within max_freshness, or newer than a rollup level's progress, or at the retention's edge)."},
		{&m.reads, "store_reads_total", "Reads of the store (the raw engine and rollup levels) for buckets the cache did not answer."},
		{&m.readBuckets, "store_buckets_total", "Buckets read from the store."},
		{&m.stored, "stored_buckets_total", "Buckets stored in the cache."},
		{&m.invalidations, "invalidations_total", "Cached keys (a series on one archive) dropped because a write or deletion reached the series."},
		{&m.skipped, "stores_skipped_total", "Fetches not stored: a write or deletion came while they read the store, or the registry was full."},
	} {
		c := c
		f := prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "aerie", Subsystem: "render_cache", Name: c.name, Help: c.help}, c.c.value)
		if err := reg.Register(f); err != nil {
			return err
		}
	}
	return nil
}

// Stats returns the Store's counters.
func (s *Store) Stats() Stats {
	s.mu.Lock()
	keys := 0
	for _, e := range s.series {
		keys += len(e.keys)
	}
	s.mu.Unlock()
	m := s.m
	return Stats{
		Hits: m.hits.Load(), Partials: m.partials.Load(), Misses: m.misses.Load(), Uncached: m.uncached.Load(),
		Reads: m.reads.Load(), ReadBuckets: m.readBuckets.Load(), StoredBuckets: m.stored.Load(),
		Invalidations: m.invalidations.Load(), StoresSkipped: m.skipped.Load(), Keys: uint64(keys),
	}
}
