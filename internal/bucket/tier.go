package bucket

import (
	"context"
	"fmt"
	"sync"

	"github.com/aerie-db/aerie/internal/block"
	"github.com/aerie-db/aerie/internal/index"
)

// Tier is the bucket as the engine's remote tier (tsdb.Remote): it
// uploads blocks, lists and opens them. It is safe for concurrent use.
type Tier struct {
	st      RangeStore
	maxSize int64
	cache   *ExtentCache
	meta    *MetaCache // nil: metadata objects are always fetched
	metrics *MetricsCache
	Stats   ReadStats

	mu sync.Mutex // guards up
	up *Uploader
}

// DefaultMetricsCacheSize bounds the metrics sections a tier keeps in
// memory unless SetMetricsCache says otherwise.
const DefaultMetricsCacheSize = 64 << 20

// NewTier returns the tier over st, packing data objects up to maxSize
// bytes (≤ 0: DefaultObjectSize), caching up to cacheBytes of fetched
// group extents and DefaultMetricsCacheSize of metrics sections.
func NewTier(st RangeStore, maxSize, cacheBytes int64) *Tier {
	return &Tier{st: st, maxSize: maxSize, cache: NewExtentCache(cacheBytes), metrics: NewMetricsCache(DefaultMetricsCacheSize)}
}

// SetMetricsCache keeps the metrics sections the tier's blocks fetch in
// mc; call it before the tier is used.
func (t *Tier) SetMetricsCache(mc *MetricsCache) { t.metrics = mc }

// MetricsCache returns the cache of the tier's metrics sections.
func (t *Tier) MetricsCache() *MetricsCache { return t.metrics }

// SyncTagDict applies the bucket's TagDict segments that dict lacks and
// syncs it. dict must be a prefix of the bucket's dictionary (the same
// node's, or empty): anything else is an error, since codes would clash.
func (t *Tier) SyncTagDict(ctx context.Context, dict *index.TagDict) error {
	segs, err := listSegments(ctx, t.st)
	if err != nil {
		return err
	}
	for _, s := range segs {
		n := dict.Len()
		switch {
		case s[1] <= n:
			continue
		case s[0] != n:
			if s[0] > n {
				return nil // past a gap: the bucket covers no more
			}
			return fmt.Errorf("the local dictionary has %d codes, which splits bucket segment [%d, %d): the data directory is not this bucket's", n, s[0], s[1])
		}
		name := TagDictSegmentName(s[0], s[1])
		b, err := t.st.Get(ctx, name)
		if err != nil {
			return fmt.Errorf("read %s: %w", name, err)
		}
		if err := dict.ApplySegment(name, b); err != nil {
			return err
		}
		if err := dict.Sync(); err != nil && err != index.ErrClosed {
			return err
		}
	}
	return nil
}

// List returns the ULIDs of the bucket's complete blocks.
func (t *Tier) List(ctx context.Context) ([]string, error) { return ListBlocks(ctx, t.st) }

// SetMetaCache keeps the metadata objects the tier opens in mc (on local
// disk); call it before the tier is used.
func (t *Tier) SetMetaCache(mc *MetaCache) { t.meta = mc }

// Open opens block ulid for reading, its metadata object from the
// metadata cache if it is there.
func (t *Tier) Open(ctx context.Context, ulid string, dict *index.TagDict) (*block.Reader, error) {
	if t.meta == nil {
		return openBlock(ctx, t.st, ulid, dict, t.cache, t.metrics, &t.Stats)
	}
	cs := &cachedMetaStore{RangeStore: t.st, mc: t.meta, ulid: ulid, stats: &t.Stats}
	r, err := openBlock(ctx, cs, ulid, dict, t.cache, t.metrics, &t.Stats)
	if err != nil && cs.hit {
		// An intact file that does not open (not this bucket's block, say):
		// dropped, and the block opened from the bucket.
		t.meta.drop(ulid)
		return openBlock(ctx, &cachedMetaStore{RangeStore: t.st, mc: t.meta, ulid: ulid}, ulid, dict, t.cache, t.metrics, &t.Stats)
	}
	return r, err
}

// Delete removes block ulid from the bucket: its metadata object first,
// so the block is invisible before any of its data or metrics objects
// goes.
func (t *Tier) Delete(ctx context.Context, ulid string) error {
	if t.meta != nil {
		t.meta.drop(ulid)
	}
	t.metrics.drop(ulid)
	if err := t.st.Delete(ctx, MetaObjectName(ulid)); err != nil {
		return fmt.Errorf("delete %s: %w", MetaObjectName(ulid), err)
	}
	var names []string
	if err := t.st.Iter(ctx, blocksPrefix+ulid+"/", func(name string) error {
		names = append(names, name)
		return nil
	}, true); err != nil {
		return err
	}
	for _, name := range names {
		if err := t.st.Delete(ctx, name); err != nil {
			return fmt.Errorf("delete %s: %w", name, err)
		}
	}
	return nil
}

// Upload copies the block in dir to the bucket (see Uploader.UploadBlock).
func (t *Tier) Upload(ctx context.Context, dir string, dict *index.TagDict) error {
	t.mu.Lock()
	if t.up == nil || t.up.dict != dict {
		t.up = NewUploader(t.st, dict, t.maxSize)
	}
	up := t.up
	t.mu.Unlock()
	_, err := up.UploadBlock(ctx, dir)
	return err
}
