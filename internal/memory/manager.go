package memory

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aerie-db/aerie/internal/invariants"
)

// Defaults for Options fields left zero.
const (
	DefaultPageSize         = 1 << 20
	DefaultBlockSize        = 256
	DefaultReclaimThreshold = 0.9
)

// defaultReclaimSplit is Heracles' split of the blocks to reclaim over the
// three oldest hot partitions.
var defaultReclaimSplit = []float64{0.45, 0.35, 0.20}

// Options configure a Manager. The zero value is valid: 1 MiB pages of
// 256-byte blocks, no limit.
type Options struct {
	// PageSize is the size of the pages taken from the Go heap; a multiple
	// of BlockSize. 0 means DefaultPageSize.
	PageSize int
	// BlockSize is the unit Alloc hands out. 0 means DefaultBlockSize.
	BlockSize int
	// Limit caps the bytes held in pages, rounded down to whole pages; 0
	// means no limit. A non-zero Limit must be at least one page.
	Limit int64
	// ReclaimThreshold is the fraction of Limit in use (live, hot and
	// cooling blocks) above which Reclaim hard-releases hot blocks. 0 means
	// DefaultReclaimThreshold; it must be in (0, 1].
	ReclaimThreshold float64
	// ReclaimSplit spreads the blocks Reclaim releases over the oldest hot
	// partitions: the i-th oldest gives ReclaimSplit[i]/sum of them. nil
	// means Heracles' 45/35/20 %. Weights must be non-negative with a
	// positive sum.
	ReclaimSplit []float64
	// ReaderSlots is the number of reader slots; 0 means GOMAXPROCS*4.
	// More concurrent readers than slots share slots (see Enter).
	ReaderSlots int
	// Overcommit makes Alloc take a page beyond the Limit, instead of
	// failing with ErrOutOfMemory, when nothing can be reclaimed (every
	// block is live or pinned by a reader). The head sets it: its data are
	// acknowledged writes that must be stored. Stats.OverLimitPages counts
	// the pages beyond the limit.
	Overcommit bool
}

// Manager hands out fixed-size blocks of big pages to time partitions and
// reclaims them when they are released and no reader can still hold them.
// See the package documentation for the protocol.
type Manager struct {
	// Immutable after New.
	pageSize   int
	blockSize  int
	bpp        uint32 // blocks per page
	bppShift   int    // log2(bpp) if bpp is a power of two, else -1
	limitPages int    // 0: unlimited
	overcommit bool
	threshold  int // blocks in use above which Reclaim releases hot blocks; 0: never
	split      []float64
	slots      []slot
	kick       chan struct{} // wakes the background reclaimer early; capacity 1

	epoch  atomic.Uint64           // global epoch, starts at 1
	newest atomic.Uint32           // newest Version opened; read by Valid after the version byte
	dir    atomic.Pointer[pageDir] // pages published to lock-free readers

	mu sync.Mutex // guards the following fields and every store to a page's version words
	// pages backs dir: appends write past the length readers see, then dir
	// is republished.
	pages     []*page
	fresh     uint64    // next block never handed out; blocks from fresh on are free
	free      []BlockID // recycled blocks, used LIFO
	parts     map[int64]*partition
	cooling   []coolBatch // in non-decreasing epoch order
	live      int
	hot       int
	cool      int
	reclaimed uint64 // blocks recycled since New
	released  uint64 // hot blocks cooled by the reclamation policy since New
	overPages uint64 // pages taken beyond the limit (Overcommit)
	stop      chan struct{}
	done      chan struct{}
}

type page struct {
	data []byte
	// vers is the version array of the page's blocks, one byte per block,
	// four to a word so readers load it atomically without locking.
	vers []atomic.Uint32
}

type pageDir struct{ pages []*page }

type partition struct {
	id      int64
	version Version
	// area is AreaLive until SoftRelease, AreaHot until HardRelease or until
	// the reclamation policy cooled its last block, then AreaCooling.
	area Area
	// blocks are the partition's live or hot blocks in allocation order.
	// Partial releases take them from the front.
	blocks  []BlockID
	cooling int // blocks of the partition in the cooling area
}

type coolBatch struct {
	epoch  uint64 // global epoch loaded after the blocks turned cooling
	part   *partition
	blocks []BlockID
}

// New returns a manager with no pages.
func New(opts Options) (*Manager, error) {
	opts.PageSize = cmp.Or(opts.PageSize, DefaultPageSize)
	opts.BlockSize = cmp.Or(opts.BlockSize, DefaultBlockSize)
	opts.ReclaimThreshold = cmp.Or(opts.ReclaimThreshold, DefaultReclaimThreshold)
	if opts.ReclaimSplit == nil {
		opts.ReclaimSplit = defaultReclaimSplit
	}
	opts.ReaderSlots = cmp.Or(opts.ReaderSlots, runtime.GOMAXPROCS(0)*4)
	switch {
	case opts.BlockSize < 0:
		return nil, fmt.Errorf("memory: block size %d: must be positive", opts.BlockSize)
	case opts.PageSize < 0 || opts.PageSize%opts.BlockSize != 0:
		return nil, fmt.Errorf("memory: page size %d: must be a positive multiple of the block size %d", opts.PageSize, opts.BlockSize)
	case opts.PageSize/opts.BlockSize > math.MaxUint32:
		return nil, fmt.Errorf("memory: page size %d: more than 2^32 blocks of %d bytes", opts.PageSize, opts.BlockSize)
	case opts.Limit < 0 || (opts.Limit > 0 && opts.Limit < int64(opts.PageSize)):
		return nil, fmt.Errorf("memory: limit %d: must be 0 (none) or at least one page (%d bytes)", opts.Limit, opts.PageSize)
	case !(opts.ReclaimThreshold > 0 && opts.ReclaimThreshold <= 1):
		return nil, fmt.Errorf("memory: reclaim threshold %v: must be in (0, 1]", opts.ReclaimThreshold)
	case opts.ReaderSlots < 0:
		return nil, fmt.Errorf("memory: reader slots %d: must be positive", opts.ReaderSlots)
	}
	sum := 0.0
	for i, w := range opts.ReclaimSplit {
		if !(w >= 0) || math.IsInf(w, 0) {
			return nil, fmt.Errorf("memory: reclaim split %v: weight %d is %v, must be finite and non-negative", opts.ReclaimSplit, i, w)
		}
		sum += w
	}
	if !(sum > 0) {
		return nil, fmt.Errorf("memory: reclaim split %v: weights must have a positive sum", opts.ReclaimSplit)
	}
	m := &Manager{
		pageSize:   opts.PageSize,
		blockSize:  opts.BlockSize,
		bpp:        uint32(opts.PageSize / opts.BlockSize),
		bppShift:   -1,
		split:      slices.Clone(opts.ReclaimSplit),
		slots:      make([]slot, opts.ReaderSlots),
		kick:       make(chan struct{}, 1),
		parts:      make(map[int64]*partition),
		overcommit: opts.Overcommit,
	}
	if m.bpp&(m.bpp-1) == 0 {
		m.bppShift = bits.TrailingZeros32(m.bpp)
	}
	if opts.Limit > 0 {
		m.limitPages = int(opts.Limit / int64(opts.PageSize))
		m.threshold = int(float64(m.limitPages) * float64(m.bpp) * opts.ReclaimThreshold)
	}
	m.epoch.Store(1)
	m.dir.Store(&pageDir{})
	return m, nil
}

// Alloc returns a block for partition, the time partition of the data the
// caller is about to write, and the partition's version; MakeRef(id, v) is
// the block's Ref. The block's contents are unspecified (in an invariants
// build: Poison bytes); the caller overwrites them before publishing the
// Ref. The first Alloc for a partition opens it under the next version.
//
// Blocks come from the recycled area first, then from the current page or a
// new one within the limit. At the limit, Alloc reclaims: it recycles what
// the epochs allow, cools hot blocks by the reclamation policy, advances the
// epoch and tries again. If that frees nothing it returns ErrOutOfMemory.
func (m *Manager) Alloc(part int64) (BlockID, Version, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, err := m.openLocked(part)
	if err != nil {
		return 0, 0, err
	}
	v := p.version
	id, err := m.takeLocked()
	if err != nil {
		return 0, 0, fmt.Errorf("memory: alloc for partition %d: %w", part, err)
	}
	m.setTagLocked(id, tagOf(AreaLive, v))
	p.blocks = append(p.blocks, id)
	m.live++
	if m.threshold > 0 && m.live+m.hot+m.cool > m.threshold {
		select {
		case m.kick <- struct{}{}:
		default:
		}
	}
	return id, v, nil
}

// Reserve opens partition part, if it is not open yet, without taking a
// block, and returns its version. A writer calls it before it acknowledges
// data of the partition, so that a later Alloc for it cannot fail but with
// ErrOutOfMemory: it returns ErrVersionCollision or ErrReleased as Alloc
// would. A reserved partition that never takes a block holds no memory;
// HardRelease or SoftRelease retires it.
func (m *Manager) Reserve(part int64) (Version, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, err := m.openLocked(part)
	if err != nil {
		return 0, err
	}
	return p.version, nil
}

// openLocked returns the live partition part, opening it under the next
// version if the manager does not hold it.
func (m *Manager) openLocked(part int64) (*partition, error) {
	p := m.parts[part]
	switch {
	case p == nil:
	case p.area != AreaLive:
		return nil, fmt.Errorf("memory: alloc for partition %d (version %d, %s): %w", part, p.version, p.area, ErrReleased)
	default:
		return p, nil
	}
	v, err := m.nextVersionLocked(part)
	if err != nil {
		return nil, err
	}
	p = &partition{id: part, version: v, area: AreaLive}
	m.parts[part] = p
	// Published before any block carries the new tag: Valid loads the tag
	// first, then newest (invariant 4).
	m.newest.Store(uint32(v))
	return p, nil
}

// nextVersionLocked returns the version a new partition would get. Only
// the visible partitions must stay within VersionWindow of it (invariant
// 3): a live one VersionWindow or more openings older makes it fail with
// ErrVersionCollision; a hot one that old is on disk, so its blocks are
// cooled (as HardRelease would); cooling blocks are invisible whatever
// their tag, and a stale ref to a recycled one fails the window check.
func (m *Manager) nextVersionLocked(partition int64) (Version, error) {
	next := Version(m.newest.Load() + 1)
	if next == 0 { // 2^32 openings: skip 0 so the zero Ref stays invalid
		next = 1
	}
	for _, q := range m.parts {
		if uint32(next-q.version) >= VersionWindow && q.area == AreaLive {
			return 0, fmt.Errorf("memory: open partition %d as version %d: partition %d (version %d) is still live %d versions back: %w",
				partition, next, q.id, q.version, uint32(next-q.version), ErrVersionCollision)
		}
	}
	for _, q := range m.parts {
		if uint32(next-q.version) >= VersionWindow && q.area == AreaHot {
			m.released += uint64(len(q.blocks))
			m.coolLocked(q, len(q.blocks))
			q.area = AreaCooling
			m.retireIfEmptyLocked(q)
		}
	}
	return next, nil
}

// retireIfEmptyLocked forgets a released partition that holds no blocks
// (one reserved but never allocated from, or whose last blocks were
// recycled).
func (m *Manager) retireIfEmptyLocked(p *partition) {
	if p.area != AreaLive && len(p.blocks) == 0 && p.cooling == 0 && m.parts[p.id] == p {
		delete(m.parts, p.id)
	}
}

// takeLocked takes a free block, growing or reclaiming as needed.
func (m *Manager) takeLocked() (BlockID, error) {
	if id, ok := m.popFreeLocked(); ok {
		return id, nil
	}
	if (m.limitPages == 0 || len(m.pages) < m.limitPages) && uint64(len(m.pages)+1)*uint64(m.bpp) <= math.MaxUint32+1 {
		m.addPageLocked()
		id, _ := m.popFreeLocked()
		return id, nil
	}
	m.recycleLocked()
	if id, ok := m.popFreeLocked(); ok {
		return id, nil
	}
	if m.overcommit && uint64(len(m.pages)+1)*uint64(m.bpp) <= math.MaxUint32+1 && m.cool == 0 && m.hot == 0 {
		// Every block is live: reclaiming cannot help.
		m.overPages++
		m.addPageLocked()
		id, _ := m.popFreeLocked()
		return id, nil
	}
	if id, ok := m.popFreeLocked(); ok {
		return id, nil
	}
	m.releaseHotLocked(max(1, m.pressureLocked()-m.cool))
	m.epoch.Add(1)
	m.recycleLocked()
	if id, ok := m.popFreeLocked(); ok {
		return id, nil
	}
	if m.overcommit && uint64(len(m.pages)+1)*uint64(m.bpp) <= math.MaxUint32+1 {
		// What was cooled is pinned by readers; it is recycled later.
		m.overPages++
		m.addPageLocked()
		id, _ := m.popFreeLocked()
		return id, nil
	}
	return 0, fmt.Errorf("%d of %d pages, %d live, %d hot, %d cooling blocks: %w",
		len(m.pages), m.limitPages, m.live, m.hot, m.cool, ErrOutOfMemory)
}

func (m *Manager) popFreeLocked() (BlockID, bool) {
	if n := len(m.free); n > 0 {
		id := m.free[n-1]
		m.free = m.free[:n-1]
		if invariants.Enabled {
			if off := findPoisonGap(m.blockLocked(id)); off >= 0 {
				panic(fmt.Sprintf("memory: block %d byte %d written after it was recycled", id, off))
			}
		}
		return id, true
	}
	if uint64(m.fresh) < uint64(len(m.pages))*uint64(m.bpp) {
		id := BlockID(m.fresh)
		m.fresh++
		return id, true
	}
	return 0, false
}

func (m *Manager) addPageLocked() {
	p := &page{
		data: make([]byte, m.pageSize),
		vers: make([]atomic.Uint32, (m.bpp+3)/4),
	}
	for i := range p.vers {
		p.vers[i].Store(freeWord)
	}
	if invariants.Enabled {
		poison(p.data)
	}
	m.pages = append(m.pages, p)
	m.dir.Store(&pageDir{pages: m.pages})
}

// locate splits a block id into page index and index within the page. The
// shift saves a division on the readers' path for the usual power-of-two
// sizes.
func (m *Manager) locate(id BlockID) (pi, i uint32) {
	if m.bppShift >= 0 {
		return uint32(id) >> m.bppShift, uint32(id) & (m.bpp - 1)
	}
	return uint32(id) / m.bpp, uint32(id) % m.bpp
}

func (m *Manager) blockLocked(id BlockID) []byte {
	pi, i := m.locate(id)
	off := int(i) * m.blockSize
	return m.pages[pi].data[off : off+m.blockSize : off+m.blockSize]
}

// setTagLocked stores id's version-array byte. Every store holds mu, so a
// plain load-modify-store of the word loses no update; readers see either
// the old or the new word.
func (m *Manager) setTagLocked(id BlockID, t uint8) {
	pi, i := m.locate(id)
	w := &m.pages[pi].vers[i>>2]
	sh := (i & 3) * 8
	w.Store(w.Load()&^(0xff<<sh) | uint32(t)<<sh)
}

// loadTag reads id's version-array byte without locking.
func (m *Manager) loadTag(id BlockID) (uint8, *page, uint32, bool) {
	d := m.dir.Load()
	pi, i := m.locate(id)
	if pi >= uint32(len(d.pages)) {
		return 0, nil, 0, false
	}
	p := d.pages[pi]
	return uint8(p.vers[i>>2].Load() >> ((i & 3) * 8)), p, i, true
}

// Valid reports whether r's block still belongs to r's partition and is
// visible (live or hot). Readers call it, or Bytes, under a Guard before
// reading; on false they read the on-disk copy. Valid takes no lock.
func (m *Manager) Valid(r Ref) bool {
	_, ok := m.lookup(r)
	return ok
}

// Bytes returns r's block if Valid(r). The slice aliases the manager's page
// and stays intact until the caller's Guard exits, even if the partition is
// hard-released meanwhile. Bytes takes no lock.
func (m *Manager) Bytes(r Ref) ([]byte, bool) {
	return m.lookup(r)
}

// Data returns r's block without checking it. It is for a reader that
// found r valid (Valid or Bytes) under the Guard it still holds: the memory
// stays intact until that Guard exits, even if r turned invalid since.
func (m *Manager) Data(r Ref) []byte {
	d := m.dir.Load()
	pi, i := m.locate(r.Block())
	off := int(i) * m.blockSize
	return d.pages[pi].data[off : off+m.blockSize : off+m.blockSize]
}

// BlockSize returns the size of a block.
func (m *Manager) BlockSize() int { return m.blockSize }

// PartitionArea returns the area of a partition the manager holds: AreaLive
// until it is released, AreaHot while its blocks serve queries, AreaCooling
// once HardRelease or the reclamation policy took its last visible block.
// ok is false for a partition the manager does not hold (never opened, or
// retired after its blocks were recycled).
func (m *Manager) PartitionArea(part int64) (a Area, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.parts[part]
	if p == nil {
		return 0, false
	}
	return p.area, true
}

func (m *Manager) lookup(r Ref) ([]byte, bool) {
	t, p, i, ok := m.loadTag(r.Block())
	v := r.Version()
	if !ok || (t != tagOf(AreaLive, v) && t != tagOf(AreaHot, v)) {
		return nil, false
	}
	// The tag matches in 6 bits. A ref VersionWindow or more openings old
	// is stale however its tag reads: every partition that old has been
	// recycled (invariant 3), so its tag may have come round again.
	if m.newest.Load()-uint32(v) >= VersionWindow {
		return nil, false
	}
	off := int(i) * m.blockSize
	return p.data[off : off+m.blockSize : off+m.blockSize], true
}

// SoftRelease moves the partition's blocks to its hot area: it has been
// flushed to disk, and its blocks keep serving queries (Valid stays true)
// until HardRelease or the reclamation policy cools them. The partition
// takes no more blocks. Releasing a partition the manager does not hold,
// or one already released, does nothing.
func (m *Manager) SoftRelease(partition int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.parts[partition]
	if p == nil || p.area != AreaLive {
		return
	}
	for _, id := range p.blocks {
		m.setTagLocked(id, tagOf(AreaHot, p.version))
	}
	p.area = AreaHot
	m.live -= len(p.blocks)
	m.hot += len(p.blocks)
	if len(p.blocks) == 0 {
		p.area = AreaCooling
		m.retireIfEmptyLocked(p)
	}
}

// HardRelease moves all of the partition's live or hot blocks to the
// cooling area, stamped with the current global epoch. When it returns,
// Valid is false for every Ref of the partition; readers that entered
// before may still be reading its blocks, which are recycled only after
// they exit (invariant 1). The caller should have removed the partition
// from its index first. A partition that was never soft-released is
// released all the same. Unknown or already released partitions are
// ignored.
func (m *Manager) HardRelease(partition int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.parts[partition]
	if p == nil || p.area == AreaCooling {
		return
	}
	m.coolLocked(p, len(p.blocks))
	p.area = AreaCooling
	m.retireIfEmptyLocked(p)
	if invariants.Enabled {
		m.mustCheckLocked()
	}
}

// coolLocked moves the first k live or hot blocks of p to the cooling area.
func (m *Manager) coolLocked(p *partition, k int) {
	if k == 0 {
		return
	}
	var blocks []BlockID
	if k == len(p.blocks) {
		blocks, p.blocks = p.blocks, nil
	} else {
		blocks = slices.Clone(p.blocks[:k])
		p.blocks = p.blocks[k:]
	}
	for _, id := range blocks {
		m.setTagLocked(id, tagOf(AreaCooling, p.version))
	}
	// Load the epoch after the tag stores: a reader that registered at a
	// later epoch loads the tag after these stores and sees it cooling
	// (invariant 1).
	e := m.epoch.Load()
	m.cooling = append(m.cooling, coolBatch{epoch: e, part: p, blocks: blocks})
	if p.area == AreaLive {
		m.live -= k
	} else {
		m.hot -= k
	}
	m.cool += k
	p.cooling += k
	if len(p.blocks) == 0 && p.area == AreaHot {
		p.area = AreaCooling
	}
}

// recycleLocked moves the cooling blocks stamped before the reclaim bound to
// the recycled area and returns how many it moved.
func (m *Manager) recycleLocked() int {
	bound := m.reclaimBound()
	n, k := 0, 0
	for ; k < len(m.cooling) && m.cooling[k].epoch < bound; k++ {
		b := m.cooling[k]
		for _, id := range b.blocks {
			if t, _, _, _ := m.loadTag(id); t != tagOf(AreaCooling, b.part.version) {
				panic(fmt.Sprintf("memory: recycling block %d of partition %d: version byte %#x, want cooling v%d", id, b.part.id, t, b.part.version))
			}
			m.setTagLocked(id, freeTag)
			if invariants.Enabled {
				poison(m.blockLocked(id))
			}
		}
		m.free = append(m.free, b.blocks...)
		n += len(b.blocks)
		p := b.part
		p.cooling -= len(b.blocks)
		if p.area == AreaCooling {
			m.retireIfEmptyLocked(p)
		}
	}
	m.cooling = slices.Delete(m.cooling, 0, k)
	m.cool -= n
	m.reclaimed += uint64(n)
	return n
}

// Pressure returns how many blocks in use (live, hot or cooling) exceed the
// reclaim threshold: what Reclaim aims to free. It is 0 without a limit.
func (m *Manager) Pressure() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.pressureLocked()
}

func (m *Manager) pressureLocked() int {
	if m.threshold == 0 {
		return 0
	}
	return max(0, m.live+m.hot+m.cool-m.threshold)
}

// Reclaim recycles the cooling blocks no registered reader can hold, then,
// if the blocks in use still exceed the threshold by more than the cooling
// area will give back, cools that many hot blocks by the reclamation policy
// (they are recycled by a later Reclaim, after an Advance). It returns the
// number of hot blocks cooled and of blocks recycled. Live blocks are never
// taken: they are not on disk yet.
func (m *Manager) Reclaim() (released, recycled int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	recycled = m.recycleLocked()
	if need := m.pressureLocked() - m.cool; need > 0 {
		released = m.releaseHotLocked(need)
	}
	if invariants.Enabled {
		m.mustCheckLocked()
	}
	return released, recycled
}

// releaseHotLocked cools up to need hot blocks, oldest partitions first,
// following the split (see splitPlan).
func (m *Manager) releaseHotLocked(need int) int {
	var hot []*partition
	for _, p := range m.parts {
		if p.area == AreaHot && len(p.blocks) > 0 {
			hot = append(hot, p)
		}
	}
	slices.SortFunc(hot, func(a, b *partition) int { return cmp.Compare(a.id, b.id) })
	avail := make([]int, len(hot))
	for i, p := range hot {
		avail[i] = len(p.blocks)
	}
	n := 0
	for i, k := range splitPlan(need, avail, m.split) {
		m.coolLocked(hot[i], k)
		n += k
	}
	m.released += uint64(n)
	return n
}

// splitPlan decides how many blocks to take from each hot partition, given
// oldest first with avail[i] blocks each, to free need blocks. The i-th
// oldest partition is asked for need*split[i]/sum(split) blocks (rounded
// down; the rounding remainder goes to the oldest ones). What a partition
// cannot give passes on to the next one; what is still missing after the
// last is taken from the oldest partitions that have blocks left. The
// result never exceeds avail and sums to min(need, sum(avail)).
func splitPlan(need int, avail []int, split []float64) []int {
	plan := make([]int, len(avail))
	if need <= 0 || len(avail) == 0 {
		return plan
	}
	sum := 0.0
	for _, w := range split {
		sum += w
	}
	quota := make([]int, len(split))
	given := 0
	for i, w := range split {
		quota[i] = int(float64(need) * w / sum)
		given += quota[i]
	}
	for i := 0; given < need; i = (i + 1) % len(quota) {
		if split[i] > 0 {
			quota[i]++
			given++
		}
	}
	carry := 0
	for i := range avail {
		want := carry
		if i < len(quota) {
			want += quota[i]
		}
		plan[i] = min(want, avail[i])
		carry = want - plan[i]
	}
	left := need
	for _, k := range plan {
		left -= k
	}
	for i := 0; i < len(avail) && left > 0; i++ {
		k := min(left, avail[i]-plan[i])
		plan[i] += k
		left -= k
	}
	return plan
}

// Start runs Advance and Reclaim every interval, and early when an Alloc
// pushes the blocks in use above the threshold, until Close.
func (m *Manager) Start(interval time.Duration) error {
	if interval <= 0 {
		return fmt.Errorf("memory: start: interval %v must be positive", interval)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stop != nil {
		return errors.New("memory: start: background reclaimer already running")
	}
	m.stop, m.done = make(chan struct{}), make(chan struct{})
	go m.background(interval, m.stop, m.done)
	return nil
}

func (m *Manager) background(interval time.Duration, stop, done chan struct{}) {
	defer close(done)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		case <-m.kick:
		}
		m.Advance()
		m.Reclaim()
	}
}

// Close stops the background reclaimer, if running, and waits for it. The
// manager stays usable.
func (m *Manager) Close() error {
	m.mu.Lock()
	stop, done := m.stop, m.done
	m.stop, m.done = nil, nil
	m.mu.Unlock()
	if stop != nil {
		close(stop)
		<-done
	}
	return nil
}
