package cache

import (
	"cmp"
	"encoding/binary"
	"slices"
)

// partition is where a slab is in the replacement policy.
type partition uint8

const (
	inFIFO partition = 1
	inLRU  partition = 2
)

// policy is TSCache's time-aware replacement (§3.6): a FIFO partition of
// slabs in the order of their data's time (oldest first, the victim end)
// and an LRU partition of old slabs that were read again (most recent
// first). A re-read slab in the older half of the FIFO moves to the LRU;
// the LRU's least recent slab goes back to the FIFO, in time order, when
// the LRU is over its target size. Two ghosts (the last slab evicted from
// the FIFO and the last demoted from the LRU) and the hits of the two
// resident slabs next in line tune the target by one slab at each
// eviction.
type policy struct {
	fifo      []*slab // by (maxT, slot seq), oldest first
	lru       []*slab // most recent first
	lruTarget int
	max       int // slabs in the cache
	gFIFO     ghost
	gLRU      ghost
}

// ghost is the metadata of a slab that left a partition, and the hits it
// would have had since.
type ghost struct {
	valid      bool
	field      string
	bloom      uint64
	minT, maxT int64
	hits       uint64
}

func (p *policy) init(slabs int) {
	*p = policy{max: slabs, lruTarget: slabs / 3} // LRU:FIFO 1:2 at start
}

func fifoLess(a, b *slab) int {
	if c := cmp.Compare(a.h.maxT, b.h.maxT); c != 0 {
		return c
	}
	return cmp.Compare(a.h.seq, b.h.seq)
}

// insert puts a new slab in the FIFO at its time.
func (p *policy) insert(s *slab) {
	i, _ := slices.BinarySearchFunc(p.fifo, s, fifoLess)
	p.fifo = slices.Insert(p.fifo, i, s)
	s.part = inFIFO
}

// access records a read of s.
func (p *policy) access(s *slab) {
	s.hits++
	switch s.part {
	case inFIFO:
		i, _ := slices.BinarySearchFunc(p.fifo, s, fifoLess)
		if i >= len(p.fifo)/2 || p.lruTarget == 0 {
			return // the newer half: it stays
		}
		p.fifo = slices.Delete(p.fifo, i, i+1)
		p.lru = slices.Insert(p.lru, 0, s)
		s.part = inLRU
		for len(p.lru) > max(p.lruTarget, 0) {
			d := p.lru[len(p.lru)-1]
			p.lru = p.lru[:len(p.lru)-1]
			p.gLRU = ghostOf(d)
			p.insert(d)
		}
	case inLRU:
		i := slices.Index(p.lru, s)
		copy(p.lru[1:i+1], p.lru[:i])
		p.lru[0] = s
	}
}

func ghostOf(s *slab) ghost {
	return ghost{valid: true, field: s.h.field, bloom: s.bloom, minT: s.h.minT, maxT: s.h.maxT}
}

// victim is the slab to evict: the FIFO's oldest, else the LRU's least
// recent.
func (p *policy) victim() *slab {
	if len(p.fifo) > 0 {
		return p.fifo[0]
	}
	if len(p.lru) > 0 {
		return p.lru[len(p.lru)-1]
	}
	return nil
}

// remove takes s out of its partition. evicted: it leaves the cache for
// room, so it becomes the FIFO ghost (or the LRU one) and the partition
// sizes are tuned (§3.6).
func (p *policy) remove(s *slab, evicted bool) {
	switch s.part {
	case inFIFO:
		i, _ := slices.BinarySearchFunc(p.fifo, s, fifoLess)
		p.fifo = slices.Delete(p.fifo, i, i+1)
	case inLRU:
		i := slices.Index(p.lru, s)
		p.lru = slices.Delete(p.lru, i, i+1)
	}
	if !evicted {
		s.part = 0
		return
	}
	p.tune()
	if s.part == inFIFO {
		p.gFIFO = ghostOf(s)
	} else {
		p.gLRU = ghostOf(s)
	}
	s.part = 0
}

// tune moves the LRU target by one slab toward the partition whose ghost
// was hit more than the other's next victim (§3.6).
func (p *policy) tune() {
	var rFIFO, rLRU uint64
	if len(p.fifo) > 0 {
		rFIFO = p.fifo[0].hits
	}
	if len(p.lru) > 0 {
		rLRU = p.lru[len(p.lru)-1].hits
	}
	gainLRU := int64(p.gLRU.hits) - int64(rFIFO)
	gainFIFO := int64(p.gFIFO.hits) - int64(rLRU)
	switch {
	case gainLRU > gainFIFO && p.lruTarget < p.max-1:
		p.lruTarget++
	case gainLRU < gainFIFO && p.lruTarget > 0:
		p.lruTarget--
	}
}

// ghostHits counts a lookup of key over [lo, hi] against the ghosts.
func (p *policy) ghostHits(key Key, lo, hi int64) {
	for _, g := range []*ghost{&p.gFIFO, &p.gLRU} {
		if g.valid && g.minT <= hi && g.maxT >= lo && bloomHas(g.bloom, key) {
			g.hits++
		}
	}
}

// The slab node's Bloom filter: 64 bits, 3 bits a key, taken from the
// key's hash itself (a SHA-1 is uniform already).
func bloomBits(k Key) uint64 {
	x := binary.LittleEndian.Uint64(k[:8])
	return 1<<(x&63) | 1<<((x>>6)&63) | 1<<((x>>12)&63)
}

func bloomOf(keys []slabKey) uint64 {
	var b uint64
	for _, k := range keys {
		b |= bloomBits(k.key)
	}
	return b
}

func bloomHas(b uint64, k Key) bool { m := bloomBits(k); return b&m == m }
