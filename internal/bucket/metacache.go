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

// MetaCache keeps blocks' metadata objects on local disk, so that a
// restarted node opens its bucket blocks without fetching their metadata
// again. Files are named <ULID>.meta and checked (ParseBlockMeta: magic,
// version, CRC32C) on every read: a damaged file is removed and the
// object fetched again. The directory is bounded in bytes; the files read
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

func (c *MetaCache) path(ulid string) string { return filepath.Join(c.dir, ulid+".meta") }

// get returns block ulid's cached metadata object if it is there and
// intact.
func (c *MetaCache) get(ulid string) ([]byte, bool) {
	p := c.path(ulid)
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, false
	}
	if _, err := ParseBlockMeta(p, b); err != nil {
		os.Remove(p)
		return nil, false
	}
	now := time.Now()
	os.Chtimes(p, now, now) // recency for eviction
	return b, true
}

// put stores b as block ulid's metadata object (temporary file, rename),
// then evicts down to the budget. Failures only cost a later fetch.
func (c *MetaCache) put(ulid string, b []byte) {
	if int64(len(b)) > c.budget {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	tmp := c.path(ulid) + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		os.Remove(tmp)
		return
	}
	if err := os.Rename(tmp, c.path(ulid)); err != nil {
		os.Remove(tmp)
		return
	}
	c.evict()
}

// drop removes block ulid's file (the block left the bucket).
func (c *MetaCache) drop(ulid string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	os.Remove(c.path(ulid))
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
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".meta") {
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
	if s.mc == nil || name != MetaObjectName(s.ulid) {
		return s.RangeStore.Get(ctx, name)
	}
	if b, ok := s.mc.get(s.ulid); ok {
		s.hit = true
		if s.stats != nil {
			s.stats.MetaCacheHits.Add(1)
		}
		return b, nil
	}
	b, err := s.RangeStore.Get(ctx, name)
	if err != nil {
		return nil, err
	}
	if _, perr := ParseBlockMeta(name, b); perr == nil {
		s.mc.put(s.ulid, b)
	}
	return b, nil
}
