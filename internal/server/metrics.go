package server

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"

	"github.com/aerie-db/aerie/internal/bucket"
	"github.com/aerie-db/aerie/internal/head"
	"github.com/aerie-db/aerie/internal/ingest"
	"github.com/aerie-db/aerie/internal/queryeval"
	"github.com/aerie-db/aerie/internal/tsdb"
)

// metrics are the server's own metrics, all prefixed aerie_.
type metrics struct {
	reg *prometheus.Registry

	ingested    *prometheus.CounterVec   // protocol
	rejected    *prometheus.CounterVec   // protocol, reason
	walFsync    prometheus.Histogram     // seconds
	flushes     prometheus.Histogram     // seconds
	compactions prometheus.Histogram     // seconds
	httpReqs    *prometheus.CounterVec   // handler, code
	httpDur     *prometheus.HistogramVec // handler
	queryDurs   *prometheus.HistogramVec // handler
}

func newMetrics() *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	m.ingested = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "aerie_ingested_samples_total", Help: "Samples stored, by ingestion protocol.",
	}, []string{"protocol"})
	m.rejected = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "aerie_rejected_samples_total", Help: "Samples rejected, by ingestion protocol and reason.",
	}, []string{"protocol", "reason"})
	m.walFsync = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "aerie_wal_fsync_duration_seconds", Help: "Duration of WAL fsyncs (one per group commit).",
		Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16),
	})
	m.flushes = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "aerie_flush_duration_seconds", Help: "Duration of writing one head partition as a block.",
		Buckets: prometheus.ExponentialBuckets(0.01, 2, 14),
	})
	m.compactions = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "aerie_compaction_duration_seconds", Help: "Duration of one block compaction (merging blocks into one).",
		Buckets: prometheus.ExponentialBuckets(0.01, 2, 16),
	})
	m.httpReqs = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "aerie_http_requests_total", Help: "HTTP requests by handler and status code.",
	}, []string{"handler", "code"})
	m.httpDur = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "aerie_http_request_duration_seconds", Help: "HTTP request latency by handler.",
		Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
	}, []string{"handler"})
	m.reg.MustRegister(m.ingested, m.rejected, m.walFsync, m.flushes, m.compactions, m.httpReqs, m.httpDur)
	prefixed := prometheus.WrapRegistererWithPrefix("aerie_", m.reg)
	prefixed.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// registerTier registers the remote tier's metrics: what queries read
// from the bucket against what they needed (read amplification), and the
// engine's moves to it.
func (m *metrics) registerTier(db *tsdb.DB, t *bucket.Tier) {
	m.reg.MustRegister(
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "aerie_bucket_data_gets_total", Help: "Range GETs of data objects by queries (coalesced window runs)."},
			func() float64 { return float64(t.Stats.Gets.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "aerie_bucket_data_fetches_total", Help: "Fetches of remote data that issued GETs, each one round trip (its GETs in parallel)."},
			func() float64 { return float64(t.Stats.Rounds.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "aerie_bucket_query_fetched_bytes_total", Help: "Bytes of data objects fetched from the bucket by queries."},
			func() float64 { return float64(t.Stats.BytesFetched.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "aerie_bucket_query_needed_bytes_total", Help: "Bytes of the value-column ranges those fetches were for; fetched ÷ needed is the read amplification."},
			func() float64 { return float64(t.Stats.BytesNeeded.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "aerie_bucket_window_cache_hits_total", Help: "Data windows answered from the cache instead of the bucket."},
			func() float64 { return float64(t.Stats.CacheHits.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "aerie_bucket_meta_gets_total", Help: "Metadata objects read (one per block opened), from the bucket or the local metadata cache."},
			func() float64 { return float64(t.Stats.MetaGets.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "aerie_bucket_meta_cache_hits_total", Help: "Metadata objects read from the local metadata cache instead of the bucket."},
			func() float64 { return float64(t.Stats.MetaCacheHits.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "aerie_bucket_meta_fetched_bytes_total", Help: "Bytes of metadata objects fetched."},
			func() float64 { return float64(t.Stats.MetaBytes.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "aerie_bucket_metrics_gets_total", Help: "Metrics objects fetched: a bucket block's metrics read while not in the metrics cache."},
			func() float64 { return float64(t.Stats.MetricsGets.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "aerie_bucket_metrics_fetched_bytes_total", Help: "Bytes of metrics objects fetched."},
			func() float64 { return float64(t.Stats.MetricsBytes.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "aerie_bucket_metrics_cache_hits_total", Help: "Reads of a bucket block's metrics answered from the metrics cache."},
			func() float64 { return float64(t.Stats.MetricsCacheHits.Load()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "aerie_bucket_metrics_cache_bytes", Help: "Bytes of block metrics held in the metrics cache (bounded by storage.metrics_cache_size)."},
			func() float64 { return float64(t.MetricsCache().Size()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "aerie_bucket_metadata_memory_bytes", Help: "Estimated heap held by the metadata of bucket blocks kept in memory (bounded by storage.metadata_memory_size)."},
			func() float64 { return float64(db.RemoteMetadataStats().Bytes) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "aerie_bucket_metadata_loaded_blocks", Help: "Bucket blocks whose metadata is in memory."},
			func() float64 { return float64(db.RemoteMetadataStats().Loaded) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "aerie_bucket_metadata_loads_total", Help: "Bucket blocks opened again for a read after their metadata was dropped from memory."},
			func() float64 { return float64(db.RemoteMetadataStats().Loads) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "aerie_bucket_metadata_drops_total", Help: "Bucket blocks whose metadata was dropped from memory, least recently read first."},
			func() float64 { return float64(db.RemoteMetadataStats().Drops) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "aerie_bucket_blocks", Help: "Open blocks read from the bucket."},
			func() float64 { return float64(db.RemoteStats().Blocks) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "aerie_bucket_moved_blocks_total", Help: "Local blocks moved to the bucket since start."},
			func() float64 { return float64(db.RemoteStats().ShippedBlocks) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "aerie_bucket_upload_failures_total", Help: "Block uploads that failed (retried at the next round)."},
			func() float64 { return float64(db.RemoteStats().ShipFailures) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "aerie_bucket_upload_lag_seconds", Help: "How long the oldest local block due for the bucket has been due, in data time (0: none)."},
			func() float64 { return float64(db.RemoteStats().UploadLag) / 1000 }),
	)
}

// registerQueries exports the counts of Aerie's query evaluator
// (internal/queryeval): how many queries it took, how many range
// functions it evaluated over arrays, how many range queries it answered
// alone (vector plans), how many it handed back to
// Prometheus' engine, and how many windows block metrics answered.
func (m *metrics) registerQueries(st *queryeval.Stats) {
	m.reg.MustRegister(
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "aerie_query_planned_total", Help: "Queries with a range function Aerie's evaluator computes (--query.engine=aerie)."},
			func() float64 { return float64(st.Planned.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "aerie_query_rollups_total", Help: "Range functions evaluated by Aerie's evaluator over decoded arrays."},
			func() float64 { return float64(st.Rollups.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "aerie_query_fallbacks_total", Help: "Planned queries run again by Prometheus' engine alone (data the evaluator does not take, e.g. native histograms)."},
			func() float64 { return float64(st.Fallbacks.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "aerie_query_vector_plans_total", Help: "Range queries of selectors, operators with a number and set operators answered by Aerie's evaluator over arrays, without Prometheus' engine."},
			func() float64 { return float64(st.Vectors.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "aerie_query_metric_windows_total", Help: "Windows (a series at a step) answered from block metrics without decoding their samples."},
			func() float64 { return float64(st.MetricWindows.Load()) }),
	)
}

// registerEngine exports the storage engine's gauges and counters.
func (m *metrics) registerEngine(db *tsdb.DB) {
	m.reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "aerie_head_series", Help: "Series in the head's registry."},
			func() float64 { return float64(db.Head().NumSeries()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "aerie_head_groups", Help: "Groups in the head."},
			func() float64 { return float64(db.Head().NumGroups()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "aerie_head_bytes", Help: "Bytes of encoded tuples and their index in the head."},
			func() float64 { return float64(db.Head().Bytes()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "aerie_blocks", Help: "Blocks open for queries."},
			func() float64 { return float64(db.Stats().Blocks) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "aerie_blocks_quarantined_total", Help: "Blocks moved to quarantine/ because they failed verification."},
			func() float64 { return float64(db.Stats().Quarantined) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "aerie_flushes_total", Help: "Head partitions written as blocks."},
			func() float64 { return float64(db.Stats().Flushes) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "aerie_flush_groups_done", Help: "Groups converted by the running partition flush (0 when none runs)."},
			func() float64 { d, _ := db.FlushProgress(); return float64(d) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "aerie_flush_groups", Help: "Groups of the running partition flush (0 when none runs)."},
			func() float64 { _, t := db.FlushProgress(); return float64(t) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "aerie_compactions_total", Help: "Blocks written by compaction."},
			func() float64 { return float64(db.CompactionStats().Compactions) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "aerie_compaction_failures_total", Help: "Compactions that failed (retried at the next round)."},
			func() float64 { return float64(db.CompactionStats().Failures) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "aerie_compaction_read_bytes_total", Help: "Bytes of the blocks compactions merged."},
			func() float64 { return float64(db.CompactionStats().BytesIn) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "aerie_compaction_written_bytes_total", Help: "Bytes of the blocks compactions wrote."},
			func() float64 { return float64(db.CompactionStats().BytesOut) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "aerie_backfill_generations", Help: "Backfill generations in memory (taking writes or waiting for their flush)."},
			func() float64 { return float64(db.BackfillStats().Generations) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "aerie_backfill_samples_total", Help: "Samples stored through the backfill (older than the head's out-of-order window)."},
			func() float64 { return float64(db.BackfillStats().Samples) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "aerie_backfill_flushes_total", Help: "Backfill generations flushed into blocks."},
			func() float64 { return float64(db.BackfillStats().Flushed) }),
		blocksByLevel{db},
		newMemoryCollector(db),
	)
}

// blocksByLevel exports aerie_blocks_by_level{level}.
type blocksByLevel struct{ db *tsdb.DB }

var blocksByLevelDesc = prometheus.NewDesc("aerie_blocks_by_level", "Open blocks by compaction level (0: flushed, not compacted).", []string{"level"}, nil)

func (b blocksByLevel) Describe(ch chan<- *prometheus.Desc) { ch <- blocksByLevelDesc }

func (b blocksByLevel) Collect(ch chan<- prometheus.Metric) {
	for level, n := range b.db.CompactionStats().BlocksByLevel {
		ch <- prometheus.MustNewConstMetric(blocksByLevelDesc, prometheus.GaugeValue, float64(n), strconv.Itoa(level))
	}
}

// instrument wraps h with request counting and latency by handler name.
func (m *metrics) instrument(name string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w, code: http.StatusOK}
		h.ServeHTTP(sw, r)
		m.httpReqs.WithLabelValues(name, strconv.Itoa(sw.code)).Inc()
		m.httpDur.WithLabelValues(name).Observe(time.Since(start).Seconds())
	})
}

type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	w.code = code
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// countingAppendable counts what one protocol stores and what it is
// refused, per reason.
type countingAppendable struct {
	storage.Appendable
	m        *metrics
	protocol string
}

func (c countingAppendable) Appender(ctx context.Context) storage.Appender {
	return &countingAppender{Appender: c.Appendable.Appender(ctx), c: c}
}

type countingAppender struct {
	storage.Appender
	c       countingAppendable
	pending int
}

func (a *countingAppender) Append(ref storage.SeriesRef, l labels.Labels, t int64, v float64) (storage.SeriesRef, error) {
	ref, err := a.Appender.Append(ref, l, t, v)
	if err != nil {
		a.c.m.rejected.WithLabelValues(a.c.protocol, reason(err)).Inc()
		return ref, err
	}
	a.pending++
	return ref, nil
}

func (a *countingAppender) Commit() error {
	err := a.Appender.Commit()
	if err == nil {
		a.c.m.ingested.WithLabelValues(a.c.protocol).Add(float64(a.pending))
	} else {
		a.c.m.rejected.WithLabelValues(a.c.protocol, "storage_error").Add(float64(a.pending))
	}
	a.pending = 0
	return err
}

func (a *countingAppender) Rollback() error {
	a.pending = 0
	return a.Appender.Rollback()
}

// ingestHook counts what the line-protocol and import handlers stored and
// rejected (their parse errors never reach an appender).
func (m *metrics) ingestHook(protocol, reason string, n int) {
	if reason == ingest.ReasonOK {
		m.ingested.WithLabelValues(protocol).Add(float64(n))
		return
	}
	m.rejected.WithLabelValues(protocol, reason).Add(float64(n))
}

// reason maps an append error to a short, bounded label value: the
// reason the ingest handlers give it, or else one of the engine's limits
// that they count as other.
func reason(err error) string {
	if r := ingest.AppendReason(err); r != ingest.ReasonOther {
		return r
	}
	switch {
	case errors.Is(err, head.ErrGroupTooWide):
		return "group_too_wide"
	case errors.Is(err, head.ErrPartitionLimit):
		return "partition_limit"
	case errors.Is(err, tsdb.ErrNativeHistogram):
		return ingest.ReasonNativeHistogram
	}
	return ingest.ReasonOther
}
