package server

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/alecthomas/units"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/config"
	"go.yaml.in/yaml/v2"

	"github.com/aerie-db/aerie/internal/bucket"
	"github.com/aerie-db/aerie/internal/head"
	"github.com/aerie-db/aerie/internal/memory"
	"github.com/aerie-db/aerie/internal/positive"
	"github.com/aerie-db/aerie/internal/rollup"
	"github.com/aerie-db/aerie/internal/tsdb"
	"github.com/aerie-db/aerie/internal/wal"
)

// DefaultMaxFuture is aerie.max_future's default: a clock-skew guard.
const DefaultMaxFuture = 10 * time.Minute

// DefaultMetadataMemorySize bounds the bucket blocks' metadata kept in
// memory (aerie.storage.metadata_memory_size).
const DefaultMetadataMemorySize = 256 << 20

// AerieConfig is the `aerie:` section of the configuration file.
type AerieConfig struct {
	Retention      model.Duration  `yaml:"retention,omitempty"`       // 0 = keep forever
	PartitionRange model.Duration  `yaml:"partition_range,omitempty"` // default 2h
	GroupBy        []string        `yaml:"group_by,omitempty"`        // default [job, instance]
	OOOWindow      *model.Duration `yaml:"ooo_window,omitempty"`      // default 1h; 0 = off
	// Backfill accepts samples of any age inside the retention (default
	// true); false rejects those older than the head minus ooo_window,
	// as Prometheus does.
	Backfill *bool `yaml:"backfill,omitempty"`
	// MaxFuture rejects samples further ahead of the clock (default 10m;
	// 0 = no limit).
	MaxFuture *model.Duration `yaml:"max_future,omitempty"`
	// MaxBlockRange bounds compacted blocks (default 31d or 10 % of the
	// retention, whichever is smaller).
	MaxBlockRange model.Duration `yaml:"max_block_range,omitempty"`
	WAL           struct {
		Sync         string         `yaml:"sync,omitempty"`          // batch (default) | interval
		SyncInterval model.Duration `yaml:"sync_interval,omitempty"` // default 1s
	} `yaml:"wal,omitempty"`
	Limits struct {
		MaxSeries     int `yaml:"max_series,omitempty"`
		MaxGroupWidth int `yaml:"max_group_width,omitempty"`
	} `yaml:"limits,omitempty"`
	Flush struct {
		CPUBudget float64 `yaml:"cpu_budget,omitempty"` // share of one core, (0, 1]; default 1
	} `yaml:"flush,omitempty"`
	Memory struct {
		Limit            units.Base2Bytes `yaml:"limit,omitempty"`             // head tuple memory; 0 = none
		HotPartitions    *int             `yaml:"hot_partitions,omitempty"`    // flushed partitions kept in memory; default 1, 0 = none
		PageSize         units.Base2Bytes `yaml:"page_size,omitempty"`         // default 1MiB
		BlockSize        units.Base2Bytes `yaml:"block_size,omitempty"`        // default 256B
		ReclaimThreshold float64          `yaml:"reclaim_threshold,omitempty"` // share of the limit; default 0.9
		ReclaimSplit     []float64        `yaml:"reclaim_split,omitempty"`     // default [0.45, 0.35, 0.20]
		ReclaimInterval  model.Duration   `yaml:"reclaim_interval,omitempty"`  // default 1s
	} `yaml:"memory,omitempty"`
	Storage struct {
		// Tier turns the object-storage tier (internal/bucket) off when
		// false [true]: every block then stays in <data.dir>/blocks.
		Tier *bool `yaml:"tier,omitempty"`
		// Bucket is where the tier moves blocks: absent or `bucket: {}`,
		// the filesystem bucket at <data.dir>/bucket; `bucket: {type: S3,
		// config: {...}}` an S3 one (objstore's own configuration).
		Bucket *bucket.Config `yaml:"bucket,omitempty"`
		// LocalRetention: blocks whose data are all older than this, from
		// the newest data, are uploaded [24h].
		LocalRetention model.Duration `yaml:"local_retention,omitempty"`
		// CacheSize bounds the data windows fetched from the bucket kept
		// in memory [256MiB].
		CacheSize units.Base2Bytes `yaml:"cache_size,omitempty"`
		// MetaCacheSize bounds the blocks' metadata objects, and the
		// metrics objects value search read, kept on local disk in
		// <data.dir>/bucket-meta, so a restart does not fetch them again
		// [1GiB]; not used with the filesystem bucket.
		MetaCacheSize units.Base2Bytes `yaml:"meta_cache_size,omitempty"`
		// MetricsCacheSize bounds the block metrics of bucket blocks kept
		// in memory for value search and aggregation, fetched from their
		// metrics objects when first read [64MiB].
		MetricsCacheSize units.Base2Bytes `yaml:"metrics_cache_size,omitempty"`
		// MetadataMemorySize bounds the metadata of bucket blocks (their
		// label indexes, groups and column metas) kept in memory: the
		// blocks read least recently are dropped and opened again from
		// their metadata objects when a query reads them [256MiB].
		MetadataMemorySize units.Base2Bytes `yaml:"metadata_memory_size,omitempty"`
		// ChunkCache keeps range GETs of data objects in a TSCache slab
		// store on local disk, <data.dir>/cache/chunks.cache
		// (internal/chunkcache) [on, except with the filesystem bucket].
		ChunkCache *bool `yaml:"chunk_cache,omitempty"`
		// ChunkCacheSize is that file's size [1GiB].
		ChunkCacheSize units.Base2Bytes `yaml:"chunk_cache_size,omitempty"`
	} `yaml:"storage,omitempty"`
	// MetricInterval is the interval of the block metrics (Peregreen's
	// index blocks) that value search and aggregation read [1h].
	MetricInterval model.Duration `yaml:"metric_interval,omitempty"`
	Sensor         struct {
		// MaxUploadSize bounds one /upload body [16GiB]; bodies stream
		// through a spool file, not memory.
		MaxUploadSize units.Base2Bytes `yaml:"max_upload_size,omitempty"`
		// MaxSeries bounds the series one native search or extraction
		// answers [100000].
		MaxSeries int `yaml:"max_series,omitempty"`
	} `yaml:"sensor,omitempty"`
	Graphite GraphiteConfig `yaml:"graphite,omitempty"`
	Statsd   StatsdConfig   `yaml:"statsd,omitempty"`
	Rollup   RollupConfig   `yaml:"rollup,omitempty"`
	Archive  ArchiveConfig  `yaml:"archive,omitempty"`
	Cache    CacheConfig    `yaml:"cache,omitempty"`
}

// CacheConfig is the `aerie: cache:` section: the results cache (TSCache,
// internal/resultcache) in front of /api/v1/query_range, and the render
// cache (internal/rendercache) below Graphite's /render.
type CacheConfig struct {
	Results struct {
		// Enabled turns the results cache off when false [true].
		Enabled *bool `yaml:"enabled,omitempty"`
		// Size is its file's size in <data.dir>/cache/results.cache
		// [256MiB].
		Size units.Base2Bytes `yaml:"size,omitempty"`
		// MaxFreshness: answers at times within it of now are never
		// cached [10m].
		MaxFreshness model.Duration `yaml:"max_freshness,omitempty"`
		// SplitInterval: requests are split at its multiples, each part a
		// cache entry [24h].
		SplitInterval model.Duration `yaml:"split_interval,omitempty"`
	} `yaml:"results,omitempty"`
	Render struct {
		// Enabled turns the render cache off when false [true].
		Enabled *bool `yaml:"enabled,omitempty"`
		// Size is its file's size in <data.dir>/cache/render.cache
		// [256MiB].
		Size units.Base2Bytes `yaml:"size,omitempty"`
		// MaxFreshness: buckets ending within it of now are never cached
		// [10m].
		MaxFreshness model.Duration `yaml:"max_freshness,omitempty"`
	} `yaml:"render,omitempty"`
}

// Config is the whole configuration file.
type Config struct {
	Prom  *config.Config
	Aerie AerieConfig
	// Rules are the rollup schemas and aggregations (aerie.rollup).
	Rules *rollup.Rules
	// Warnings are settings that were accepted but are ignored.
	Warnings []string
}

// LoadConfig reads path (a prometheus.yml with an optional `aerie:`
// section). An empty path gives the defaults.
func LoadConfig(path string, logger *slog.Logger) (*Config, error) {
	if path == "" {
		return ParseConfig(nil, logger)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	c, err := parseConfig(b, logger, filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("config file %s: %w", path, err)
	}
	c.Prom.SetDirectory(filepath.Dir(path))
	return c, nil
}

// ParseConfig parses a configuration document. The `aerie:` section is
// split off and parsed strictly; the rest goes to Prometheus' own loader,
// so a prometheus.yml is accepted as Prometheus would accept it.
func ParseConfig(b []byte, logger *slog.Logger) (*Config, error) {
	return parseConfig(b, logger, "")
}

// parseConfig is ParseConfig with the directory relative file names in the
// aerie section are in ("": the working directory).
func parseConfig(b []byte, logger *slog.Logger, dir string) (*Config, error) {
	var doc yaml.MapSlice
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	var rest yaml.MapSlice
	var aerieRaw interface{}
	for _, it := range doc {
		if k, _ := it.Key.(string); k == "aerie" {
			aerieRaw = it.Value
			continue
		}
		rest = append(rest, it)
	}
	c := &Config{}
	if aerieRaw != nil {
		ab, err := yaml.Marshal(aerieRaw)
		if err != nil {
			return nil, err
		}
		if err := yaml.UnmarshalStrict(ab, &c.Aerie); err != nil {
			return nil, fmt.Errorf("aerie section: %w", err)
		}
	}
	rb, err := yaml.Marshal(rest)
	if err != nil {
		return nil, err
	}
	if len(rest) == 0 {
		rb = nil
	}
	c.Prom, err = config.Load(string(bytes.TrimSpace(rb)), logger)
	if err != nil {
		return nil, err
	}
	if len(c.Prom.RemoteWriteConfigs) > 0 {
		c.Warnings = append(c.Warnings, "remote_write is ignored: Aerie is the storage")
	}
	if len(c.Prom.AlertingConfig.AlertmanagerConfigs) > 0 {
		c.Warnings = append(c.Warnings, "alerting.alertmanagers is ignored: alerts are evaluated and shown in /api/v1/alerts but not sent")
	}
	if _, err := c.Aerie.walSync(); err != nil {
		return nil, err
	}
	if b := c.Aerie.Flush.CPUBudget; b < 0 || b > 1 {
		return nil, fmt.Errorf("aerie section: flush.cpu_budget must be a share of one core in (0, 1], not %v", b)
	}
	if err := c.Aerie.checkMemory(); err != nil {
		return nil, err
	}
	if mi := time.Duration(c.Aerie.MetricInterval); mi != 0 {
		pr := time.Duration(c.Aerie.PartitionRange)
		if pr == 0 {
			pr = 2 * time.Hour
		}
		if mi < time.Second || pr%mi != 0 {
			return nil, fmt.Errorf("aerie section: metric_interval %v: must be at least 1s and divide partition_range (%v), so that each interval lies in one block", mi, pr)
		}
	}
	if c.Aerie.Sensor.MaxUploadSize < 0 || c.Aerie.Sensor.MaxSeries < 0 {
		return nil, errors.New("aerie section: sensor.max_upload_size and sensor.max_series must not be negative")
	}
	if c.Rules, err = c.Aerie.Rollup.rules(dir); err != nil {
		return nil, fmt.Errorf("aerie section: %w", err)
	}
	if d := c.Aerie.Graphite.GroupDepth; d < 0 || d > 64 {
		return nil, fmt.Errorf("aerie section: graphite.group_depth %d: must be in [1, 64]", d)
	}
	if fi := time.Duration(c.Aerie.Statsd.FlushInterval); fi != 0 && fi < time.Millisecond {
		return nil, fmt.Errorf("aerie section: statsd.flush_interval %v: must be at least 1ms", fi)
	}
	if rc := &c.Aerie.Cache.Results; rc.Size != 0 && rc.Size < 4<<20 {
		return nil, fmt.Errorf("aerie section: cache.results.size %v: must be at least 4MiB", rc.Size)
	}
	if rc := &c.Aerie.Cache.Render; rc.Size != 0 && rc.Size < 4<<20 {
		return nil, fmt.Errorf("aerie section: cache.render.size %v: must be at least 4MiB", rc.Size)
	}
	if si := time.Duration(c.Aerie.Cache.Results.SplitInterval); si != 0 && (si < time.Minute || si%time.Minute != 0) {
		return nil, fmt.Errorf("aerie section: cache.results.split_interval %v: must be a whole number of minutes", si)
	}
	if pg := c.Aerie.Archive.Postgres; pg != nil {
		if pg.DSN == "" {
			return nil, errors.New("aerie section: archive.postgres.dsn is empty")
		}
		if len(c.Rules.Levels()) == 0 {
			return nil, errNoLevels
		}
	}
	return c, nil
}

// checkMemory validates the memory section as the engine will use it.
func (a *AerieConfig) checkMemory() error {
	m := &a.Memory
	if bs := m.BlockSize; bs != 0 && (bs < head.MinBlockSize || bs > head.MaxBlockSize) {
		return fmt.Errorf("aerie section: memory.block_size %v: must be in [%dB, %dB] (the largest tuple; one-byte offsets)", bs, head.MinBlockSize, head.MaxBlockSize)
	}
	if m.HotPartitions != nil && *m.HotPartitions < 0 {
		return fmt.Errorf("aerie section: memory.hot_partitions %d: must be 0 (none) or more", *m.HotPartitions)
	}
	if m.ReclaimInterval < 0 {
		return fmt.Errorf("aerie section: memory.reclaim_interval %v: must be positive", m.ReclaimInterval)
	}
	if _, err := memory.New(a.memoryOptions()); err != nil {
		return fmt.Errorf("aerie section: %w", err)
	}
	return nil
}

func (a *AerieConfig) memoryOptions() memory.Options {
	m := &a.Memory
	return memory.Options{
		PageSize: int(m.PageSize), BlockSize: int(m.BlockSize), Limit: int64(m.Limit),
		ReclaimThreshold: m.ReclaimThreshold, ReclaimSplit: m.ReclaimSplit,
	}
}

func (a *AerieConfig) walSync() (wal.SyncMode, error) {
	switch a.WAL.Sync {
	case "", "batch":
		return wal.SyncBatch, nil
	case "interval":
		return wal.SyncInterval, nil
	}
	return 0, fmt.Errorf("aerie section: wal.sync must be batch or interval, not %q", a.WAL.Sync)
}

// EngineOptions turns the section into the engine's options.
func (a *AerieConfig) EngineOptions() tsdb.Options {
	sync, _ := a.walSync()
	o := tsdb.Options{
		Retention:       int64(time.Duration(a.Retention) / time.Millisecond),
		PartitionRange:  int64(time.Duration(a.PartitionRange) / time.Millisecond),
		GroupBy:         a.GroupBy,
		GraphiteDepth:   a.Graphite.GroupDepth,
		MaxSeries:       a.Limits.MaxSeries,
		MaxGroupWidth:   a.Limits.MaxGroupWidth,
		WALSync:         sync,
		WALSyncInterval: time.Duration(a.WAL.SyncInterval),
		FlushCPUBudget:  a.Flush.CPUBudget,
		Memory:          a.memoryOptions(),
		ReclaimInterval: time.Duration(a.Memory.ReclaimInterval),
	}
	if h := a.Memory.HotPartitions; h != nil {
		o.HotPartitions = *h
		if *h == 0 {
			o.HotPartitions = -1
		}
	}
	if a.Backfill != nil && !*a.Backfill {
		o.NoBackfill = true
	}
	o.MaxFuture = DefaultMaxFuture.Milliseconds()
	if a.MaxFuture != nil {
		o.MaxFuture = time.Duration(*a.MaxFuture).Milliseconds()
	}
	o.MaxBlockRange = time.Duration(a.MaxBlockRange).Milliseconds()
	o.MetricInterval = time.Duration(a.MetricInterval).Milliseconds()
	o.LocalRetention = time.Duration(a.Storage.LocalRetention).Milliseconds()
	o.RemoteMetadataBytes = positive.Or(int64(a.Storage.MetadataMemorySize), DefaultMetadataMemorySize)
	if a.OOOWindow != nil {
		if *a.OOOWindow == 0 {
			o.NoOOO = true
		} else {
			o.OOOWindow = int64(time.Duration(*a.OOOWindow) / time.Millisecond)
		}
	}
	return o
}
