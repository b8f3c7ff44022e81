package cache

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"

	"github.com/aerie-db/aerie/internal/fileutil"
)

// snapshotPath is where a clean Close leaves the key index.
func (c *Cache) snapshotPath() string { return c.opts.Path + ".index" }

// appendSnapshot encodes the key index and the slab list (docs/format/cache.md).
func (c *Cache) appendSnapshot(dst []byte) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, SnapshotMagic)
	dst = append(dst, SnapshotVersion)
	dst = binary.AppendUvarint(dst, uint64(len(c.slots)))
	dst = binary.AppendUvarint(dst, uint64(c.slabSize))
	dst = binary.AppendUvarint(dst, c.epoch)
	dst = binary.AppendUvarint(dst, c.seq)
	dst = binary.AppendUvarint(dst, uint64(c.pol.lruTarget))
	// LRU slabs most recent first, then FIFO slabs (their order is their time)
	order := append(slices.Clone(c.pol.lru), c.pol.fifo...)
	dst = binary.AppendUvarint(dst, uint64(len(order)))
	for _, s := range order {
		dst = binary.AppendUvarint(dst, uint64(s.slot))
		dst = binary.AppendUvarint(dst, s.h.seq)
		dst = append(dst, byte(s.part))
		dst = binary.AppendUvarint(dst, s.hits)
	}
	dst = binary.AppendUvarint(dst, uint64(len(c.keys)))
	for k, e := range c.keys {
		dst = append(dst, k[:]...)
		dst = binary.AppendUvarint(dst, e.epoch)
		dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(e.density))
		dst = binary.AppendUvarint(dst, uint64(len(e.fields)))
		for _, f := range e.fields {
			dst = binary.AppendUvarint(dst, uint64(len(f)))
			dst = append(dst, f...)
		}
		dst = binary.AppendUvarint(dst, uint64(len(e.ranges)))
		for _, r := range e.ranges {
			dst = binary.AppendVarint(dst, r.lo)
			dst = binary.AppendVarint(dst, r.hi)
		}
	}
	return binary.LittleEndian.AppendUint32(dst, crc32c(dst))
}

func (c *Cache) writeSnapshotLocked() error {
	if err := fileutil.WriteFileAtomic(c.snapshotPath(), c.appendSnapshot(nil)); err != nil {
		return fmt.Errorf("cache: write the key index: %w", err)
	}
	return nil
}

// decbuf reads the snapshot with a sticky error.
type decbuf struct {
	b   []byte
	err error
}

func (d *decbuf) uvarint() uint64 { return readVarint(d, binary.Uvarint, "uvarint") }
func (d *decbuf) varint() int64   { return readVarint(d, binary.Varint, "varint") }

// readVarint reads a varint with decode, binary.Uvarint or binary.Varint
// (named what in the error).
func readVarint[T uint64 | int64](d *decbuf, decode func([]byte) (T, int), what string) T {
	if d.err != nil {
		return 0
	}
	v, n := decode(d.b)
	if n <= 0 {
		d.err = errors.New("bad " + what)
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decbuf) bytes(n int) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || n > len(d.b) {
		d.err = fmt.Errorf("%d bytes past the end", n)
		return nil
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}

func (d *decbuf) u64() uint64 {
	b := d.bytes(8)
	if b == nil {
		return 0
	}
	return binary.LittleEndian.Uint64(b)
}

// loadSnapshot reads the key index a clean Close left, then removes it:
// a crash from now on leaves none, and the next Open starts empty
// (invariant 5). No snapshot: an empty cache.
func (c *Cache) loadSnapshot() error {
	c.reset()
	path := c.snapshotPath()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := os.Remove(path); err != nil {
		return err
	}
	if err := fileutil.SyncDir(filepath.Dir(path)); err != nil {
		return err
	}
	if err := c.decodeSnapshot(b); err != nil {
		return fmt.Errorf("key index %s: %w", path, err)
	}
	return nil
}

func (c *Cache) decodeSnapshot(b []byte) error {
	if len(b) < 9 {
		return errors.New("too short")
	}
	if m := binary.LittleEndian.Uint32(b); m != SnapshotMagic {
		return fmt.Errorf("magic %#x, want %#x", m, uint32(SnapshotMagic))
	}
	if v := b[4]; v != SnapshotVersion {
		return fmt.Errorf("unknown version %d", v)
	}
	body := b[:len(b)-4]
	if got, want := crc32c(body), binary.LittleEndian.Uint32(b[len(b)-4:]); got != want {
		return fmt.Errorf("CRC %#x, want %#x", got, want)
	}
	d := &decbuf{b: body[5:]}
	nslots, slabSize := d.uvarint(), d.uvarint()
	if d.err == nil && (nslots != uint64(len(c.slots)) || slabSize != uint64(c.slabSize)) {
		return fmt.Errorf("written for %d slabs of %d bytes, opened with %d of %d", nslots, slabSize, len(c.slots), c.slabSize)
	}
	epoch, seq, lruTarget := d.uvarint(), d.uvarint(), d.uvarint()
	nslabs := d.uvarint()
	if d.err != nil || nslabs > nslots {
		return fmt.Errorf("slab list: %v", d.err)
	}
	hbuf := c.rbuf[:c.dataOff]
	var lru []*slab
	for range nslabs {
		slot, sseq, part, hits := d.uvarint(), d.uvarint(), d.bytes(1), d.uvarint()
		if d.err != nil || slot >= nslots || c.slots[slot] != nil || (part[0] != byte(inFIFO) && part[0] != byte(inLRU)) {
			return fmt.Errorf("slab list entry for slot %d: %v", slot, d.err)
		}
		if err := c.file.readAt(hbuf, int64(slot)*int64(c.slabSize)); err != nil {
			return err
		}
		h, reason := decodeSlabHeader(hbuf, c.slabSize)
		switch {
		case reason != "":
			return &CorruptionError{Slot: int(slot), Offset: int64(slot) * int64(c.slabSize), Reason: reason}
		case h.seq != sseq:
			return fmt.Errorf("slot %d holds slab %d, the index names %d", slot, h.seq, sseq)
		case h.dataOff != c.dataOff:
			return fmt.Errorf("slot %d: data at %d, want %d", slot, h.dataOff, c.dataOff)
		}
		s := &slab{slot: int(slot), h: h, bloom: bloomOf(h.keys), hits: hits}
		c.slots[slot] = s
		fi := c.fields[h.field]
		if fi == nil {
			fi = &fieldIndex{name: h.field}
			c.fields[h.field] = fi
		}
		c.insertLocked(fi, s)
		if partition(part[0]) == inLRU {
			s.part = inLRU
			lru = append(lru, s)
		} else {
			c.pol.insert(s)
		}
		c.stats.SlabsUsed++
	}
	c.pol.lru = lru
	c.pol.lruTarget = int(min(lruTarget, nslots-1))
	nkeys := d.uvarint()
	for i := uint64(0); i < nkeys && d.err == nil; i++ {
		var k Key
		copy(k[:], d.bytes(len(k)))
		e := &keyEntry{epoch: d.uvarint()}
		e.density = math.Float64frombits(d.u64())
		nf := d.uvarint()
		for j := uint64(0); j < nf && d.err == nil; j++ {
			e.fields = append(e.fields, string(d.bytes(int(min(d.uvarint(), MaxFieldLen+1)))))
		}
		nr := d.uvarint()
		for j := uint64(0); j < nr && d.err == nil; j++ {
			e.ranges = append(e.ranges, span{d.varint(), d.varint()})
		}
		if e.epoch > epoch {
			return fmt.Errorf("key %s at epoch %d, past the last one %d", k, e.epoch, epoch)
		}
		c.keys[k] = e
	}
	switch {
	case d.err != nil:
		return d.err
	case len(d.b) != 0:
		return fmt.Errorf("%d bytes after the keys", len(d.b))
	}
	c.epoch, c.seq = epoch, seq
	c.free = c.free[:0]
	for i := len(c.slots) - 1; i >= 0; i-- {
		if c.slots[i] == nil {
			c.free = append(c.free, i)
		}
	}
	return nil
}
