package bucket

import (
	"container/list"
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/aerie-db/aerie/internal/block"
	"github.com/aerie-db/aerie/internal/checksum"
	"github.com/aerie-db/aerie/internal/index"
)

// RangeStore is what reading blocks from a bucket needs (Bucket has it,
// with retries).
type RangeStore interface {
	Store
	GetRange(ctx context.Context, name string, off, length int64) ([]byte, error)
	Delete(ctx context.Context, name string) error
}

// ReadStats count what remote blocks fetched against what their readers
// asked for: BytesFetched ÷ BytesNeeded is the read amplification.
type ReadStats struct {
	Gets         atomic.Int64
	BytesFetched atomic.Int64
	BytesNeeded  atomic.Int64
	CacheHits    atomic.Int64
}

// ListBlocks returns the ULIDs of the blocks visible in the bucket: those
// whose metadata object exists.
func ListBlocks(ctx context.Context, st Store) ([]string, error) {
	var out []string
	err := st.Iter(ctx, blocksPrefix, func(name string) error {
		if ulid, ok := strings.CutSuffix(strings.TrimPrefix(name, blocksPrefix), "/"+metaName); ok && !strings.Contains(ulid, "/") {
			out = append(out, ulid)
		}
		return nil
	}, true)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", blocksPrefix, err)
	}
	return out, nil
}

// OpenBlock opens block ulid of the bucket for reading: its metadata
// object is fetched and checked now; data are fetched a group extent at a
// time as queries read them (one GET per extent, checked against its CRC,
// kept in cache). dict must hold the codes the block references (see
// LoadTagDict).
func OpenBlock(ctx context.Context, st RangeStore, ulid string, dict *index.TagDict, cache *ExtentCache, stats *ReadStats) (*block.Reader, error) {
	name := MetaObjectName(ulid)
	b, err := st.Get(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	m, err := ParseBlockMeta(name, b)
	if err != nil {
		return nil, err
	}
	if m.TagDictLen > dict.Len() {
		return nil, fmt.Errorf("bucket block %s needs %d TagDict codes, the dictionary has %d", ulid, m.TagDictLen, dict.Len())
	}
	d := &remoteData{st: st, ulid: ulid, meta: m, cache: cache, stats: stats}
	r, err := block.OpenRemote("bucket:"+blocksPrefix+ulid, m.Meta, m.Index, dict, d)
	if err != nil {
		return nil, err
	}
	d.r, d.exts = r, r.Extents()
	if len(d.exts) != len(m.Groups) {
		r.Close()
		return nil, &CorruptionError{Object: name, Err: fmt.Errorf("%d group placements for %d groups", len(m.Groups), len(d.exts))}
	}
	for i, e := range d.exts {
		g := m.Groups[i]
		if g.Len != e.Len || g.CRC != e.CRC {
			r.Close()
			return nil, &CorruptionError{Object: name, Err: fmt.Errorf("group %d: placement of %d bytes (CRC %#x), index says %d (%#x)", i, g.Len, g.CRC, e.Len, e.CRC)}
		}
		if len(g.Parts) != len(e.Parts) {
			r.Close()
			return nil, &CorruptionError{Object: name, Err: fmt.Errorf("group %d: %d part checksums for %d parts", i, len(g.Parts), len(e.Parts))}
		}
	}
	return r, nil
}

// remoteData is a block's data file read from its data objects: the
// io.ReaderAt of block.OpenRemote. A read never spans two group extents
// (block invariant 2).
type remoteData struct {
	st    RangeStore
	ulid  string
	meta  *BlockMeta
	r     *block.Reader
	exts  []block.Extent
	cache *ExtentCache
	stats *ReadStats
}

func (d *remoteData) ReadAt(p []byte, off int64) (int, error) {
	gi := d.r.GroupOf(off)
	if gi < 0 {
		return 0, fmt.Errorf("bucket block %s: data offset %d is in no group extent", d.ulid, off)
	}
	e := d.exts[gi]
	if off+int64(len(p)) > e.Off+e.Len {
		return 0, fmt.Errorf("bucket block %s: read [%d, +%d) spans past group %d's extent", d.ulid, off, len(p), gi)
	}
	if d.stats != nil {
		d.stats.BytesNeeded.Add(int64(len(p)))
	}
	// The whole extent is fetched (one GET per group touched), not the
	// part holding the read: the reader does not know yet which other
	// columns of the group the query will read, and a GET per part would
	// multiply the requests of queries that read many. Placement.Parts
	// lets a later reader fetch and check parts alone.
	b, err := d.extent(gi)
	if err != nil {
		return 0, err
	}
	return copy(p, b[off-e.Off:]), nil
}

// extent returns group gi's extent, from the cache or fetched and checked.
func (d *remoteData) extent(gi int) ([]byte, error) {
	key := extentKey{d.ulid, gi}
	if b, ok := d.cache.get(key); ok {
		if d.stats != nil {
			d.stats.CacheHits.Add(1)
		}
		return b, nil
	}
	pl := d.meta.Groups[gi]
	name := DataObjectName(d.ulid, pl.Object)
	b, err := d.st.GetRange(context.Background(), name, pl.Off, pl.Len)
	if err != nil {
		return nil, fmt.Errorf("read %s [%d, +%d): %w", name, pl.Off, pl.Len, err)
	}
	if d.stats != nil {
		d.stats.Gets.Add(1)
		d.stats.BytesFetched.Add(int64(len(b)))
	}
	if int64(len(b)) != pl.Len || checksum.CRC32C(b) != pl.CRC {
		return nil, &CorruptionError{Object: name, Offset: pl.Off, Err: fmt.Errorf("group %d extent of %d bytes: checksum mismatch", gi, len(b))}
	}
	d.cache.put(key, b)
	return b, nil
}

type extentKey struct {
	ulid  string
	group int
}

// ExtentCache keeps fetched group extents, least recently used evicted
// first, up to a byte budget. It is safe for concurrent use (mu).
type ExtentCache struct {
	mu     sync.Mutex
	budget int64
	size   int64
	lru    *list.List // of *cacheEntry, most recent first
	byKey  map[extentKey]*list.Element
}

type cacheEntry struct {
	key extentKey
	b   []byte
}

// NewExtentCache returns a cache of up to budget bytes (≤ 0: nothing is
// kept).
func NewExtentCache(budget int64) *ExtentCache {
	return &ExtentCache{budget: budget, lru: list.New(), byKey: map[extentKey]*list.Element{}}
}

func (c *ExtentCache) get(k extentKey) ([]byte, bool) {
	if c == nil {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byKey[k]
	if !ok {
		return nil, false
	}
	c.lru.MoveToFront(el)
	return el.Value.(*cacheEntry).b, true
}

func (c *ExtentCache) put(k extentKey, b []byte) {
	if c == nil || int64(len(b)) > c.budget {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.byKey[k]; ok {
		return
	}
	c.byKey[k] = c.lru.PushFront(&cacheEntry{key: k, b: b})
	c.size += int64(len(b))
	for c.size > c.budget {
		el := c.lru.Back()
		e := el.Value.(*cacheEntry)
		c.lru.Remove(el)
		delete(c.byKey, e.key)
		c.size -= int64(len(e.b))
	}
}

// Size returns the bytes cached.
func (c *ExtentCache) Size() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.size
}
