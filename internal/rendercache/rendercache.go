package rendercache

import (
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/aerie-db/aerie/internal/cache"
	"github.com/aerie-db/aerie/internal/graphite/archive"
	"github.com/aerie-db/aerie/internal/mathx"
	"github.com/aerie-db/aerie/internal/tsdb"
)

// Options configure a Store. Zero values take the defaults in brackets.
type Options struct {
	// MaxFreshness: buckets ending within it of now are never cached
	// [10m].
	MaxFreshness time.Duration
	// MinTime, if set, is the time (ms) before which the raw engine may
	// have deleted data by its own retention (aerie.retention), besides
	// the schema's (Grid.Oldest).
	MinTime func() int64
	// MaxSeries bounds the registry of cached series [262144].
	MaxSeries  int
	Now        func() time.Time // [time.Now]
	Logger     *slog.Logger
	Registerer prometheus.Registerer
}

const stripes = 256 // write generations, by series hash

// Chunk is the number of buckets in a cached point: points are runs of
// Chunk buckets starting at multiples of Chunk steps (Unix time), so a Get
// decodes a point per Chunk buckets, not one per bucket; only whole chunks
// are cached.
const Chunk = 16

// Store is an archive.Store answering Points from a cache where it can
// (see the package documentation) and a tsdb.LateObserver.
type Store struct {
	st   archive.Store
	gs   archive.GridStore
	c    *cache.Cache
	opts Options
	m    *metrics

	mu      sync.Mutex // guards the following; taken before the cache's lock
	gen     uint64     // bumped by every deletion
	written [stripes]uint64
	series  map[uint64]*entry // registry: series with keys stored
	epoch   uint64            // part of every key; bumped when the registry is full
}

// entry is a cached series and its keys, the latest of each archive.
type entry struct {
	lset labels.Labels
	keys map[int]cache.Key // archive index → key
}

var _ tsdb.LateObserver = (*Store)(nil)

// New puts c in front of st, which must implement archive.GridStore.
// Serve the render API with Graphite(), and make the Store the engine's
// late observer (or one of them).
func New(st archive.Store, c *cache.Cache, opts Options) (*Store, error) {
	gs, ok := st.(archive.GridStore)
	if !ok {
		return nil, fmt.Errorf("render cache: the store (%T) does not tell its grids (archive.GridStore)", st)
	}
	if opts.MaxFreshness <= 0 {
		opts.MaxFreshness = 10 * time.Minute
	}
	if opts.MaxSeries <= 0 {
		opts.MaxSeries = 1 << 18
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Store{st: st, gs: gs, c: c, opts: opts, m: newMetrics(), series: map[uint64]*entry{}}
	if opts.Registerer != nil {
		if err := s.m.register(opts.Registerer); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// tagIndex is graphite.TagIndex, forwarded when the store has it.
type tagIndex interface {
	LabelNames(ctx context.Context, ms ...*labels.Matcher) ([]string, error)
	LabelValues(ctx context.Context, name string, ms ...*labels.Matcher) ([]string, error)
}

// Graphite returns the Store as the render API reads it: with the
// store's tag index (graphite.TagIndex) when it has one.
func (s *Store) Graphite() archive.Store {
	if ti, ok := s.st.(tagIndex); ok {
		return struct {
			*Store
			tagIndex
		}{s, ti}
	}
	return s
}

// Series implements archive.Store: the store's, uncached.
func (s *Store) Series(ctx context.Context, from, until int64, ms ...*labels.Matcher) ([]labels.Labels, error) {
	return s.st.Series(ctx, from, until, ms...)
}

// Points implements archive.Store: the store's answer, its cacheable
// buckets from the cache where it has them.
func (s *Store) Points(ctx context.Context, lset labels.Labels, from, until, now int64) (archive.Points, error) {
	g := s.gs.Grid(lset, from, until, now)
	p := g.Points
	if g.N == 0 {
		return p, nil
	}
	h := lset.Hash()
	s.mu.Lock()
	gen0, w0, epoch := s.gen, s.written[h%stripes], s.epoch
	s.mu.Unlock()

	end := g.Start + int64(g.N)*g.Step
	lo, hi := s.cacheable(g)
	if lo >= hi {
		s.m.uncached.Inc()
		vals, err := s.read(ctx, lset, g, g.Start, end)
		p.Values = vals
		return p, err
	}
	p.Values = make([]float64, g.N)
	key := keyOf(lset, g, epoch)
	// [clo, chi): the buckets the cache answers
	clo, chi := lo, lo
	res, err := s.c.Get(key, lo, hi-1, nil)
	if err != nil {
		s.opts.Logger.Warn("render cache read failed; reading the store", "series", lset.String(), "err", err)
	} else if res.Status != cache.Miss {
		clo, chi = s.fill(p.Values, g, res)
	}
	switch {
	case clo == lo && chi == hi:
		s.m.hits.Inc()
	case clo < chi:
		s.m.partials.Inc()
	default:
		s.m.misses.Inc()
	}
	// The rest, a read each side of what the cache answered; what falls
	// in [lo, hi) is stored.
	var sets [][2]int64
	for _, r := range [][2]int64{{g.Start, clo}, {chi, end}} {
		if clo == chi { // nothing cached: one read of the whole grid
			r = [2]int64{g.Start, end}
		}
		if r[0] >= r[1] {
			continue
		}
		vals, err := s.read(ctx, lset, g, r[0], r[1])
		if err != nil {
			return archive.Points{}, err
		}
		copy(p.Values[(r[0]-g.Start)/g.Step:], vals)
		if a, b := max(r[0], lo), min(r[1], hi); a < b {
			sets = append(sets, [2]int64{a, b})
		}
		if clo == chi {
			break
		}
	}
	if len(sets) > 0 {
		s.store(lset, h, g, key, p.Values, sets, gen0, w0, epoch)
	}
	return p, nil
}

// cacheable returns the buckets [lo, hi) of g that may be cached, whole
// chunks (lo = hi: none).
func (s *Store) cacheable(g archive.Grid) (lo, hi int64) {
	end := g.Start + int64(g.N)*g.Step
	// buckets ending by the freshness horizon and starting before Stable
	hi = min(end, mathx.FloorDiv(s.opts.Now().Add(-s.opts.MaxFreshness).UnixMilli(), 1000), g.Stable)
	oldest := g.Oldest
	if g.Index == 0 && s.opts.MinTime != nil {
		if mt := s.opts.MinTime(); mt != math.MinInt64 {
			oldest = max(oldest, mathx.FloorDiv(mt, 1000)+1)
		}
	}
	lo = g.Start
	if oldest != math.MinInt64 {
		lo = max(lo, oldest+g.Reach)
	}
	if lo >= hi {
		return 0, 0
	}
	span := Chunk * g.Step
	lo, hi = ceilDiv(lo, span)*span, mathx.FloorDiv(hi, span)*span
	if lo >= hi {
		return 0, 0
	}
	return lo, hi
}

// fill copies the cache's answer into vals and returns the buckets it
// covers; anything but exactly one point per chunk is a miss.
func (s *Store) fill(vals []float64, g archive.Grid, res cache.Result) (clo, chi int64) {
	span := Chunk * g.Step
	clo = ceilDiv(res.Start, span) * span
	chi = mathx.FloorDiv(res.End+1, span) * span // res.End = a chunk's end − 1
	if clo >= chi || len(res.Fields) != 1 {
		return 0, 0
	}
	n := int((chi - clo) / span)
	i := 0
	for _, pt := range res.Fields[0].Points {
		if pt.T < clo || pt.T >= chi {
			continue
		}
		if pt.T != clo+int64(i)*span || len(pt.V) != 8*Chunk {
			return 0, 0
		}
		at := (pt.T - g.Start) / g.Step
		for j := range Chunk {
			vals[at+int64(j)] = math.Float64frombits(binary.LittleEndian.Uint64(pt.V[8*j:]))
		}
		i++
	}
	if i != n {
		return 0, 0
	}
	return clo, chi
}

func (s *Store) read(ctx context.Context, lset labels.Labels, g archive.Grid, start, end int64) ([]float64, error) {
	vals, err := s.gs.ReadGrid(ctx, lset, g, start, end)
	if err != nil {
		return nil, err
	}
	if want := int((end - start) / g.Step); len(vals) != want {
		return nil, fmt.Errorf("render cache: store read %d buckets of [%d, %d) step %d, want %d", len(vals), start, end, g.Step, want)
	}
	s.m.reads.Inc()
	s.m.readBuckets.AddN(len(vals))
	return vals, nil
}

// store sets the buckets of vals in each of sets, unless a write or
// deletion came since the Points call began (gen0, w0) or the epoch moved.
func (s *Store) store(lset labels.Labels, h uint64, g archive.Grid, key cache.Key, vals []float64, sets [][2]int64, gen0, w0, epoch uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gen != gen0 || s.written[h%stripes] != w0 || s.epoch != epoch {
		s.m.skipped.Inc()
		return
	}
	e := s.series[h]
	switch {
	case e != nil && !labels.Equal(e.lset, lset):
		s.m.skipped.Inc() // two series of one hash: the second is not cached
		return
	case e == nil && len(s.series) >= s.opts.MaxSeries:
		s.epoch++
		clear(s.series)
		s.m.skipped.Inc()
		return
	case e == nil:
		e = &entry{lset: lset.Copy(), keys: map[int]cache.Key{}}
		s.series[h] = e
	}
	e.keys[g.Index] = key
	span := Chunk * g.Step
	for _, r := range sets {
		pts := make([]cache.Point, 0, (r[1]-r[0])/span)
		buf := make([]byte, 8*Chunk*cap(pts))
		for t := r[0]; t < r[1]; t += span {
			b := buf[: 8*Chunk : 8*Chunk]
			buf = buf[8*Chunk:]
			at := (t - g.Start) / g.Step
			for j := range Chunk {
				binary.LittleEndian.PutUint64(b[8*j:], math.Float64bits(vals[at+int64(j)]))
			}
			pts = append(pts, cache.Point{T: t, V: b})
		}
		if err := s.c.Set(key, r[0], r[1]-1, []cache.Field{{Name: "v", Points: pts}}); err != nil {
			s.opts.Logger.Debug("render cache: not stored", "series", lset.String(), "err", err)
			continue
		}
		s.m.stored.AddN(len(pts) * Chunk)
	}
}

// Horizon implements tsdb.LateObserver: half MaxFreshness before now, so
// an appender made up to MaxFreshness/2 before a bucket was cached still
// reports the samples that could fall in it (the horizon is read when an
// appender is made).
func (s *Store) Horizon() int64 {
	return s.opts.Now().Add(-s.opts.MaxFreshness / 2).UnixMilli()
}

// Written implements tsdb.LateObserver: the written series' keys, every
// archive, are dropped.
func (s *Store) Written(ws []tsdb.LateWrite) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, w := range ws {
		h := w.Hash
		s.written[h%stripes]++
		if e := s.series[h]; e != nil && labels.Equal(e.lset, w.Labels()) {
			s.dropLocked(h, e)
		}
	}
}

// Deleted implements tsdb.LateObserver: the keys of every cached series
// the matchers select are dropped.
func (s *Store) Deleted(_, _ int64, ms []*labels.Matcher) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gen++
	for h, e := range s.series {
		if matches(e.lset, ms) {
			s.dropLocked(h, e)
		}
	}
}

func (s *Store) dropLocked(h uint64, e *entry) {
	for _, k := range e.keys {
		if s.c.Delete(k) {
			s.m.invalidations.Inc()
		}
	}
	delete(s.series, h)
}

func matches(lset labels.Labels, ms []*labels.Matcher) bool {
	for _, m := range ms {
		if !m.Matches(lset.Get(m.Name)) {
			return false
		}
	}
	return true
}

// keyOf is a series' key on g's archive.
func keyOf(lset labels.Labels, g archive.Grid, epoch uint64) cache.Key {
	var b strings.Builder
	for _, n := range []uint64{epoch, uint64(g.Index), uint64(g.Step), g.Version} {
		b.WriteString(strconv.FormatUint(n, 10))
		b.WriteByte('/')
	}
	b.WriteString(lset.String())
	return cache.KeyOf(b.String())
}

// Stats are the Store's counters (tests and benchmarks).
type Stats struct {
	Hits, Partials, Misses, Uncached   uint64
	Reads, ReadBuckets, StoredBuckets  uint64
	Invalidations, StoresSkipped, Keys uint64
}

func ceilDiv(a, b int64) int64 { return -mathx.FloorDiv(-a, b) }
