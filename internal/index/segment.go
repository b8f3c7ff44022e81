package index

import (
	"encoding/binary"
	"fmt"
)

// TagDict segments: the dictionary as append-only objects of a bucket
// (CloudTS' global TagDict in object storage). A segment is a tagdict
// file (docs/format/tagdict.md) whose first record starts at any code:
// the header, then records holding the pairs with codes [from, to).
// Segments applied in code order rebuild the dictionary.

// AppendSegment appends the segment of the pairs with codes [from, to) to
// dst. Only synced pairs may be put in a segment: a block references only
// codes synced before it was written.
func (d *TagDict) AppendSegment(dst []byte, from, to int) ([]byte, error) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if from < 0 || from >= to || to > d.synced {
		return dst, fmt.Errorf("tagdict segment [%d, %d): want 0 ≤ from < to ≤ %d synced pairs", from, to, d.synced)
	}
	dst = appendTagDictHeader(dst)
	for i := from; i < to; {
		dst, i = appendRecord(dst, d.pairs, i, to)
	}
	return dst, nil
}

// Synced returns the number of pairs durable in the dictionary's file.
func (d *TagDict) Synced() int {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.synced
}

// NewMemTagDict returns an empty dictionary without a file, to be filled
// by ApplySegment (a node reading a bucket). It has nothing to sync: Sync
// returns ErrClosed.
func NewMemTagDict() *TagDict {
	return newTagDict("")
}

// ApplySegment adds the pairs of segment b, named name in errors, to d.
// Its first code must be d.Len(): segments are applied in code order,
// each once. A dictionary with a file writes them at its next Sync. Any damage is a *CorruptionError naming the byte offset; d
// then holds the pairs of the records before it.
func (d *TagDict) ApplySegment(name string, b []byte) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(b) < tagDictHeaderSize {
		return corruptf(name, "header", 0, "segment is %d bytes, shorter than the %d-byte header", len(b), tagDictHeaderSize)
	}
	if m := binary.BigEndian.Uint32(b); m != TagDictMagic {
		return corruptf(name, "header", 0, "bad magic %#08x, want %#08x", m, TagDictMagic)
	}
	if v := b[4]; v != TagDictVersion {
		return corruptf(name, "header", 4, "unsupported tagdict version %d", v)
	}
	off := tagDictHeaderSize
	if off == len(b) {
		return corruptf(name, "record", off, "segment holds no record")
	}
	path := d.path
	d.path = name
	defer func() { d.path = path }()
	for off < len(b) {
		rest := b[off:]
		if len(rest) < frameHeaderSize {
			return corruptf(name, "record", off, "partial frame header")
		}
		n := binary.BigEndian.Uint32(rest)
		if checksum(rest[:4]) != binary.BigEndian.Uint32(rest[4:]) {
			return corruptf(name, "record", off, "frame header checksum mismatch")
		}
		end := uint64(frameHeaderSize) + uint64(n) + frameTrailerSize
		if end > uint64(len(rest)) {
			return corruptf(name, "record", off, "record of %d bytes runs past the end", end)
		}
		payload := rest[frameHeaderSize : frameHeaderSize+int(n)]
		if checksum(payload) != binary.BigEndian.Uint32(rest[frameHeaderSize+int(n):]) {
			return corruptf(name, "record", off, "payload checksum mismatch")
		}
		before := len(d.pairs)
		if err := d.decodeRecord(b, off+frameHeaderSize, off+frameHeaderSize+int(n)); err != nil {
			return err
		}
		if len(d.pairs) == before {
			return corruptf(name, "record", off, "record holds no pair")
		}
		off += int(end)
	}
	if d.f == nil {
		d.synced = len(d.pairs) // nothing to write
	}
	return nil
}
