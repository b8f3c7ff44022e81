package cache

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sort"
	"sync"
)

// ErrTooLarge is a point value, a field name or a Set larger than the
// cache takes.
var ErrTooLarge = errors.New("too large for the cache")

// ErrClosed is returned by calls after Close.
var ErrClosed = errors.New("cache closed")

// Cache is a TSCache slab store in one file. Its methods are safe for
// concurrent use.
type Cache struct {
	opts     Options
	log      *slog.Logger
	file     *slabFile
	slabSize int
	dataOff  int // where a slab's data part starts
	dataCap  int // bytes of a slab's data part
	maxOpen  int // open slabs (one per field) at most, each holding a slot
	maxKeys  int // key entries kept at most

	readers sync.WaitGroup // Gets reading without the lock; Close waits for them

	mu        sync.Mutex // guards everything below, and the file's writes
	closed    bool
	keys      map[Key]*keyEntry
	epoch     uint64 // the last epoch handed to a key
	seq       uint64 // the last slab sequence number
	tick      uint64 // access clock of keys and open slabs
	slots     []*slab
	free      []int // free slots, highest first (slots fill from 0)
	fields    map[string]*fieldIndex
	pol       policy
	stats     Stats
	wbuf      []byte // aligned write buffer of one slab
	rbuf      []byte // aligned read buffer
	openCount int
}

// slab is the slab index's node of a sealed slab (TSCache §3.5): its slot,
// decoded header (key array, time markers), Bloom filter of its keys and
// physical time range (in the header), and its place in the replacement
// policy.
type slab struct {
	slot  int
	h     slabHeader
	bloom uint64
	vr    *vrange
	part  partition
	hits  uint64

	pins    int              // Gets reading it without the lock: its slot is not reused
	gone    bool             // it left the cache while pinned: the last unpin frees the slot
	freed   bool             // its slot went back to the free list
	corrupt *CorruptionError // what a read found wrong with it
}

// fieldIndex is the slab index of one field: its virtual time ranges (the
// connected components of its slabs' time ranges), in time order, and the
// open slab taking new points.
type fieldIndex struct {
	name string
	vrs  []*vrange
	open *openSlab
}

// vrange is a virtual time range: slabs whose time ranges overlap one
// another, in order of their first timestamp.
type vrange struct {
	lo, hi int64
	slabs  []*slab
}

// openSlab gathers points for one field in memory until it is sealed
// into the slot it holds (open slabs count against the cache's size).
type openSlab struct {
	field  string
	slot   int
	keys   []slabKey
	keyIdx map[keyEpoch]uint16
	points []slabPoint
	byKey  [][]int32 // per key (index in keys), its points' indices in points
	arena  []byte    // the points' values
	keyBuf []uint16  // the points' key lists
	bytes  int       // encoded data bytes at the widest bit array
	used   uint64
}

type keyEpoch struct {
	key   Key
	epoch uint64
}

// Open opens or creates the cache file. The key index of a cleanly closed
// cache is read back from its snapshot; after a crash, or when any slab
// the snapshot names fails its checks, the cache starts empty.
func Open(opts Options) (*Cache, error) {
	if opts.Path == "" {
		return nil, errors.New("cache: no path")
	}
	if opts.SlabSize == 0 {
		opts.SlabSize = 1 << 20
	}
	if opts.SlabSize%BlockSize != 0 || opts.SlabSize < 64<<10 || opts.SlabSize > 64<<20 {
		return nil, fmt.Errorf("cache: slab size %d: want a multiple of %d between 64 KiB and 64 MiB", opts.SlabSize, BlockSize)
	}
	if opts.Size == 0 {
		opts.Size = 256 << 20
	}
	if opts.MaxKeysPerSlab == 0 {
		opts.MaxKeysPerSlab = 128
	}
	if opts.MaxKeysPerSlab < 1 || opts.MaxKeysPerSlab > 4096 {
		return nil, fmt.Errorf("cache: %d keys per slab: want 1 to 4096", opts.MaxKeysPerSlab)
	}
	if opts.PartialMinBytes == 0 {
		opts.PartialMinBytes = 512 << 10
	}
	if opts.CompactSlabs == 0 {
		opts.CompactSlabs = 16
	}
	if opts.CompactSlabs < 2 {
		return nil, fmt.Errorf("cache: compaction threshold %d: want at least 2 slabs", opts.CompactSlabs)
	}
	nslots := int(opts.Size / int64(opts.SlabSize))
	if nslots < 4 {
		return nil, fmt.Errorf("cache: size %d holds %d slabs of %d bytes: want at least 4", opts.Size, nslots, opts.SlabSize)
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &Cache{
		opts:     opts,
		log:      log,
		slabSize: opts.SlabSize,
		dataOff:  dataOffFor(opts.SlabSize, opts.MaxKeysPerSlab),
		maxOpen:  max(1, min(64, nslots/2)),
		maxKeys:  nslots*opts.MaxKeysPerSlab + 1024,
		keys:     map[Key]*keyEntry{},
		slots:    make([]*slab, nslots),
		fields:   map[string]*fieldIndex{},
	}
	c.dataCap = c.slabSize - c.dataOff
	if c.dataCap < BlockSize {
		return nil, fmt.Errorf("cache: slabs of %d bytes leave no data space for %d keys", c.slabSize, opts.MaxKeysPerSlab)
	}
	c.pol.init(nslots)
	f, err := openSlabFile(opts.Path, nslots, c.slabSize, !opts.NoDirectIO)
	if err != nil {
		return nil, err
	}
	c.file = f
	c.wbuf = alignedBuf(c.slabSize)
	c.rbuf = alignedBuf(c.slabSize)
	if err := c.loadSnapshot(); err != nil {
		log.Warn("cache: starting empty", "path", opts.Path, "reason", err)
		c.reset()
	}
	c.stats.Slabs = nslots
	if opts.Registerer != nil {
		if err := opts.Registerer.Register(newCollector(c)); err != nil {
			f.close()
			return nil, fmt.Errorf("cache: register metrics: %w", err)
		}
	}
	return c, nil
}

// reset forgets everything: every slot is free.
func (c *Cache) reset() {
	c.keys = map[Key]*keyEntry{}
	clear(c.slots)
	c.fields = map[string]*fieldIndex{}
	c.pol.init(len(c.slots))
	c.openCount = 0
	c.free = c.free[:0]
	for i := len(c.slots) - 1; i >= 0; i-- {
		c.free = append(c.free, i)
	}
}

// Set stores the points of fields for key over [start, end]: the client
// vouches that they are the query's complete result for that range.
func (c *Cache) Set(key Key, start, end int64, fields []Field) error {
	if start > end {
		return fmt.Errorf("cache: set range %d-%d: start after end", start, end)
	}
	var total int
	for i := range fields {
		f := &fields[i]
		if len(f.Name) > MaxFieldLen {
			return fmt.Errorf("cache: field name of %d bytes (at most %d): %w", len(f.Name), MaxFieldLen, ErrTooLarge)
		}
		prev := start
		for j, p := range f.Points {
			if p.T < start || p.T > end {
				return fmt.Errorf("cache: field %q point %d at %d: outside the set range %d-%d", f.Name, j, p.T, start, end)
			}
			if pointLen(maxDeltaLen, len(p.V)) > c.dataCap/4 {
				return fmt.Errorf("cache: field %q point %d: value of %d bytes (at most %d): %w", f.Name, j, len(p.V), c.dataCap/4-32, ErrTooLarge)
			}
			total += estPointLen(&prev, p.T, len(p.V))
		}
	}
	if total > len(c.slots)/2*c.dataCap {
		return fmt.Errorf("cache: set of %d bytes, more than half the cache: %w", total, ErrTooLarge)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	e := c.entryLocked(key, true)
	// Points the key has cached already are not stored again: a range in
	// the key index has all its points in the slabs (invariant 2), so a
	// Set overlapping earlier ones stores only what is new.
	had := &keyEntry{}
	if !c.opts.KeepCoveredPoints {
		had.ranges = slices.Clone(e.ranges)
	}
	// The range is added before the points: an eviction while they are
	// placed then takes back what it loses (invariant 2).
	e.add(start, end)
	if total > 0 || e.density == 0 {
		e.density = float64(total) / (float64(end-start) + 1)
	}
	if len(fields) == 0 {
		e.addField("")
	}
	for i := range fields {
		f := &fields[i]
		e.addField(f.Name)
		if len(had.ranges) > 0 {
			nf := Field{Name: f.Name}
			for _, p := range f.Points {
				if had.find(p.T) < 0 {
					nf.Points = append(nf.Points, p)
				}
			}
			f = &nf
		}
		if len(f.Points) == 0 {
			continue
		}
		if err := c.appendLocked(key, e, f); err != nil {
			e.remove(start, end)
			return err
		}
	}
	c.stats.SetBytes += uint64(total)
	return nil
}

// entryLocked returns key's entry, creating it if create.
func (c *Cache) entryLocked(key Key, create bool) *keyEntry {
	e := c.keys[key]
	if e == nil && create {
		if len(c.keys) >= c.maxKeys {
			c.dropKeysLocked()
		}
		c.epoch++
		e = &keyEntry{epoch: c.epoch}
		c.keys[key] = e
	}
	if e != nil {
		c.tick++
		e.used = c.tick
	}
	return e
}

// dropKeysLocked forgets the least recently used eighth of the keys (their
// points become unreachable; compaction and eviction reclaim them).
func (c *Cache) dropKeysLocked() {
	type ku struct {
		k Key
		u uint64
	}
	all := make([]ku, 0, len(c.keys))
	for k, e := range c.keys {
		all = append(all, ku{k, e.used})
	}
	slices.SortFunc(all, func(a, b ku) int { return cmp.Compare(a.u, b.u) })
	for _, x := range all[:len(all)/8+1] {
		delete(c.keys, x.k)
	}
}

// appendLocked adds field f's points for key to the field's open slab,
// sealing it whenever it fills.
func (c *Cache) appendLocked(key Key, e *keyEntry, f *Field) error {
	fi := c.fields[f.Name]
	if fi == nil {
		fi = &fieldIndex{name: f.Name}
		c.fields[f.Name] = fi
	}
	ke := keyEpoch{key, e.epoch}
	var segIn *openSlab // the open slab whose last segment of the key this call is extending
	var segKi uint16    // the key's index in segIn
	for i := 0; i < len(f.Points); {
		p := f.Points[i]
		o := fi.open
		if o == nil {
			if err := c.makeRoomLocked(); err != nil {
				return err
			}
			slot, err := c.allocLocked()
			if err != nil {
				return err
			}
			o = &openSlab{field: f.Name, slot: slot, keyIdx: map[keyEpoch]uint16{}, arena: make([]byte, 0, c.dataCap)}
			fi.open = o
			c.openCount++
		}
		var ki uint16
		var ok bool
		if o == segIn { // the key's entry in this open slab is known
			ki, ok = segKi, true
		} else {
			ki, ok = o.keyIdx[ke]
		}
		n := pointLen(0, len(p.V)) // the key's first point in the slab: its min time
		if ok {
			prev := o.keys[ki].maxT
			n = estPointLen(&prev, p.T, len(p.V))
		}
		if o.bytes+n > c.dataCap || (!ok && len(o.keys) == c.opts.MaxKeysPerSlab) {
			if err := c.sealLocked(fi); err != nil {
				return err
			}
			continue // the point goes to a new open slab
		}
		if !ok {
			ki = uint16(len(o.keys))
			o.keyIdx[ke] = ki
			o.keys = append(o.keys, slabKey{key: key, epoch: e.epoch, minT: p.T, maxT: p.T})
			o.byKey = append(o.byKey, nil)
		}
		k := &o.keys[ki]
		k.minT, k.maxT = min(k.minT, p.T), max(k.maxT, p.T)
		if segIn != o {
			segIn, segKi = o, ki
			k.segs = append(k.segs, span{p.T, p.T})
		} else {
			sg := &k.segs[len(k.segs)-1]
			sg.lo, sg.hi = min(sg.lo, p.T), max(sg.hi, p.T)
		}
		a := len(o.arena)
		o.arena = append(o.arena, p.V...) // never grows: the values fit in dataCap
		kb := len(o.keyBuf)
		o.keyBuf = append(o.keyBuf, ki)
		o.byKey[ki] = append(o.byKey[ki], int32(len(o.points)))
		o.points = append(o.points, slabPoint{t: p.T, v: o.arena[a:len(o.arena):len(o.arena)], keys: o.keyBuf[kb : kb+1 : kb+1]})
		o.bytes += n
		c.tick++
		o.used = c.tick
		i++
	}
	return nil
}

// makeRoomLocked seals the least recently written open slab when as many
// as maxOpen are in memory.
func (c *Cache) makeRoomLocked() error {
	if c.openCount < c.maxOpen {
		return nil
	}
	var lru *fieldIndex
	for _, fi := range c.fields {
		if fi.open != nil && (lru == nil || fi.open.used < lru.open.used) {
			lru = fi
		}
	}
	return c.sealLocked(lru)
}

// sealLocked writes the field's open slab to a slot and indexes it.
func (c *Cache) sealLocked(fi *fieldIndex) error {
	o := fi.open
	fi.open = nil
	c.openCount--
	pts := mergePoints(o.points)
	c.free = append(c.free, o.slot) // the slab's first slot: the next alloc takes it
	return c.writeSlabsLocked(fi, o.keys, pts, false)
}

// mergePoints sorts points (of one key each) by (t, v, key) and drops the
// duplicates of a key. Equal points of different keys stay apart: a point
// shared by two keys would sit in one key's run, and the other key's reads
// would have to scan the whole slab (readSpan).
func mergePoints(pts []slabPoint) []slabPoint {
	pts = mergeRuns(pts, func(a, b slabPoint) int {
		if c := cmp.Compare(a.t, b.t); c != 0 {
			return c
		}
		if c := bytes.Compare(a.v, b.v); c != 0 {
			return c
		}
		return cmp.Compare(a.keys[0], b.keys[0])
	})
	return slices.CompactFunc(pts, func(a, b slabPoint) bool {
		return a.t == b.t && a.keys[0] == b.keys[0] && bytes.Equal(a.v, b.v)
	})
}

// writeSlabsLocked writes points (sorted, merged; key indices into keys)
// to as many slabs as they need, each with the keys it holds points of,
// and indexes them. compacting: the slabs come from a compaction (no
// compaction is started again).
func (c *Cache) writeSlabsLocked(fi *fieldIndex, keys []slabKey, pts []slabPoint, compacting bool) error {
	last := make([]int64, len(keys))  // a key's previous point in the slab being filled
	remap := make([]int32, len(keys)) // a key's index in the slab being filled, -1: none yet
	for i := range remap {
		remap[i] = -1
	}
	var used []uint16 // the keys with an index in the slab being filled
	maxBits := (c.opts.MaxKeysPerSlab + 7) / 8
	for len(pts) > 0 {
		// take as many points as fit, with at most MaxKeysPerSlab keys
		for _, k := range used {
			remap[k] = -1
		}
		used = used[:0]
		var sk []slabKey
		size, n := 0, 0
		for n < len(pts) {
			p := pts[n]
			newKeys := 0
			for _, k := range p.keys {
				if remap[k] < 0 {
					newKeys++
				}
			}
			if len(sk)+newKeys > c.opts.MaxKeysPerSlab && n > 0 {
				break
			}
			// the point's exact length (points come in time order, so a
			// key's previous point is its run's previous one); a point of
			// several keys is counted at its longest
			var pl int
			if k := p.keys[0]; len(p.keys) == 1 {
				prev := p.t // the key's first point: its min time
				if remap[k] >= 0 {
					prev = last[k]
				}
				pl = pointLen(uint64(p.t-prev), len(p.v))
			} else {
				pl = pointLen(maxDeltaLen, len(p.v)) + uvarintLen(uint64(maxBits)) - 1 + maxBits
			}
			if size+pl > c.dataCap && n > 0 {
				break
			}
			for _, k := range p.keys {
				if remap[k] < 0 {
					remap[k] = int32(len(sk))
					used = append(used, k)
					sk = append(sk, slabKey{key: keys[k].key, epoch: keys[k].epoch, minT: p.t, maxT: p.t})
				}
				last[k] = p.t
			}
			size += pl
			n++
		}
		chunk := make([]slabPoint, n)
		total := 0
		for _, p := range pts[:n] {
			total += len(p.keys)
		}
		kbuf := make([]uint16, 0, total)
		for i, p := range pts[:n] {
			j0 := len(kbuf)
			for _, k := range p.keys {
				x := remap[k]
				kbuf = append(kbuf, uint16(x))
				sk[x].minT, sk[x].maxT = min(sk[x].minT, p.t), max(sk[x].maxT, p.t)
			}
			chunk[i] = slabPoint{t: p.t, v: p.v, keys: kbuf[j0:len(kbuf):len(kbuf)]}
		}
		pts = pts[n:]
		for _, k := range used {
			x := remap[k]
			sk[x].segs = clipSpans(keys[k].segs, sk[x].minT, sk[x].maxT)
		}
		if err := c.writeSlabLocked(fi, sk, chunk, compacting); err != nil {
			return err
		}
	}
	return nil
}

// writeSlabLocked writes one slab and indexes it.
func (c *Cache) writeSlabLocked(fi *fieldIndex, keys []slabKey, pts []slabPoint, compacting bool) error {
	slot, err := c.allocLocked()
	if err != nil {
		return err
	}
	c.seq++
	buf, err := appendSlab(c.wbuf[:0], c.slabSize, c.dataOff, c.seq, fi.name, keys, pts)
	if err != nil {
		c.free = append(c.free, slot)
		return fmt.Errorf("cache: %w", err)
	}
	if err := c.file.writeSlab(slot, buf); err != nil {
		c.free = append(c.free, slot)
		return err
	}
	h, reason := decodeSlabHeader(buf, c.slabSize)
	if reason != "" {
		c.free = append(c.free, slot)
		return fmt.Errorf("cache: slab just written does not decode: %s", reason)
	}
	for i := range h.keys {
		h.keys[i].segs = keys[i].segs // appendSlab keeps the keys' order
	}
	s := &slab{slot: slot, h: h, bloom: bloomOf(h.keys)}
	c.slots[slot] = s
	c.insertLocked(fi, s)
	c.pol.insert(s)
	c.stats.SlabsUsed++
	if !compacting && len(s.vr.slabs) > c.opts.CompactSlabs && depth(s.vr.slabs) > c.opts.CompactSlabs {
		return c.compactLocked(fi, s.vr)
	}
	return nil
}

// estPointLen is at least the length a point of a value of n bytes at t
// takes in its run, *prev the time of the key's point before it (updated):
// exact when t follows it; a point before it (which a sort will put
// between two others) is counted at the longest delta, which bounds what
// it adds between its neighbours.
func estPointLen(prev *int64, t int64, n int) int {
	if t < *prev {
		return pointLen(maxDeltaLen, n)
	}
	dt := uint64(t - *prev)
	*prev = t
	return pointLen(dt, n)
}

// clipSpans returns the spans of segs that meet [lo, hi], clipped to it;
// nil (not known) when segs is.
func clipSpans(segs []span, lo, hi int64) []span {
	if segs == nil {
		return nil
	}
	out := []span{}
	for _, sg := range segs {
		if sg.hi >= lo && sg.lo <= hi {
			out = append(out, span{max(sg.lo, lo), min(sg.hi, hi)})
		}
	}
	return out
}

// allocLocked returns a free slot, evicting a slab when none is.
func (c *Cache) allocLocked() (int, error) {
	for len(c.free) == 0 {
		// a victim a Get is reading frees its slot only when the Get is
		// done: evict the next one too
		victim := c.pol.victim()
		if victim == nil {
			return 0, errors.New("cache: no slab to evict (every slot is open or being read)")
		}
		c.evictLocked(victim, true)
	}
	slot := c.free[len(c.free)-1]
	c.free = c.free[:len(c.free)-1]
	return slot, nil
}

// evictLocked removes slab s: from the policy (noting a ghost if ghost),
// the slab index, its slot, and the ranges of the keys it held points of.
func (c *Cache) evictLocked(s *slab, ghost bool) {
	c.pol.remove(s, ghost)
	if ghost {
		c.stats.Evictions++
	}
	c.dropLocked(s)
}

// dropLocked removes s from the slab index and frees its slot; the ranges
// its points backed are no longer cached (invariant 2).
func (c *Cache) dropLocked(s *slab) {
	for i := range s.h.keys {
		k := &s.h.keys[i]
		if e := c.keys[k.key]; e != nil && e.epoch == k.epoch {
			for _, sp := range k.spans() {
				e.remove(sp.lo, sp.hi)
			}
		}
	}
	fi := c.fields[s.h.field]
	c.removeFromVRLocked(fi, s)
	c.releaseSlotLocked(s)
}

// releaseSlotLocked takes s out of its slot, which becomes free now or,
// if a Get is reading s, when it is done.
func (c *Cache) releaseSlotLocked(s *slab) {
	c.slots[s.slot] = nil
	c.stats.SlabsUsed--
	s.gone = true
	if s.pins == 0 {
		s.freed = true
		c.free = append(c.free, s.slot)
	}
}

// insertLocked adds s to its field's virtual ranges, joining those its
// time range overlaps.
func (c *Cache) insertLocked(fi *fieldIndex, s *slab) {
	lo, hi := s.h.minT, s.h.maxT
	i := sort.Search(len(fi.vrs), func(i int) bool { return fi.vrs[i].hi >= lo })
	j := i
	merged := &vrange{lo: lo, hi: hi}
	for j < len(fi.vrs) && fi.vrs[j].lo <= hi {
		v := fi.vrs[j]
		merged.lo, merged.hi = min(merged.lo, v.lo), max(merged.hi, v.hi)
		merged.slabs = append(merged.slabs, v.slabs...)
		j++
	}
	merged.slabs = append(merged.slabs, s)
	slices.SortStableFunc(merged.slabs, func(a, b *slab) int { return cmp.Compare(a.h.minT, b.h.minT) })
	for _, x := range merged.slabs {
		x.vr = merged
	}
	fi.vrs = slices.Replace(fi.vrs, i, j, merged)
}

// removeFromVRLocked takes s out of its virtual range, which may split
// into several.
func (c *Cache) removeFromVRLocked(fi *fieldIndex, s *slab) {
	v := s.vr
	s.vr = nil
	i := slices.Index(fi.vrs, v)
	rest := slices.DeleteFunc(slices.Clone(v.slabs), func(x *slab) bool { return x == s })
	var parts []*vrange
	for _, x := range rest { // rest is in order of minT
		if n := len(parts); n > 0 && x.h.minT <= parts[n-1].hi {
			p := parts[n-1]
			p.hi = max(p.hi, x.h.maxT)
			p.slabs = append(p.slabs, x)
		} else {
			parts = append(parts, &vrange{lo: x.h.minT, hi: x.h.maxT, slabs: []*slab{x}})
		}
		x.vr = parts[len(parts)-1]
	}
	fi.vrs = slices.Replace(fi.vrs, i, i+1, parts...)
}

// Get returns the points of key over [start, end] for the fields named
// (all the key's fields if nil): a hit if the range is cached, a partial
// hit if its head or its tail is and the estimated size of that part is at
// least Options.PartialMinBytes, else a miss.
//
// The lock is held to find the slabs, which are pinned (their slots are
// not reused while pinned), and again to account for the reads; the
// reads themselves and their decoding run without it.
func (c *Cache) Get(key Key, start, end int64, fields []string) (Result, error) {
	if start > end {
		return Result{}, fmt.Errorf("cache: get range %d-%d: start after end", start, end)
	}
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return Result{}, ErrClosed
		}
		plan := c.planLocked(key, start, end, fields)
		if plan.res.Status != Miss {
			c.readers.Add(1)
		}
		c.mu.Unlock()
		if plan.res.Status == Miss {
			c.mu.Lock()
			c.stats.Misses++
			c.mu.Unlock()
			return Result{}, nil
		}
		corrupt, err := plan.read(c)
		c.readers.Done()
		c.mu.Lock()
		c.finishLocked(plan, corrupt)
		if err != nil || corrupt != nil {
			c.mu.Unlock()
			if err != nil {
				return Result{}, err
			}
			continue // the corrupt slab went with its ranges: answer again
		}
		res := plan.result()
		if res.Status == Hit {
			c.stats.Hits++
		} else {
			c.stats.Partials++
		}
		for _, f := range res.Fields {
			for _, p := range f.Points {
				c.stats.GetBytes += uint64(8 + len(p.V))
			}
		}
		c.mu.Unlock()
		return res, nil
	}
}

// getPlan is what a Get reads: per field, the points of the open slab
// (copied) and the sealed slabs (pinned) with the key's bit in each.
type getPlan struct {
	res    Result
	fields []string
	out    [][]Point
	reads  []slabRead
	arena  []byte
}

type slabRead struct {
	s     *slab
	bit   int
	field int // index in fields
}

func (c *Cache) planLocked(key Key, start, end int64, fields []string) *getPlan {
	plan := &getPlan{}
	e := c.entryLocked(key, false)
	c.pol.ghostHits(key, start, end)
	if e == nil {
		return plan
	}
	lo, hi, status := e.cover(start, end, c.opts.PartialMinBytes)
	if status == Miss {
		return plan
	}
	if fields == nil {
		fields = slices.Clone(e.fields)
	}
	plan.res = Result{Status: status, Start: lo, End: hi}
	plan.fields = fields
	plan.out = make([][]Point, len(fields))
	for fx, name := range fields {
		fi := c.fields[name]
		if fi == nil {
			continue
		}
		if o := fi.open; o != nil {
			if ki, ok := o.keyIdx[keyEpoch{key, e.epoch}]; ok {
				// Sized first: the points and their bytes are copied
				// without growing either slice.
				n, size := 0, 0
				for _, i := range o.byKey[ki] {
					if p := &o.points[i]; p.t >= lo && p.t <= hi {
						n, size = n+1, size+len(p.v)
					}
				}
				plan.out[fx] = slices.Grow(plan.out[fx], n)
				plan.arena = slices.Grow(plan.arena, size)
				for _, i := range o.byKey[ki] {
					if p := &o.points[i]; p.t >= lo && p.t <= hi {
						plan.out[fx] = append(plan.out[fx], Point{T: p.t, V: plan.save(p.v)})
					}
				}
			}
		}
		i := sort.Search(len(fi.vrs), func(i int) bool { return fi.vrs[i].hi >= lo })
		for ; i < len(fi.vrs) && fi.vrs[i].lo <= hi; i++ {
			for _, s := range fi.vrs[i].slabs {
				if s.h.minT > hi || s.h.maxT < lo || !bloomHas(s.bloom, key) || s.h.npoints == 0 {
					continue
				}
				bit := slices.IndexFunc(s.h.keys, func(k slabKey) bool { return k.key == key && k.epoch == e.epoch })
				if bit < 0 || s.h.keys[bit].minT > hi || s.h.keys[bit].maxT < lo {
					continue
				}
				s.pins++
				plan.reads = append(plan.reads, slabRead{s: s, bit: bit, field: fx})
			}
		}
	}
	return plan
}

// save copies v into the plan's arena.
func (p *getPlan) save(v []byte) []byte {
	a := len(p.arena)
	p.arena = append(p.arena, v...)
	return p.arena[a:len(p.arena):len(p.arena)]
}

// read reads the planned slabs (without the cache's lock): only the data
// blocks the time markers point to, each checked against its CRC, into
// one buffer that the points' values then share. It returns the first
// slab that fails a check.
func (p *getPlan) read(c *Cache) (*slab, error) {
	lo, hi := p.res.Start, p.res.End
	total := 0
	spans := make([]readSpan, len(p.reads))
	for i, r := range p.reads {
		spans[i] = r.s.h.readSpan(r.bit, lo, hi)
		total += (spans[i].b1 - spans[i].b0) * BlockSize
	}
	if total == 0 {
		return nil, nil
	}
	buf := alignedBuf(total)
	for i, r := range p.reads {
		s := r.s
		b0, b1 := spans[i].b0, spans[i].b1
		data, err := c.file.readBlocks(s.slot, s.h.dataOff, b0, b1, buf)
		if err != nil {
			return nil, err
		}
		buf = buf[len(data):]
		reason := ""
		for b := b0; b < b1 && reason == ""; b++ {
			blk := data[(b-b0)*BlockSize : min((b-b0+1)*BlockSize, s.h.dataLen-b0*BlockSize)]
			if got := crc32c(blk); got != s.h.markers[b].crc {
				reason = fmt.Sprintf("data block %d: CRC %#x, want %#x", b, got, s.h.markers[b].crc)
			}
		}
		if reason == "" {
			out := p.out[r.field]
			reason = scanPoints(&s.h, data, spans[i], lo, hi, func(t int64, ks keySet, v []byte) {
				if ks.has(r.bit) {
					out = append(out, Point{T: t, V: v[:len(v):len(v)]})
				}
			})
			p.out[r.field] = out
		}
		if reason != "" {
			s.corrupt = &CorruptionError{Slot: s.slot, Offset: int64(s.slot) * int64(c.slabSize), Reason: reason}
			return s, nil
		}
	}
	return nil, nil
}

// finishLocked unpins the plan's slabs, frees the slots of those that
// left meanwhile, drops a corrupt one and records the reads in the
// policy.
func (c *Cache) finishLocked(p *getPlan, corrupt *slab) {
	for _, r := range p.reads {
		r.s.pins--
		if r.s.pins < 0 {
			panic("cache: slab unpinned more than pinned")
		}
	}
	if corrupt != nil && c.slots[corrupt.slot] == corrupt {
		c.log.Warn("cache: dropping a corrupt slab", "err", corrupt.corrupt)
		c.stats.CorruptSlabs++
		c.evictLocked(corrupt, false)
	}
	for _, r := range p.reads {
		switch {
		case r.s.gone && r.s.pins == 0 && !r.s.freed:
			r.s.freed = true
			c.free = append(c.free, r.s.slot)
		case corrupt == nil && c.slots[r.s.slot] == r.s:
			c.pol.access(r.s)
		}
	}
}

// result sorts and merges each field's points (several slabs may hold
// the same point).
func (p *getPlan) result() Result {
	res := p.res
	for fx, pts := range p.out {
		if len(pts) == 0 {
			continue
		}
		pts = sortPoints(pts)
		pts = slices.CompactFunc(pts, func(a, b Point) bool { return a.T == b.T && bytes.Equal(a.V, b.V) })
		res.Fields = append(res.Fields, Field{Name: p.fields[fx], Points: pts})
	}
	return res
}

func pointLess(a, b Point) int {
	if c := cmp.Compare(a.T, b.T); c != 0 {
		return c
	}
	return bytes.Compare(a.V, b.V)
}

// sortPoints sorts points by (time, value) (mergeRuns).
func sortPoints(pts []Point) []Point { return mergeRuns(pts, pointLess) }

// mergeRuns sorts s stably as a natural merge sort: a Get's points are a
// few runs already in order (each slab's run, each Set in the open slab),
// as are an open slab's points when it is sealed (each Set's), so
// merging the runs costs O(n log runs) where a sort from scratch costs
// O(n log n). It may return another slice.
func mergeRuns[T any](s []T, cmpf func(a, b T) int) []T {
	var bounds []int // starts of the ascending runs, then len(s)
	for i := range s {
		if i == 0 || cmpf(s[i-1], s[i]) > 0 {
			bounds = append(bounds, i)
		}
	}
	bounds = append(bounds, len(s))
	if len(bounds) <= 2 {
		return s
	}
	if len(bounds)-1 > len(s)/8 { // barely sorted: a plain sort is as good
		slices.SortStableFunc(s, cmpf)
		return s
	}
	src, dst := s, make([]T, len(s))
	for len(bounds) > 2 {
		nb := bounds[:0:0]
		for i := 0; i+1 < len(bounds); i += 2 {
			lo, mid := bounds[i], bounds[i+1]
			hi := mid
			if i+2 < len(bounds) {
				hi = bounds[i+2]
			}
			nb = append(nb, lo)
			a, b, k := lo, mid, lo
			for a < mid && b < hi {
				if cmpf(src[b], src[a]) < 0 {
					dst[k] = src[b]
					b++
				} else {
					dst[k] = src[a]
					a++
				}
				k++
			}
			k += copy(dst[k:], src[a:mid])
			copy(dst[k:], src[b:hi])
		}
		bounds = append(nb, len(s))
		src, dst = dst, src
	}
	return src
}

// cover decides what a get of [start, end] finds in the ranges.
func (e *keyEntry) cover(start, end, partialMin int64) (lo, hi int64, st Status) {
	i, j := e.find(start), e.find(end)
	if i >= 0 && i == j {
		return start, end, Hit
	}
	// a partial hit: the head or the tail, the larger one
	var headLen, tailLen float64
	if i >= 0 {
		headLen = float64(e.ranges[i].hi-start) + 1
	}
	if j >= 0 {
		tailLen = float64(end-e.ranges[j].lo) + 1
	}
	switch {
	case i < 0 && j < 0:
		return 0, 0, Miss
	case headLen >= tailLen:
		lo, hi = start, e.ranges[i].hi
	default:
		lo, hi, headLen = e.ranges[j].lo, end, tailLen
	}
	if partialMin >= 0 && headLen*e.density < float64(partialMin) {
		return 0, 0, Miss
	}
	return lo, hi, Partial
}

// Delete forgets key: its cached ranges, and (through a new epoch) every
// point stored for it. It reports whether the key had ranges cached.
func (c *Cache) Delete(key Key) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.keys[key]
	if e == nil || c.closed {
		return false
	}
	had := len(e.ranges) > 0
	delete(c.keys, key) // a new entry gets a new epoch
	return had
}

// Stats returns the cache's counters.
func (c *Cache) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.stats
	s.FIFOSlabs, s.LRUSlabs, s.LRUTarget = len(c.pol.fifo), len(c.pol.lru), c.pol.lruTarget
	s.Keys = len(c.keys)
	return s
}

// Close seals the open slabs, writes the key index snapshot and closes
// the file. A cache that is not closed (a crash) starts empty.
func (c *Cache) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	c.readers.Wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(c.fields)) {
		if fi := c.fields[name]; fi.open != nil {
			if err := c.sealLocked(fi); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if len(errs) == 0 {
		errs = append(errs, c.writeSnapshotLocked())
	}
	errs = append(errs, c.file.close())
	return errors.Join(errs...)
}

// depth is the most slabs of ss that hold one same instant: what a read
// of that instant scans. A virtual range is compacted when it passes
// CompactSlabs (TSCache §3.7 counts a range's slabs; slabs of wide ranges
// would chain a field's slabs into one range that is always over the
// threshold, and compacting it at every new slab rewrites the field).
func depth(ss []*slab) int {
	type ev struct {
		t int64
		d int
	}
	evs := make([]ev, 0, 2*len(ss))
	for _, s := range ss {
		evs = append(evs, ev{s.h.minT, 1}, ev{s.h.maxT, -1})
	}
	slices.SortFunc(evs, func(a, b ev) int {
		if a.t != b.t {
			return cmp.Compare(a.t, b.t)
		}
		return cmp.Compare(b.d, a.d) // starts before ends: touching slabs overlap
	})
	d, most := 0, 0
	for _, e := range evs {
		d += e.d
		most = max(most, d)
	}
	return most
}
