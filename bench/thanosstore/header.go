package thanosstore

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"slices"
	"sort"

	"github.com/prometheus/prometheus/tsdb/index"
	"github.com/thanos-io/objstore"
)

// indexTOCLen is the size of the TOC at the end of an index: six 8-byte
// section offsets and a CRC32 (index.indexTOCLen, unexported there).
const indexTOCLen = 6*8 + crc32.Size

// indexHeader is what the store gateway keeps of a block's index, Thanos'
// index-header: the index version, its TOC, its symbol table and its postings
// offset table, read with range GETs of the index object once per block.
// It is immutable after loadIndexHeader.
type indexHeader struct {
	name    string // index object
	size    int64  // of the index object
	version int
	toc     *index.TOC
	symbols *index.Symbols
	// postings holds for each label name its values, sorted, with the byte
	// ranges of their postings lists.
	postings map[string][]postingsRange
}

// postingsRange is where the postings list of one label value lies in the
// index: [start, end) holds its length field, its entries, its CRC32 and
// any padding up to the next list. The last list's end is estimated as the
// start of the postings offset table, as Thanos' index-header does.
type postingsRange struct {
	value      string
	start, end int64
}

// byteSlice is an index.ByteSlice over memory.
type byteSlice []byte

func (b byteSlice) Len() int                    { return len(b) }
func (b byteSlice) Range(start, end int) []byte { return b[start:end] }

// loadIndexHeader builds the index-header of the index object name the way
// Thanos' indexheader.WriteBinary does: a HEAD for the size, then range GETs
// of the header, the TOC, the symbol table and the postings offset table.
func loadIndexHeader(ctx context.Context, bkt objstore.BucketReader, name string, stats *Stats) (*indexHeader, error) {
	stats.MetaGets.Add(1)
	attrs, err := bkt.Attributes(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("index size: %w", err)
	}
	h := &indexHeader{name: name, size: attrs.Size}
	if h.size < index.HeaderLen+indexTOCLen {
		return nil, corruptf(name, 0, "index of %d bytes is too short to hold a header and a TOC", h.size)
	}

	b, err := h.get(ctx, bkt, 0, index.HeaderLen, stats)
	if err != nil {
		return nil, err
	}
	if m := binary.BigEndian.Uint32(b); m != index.MagicIndex {
		return nil, corruptf(name, 0, "magic %#x is not an index's %#x", m, index.MagicIndex)
	}
	h.version = int(b[4])
	switch h.version {
	case index.FormatV2, index.FormatV3:
		// V3 is laid out as V2 for everything read here.
	case index.FormatV1:
		return nil, corruptf(name, 4, "index format v1 (symbol references are offsets) is not supported")
	default:
		return nil, corruptf(name, 4, "unknown index format version %d", h.version)
	}

	tocOff := h.size - indexTOCLen
	if b, err = h.get(ctx, bkt, tocOff, indexTOCLen, stats); err != nil {
		return nil, err
	}
	if h.toc, err = index.NewTOCFromByteSlice(byteSlice(b)); err != nil {
		return nil, corruptf(name, tocOff, "TOC: %w", err)
	}
	t := h.toc
	if !(index.HeaderLen <= t.Symbols && t.Symbols < t.Series && t.Series <= t.LabelIndices &&
		t.LabelIndices <= t.Postings && t.Postings <= t.LabelIndicesTable &&
		t.LabelIndicesTable <= t.PostingsTable && t.PostingsTable <= uint64(tocOff)) {
		return nil, corruptf(name, tocOff, "TOC sections out of order or past the end: %+v", *t)
	}

	symOff, symLen := int64(t.Symbols), int64(t.Series-t.Symbols)
	if b, err = h.get(ctx, bkt, symOff, symLen, stats); err != nil {
		return nil, err
	}
	if h.symbols, err = index.NewSymbols(byteSlice(b), h.version, 0); err != nil {
		return nil, corruptf(name, symOff, "symbol table: %w", err)
	}

	tableOff := int64(t.PostingsTable)
	if b, err = h.get(ctx, bkt, tableOff, h.size-tableOff, stats); err != nil {
		return nil, err
	}
	if err := h.readPostingsOffsetTable(b); err != nil {
		return nil, err
	}
	return h, nil
}

// get fetches a range that must be there in full.
func (h *indexHeader) get(ctx context.Context, bkt objstore.BucketReader, off, length int64, stats *Stats) ([]byte, error) {
	b, err := getRange(ctx, bkt, h.name, off, length, &stats.MetaGets, &stats.MetaBytes)
	if err != nil {
		return nil, err
	}
	if int64(len(b)) != length {
		return nil, corruptf(h.name, off, "got %d bytes of %d; the object is shorter than its HEAD said", len(b), length)
	}
	return b, nil
}

// readPostingsOffsetTable fills h.postings from the table in b and derives
// each list's end from the start of the list after it.
func (h *indexHeader) readPostingsOffsetTable(b []byte) error {
	type entry struct {
		name string
		postingsRange
	}
	var entries []entry
	tableOff := int64(h.toc.PostingsTable)
	err := index.ReadPostingsOffsetTable(byteSlice(b), 0, func(name, value []byte, off uint64, _ int) error {
		if off < h.toc.Postings || off >= h.toc.PostingsTable {
			return fmt.Errorf("postings list of %s=%q at %d is outside the postings section [%d, %d)",
				name, value, off, h.toc.Postings, h.toc.PostingsTable)
		}
		entries = append(entries, entry{name: string(name), postingsRange: postingsRange{value: string(value), start: int64(off)}})
		return nil
	})
	if err != nil {
		return corruptf(h.name, tableOff, "postings offset table: %w", err)
	}

	slices.SortFunc(entries, func(a, b entry) int { return cmp.Compare(a.start, b.start) })
	h.postings = make(map[string][]postingsRange)
	for i, e := range entries {
		e.end = tableOff
		if i+1 < len(entries) {
			e.end = entries[i+1].start
		}
		h.postings[e.name] = append(h.postings[e.name], e.postingsRange)
	}
	for _, rs := range h.postings {
		slices.SortFunc(rs, func(a, b postingsRange) int { return cmp.Compare(a.value, b.value) })
	}
	return nil
}

// lookup returns the postings range of name=value, if the block has it.
func (h *indexHeader) lookup(name, value string) (postingsRange, bool) {
	rs := h.postings[name]
	i := sort.Search(len(rs), func(i int) bool { return rs[i].value >= value })
	if i < len(rs) && rs[i].value == value {
		return rs[i], true
	}
	return postingsRange{}, false
}

// lookupSymbol resolves a symbol reference of a series entry.
func (h *indexHeader) lookupSymbol(ref uint32) (string, error) {
	s, err := h.symbols.Lookup(ref)
	if err != nil {
		return "", fmt.Errorf("symbol %d: %w", ref, err)
	}
	return s, nil
}
