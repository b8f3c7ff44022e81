package head

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/cespare/xxhash/v2"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/aerie-db/aerie/internal/index"
	"github.com/aerie-db/aerie/internal/memory"
	"github.com/aerie-db/aerie/internal/model"
	"github.com/aerie-db/aerie/internal/wal"
)

// Options configure a Head. Zero values take the defaults in brackets.
type Options struct {
	GroupBy            []string // [job, instance]; labels whose values form a group
	GraphiteGroupDepth int      // [2]; path components forming a Graphite group
	MaxGroupWidth      int      // [20000]; series per group
	MaxSeries          int      // [0 = unlimited]
	PartitionRange     int64    // [2h] in ms
	OOOWindow          int64    // [1h] in ms; 0 disables out-of-order rows
	TupleSize          int      // [8]; rows per tuple, 1..MaxTupleSize
	MisfitLimit        int      // [3]; consecutive lonely rows before a series moves to its own group
	// NoOOODefault lets OOOWindow=0 mean "off" rather than "default".
	NoOOODefault bool
	// AnyAge accepts rows of any age (a backfill head): no in-order bound
	// and no out-of-order window; only the minimum valid time applies.
	// The engine decides which samples may come here.
	AnyAge bool
	// Memory configures the memory manager that holds the head's closed
	// tuples. Overcommit is forced on: acknowledged rows are stored even
	// when live data alone exceed the limit. BlockSize must be
	// in [MinBlockSize, MaxBlockSize].
	Memory memory.Options
}

// Defaults.
const (
	DefaultPartitionRange = int64(2 * 3600 * 1000)
	DefaultOOOWindow      = int64(3600 * 1000)
	DefaultTupleSize      = 8
	DefaultMaxGroupWidth  = 20000
	DefaultMisfitLimit    = 3
)

// DefaultGroupBy is the default group_by.
var DefaultGroupBy = []string{"job", "instance"}

func (o *Options) fill() {
	if o.GroupBy == nil {
		o.GroupBy = DefaultGroupBy
	}
	if o.GraphiteGroupDepth == 0 {
		o.GraphiteGroupDepth = 2
	}
	if o.MaxGroupWidth <= 0 {
		o.MaxGroupWidth = DefaultMaxGroupWidth
	}
	if o.PartitionRange <= 0 {
		o.PartitionRange = DefaultPartitionRange
	}
	if o.OOOWindow == 0 && !o.NoOOODefault {
		o.OOOWindow = DefaultOOOWindow
	}
	if o.OOOWindow < 0 {
		o.OOOWindow = 0
	}
	if o.TupleSize <= 0 || o.TupleSize > MaxTupleSize {
		o.TupleSize = DefaultTupleSize
	}
	if o.MisfitLimit <= 0 {
		o.MisfitLimit = DefaultMisfitLimit
	}
	o.Memory.Overcommit = true
}

// WAL is what the head needs of the write-ahead log. maxT is the greatest
// row timestamp in recs.
type WAL interface {
	// Write writes recs after the records of every earlier call and
	// returns a ticket for Wait.
	Write(maxT int64, recs ...[]byte) (uint64, error)
	// Wait returns once the records of ticket are durable (as the log's
	// sync mode defines it), or the log's error.
	Wait(ticket uint64) error
}

// memSeries is one series of the registry.
type memSeries struct {
	ref model.SeriesRef
	// own holds the series' labels; when tags is set, only its __name__.
	// tags are the labels every member of its first group has but
	// __name__ (a tag-set group: the fields of an Influx line, series
	// that differ only by name), kept once by that group (Heracles: what
	// a group's series share is stored once). A series of a group_by
	// group (a scrape target's) keeps its labels whole. Both never
	// change: read them without a lock, through labels and equal.
	own  labels.Labels
	tags *labels.Labels
	// hash is labels().Hash(), kept: every sample written behind the late
	// observers' horizon reports it (LateWrite), and building a tag-set
	// series' labels to hash them tripled a history load's CPU.
	hash uint64

	lastT   atomic.Int64 // last in-order timestamp; written under the current group's appendMu
	lastV   atomic.Uint64
	indexed atomic.Bool // in Head.idx; see Head.idxMu
	misfits int32       // guarded by the current group's appendMu

	// cur is the group the series is written to; guarded by Head.regMu.
	// The groups it joined before, if it moved, are in Head.moved (most
	// series never move: the struct stays in the 80-byte size class).
	cur *group
}

// labelBufs holds the scratch labels builds the labels of split series in.
var labelBufs = sync.Pool{New: func() any { return new([]labels.Label) }}

// labels returns the series' labels. For a series whose tags its group
// keeps it builds them (one allocation).
func (s *memSeries) labels() labels.Labels {
	if s.tags == nil {
		return s.own
	}
	bp := labelBufs.Get().(*[]labels.Label)
	buf := append((*bp)[:0], labels.Label{Name: labels.MetricName, Value: s.own.Get(labels.MetricName)})
	s.tags.Range(func(l labels.Label) { buf = append(buf, l) })
	ls := labels.New(buf...)
	clear(buf)
	*bp = buf[:0]
	labelBufs.Put(bp)
	return ls
}

// labelValue returns the series' value of label name ("" if none)
// without allocating.
func (s *memSeries) labelValue(name string) string {
	if s.tags == nil || name == labels.MetricName {
		return s.own.Get(name)
	}
	return s.tags.Get(name)
}

// registry is the head's index.Labeler: its index keeps no labels of its
// own.
type registry struct{ h *Head }

func (r registry) IndexLabels(ref uint32) (labels.Labels, bool) {
	return r.h.SeriesLabels(model.SeriesRef(ref))
}

func (r registry) IndexLabelValue(ref uint32, name string) (string, bool) {
	s := r.h.seriesOf(model.SeriesRef(ref))
	if s == nil {
		return "", false
	}
	return s.labelValue(name), true
}

// equal reports whether lset are the series' labels. It does not allocate
// when __name__ is lset's first label (a name without capitals before it).
func (s *memSeries) equal(lset labels.Labels) bool {
	if s.tags == nil {
		return labels.Equal(s.own, lset)
	}
	return lset.Get(labels.MetricName) == s.own.Get(labels.MetricName) && labels.Equal(lset.DropMetricName(), *s.tags)
}

// groupsLocked appends the groups series s has slots in, in order of
// joining, to buf. Called with regMu held.
func (h *Head) groupsLocked(s *memSeries, buf []*group) []*group {
	if len(h.moved) > 0 {
		if gs, ok := h.moved[s]; ok {
			return append(buf, gs...)
		}
	}
	return append(buf, s.cur)
}

// joinLocked makes g series s's current group. Called with regMu held for
// writing.
func (h *Head) joinLocked(s *memSeries, g *group) {
	if s.cur == g {
		return
	}
	gs, ok := h.moved[s]
	if !ok {
		gs = []*group{s.cur}
	}
	if !slices.Contains(gs, g) {
		gs = append(gs, g)
	}
	if h.moved == nil {
		h.moved = map[*memSeries][]*group{}
	}
	h.moved[s] = gs
	s.cur = g
}

// Head is the in-memory store of the engine.
type Head struct {
	opts Options
	wal  WAL

	regMu  sync.RWMutex          // guards following
	byHash hashIndex[*memSeries] // by labels.Labels.Hash
	// moved lists, for each series that moved out of its first group,
	// every group it has slots in, in order of joining (groupsLocked).
	moved map[*memSeries][]*group
	// names interns the own labels ({__name__=…}) of split series
	// (memSeries.tags): a tag-set group's members of one name share them.
	// Bounded by maxNames; past it each series gets its own.
	names map[string]labels.Labels
	refs  []*memSeries // index = ref; refs[0] is nil
	// refsView is refs as of its last change, for lock-free lookups by
	// ref (seriesOf): refs only grows, and an element, once non-nil,
	// never changes, so a reader of an older view sees a prefix.
	refsView atomic.Pointer[[]*memSeries]
	groups   []*group // index = id; groups[0] is nil
	// groupByKey holds the groups by their key's hash (xxhash): a group
	// keeps no key string of its own where its tags give it (group.key).
	groupByKey hashIndex[*group]

	// idx lists the series that have data in the head. idxMu orders
	// index membership changes: the garbage collector holds it exclusively
	// while it checks a series has no data and removes it; appliers hold
	// it shared, after storing rows, while they re-add series that were
	// removed. So a series that gets data is never left out of idx.
	idxMu sync.RWMutex
	idx   *index.MemIndex

	maxT     atomic.Int64 // greatest timestamp stored
	minT     atomic.Int64 // least timestamp stored
	minValid atomic.Int64 // rows below are covered by blocks (out of bounds)

	// mem holds the closed tuples (see chain). Partitions are reserved in
	// it before rows of theirs are acknowledged; reserved caches the
	// partitions reserved and not yet released (copy on write, written
	// under resMu).
	mem      *memory.Manager
	resMu    sync.Mutex
	reserved atomic.Pointer[[]int64]
}

// New returns an empty head. w may be nil (no durability, for tests and
// benchmarks). It fails only for invalid memory options.
func New(opts Options, w WAL) (*Head, error) {
	opts.fill()
	if bs := opts.Memory.BlockSize; bs != 0 && (bs < MinBlockSize || bs > MaxBlockSize) {
		return nil, fmt.Errorf("head: memory block size %d: must be in [%d, %d]", bs, MinBlockSize, MaxBlockSize)
	}
	mem, err := memory.New(opts.Memory)
	if err != nil {
		return nil, fmt.Errorf("head: %w", err)
	}
	h := &Head{
		mem:    mem,
		opts:   opts,
		wal:    w,
		refs:   []*memSeries{nil},
		groups: []*group{nil},
	}
	h.idx = index.NewMemIndexOf(registry{h})
	h.maxT.Store(math.MinInt64)
	h.minT.Store(math.MaxInt64)
	h.minValid.Store(math.MinInt64)
	return h, nil
}

// Memory returns the memory manager holding the head's tuples: queries
// Enter it (see Select), and its owner runs its reclaimer and reads its
// statistics.
func (h *Head) Memory() *memory.Manager { return h.mem }

// reserve makes sure partition pid is open in the memory manager before
// rows of it are acknowledged, so storing them cannot fail.
func (h *Head) reserve(pid int64) error {
	if rs := h.reserved.Load(); rs != nil && slices.Contains(*rs, pid) {
		return nil
	}
	h.resMu.Lock()
	defer h.resMu.Unlock()
	rs := h.reserved.Load()
	if rs != nil && slices.Contains(*rs, pid) {
		return nil
	}
	if _, err := h.mem.Reserve(pid); err != nil {
		return fmt.Errorf("%w: partition %d: %v", ErrPartitionLimit, pid, err)
	}
	var ns []int64
	if rs != nil {
		ns = slices.Clone(*rs)
	}
	ns = append(ns, pid)
	h.reserved.Store(&ns)
	return nil
}

// unreserve forgets that pid is reserved; the caller releases it in the
// manager.
func (h *Head) unreserve(pid int64) {
	h.resMu.Lock()
	defer h.resMu.Unlock()
	if rs := h.reserved.Load(); rs != nil && slices.Contains(*rs, pid) {
		ns := slices.DeleteFunc(slices.Clone(*rs), func(p int64) bool { return p == pid })
		h.reserved.Store(&ns)
	}
}

// Options returns the effective options.
func (h *Head) Options() Options { return h.opts }

// MaxTime returns the greatest timestamp in the head, math.MinInt64 if empty.
func (h *Head) MaxTime() int64 { return h.maxT.Load() }

// InOrderBound returns the time below which the head refuses a sample of a
// series that has none newer (a new series' first sample): the head's
// newest time minus half a partition, or the minimum valid time.
func (h *Head) InOrderBound() int64 { return h.limits().minInOrder }

// AcceptFloor returns the least time at which the head may still take a
// sample of any series (math.MinInt64: any): it never takes one below it
// again, as its bounds only rise (limits.check). A writer that puts data
// below it elsewhere (tsdb's history runs) knows the head will not later
// take a sample there, which would win over that data as an earlier write.
func (h *Head) AcceptFloor() int64 {
	l := h.limits()
	if l.oooWindow > 0 {
		return max(l.minValid, min(l.minInOrder, l.oooMin))
	}
	return l.minInOrder
}

// MinTime returns the least timestamp in the head, math.MaxInt64 if empty.
func (h *Head) MinTime() int64 { return h.minT.Load() }

// SetMinValidTime sets the time below which rows are out of bounds because
// blocks cover it.
func (h *Head) SetMinValidTime(t int64) {
	for {
		old := h.minValid.Load()
		if t <= old || h.minValid.CompareAndSwap(old, t) {
			return
		}
	}
}

// NumSeries returns the number of series in the registry.
func (h *Head) NumSeries() int {
	h.regMu.RLock()
	defer h.regMu.RUnlock()
	return len(h.refs) - 1
}

// NumGroups returns the number of groups.
func (h *Head) NumGroups() int {
	h.regMu.RLock()
	defer h.regMu.RUnlock()
	return len(h.groups) - 1
}

// Index returns the head's label index (series refs as postings).
func (h *Head) Index() *index.MemIndex { return h.idx }

// getOrCreate returns the series of lset, creating it (and its group) if
// needed. The labels of a new series are validated (ValidateLabels); a
// series found has the labels of one that was.
func (h *Head) getOrCreate(lset labels.Labels) (*memSeries, error) {
	hash := lset.Hash()
	h.regMu.RLock()
	s := h.findLocked(hash, lset)
	h.regMu.RUnlock()
	if s != nil {
		return s, nil
	}
	if err := ValidateLabels(lset); err != nil {
		return nil, err
	}
	h.regMu.Lock()
	defer h.regMu.Unlock()
	if s := h.findLocked(hash, lset); s != nil {
		return s, nil
	}
	if h.opts.MaxSeries > 0 && len(h.refs)-1 >= h.opts.MaxSeries {
		return nil, fmt.Errorf("%w: %d series (series %s)", ErrSeriesLimit, h.opts.MaxSeries, lset)
	}
	if uint64(len(h.refs)) > math.MaxUint32 {
		return nil, fmt.Errorf("%w: series references exhausted", ErrSeriesLimit)
	}
	key := GroupKey(lset, h.opts.GroupBy, h.opts.GraphiteGroupDepth)
	g := h.groupOfKeyLocked(key)
	if g == nil {
		g = h.newGroupLocked(0, key)
	}
	s = h.newSeriesLocked(model.SeriesRef(len(h.refs)), lset, hash, g)
	h.refs = append(h.refs, s)
	h.publishRefsLocked()
	return s, nil
}

// maxNames bounds Head.names.
const maxNames = 1 << 16

// newSeriesLocked makes the series ref of labels lset (hash: lset.Hash())
// in its first group g, and registers it by hash. Called with regMu held
// for writing.
func (h *Head) newSeriesLocked(ref model.SeriesRef, lset labels.Labels, hash uint64, g *group) *memSeries {
	s := &memSeries{ref: ref, hash: hash, cur: g}
	s.own, s.tags = h.splitLabelsLocked(lset, g)
	s.lastT.Store(math.MinInt64)
	h.byHash.add(hash, s)
	return s
}

// splitLabelsLocked returns what a new series of group g keeps of lset:
// in a tag-set group its __name__ (interned) and the group's tags, else a
// copy of lset and nil. Called with regMu held for writing.
func (h *Head) splitLabelsLocked(lset labels.Labels, g *group) (labels.Labels, *labels.Labels) {
	name := lset.Get(labels.MetricName)
	if !g.tagSet() || name == "" {
		return lset.Copy(), nil
	}
	rest := lset.DropMetricName()
	if g.tags == nil {
		t := rest.Copy()
		g.tags = &t
	} else if !labels.Equal(*g.tags, rest) {
		// Members of a tag-set group have its tags by construction
		// (GroupKey); keep a series that would not whole.
		return lset.Copy(), nil
	}
	own, ok := h.names[name]
	if !ok {
		own = labels.FromStrings(labels.MetricName, name)
		if len(h.names) < maxNames {
			if h.names == nil {
				h.names = map[string]labels.Labels{}
			}
			h.names[own.Get(labels.MetricName)] = own
		}
	}
	return own, g.tags
}

// publishRefsLocked makes refs visible to seriesOf. Called with regMu
// held for writing after refs changed.
func (h *Head) publishRefsLocked() {
	v := h.refs
	h.refsView.Store(&v)
}

// seriesOf returns the series of ref, nil if there is none, without
// locking.
func (h *Head) seriesOf(ref model.SeriesRef) *memSeries {
	v := h.refsView.Load()
	if v == nil || uint64(ref) >= uint64(len(*v)) {
		return nil
	}
	return (*v)[ref]
}

// HasSeries reports whether ref is a series of the head.
func (h *Head) HasSeries(ref model.SeriesRef) bool { return h.seriesOf(ref) != nil }

// SeriesLabels returns the labels of the series ref, and false if there is
// no such series. It allocates for a series whose group keeps its tags
// (memSeries.labels).
func (h *Head) SeriesLabels(ref model.SeriesRef) (labels.Labels, bool) {
	s := h.seriesOf(ref)
	if s == nil {
		return labels.EmptyLabels(), false
	}
	return s.labels(), true
}

// SeriesHash returns the hash of the series ref's labels
// (labels.Labels.Hash), which the head keeps, and false if there is no
// such series.
func (h *Head) SeriesHash(ref model.SeriesRef) (uint64, bool) {
	s := h.seriesOf(ref)
	if s == nil {
		return 0, false
	}
	return s.hash, true
}

func (h *Head) findLocked(hash uint64, lset labels.Labels) *memSeries {
	return h.byHash.find(hash, func(s *memSeries) bool { return s.equal(lset) })
}

// hashIndex finds values by a 64-bit hash of what identifies them: the
// first value of each hash in one map, the rare later ones (two keys of
// one hash) in another. The zero V is no value.
type hashIndex[V comparable] struct {
	first map[uint64]V
	more  map[uint64][]V
}

func (x *hashIndex[V]) add(h uint64, v V) {
	var zero V
	if x.first == nil {
		x.first = map[uint64]V{}
	}
	if x.first[h] == zero {
		x.first[h] = v
		return
	}
	if x.more == nil {
		x.more = map[uint64][]V{}
	}
	x.more[h] = append(x.more[h], v)
}

// find returns the value of hash h that is accepts, or the zero V.
func (x *hashIndex[V]) find(h uint64, is func(V) bool) V {
	var zero V
	v := x.first[h]
	if v == zero || is(v) {
		return v
	}
	for _, v := range x.more[h] {
		if is(v) {
			return v
		}
	}
	return zero
}

// newGroupLocked creates a group; id 0 means "next". Called with regMu held.
func (h *Head) newGroupLocked(id model.GroupID, key string) *group {
	if id == 0 {
		id = model.GroupID(len(h.groups))
	}
	for int(id) >= len(h.groups) {
		h.groups = append(h.groups, nil)
	}
	g := newGroup(id, key)
	h.groups[id] = g
	h.groupByKey.add(xxhash.Sum64String(key), g)
	return g
}

// groupOfKeyLocked returns the group of key, or nil. Called with regMu
// held.
func (h *Head) groupOfKeyLocked(key string) *group {
	return h.groupByKey.find(xxhash.Sum64String(key), func(g *group) bool { return g.hasKey(key) })
}

func (h *Head) partitionOf(t int64) int64 {
	r := h.opts.PartitionRange
	q := t / r
	if t%r < 0 {
		q--
	}
	return q
}

// PartitionBounds returns the [mint, maxt) range of partition pid.
func (h *Head) PartitionBounds(pid int64) (int64, int64) {
	return pid * h.opts.PartitionRange, (pid + 1) * h.opts.PartitionRange
}

// bumpTimes records that t is now stored.
func (h *Head) bumpTimes(t int64) {
	for {
		old := h.maxT.Load()
		if t <= old || h.maxT.CompareAndSwap(old, t) {
			break
		}
	}
	for {
		old := h.minT.Load()
		if t >= old || h.minT.CompareAndSwap(old, t) {
			break
		}
	}
}

var errRetry = errors.New("series moved during commit")

// encodeSlots writes the WAL records that define the group and its slots
// not yet logged. Called with g.appendMu held.
func (g *group) appendDefsLocked(recs [][]byte, slotsNow int) [][]byte {
	if !g.loggedDef {
		recs = append(recs, wal.AppendGroups(nil, []wal.GroupDef{{ID: g.id, Key: g.Key()}}))
	}
	if g.loggedSlots < slotsNow {
		g.mu.RLock()
		defs := make([]wal.SeriesDef, 0, slotsNow-g.loggedSlots)
		for i := g.loggedSlots; i < slotsNow; i++ {
			s := g.slots[i]
			defs = append(defs, wal.SeriesDef{Ref: s.ref, Group: g.id, Slot: model.Slot(i), Labels: s.labels()})
		}
		g.mu.RUnlock()
		recs = append(recs, wal.AppendSeries(nil, defs))
	}
	return recs
}

// Bytes returns the bytes of encoded tuples and their index held by the
// head (the memory blocks of time and value tuples, their refs, per-tuple
// offsets and presence, open tuples and out-of-order buffers); Go object
// overhead is not counted.
func (h *Head) Bytes() int64 {
	var n int64
	bs := h.mem.BlockSize()
	for _, g := range h.groupList() {
		g.mu.RLock()
		for _, p := range g.parts {
			n += p.times.bytes(bs) + int64(8*p.openN)
			for _, c := range p.cols {
				if c != nil {
					n += int64(8*p.openN + 16*len(c.oooSamples()))
					if cv := c.ext; cv != nil {
						n += cv.vals.bytes(bs) + int64(len(cv.pres))
					}
				}
			}
		}
		g.mu.RUnlock()
	}
	return n
}
