package bucket

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/errgroup"

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
	Gets         atomic.Int64 // range GETs of data objects
	Rounds       atomic.Int64 // fetches that issued GETs: round trips, the GETs of one in parallel
	BytesFetched atomic.Int64 // bytes those GETs returned
	BytesNeeded  atomic.Int64 // bytes of the column ranges the fetches were for
	CacheHits    atomic.Int64 // windows served from the cache instead
	MetaGets     atomic.Int64 // metadata objects read (OpenBlock), from the bucket or the metadata cache
	MetaBytes    atomic.Int64
	// MetaCacheHits counts the metadata objects of MetaGets read from the
	// local metadata cache instead of the bucket.
	MetaCacheHits atomic.Int64
	// MetricsGets and MetricsBytes count the metrics objects read (a
	// block's metrics read while not in the MetricsCache; from the bucket
	// or the local metadata cache), MetricsCacheHits the reads the
	// MetricsCache answered.
	MetricsGets      atomic.Int64
	MetricsBytes     atomic.Int64
	MetricsCacheHits atomic.Int64
}

// Data reads: a fetch asks for column ranges; each is widened to the
// column's CRC windows (Placement.Windows), the windows already cached are
// taken from the cache, and the runs of missing windows are mapped to
// their data objects, sorted, and coalesced when the gap between two is at
// most CoalesceGap bytes, or when the GET's gaps stay at most
// 1/CoalesceWaste of the bytes it needs. The resulting range GETs run in parallel, at most ParallelGets at
// a time.
const (
	CoalesceGap   = 4 << 10
	CoalesceWaste = 4
	ParallelGets  = 16
)

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
// object is fetched and checked now; data are fetched as queries read them
// (a selection's column ranges at once, see CoalesceGap), checked against
// their window CRCs and kept in cache. dict must hold the codes the block
// references (see LoadTagDict).
func OpenBlock(ctx context.Context, st RangeStore, ulid string, dict *index.TagDict, cache *ExtentCache, stats *ReadStats) (*block.Reader, error) {
	return openBlock(ctx, st, ulid, dict, cache, nil, stats)
}

// openBlock is OpenBlock with the cache that keeps the metrics sections it
// fetches (nil: none is kept).
func openBlock(ctx context.Context, st RangeStore, ulid string, dict *index.TagDict, cache *ExtentCache, mcache *MetricsCache, stats *ReadStats) (*block.Reader, error) {
	name := MetaObjectName(ulid)
	b, err := st.Get(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	if stats != nil {
		stats.MetaGets.Add(1)
		stats.MetaBytes.Add(int64(len(b)))
	}
	m, err := ParseBlockMeta(name, b)
	if err != nil {
		return nil, err
	}
	if m.TagDictLen > dict.Len() {
		return nil, fmt.Errorf("bucket block %s needs %d TagDict codes, the dictionary has %d", ulid, m.TagDictLen, dict.Len())
	}
	d := &remoteData{st: st, ulid: ulid, meta: m, cache: cache, stats: stats}
	var ml block.MetricsLoader
	if m.Version >= 3 {
		ml = &metricsLoader{st: st, ulid: ulid, info: m.Metrics, cache: mcache, stats: stats}
	}
	r, err := block.OpenRemote("bucket:"+blocksPrefix+ulid, m.Meta, m.Index, dict, d, ml)
	if err != nil {
		return nil, err
	}
	d.r, d.exts = r, r.Extents()
	if err := d.check(name); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// remoteData is a block's data file read from its data objects: the
// io.ReaderAt and block.Prefetcher of block.OpenRemote. A read never spans
// two group extents (block invariant 2), nor two of an extent's parts (its
// timestamp column, its value columns). Timestamp columns are read as
// value columns are, through windows, except those a metadata object
// before version 4 holds (BlockMeta.timestampsInside).
type remoteData struct {
	st    RangeStore
	ulid  string
	meta  *BlockMeta
	r     *block.Reader
	exts  []block.Extent
	parts [][]int64 // per group, each part's offset in its extent (0: the timestamp column)
	cache *ExtentCache
	stats *ReadStats
}

// check compares the placements with the index's extents and computes
// parts.
func (d *remoteData) check(name string) error {
	m := d.meta
	if len(d.exts) != len(m.Groups) {
		return &CorruptionError{Object: name, Err: fmt.Errorf("%d group placements for %d groups", len(m.Groups), len(d.exts))}
	}
	d.parts = make([][]int64, len(d.exts))
	for i, e := range d.exts {
		g := m.Groups[i]
		windowed := len(e.Parts) // parts with window CRCs
		if m.timestampsInside() {
			windowed--
		}
		switch {
		case g.Len != e.Len || g.CRC != e.CRC:
			return &CorruptionError{Object: name, Err: fmt.Errorf("group %d: placement of %d bytes (CRC %#x), index says %d (%#x)", i, g.Len, g.CRC, e.Len, e.CRC)}
		case m.timestampsInside() && int64(len(g.Timestamps)) != e.Parts[0]:
			return &CorruptionError{Object: name, Err: fmt.Errorf("group %d: %d timestamp bytes, index says %d", i, len(g.Timestamps), e.Parts[0])}
		case len(g.Windows) != windowed:
			return &CorruptionError{Object: name, Err: fmt.Errorf("group %d: window checksums of %d parts, index says %d", i, len(g.Windows), windowed)}
		}
		var at int64
		d.parts[i] = make([]int64, len(e.Parts))
		for p, l := range e.Parts {
			if w := m.partWindows(i, p); (p > 0 || !m.timestampsInside()) && len(w) != windowCount(l, m.WindowSize) {
				return &CorruptionError{Object: name, Err: fmt.Errorf("group %d part %d: %d window checksums for %d bytes, want %d", i, p, len(w), l, windowCount(l, m.WindowSize))}
			}
			d.parts[i][p] = at
			at += l
		}
	}
	return nil
}

// colRange is a range of one part of a group extent: group g, part p (0:
// its timestamp column, then its value columns), bytes [off, end) of the
// part.
type colRange struct {
	g, p     int
	off, end int64
}

// inMeta tells a range of a timestamp column the metadata object holds.
func (d *remoteData) inMeta(cr colRange) bool { return cr.p == 0 && d.meta.timestampsInside() }

// locate maps data-file range [off, off+n) to its part.
func (d *remoteData) locate(off, n int64) (colRange, error) {
	gi := d.r.GroupOf(off)
	if gi < 0 {
		return colRange{}, fmt.Errorf("bucket block %s: data offset %d is in no group extent", d.ulid, off)
	}
	e := d.exts[gi]
	rel := off - e.Off
	if rel+n > e.Len {
		return colRange{}, fmt.Errorf("bucket block %s: read [%d, +%d) spans past group %d's extent", d.ulid, off, n, gi)
	}
	parts := d.parts[gi]
	p := sort.Search(len(parts), func(i int) bool { return parts[i] > rel }) - 1
	start := parts[p]
	if rel+n > start+e.Parts[p] {
		return colRange{}, fmt.Errorf("bucket block %s: read [%d, +%d) spans two parts of group %d", d.ulid, off, n, gi)
	}
	return colRange{g: gi, p: p, off: rel - start, end: rel - start + n}, nil
}

// ReadAt reads through windows (fetched now if not cached), or a
// timestamp column the metadata object holds.
func (d *remoteData) ReadAt(p []byte, off int64) (int, error) {
	cr, err := d.locate(off, int64(len(p)))
	if err != nil {
		return 0, err
	}
	if d.inMeta(cr) {
		return copy(p, d.meta.Groups[cr.g].Timestamps[cr.off:cr.end]), nil
	}
	w, err := d.fetch([]colRange{cr})
	if err != nil {
		return 0, err
	}
	return w.ReadAt(p, off)
}

// Prefetch fetches the ranges a selection will read (block.Prefetcher).
func (d *remoteData) Prefetch(ranges []block.ByteRange) (io.ReaderAt, error) {
	crs := make([]colRange, 0, len(ranges))
	for _, r := range ranges {
		cr, err := d.locate(r.Off, r.Len)
		if err != nil {
			return nil, err
		}
		if !d.inMeta(cr) {
			crs = append(crs, cr)
		}
	}
	return d.fetch(crs)
}

// winKey names one window of one part of one group's extent.
type winKey struct{ g, p, w int32 }

// windows is a set of checked windows of one block: an io.ReaderAt over
// the data-file ranges they cover.
type windows struct {
	d  *remoteData
	by map[winKey][]byte
}

var errNotFetched = errors.New("range not fetched")

func (ws *windows) ReadAt(p []byte, off int64) (int, error) {
	cr, err := ws.d.locate(off, int64(len(p)))
	if err != nil {
		return 0, err
	}
	if ws.d.inMeta(cr) {
		return copy(p, ws.d.meta.Groups[cr.g].Timestamps[cr.off:cr.end]), nil
	}
	size := int64(ws.d.meta.WindowSize)
	n := 0
	for at := cr.off; at < cr.end; {
		w := at / size
		b, ok := ws.by[winKey{int32(cr.g), int32(cr.p), int32(w)}]
		if !ok {
			return n, errNotFetched
		}
		k := copy(p[n:], b[at-w*size:])
		n += k
		at += int64(k)
	}
	return n, nil
}

// get is one range GET: of object obj, [off, off+len), covering runs.
type get struct {
	obj      int
	off, len int64
	useful   int64 // bytes of its runs
	gaps     int64 // bytes between its runs
	runs     []winRun
}

// winRun is a run of windows [w0, w1] of one part, and where they are in
// their data object.
type winRun struct {
	g, p   int
	w0, w1 int
	off    int64 // in the object
	len    int64
}

// fetch returns the windows covering crs: cached ones from the cache, the
// others fetched by coalesced range GETs in parallel, checked and cached.
func (d *remoteData) fetch(crs []colRange) (*windows, error) {
	ws := &windows{d: d, by: map[winKey][]byte{}}
	size := int64(d.meta.WindowSize)
	var runs []winRun
	var needed int64
	for _, cr := range crs {
		if cr.end <= cr.off {
			continue
		}
		colLen := d.exts[cr.g].Parts[cr.p]
		pl := d.meta.Groups[cr.g]
		base := pl.Off + d.parts[cr.g][cr.p]
		missing := false
		w0 := -1
		flush := func(w1 int) {
			if w0 >= 0 {
				off := int64(w0) * size
				end := min(int64(w1+1)*size, colLen)
				runs = append(runs, winRun{g: cr.g, p: cr.p, w0: w0, w1: w1, off: base + off, len: end - off})
				w0 = -1
			}
		}
		last := int((cr.end - 1) / size)
		for w := int(cr.off / size); w <= last; w++ {
			k := winKey{int32(cr.g), int32(cr.p), int32(w)}
			if _, ok := ws.by[k]; ok {
				flush(w - 1)
				continue
			}
			if b, ok := d.cache.get(extentKey{d.ulid, k}); ok {
				ws.by[k] = b
				if d.stats != nil {
					d.stats.CacheHits.Add(1)
				}
				flush(w - 1)
				continue
			}
			missing = true
			if w0 < 0 {
				w0 = w
			}
			ws.by[k] = nil // claimed: a later range over it does not fetch it again
		}
		flush(last)
		if missing {
			needed += cr.end - cr.off
		}
	}
	if len(runs) == 0 {
		return ws, nil
	}
	gets := coalesce(runs, d.meta.Groups)
	if d.stats != nil {
		d.stats.Rounds.Add(1)
		d.stats.BytesNeeded.Add(needed)
	}
	var mu sync.Mutex // guards ws.by while GETs complete
	g, ctx := errgroup.WithContext(context.Background())
	g.SetLimit(ParallelGets)
	for _, gt := range gets {
		g.Go(func() error {
			name := DataObjectName(d.ulid, gt.obj)
			b, err := d.st.GetRange(ctx, name, gt.off, gt.len)
			if err != nil {
				return fmt.Errorf("read %s [%d, +%d): %w", name, gt.off, gt.len, err)
			}
			if d.stats != nil {
				d.stats.Gets.Add(1)
				d.stats.BytesFetched.Add(int64(len(b)))
			}
			if int64(len(b)) != gt.len {
				return &CorruptionError{Object: name, Offset: gt.off + int64(len(b)), Err: fmt.Errorf("range of %d bytes returned %d", gt.len, len(b))}
			}
			for _, r := range gt.runs {
				crcs := d.meta.partWindows(r.g, r.p)
				rb := b[r.off-gt.off : r.off-gt.off+r.len]
				for w := r.w0; w <= r.w1; w++ {
					wb := rb[int64(w-r.w0)*size : min(int64(w-r.w0+1)*size, r.len)]
					if checksum.CRC32C(wb) != crcs[w] {
						return &CorruptionError{Object: name, Offset: r.off + int64(w-r.w0)*size, Err: fmt.Errorf("group %d part %d window %d: checksum mismatch", r.g, r.p, w)}
					}
					k := winKey{int32(r.g), int32(r.p), int32(w)}
					d.cache.put(extentKey{d.ulid, k}, bytes.Clone(wb)) // not pinning the whole GET
					mu.Lock()
					ws.by[k] = wb
					mu.Unlock()
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return ws, nil
}

// coalesce turns window runs into range GETs: sorted by object and
// offset, a run joins the GET before it when the gap between them is at
// most CoalesceGap bytes, or when all the gaps of the GET would then be at
// most 1/CoalesceWaste of the bytes it needs (so that long reads of a
// group's columns become few GETs while the gaps stay a bounded share).
func coalesce(runs []winRun, groups []Placement) []get {
	slices.SortFunc(runs, func(a, b winRun) int {
		if c := cmp.Compare(groups[a.g].Object, groups[b.g].Object); c != 0 {
			return c
		}
		return cmp.Compare(a.off, b.off)
	})
	var out []get
	for _, r := range runs {
		obj := groups[r.g].Object
		if n := len(out); n > 0 {
			last := &out[n-1]
			gap := r.off - (last.off + last.len)
			if last.obj == obj && (gap <= CoalesceGap || (last.gaps+gap)*CoalesceWaste <= last.useful+r.len) {
				last.len = max(last.len, r.off+r.len-last.off)
				last.useful += r.len
				last.gaps += max(gap, 0)
				last.runs = append(last.runs, r)
				continue
			}
		}
		out = append(out, get{obj: obj, off: r.off, len: r.len, useful: r.len, runs: []winRun{r}})
	}
	return out
}

// metricsLoader fetches a block's metrics object when its metrics are
// first read (block.MetricsLoader), keeping the section in the tier's
// MetricsCache. Concurrent loads of one block fetch once (mu).
type metricsLoader struct {
	st    RangeStore
	ulid  string
	info  ObjectInfo
	cache *MetricsCache
	stats *ReadStats

	mu sync.Mutex
}

func (l *metricsLoader) LoadMetrics(ctx context.Context, r *block.Reader) (*block.MetricsSection, error) {
	if s, ok := l.cache.get(l.ulid); ok {
		l.count(func(s *ReadStats) { s.MetricsCacheHits.Add(1) })
		return s, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if s, ok := l.cache.get(l.ulid); ok { // fetched while this call waited
		l.count(func(s *ReadStats) { s.MetricsCacheHits.Add(1) })
		return s, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ms, err := l.fetch(ctx, l.st, r)
	if cs, ok := l.st.(*cachedMetaStore); ok && cs.mc != nil && err != nil && ctx.Err() == nil {
		// A file of the local cache that passed its own checks but not
		// this block's: dropped, and the object read from the bucket.
		cs.mc.remove(l.ulid, metricsSuffix)
		ms, err = l.fetch(ctx, cs, r) // from the bucket now, and cached again
	}
	if err != nil {
		return nil, err
	}
	l.cache.put(l.ulid, ms)
	return ms, nil
}

// fetch reads the metrics object from st and checks it (ParseMetricsObject,
// then r.ParseMetrics).
func (l *metricsLoader) fetch(ctx context.Context, st RangeStore, r *block.Reader) (*block.MetricsSection, error) {
	name := MetricsObjectName(l.ulid)
	b, err := st.Get(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	l.count(func(s *ReadStats) { s.MetricsGets.Add(1); s.MetricsBytes.Add(int64(len(b))) })
	sec, _, err := ParseMetricsObject(name, b, l.info, r.MetricsLen(), nil)
	if err != nil {
		return nil, err
	}
	return r.ParseMetrics(name, sec)
}

func (l *metricsLoader) count(f func(*ReadStats)) {
	if l.stats != nil {
		f(l.stats)
	}
}

// MetricsCache keeps the metrics sections of bucket blocks that value
// search and aggregation read, least recently used evicted first, up to a
// byte budget (block.MetricsSection.Size). A section in use by a query
// stays alive after its eviction until that query is done. It is safe for
// concurrent use.
type MetricsCache struct {
	c *lru[string, *block.MetricsSection]
}

// NewMetricsCache returns a cache of up to budget bytes (≤ 0: nothing is
// kept; every read of a block's metrics fetches its object).
func NewMetricsCache(budget int64) *MetricsCache {
	return &MetricsCache{c: newLRU[string, *block.MetricsSection](budget)}
}

func (c *MetricsCache) get(ulid string) (*block.MetricsSection, bool) {
	if c == nil {
		return nil, false
	}
	return c.c.get(ulid)
}

func (c *MetricsCache) put(ulid string, s *block.MetricsSection) {
	if c != nil {
		c.c.put(ulid, s, s.Size())
	}
}

func (c *MetricsCache) drop(ulid string) {
	if c != nil {
		c.c.remove(ulid)
	}
}

// Size returns the bytes the cached sections hold.
func (c *MetricsCache) Size() int64 {
	if c == nil {
		return 0
	}
	return c.c.bytes()
}

type extentKey struct {
	ulid string
	win  winKey
}

// ExtentCache keeps checked windows of data objects, least recently used
// evicted first, up to a byte budget. It is safe for concurrent use.
type ExtentCache struct{ c *lru[extentKey, []byte] }

// NewExtentCache returns a cache of up to budget bytes (≤ 0: nothing is
// kept).
func NewExtentCache(budget int64) *ExtentCache {
	return &ExtentCache{c: newLRU[extentKey, []byte](budget)}
}

func (c *ExtentCache) get(k extentKey) ([]byte, bool) {
	if c == nil {
		return nil, false
	}
	return c.c.get(k)
}

func (c *ExtentCache) put(k extentKey, b []byte) {
	if c != nil {
		c.c.put(k, b, int64(len(b)))
	}
}

// Size returns the bytes cached.
func (c *ExtentCache) Size() int64 { return c.c.bytes() }
