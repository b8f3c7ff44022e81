package server

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/aerie-db/aerie/internal/memory"
	"github.com/aerie-db/aerie/internal/tsdb"
)

// memoryCollector exports the head memory manager's statistics (one
// Stats snapshot per scrape).
type memoryCollector struct {
	db *tsdb.DB

	pages, bytes, limit, blocks, partitions  *prometheus.Desc
	reclaimed, released, overLimit           *prometheus.Desc
	epoch, minReaderEpoch, readers, pressure *prometheus.Desc
	hotPartitions, hotReads                  *prometheus.Desc
}

func newMemoryCollector(db *tsdb.DB) *memoryCollector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("aerie_memory_"+name, help, labels, nil)
	}
	return &memoryCollector{
		db:             db,
		pages:          d("pages", "Pages the memory manager holds."),
		bytes:          d("bytes", "Bytes of the pages the memory manager holds."),
		limit:          d("limit_bytes", "Configured memory limit, rounded down to whole pages; 0: none."),
		blocks:         d("blocks", "Blocks by area: live (being written), hot (flushed, serving queries), cooling (waiting for readers), free.", "area"),
		partitions:     d("partitions", "Time partitions holding blocks, by area.", "area"),
		reclaimed:      d("reclaimed_blocks_total", "Blocks recycled after every reader that could hold them exited."),
		released:       d("released_blocks_total", "Hot blocks cooled by the reclamation policy under the memory limit."),
		overLimit:      d("over_limit_pages_total", "Pages taken beyond the limit because live data alone exceeded it."),
		epoch:          d("epoch", "Global reclamation epoch."),
		minReaderEpoch: d("min_reader_epoch", "Oldest epoch a registered reader entered at; 0 without readers."),
		readers:        d("readers", "Registered readers (open queriers and flushes)."),
		pressure:       d("pressure_blocks", "Blocks in use above the reclaim threshold."),
		hotPartitions:  prometheus.NewDesc("aerie_head_hot_partitions", "Flushed partitions still in memory, serving queries.", nil, nil),
		hotReads:       prometheus.NewDesc("aerie_query_hot_reads_total", "Series partitions queries read from hot memory instead of their block.", nil, nil),
	}
}

func (c *memoryCollector) Describe(ch chan<- *prometheus.Desc) {
	prometheus.DescribeByCollect(c, ch)
}

func (c *memoryCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.db.Head().Memory().Stats()
	g := func(d *prometheus.Desc, v float64, lv ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, lv...)
	}
	ct := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v)
	}
	g(c.pages, float64(s.Pages))
	g(c.bytes, float64(s.Bytes))
	g(c.limit, float64(s.LimitBytes))
	g(c.blocks, float64(s.LiveBlocks), "live")
	g(c.blocks, float64(s.HotBlocks), "hot")
	g(c.blocks, float64(s.CoolingBlocks), "cooling")
	g(c.blocks, float64(s.FreeBlocks), "free")
	byArea := map[memory.Area]int{}
	for _, p := range s.Partitions {
		byArea[p.Area]++
	}
	for _, a := range []memory.Area{memory.AreaLive, memory.AreaHot, memory.AreaCooling} {
		g(c.partitions, float64(byArea[a]), a.String())
	}
	ct(c.reclaimed, float64(s.ReclaimedBlocks))
	ct(c.released, float64(s.ReleasedBlocks))
	ct(c.overLimit, float64(s.OverLimitPages))
	g(c.epoch, float64(s.Epoch))
	g(c.minReaderEpoch, float64(s.MinReaderEpoch))
	g(c.readers, float64(s.ActiveReaders))
	g(c.pressure, float64(s.Pressure))
	st := c.db.Stats()
	g(c.hotPartitions, float64(st.HotPartitions))
	ct(c.hotReads, float64(st.HotReads))
}
