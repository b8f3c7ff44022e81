package resultcache

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	hits, partials, misses prometheus.Counter // per split part
	passed                 prometheus.Counter // requests not cacheable
	downstream             prometheus.Counter // queries sent to the engine
	skipped                prometheus.Counter // stores skipped after an invalidation
	invalidated            prometheus.Counter
	registryResets         prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	c := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Namespace: "aerie", Subsystem: "results_cache", Name: name, Help: help})
	}
	m := &metrics{
		hits:           c("hits_total", "Parts of query_range requests (one per split interval) answered whole from the cache."),
		partials:       c("partial_hits_total", "Parts answered in part from the cache (head or tail) and in part by the engine."),
		misses:         c("misses_total", "Parts the cache had nothing of."),
		passed:         c("passed_total", "query_range requests the cache does not take (@ modifiers, negative offsets, rollup levels, stats, bad parameters)."),
		downstream:     c("engine_queries_total", "query_range requests the cache sent on to the engine for what it lacked."),
		skipped:        c("stores_skipped_total", "Answers not stored because a write invalidated entries while they were computed."),
		invalidated:    c("invalidations_total", "Cached parts dropped because a write or deletion reached their data."),
		registryResets: c("registry_resets_total", "Times the registry of cached parts was full and every part was dropped with it."),
	}
	if reg != nil {
		for _, x := range []prometheus.Collector{m.hits, m.partials, m.misses, m.passed, m.downstream, m.skipped, m.invalidated, m.registryResets} {
			if err := reg.Register(x); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}
