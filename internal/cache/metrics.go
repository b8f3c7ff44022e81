package cache

import "github.com/prometheus/client_golang/prometheus"

// collector exports Stats as aerie_cache_* metrics labelled with the
// cache's name.
type collector struct {
	c     *Cache
	descs map[string]*prometheus.Desc
}

var metricHelp = []struct{ name, help string }{
	{"hits_total", "Gets that found their whole range."},
	{"partial_hits_total", "Gets that found the head or the tail of their range (TSCache §3.3)."},
	{"misses_total", "Gets that found nothing worth returning."},
	{"set_bytes_total", "Bytes of timestamps and values stored."},
	{"get_bytes_total", "Bytes of timestamps and values returned."},
	{"evictions_total", "Slabs evicted for room."},
	{"compactions_total", "Virtual time ranges compacted."},
	{"compacted_duplicate_points_total", "Duplicate points removed by compactions."},
	{"corrupt_slabs_total", "Slabs dropped for failing a check."},
	{"slabs", "Slots of the cache file."},
	{"slabs_used", "Slots holding a slab."},
	{"fifo_slabs", "Slabs in the FIFO partition."},
	{"lru_slabs", "Slabs in the LRU partition."},
	{"lru_target_slabs", "The auto-tuned size of the LRU partition."},
	{"keys", "Keys in the key index."},
}

func newCollector(c *Cache) *collector {
	col := &collector{c: c, descs: map[string]*prometheus.Desc{}}
	for _, m := range metricHelp {
		col.descs[m.name] = prometheus.NewDesc("aerie_cache_"+m.name, m.help, nil, prometheus.Labels{"cache": c.opts.Name})
	}
	return col
}

func (col *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range col.descs {
		ch <- d
	}
}

func (col *collector) Collect(ch chan<- prometheus.Metric) {
	s := col.c.Stats()
	counter := func(name string, v uint64) {
		ch <- prometheus.MustNewConstMetric(col.descs[name], prometheus.CounterValue, float64(v))
	}
	gauge := func(name string, v int) {
		ch <- prometheus.MustNewConstMetric(col.descs[name], prometheus.GaugeValue, float64(v))
	}
	counter("hits_total", s.Hits)
	counter("partial_hits_total", s.Partials)
	counter("misses_total", s.Misses)
	counter("set_bytes_total", s.SetBytes)
	counter("get_bytes_total", s.GetBytes)
	counter("evictions_total", s.Evictions)
	counter("compactions_total", s.Compactions)
	counter("compacted_duplicate_points_total", s.DuplicatePointsCompacted)
	counter("corrupt_slabs_total", s.CorruptSlabs)
	gauge("slabs", s.Slabs)
	gauge("slabs_used", s.SlabsUsed)
	gauge("fifo_slabs", s.FIFOSlabs)
	gauge("lru_slabs", s.LRUSlabs)
	gauge("lru_target_slabs", s.LRUTarget)
	gauge("keys", s.Keys)
}
