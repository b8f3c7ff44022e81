package cache

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"os"
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
	maxOpen  int // open slabs (one per field) kept in memory at most
	maxKeys  int // key entries kept at most

	mu        sync.Mutex // guards everything below, and the file's reads and writes
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

// openSlab gathers points for one field in memory until it is sealed.
type openSlab struct {
	field  string
	keys   []slabKey
	keyIdx map[keyEpoch]uint16
	points []slabPoint
	bytes  int // encoded data bytes at the widest bit array
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
		maxOpen:  max(2, min(16, nslots/4)),
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
		for j, p := range f.Points {
			if p.T < start || p.T > end {
				return fmt.Errorf("cache: field %q point %d at %d: outside the set range %d-%d", f.Name, j, p.T, start, end)
			}
			n := pointLen((c.opts.MaxKeysPerSlab+7)/8, len(p.V))
			if n > c.dataCap/4 {
				return fmt.Errorf("cache: field %q point %d: value of %d bytes (at most %d): %w", f.Name, j, len(p.V), c.dataCap/4-32, ErrTooLarge)
			}
			total += n
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
	bitmapMax := (c.opts.MaxKeysPerSlab + 7) / 8
	ke := keyEpoch{key, e.epoch}
	for i := 0; i < len(f.Points); {
		p := f.Points[i]
		o := fi.open
		if o == nil {
			if err := c.makeRoomLocked(); err != nil {
				return err
			}
			o = &openSlab{field: f.Name, keyIdx: map[keyEpoch]uint16{}}
			fi.open = o
			c.openCount++
		}
		n := pointLen(bitmapMax, len(p.V))
		ki, ok := o.keyIdx[ke]
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
		}
		k := &o.keys[ki]
		k.minT, k.maxT = min(k.minT, p.T), max(k.maxT, p.T)
		o.points = append(o.points, slabPoint{t: p.T, v: bytes.Clone(p.V), keys: []uint16{ki}})
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
	return c.writeSlabsLocked(fi, o.keys, pts, false)
}

// mergePoints sorts points by (t, v) and merges equal ones, joining their
// keys.
func mergePoints(pts []slabPoint) []slabPoint {
	slices.SortFunc(pts, func(a, b slabPoint) int {
		if c := cmp.Compare(a.t, b.t); c != 0 {
			return c
		}
		return bytes.Compare(a.v, b.v)
	})
	out := pts[:0]
	for _, p := range pts {
		if n := len(out); n > 0 && out[n-1].t == p.t && bytes.Equal(out[n-1].v, p.v) {
			for _, k := range p.keys {
				if !slices.Contains(out[n-1].keys, k) {
					out[n-1].keys = append(out[n-1].keys, k)
				}
			}
			continue
		}
		out = append(out, p)
	}
	return out
}

// writeSlabsLocked writes points (sorted, merged; key indices into keys)
// to as many slabs as they need, each with the keys it holds points of,
// and indexes them. compacting: the slabs come from a compaction (no
// compaction is started again).
func (c *Cache) writeSlabsLocked(fi *fieldIndex, keys []slabKey, pts []slabPoint, compacting bool) error {
	for len(pts) > 0 {
		// take as many points as fit, with at most MaxKeysPerSlab keys
		remap := map[uint16]uint16{}
		var sk []slabKey
		size, n := 0, 0
		for n < len(pts) {
			p := pts[n]
			newKeys := 0
			for _, k := range p.keys {
				if _, ok := remap[k]; !ok {
					newKeys++
				}
			}
			bl := (c.opts.MaxKeysPerSlab + 7) / 8
			if len(sk)+newKeys > c.opts.MaxKeysPerSlab && n > 0 {
				break
			}
			if size+pointLen(bl, len(p.v)) > c.dataCap && n > 0 {
				break
			}
			for _, k := range p.keys {
				if _, ok := remap[k]; !ok {
					remap[k] = uint16(len(sk))
					sk = append(sk, slabKey{key: keys[k].key, epoch: keys[k].epoch, minT: p.t, maxT: p.t})
				}
			}
			size += pointLen(bl, len(p.v))
			n++
		}
		chunk := make([]slabPoint, n)
		for i, p := range pts[:n] {
			ks := make([]uint16, len(p.keys))
			for j, k := range p.keys {
				ks[j] = remap[k]
				x := &sk[ks[j]]
				x.minT, x.maxT = min(x.minT, p.t), max(x.maxT, p.t)
			}
			chunk[i] = slabPoint{t: p.t, v: p.v, keys: ks}
		}
		pts = pts[n:]
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
	s := &slab{slot: slot, h: h, bloom: bloomOf(h.keys)}
	c.slots[slot] = s
	c.insertLocked(fi, s)
	c.pol.insert(s)
	c.stats.SlabsUsed++
	if !compacting && len(s.vr.slabs) > c.opts.CompactSlabs {
		return c.compactLocked(fi, s.vr)
	}
	return nil
}

// allocLocked returns a free slot, evicting a slab when none is.
func (c *Cache) allocLocked() (int, error) {
	if len(c.free) == 0 {
		victim := c.pol.victim()
		if victim == nil {
			return 0, errors.New("cache: no slab to evict")
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
	for _, k := range s.h.keys {
		if e := c.keys[k.key]; e != nil && e.epoch == k.epoch {
			e.remove(k.minT, k.maxT)
		}
	}
	fi := c.fields[s.h.field]
	c.removeFromVRLocked(fi, s)
	c.slots[s.slot] = nil
	c.free = append(c.free, s.slot)
	c.stats.SlabsUsed--
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
func (c *Cache) Get(key Key, start, end int64, fields []string) (Result, error) {
	if start > end {
		return Result{}, fmt.Errorf("cache: get range %d-%d: start after end", start, end)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return Result{}, ErrClosed
	}
	res, err := c.getLocked(key, start, end, fields)
	switch {
	case err != nil:
		return Result{}, err
	case res.Status == Hit:
		c.stats.Hits++
	case res.Status == Partial:
		c.stats.Partials++
	default:
		c.stats.Misses++
	}
	return res, nil
}

func (c *Cache) getLocked(key Key, start, end int64, fields []string) (Result, error) {
	e := c.entryLocked(key, false)
	c.pol.ghostHits(key, start, end)
	if e == nil {
		return Result{}, nil
	}
	lo, hi, status := e.cover(start, end, c.opts.PartialMinBytes)
	if status == Miss {
		return Result{}, nil
	}
	if fields == nil {
		fields = e.fields
	}
	res := Result{Status: status, Start: lo, End: hi}
	for _, name := range fields {
		pts, err := c.readFieldLocked(key, e, name, lo, hi)
		if errors.Is(err, errCorrupt) {
			// the slab was dropped with its ranges: answer again
			return c.getLocked(key, start, end, fields)
		}
		if err != nil {
			return Result{}, err
		}
		if len(pts) > 0 {
			res.Fields = append(res.Fields, Field{Name: name, Points: pts})
			for _, p := range pts {
				c.stats.GetBytes += uint64(8 + len(p.V))
			}
		}
	}
	return res, nil
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

// readFieldLocked collects the points of key (at its epoch) in field over
// [lo, hi] from the open slab and the sealed slabs the slab index points
// to, merged and in order.
func (c *Cache) readFieldLocked(key Key, e *keyEntry, field string, lo, hi int64) ([]Point, error) {
	fi := c.fields[field]
	if fi == nil {
		return nil, nil
	}
	var out []Point
	if o := fi.open; o != nil {
		if ki, ok := o.keyIdx[keyEpoch{key, e.epoch}]; ok {
			for _, p := range o.points {
				if p.t >= lo && p.t <= hi && slices.Contains(p.keys, ki) {
					out = append(out, Point{T: p.t, V: bytes.Clone(p.v)})
				}
			}
		}
	}
	var touched []*slab
	i := sort.Search(len(fi.vrs), func(i int) bool { return fi.vrs[i].hi >= lo })
	for ; i < len(fi.vrs) && fi.vrs[i].lo <= hi; i++ {
		for _, s := range fi.vrs[i].slabs {
			if s.h.minT > hi || s.h.maxT < lo || !bloomHas(s.bloom, key) {
				continue
			}
			bit := slices.IndexFunc(s.h.keys, func(k slabKey) bool { return k.key == key && k.epoch == e.epoch })
			if bit < 0 || s.h.keys[bit].minT > hi || s.h.keys[bit].maxT < lo {
				continue
			}
			var err error
			if out, err = c.readSlabLocked(s, bit, lo, hi, out); err != nil {
				return nil, err
			}
			touched = append(touched, s)
		}
	}
	for _, s := range touched {
		if c.slots[s.slot] == s {
			c.pol.access(s)
		}
	}
	slices.SortFunc(out, func(a, b Point) int {
		if c := cmp.Compare(a.T, b.T); c != 0 {
			return c
		}
		return bytes.Compare(a.V, b.V)
	})
	return slices.CompactFunc(out, func(a, b Point) bool { return a.T == b.T && bytes.Equal(a.V, b.V) }), nil
}

// readSlabLocked appends to out the points of s with key bit bit in
// [lo, hi], reading only the data blocks the time markers point to and
// checking their CRCs. A slab failing a check is dropped (with the ranges
// it backed) and errCorrupt returned.
func (c *Cache) readSlabLocked(s *slab, bit int, lo, hi int64, out []Point) ([]Point, error) {
	if s.h.npoints == 0 {
		return out, nil
	}
	b0, b1 := s.h.blockRange(lo, hi)
	data, err := c.file.readBlocks(s.slot, s.h.dataOff, b0, b1, c.rbuf)
	if err != nil {
		return nil, err
	}
	fail := func(reason string) ([]Point, error) {
		cerr := &CorruptionError{Slot: s.slot, Offset: int64(s.slot) * int64(c.slabSize), Reason: reason}
		c.log.Warn("cache: dropping a corrupt slab", "err", cerr)
		c.stats.CorruptSlabs++
		c.evictLocked(s, false)
		return nil, cerr
	}
	for b := b0; b < b1; b++ {
		blk := data[(b-b0)*BlockSize : min((b-b0+1)*BlockSize, s.h.dataLen-b0*BlockSize)]
		if got := crc32c(blk); got != s.h.markers[b].crc {
			return fail(fmt.Sprintf("data block %d: CRC %#x, want %#x", b, got, s.h.markers[b].crc))
		}
	}
	reason := scanPoints(&s.h, data, b0, lo, hi, func(t int64, bm, v []byte) {
		if hasBit(bm, bit) {
			out = append(out, Point{T: t, V: bytes.Clone(v)})
		}
	})
	if reason != "" {
		return fail(reason)
	}
	return out, nil
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
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	var errs []error
	for _, fi := range c.fields {
		if fi.open != nil {
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

// Path is the cache file.
func (c *Cache) Path() string { return c.opts.Path }

func removeIfExists(path string) error {
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		return err
	}
	return nil
}
