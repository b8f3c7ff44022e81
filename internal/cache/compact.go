package cache

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
)

// Compact compacts every virtual time range where more than
// Options.CompactSlabs slabs hold one same instant, the newest first (TSCache §3.7). Set does
// this for the range a new slab joins; Compact is for callers that want
// it done at a time of their choosing.
func (c *Cache) Compact() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	names := slices.Sorted(maps.Keys(c.fields)) // a fixed order: the same calls do the same work
	for _, name := range names {
		fi := c.fields[name]
		vrs := slices.Clone(fi.vrs)
		slices.SortFunc(vrs, func(a, b *vrange) int { return cmp.Compare(b.hi, a.hi) })
		for _, v := range vrs {
			if len(v.slabs) > c.opts.CompactSlabs && depth(v.slabs) > c.opts.CompactSlabs && slices.Contains(fi.vrs, v) {
				if err := c.compactLocked(fi, v); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// compactLocked merges the slabs of virtual range v into as few new slabs
// as hold their points: slabs are read newest first, points that are the
// same (timestamp and value) become one point of all their keys, and
// points of no live key (a deleted key, an old epoch) are dropped. The
// ranges the keys have cached do not change: every point they rely on is
// in the new slabs (invariant 2).
func (c *Cache) compactLocked(fi *fieldIndex, v *vrange) error {
	old := slices.Clone(v.slabs)
	slices.SortFunc(old, func(a, b *slab) int { return -fifoLess(a, b) })
	var (
		keys   []slabKey
		keyIdx = map[keyEpoch]uint16{}
		pts    []slabPoint
	)
	for _, s := range old {
		if s.h.npoints == 0 {
			continue
		}
		data, err := c.file.readBlocks(s.slot, s.h.dataOff, 0, len(s.h.markers), c.rbuf)
		if err != nil {
			return err
		}
		reason := ""
		for b := range s.h.markers {
			blk := data[b*BlockSize : min((b+1)*BlockSize, s.h.dataLen)]
			if got := crc32c(blk); got != s.h.markers[b].crc {
				reason = fmt.Sprintf("data block %d: CRC %#x, want %#x", b, got, s.h.markers[b].crc)
				break
			}
		}
		if reason == "" {
			// the bits of s that are live keys, as indices of the new key list
			bitTo := make([]int, len(s.h.keys))
			for i, k := range s.h.keys {
				bitTo[i] = -1
				if e := c.keys[k.key]; e != nil && e.epoch == k.epoch {
					ke := keyEpoch{k.key, k.epoch}
					x, ok := keyIdx[ke]
					if !ok {
						x = uint16(len(keys))
						keyIdx[ke] = x
						keys = append(keys, slabKey{key: k.key, epoch: k.epoch, segs: []span{}})
					}
					bitTo[i] = int(x)
					keys[x].segs = append(keys[x].segs, s.h.keys[i].spans()...)
				}
			}
			all := readSpan{b0: 0, b1: len(s.h.markers), from: 0, to: s.h.dataLen, all: true}
			arena := make([]byte, 0, s.h.dataLen) // the values of s, copied once
			reason = scanPoints(&s.h, data, all, minInt64, maxInt64, func(t int64, ks keySet, val []byte) {
				var v []byte
				for i, x := range bitTo {
					if x >= 0 && ks.has(i) {
						if v == nil {
							a := len(arena)
							arena = append(arena, val...) // never grows: values fit in the data
							v = arena[a:len(arena):len(arena)]
						}
						pts = append(pts, slabPoint{t: t, v: v, keys: []uint16{uint16(x)}}) // one point a key (mergePoints)
					}
				}
			})
		}
		if reason != "" {
			cerr := &CorruptionError{Slot: s.slot, Offset: int64(s.slot) * int64(c.slabSize), Reason: reason}
			c.log.Warn("cache: dropping a corrupt slab", "err", cerr)
			c.stats.CorruptSlabs++
			c.evictLocked(s, false) // its ranges go with it
			return nil              // the range changed: the next Set compacts it again
		}
	}
	before := len(pts)
	pts = mergePoints(pts)
	c.stats.DuplicatePointsCompacted += uint64(before - len(pts))
	// The old slabs leave without taking their keys' ranges along.
	for _, s := range old {
		c.pol.remove(s, false)
		c.removeFromVRLocked(fi, s)
		c.releaseSlotLocked(s)
	}
	c.stats.Compactions++
	if err := c.writeSlabsLocked(fi, keys, pts, true); err != nil {
		// what was not written is not cached any more
		for _, k := range keys {
			if e := c.keys[k.key]; e != nil && e.epoch == k.epoch {
				e.remove(v.lo, v.hi)
			}
		}
		return err
	}
	return nil
}
