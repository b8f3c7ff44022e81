package bucket

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// MetaCache keeps blocks' metadata objects, and the metrics objects that
// value search fetched, on local disk, so that a restarted node opens its
// bucket blocks, and searches them, without fetching those again. Files
// are named <ULID>.meta and <ULID>.metrics and checked on every read
// (ParseBlockMeta; a metrics object's magic, version and trailing CRC32C,
// then the reader's full check): a damaged file is removed and the object
// fetched again. The directory is bounded in bytes; the files read
// least recently (modification time, touched on every hit) go first. It
// is safe for concurrent use (mu serializes writes and eviction).
type MetaCache struct {
	dir    string
	budget int64

	mu sync.Mutex
}

// NewMetaCache returns a cache of up to budget bytes in dir, created if
// needed.
func NewMetaCache(dir string, budget int64) (*MetaCache, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	return &MetaCache{dir: dir, budget: budget}, nil
}

// The cached kinds of object: file suffix and check.
const (
	metaSuffix    = ".meta"
	metricsSuffix = ".metrics"
)

func (c *MetaCache) path(ulid, suffix string) string { return filepath.Join(c.dir, ulid+suffix) }

// get returns block ulid's cached object of kind suffix if it is there
// and intact.
func (c *MetaCache) get(ulid, suffix string) ([]byte, bool) {
	p := c.path(ulid, suffix)
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, false
	}
	if err := checkCached(p, suffix, b); err != nil {
		os.Remove(p)
		return nil, false
	}
	now := time.Now()
	os.Chtimes(p, now, now) // recency for eviction
	return b, true
}

// checkCached checks what a file of kind suffix can check alone.
func checkCached(name, suffix string, b []byte) error {
	if suffix == metaSuffix {
		_, err := ParseBlockMeta(name, b)
		return err
	}
	return checkMetricsObject(name, b)
}

// put stores b as block ulid's object of kind suffix (temporary file,
// rename), then evicts down to the budget. Failures only cost a later
// fetch.
func (c *MetaCache) put(ulid, suffix string, b []byte) {
	if int64(len(b)) > c.budget {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.path(ulid, suffix)
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		os.Remove(tmp)
		return
	}
	if err := os.Rename(tmp, p); err != nil {
		os.Remove(tmp)
		return
	}
	c.evict()
}

// remove removes block ulid's file of kind suffix.
func (c *MetaCache) remove(ulid, suffix string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	os.Remove(c.path(ulid, suffix))
}

// drop removes block ulid's files (the block left the bucket, or a file
// did not open).
func (c *MetaCache) drop(ulid string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	os.Remove(c.path(ulid, metaSuffix))
	os.Remove(c.path(ulid, metricsSuffix))
}

type metaFile struct {
	path string
	size int64
	mod  time.Time
}

// files lists the cached files and their total size.
func (c *MetaCache) files() ([]metaFile, int64) {
	var files []metaFile
	var total int64
	filepath.WalkDir(c.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !(strings.HasSuffix(p, metaSuffix) || strings.HasSuffix(p, metricsSuffix)) {
			return nil
		}
		if fi, err := d.Info(); err == nil {
			files = append(files, metaFile{p, fi.Size(), fi.ModTime()})
			total += fi.Size()
		}
		return nil
	})
	return files, total
}

// evict removes the least recently used files until the rest fit. mu held.
func (c *MetaCache) evict() {
	files, total := c.files()
	slices.SortFunc(files, func(a, b metaFile) int { return a.mod.Compare(b.mod) })
	for _, f := range files {
		if total <= c.budget {
			return
		}
		if os.Remove(f.path) == nil {
			total -= f.size
		}
	}
}

// Size returns the bytes of the cached files.
func (c *MetaCache) Size() int64 {
	_, total := c.files()
	return total
}

// cachedMetaStore is a RangeStore whose Get of one block's metadata
// object is answered from the metadata cache, or fetched and cached.
type cachedMetaStore struct {
	RangeStore
	mc    *MetaCache
	ulid  string
	stats *ReadStats
	hit   bool
}

func (s *cachedMetaStore) Get(ctx context.Context, name string) ([]byte, error) {
	suffix := ""
	switch {
	case s.mc == nil:
	case name == MetaObjectName(s.ulid):
		suffix = metaSuffix
	case name == MetricsObjectName(s.ulid):
		suffix = metricsSuffix
	}
	if suffix == "" {
		return s.RangeStore.Get(ctx, name)
	}
	if b, ok := s.mc.get(s.ulid, suffix); ok {
		if suffix == metaSuffix {
			s.hit = true
			if s.stats != nil {
				s.stats.MetaCacheHits.Add(1)
			}
		}
		return b, nil
	}
	b, err := s.RangeStore.Get(ctx, name)
	if err != nil {
		return nil, err
	}
	if checkCached(name, suffix, b) == nil {
		s.mc.put(s.ulid, suffix, b)
	}
	return b, nil
}
