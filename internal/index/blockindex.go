package index

import (
	"cmp"
	"encoding/binary"
	"math"
	"slices"
	"strings"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/prometheus/prometheus/model/labels"
)

// Format constants of the serialized block index (docs/format/ttmapping.md).
const (
	// BlockIndexMagic opens the serialized block index ("TTMP").
	BlockIndexMagic uint32 = 0x54544D50
	// BlockIndexVersion is the only block index version this code writes and reads.
	BlockIndexVersion uint8 = 1
)

// SectionID identifies a section of the serialized block index.
type SectionID uint8

// Section ids, in the order the sections appear.
const (
	SectionTagArray  SectionID = 1
	SectionTTMapping SectionID = 2
)

const (
	blockIndexHeaderSize = 5 // magic <4b> version <1b>
	sectionHeaderSize    = 5 // id <1b> len <4b>
	sectionTrailerSize   = 4 // crc32c <4b>
	headerSection        = "header"
)

func (s SectionID) String() string {
	switch s {
	case SectionTagArray:
		return "tag array"
	case SectionTTMapping:
		return "ttmapping"
	}
	return "unknown section"
}

// canonicalLabels drops labels with empty values (an empty value means the
// label is absent, as in Prometheus) and all but the first of repeated names.
func canonicalLabels(lset labels.Labels) labels.Labels {
	clean, prev, first := true, "", true
	lset.Range(func(l labels.Label) {
		if l.Value == "" || (!first && l.Name == prev) {
			clean = false
		}
		prev, first = l.Name, false
	})
	if clean {
		return lset
	}
	b := labels.NewScratchBuilder(lset.Len())
	prev, first = "", true
	lset.Range(func(l labels.Label) {
		if l.Value != "" && (first || l.Name != prev) {
			b.Add(l.Name, l.Value)
			prev, first = l.Name, false
		}
	})
	return b.Labels()
}

// BlockIndexBuilder collects the series of one block and serializes their
// tag array and TTMapping. It is not safe for concurrent use.
type BlockIndexBuilder struct {
	dict   *TagDict
	ptr    []uint32          // CSR row pointers into codes; len = series + 1
	codes  []uint32          // global codes, row by row, in label order
	counts map[uint32]uint32 // global code → number of series using it
}

// NewBlockIndexBuilder returns a builder that assigns global codes in dict.
func NewBlockIndexBuilder(dict *TagDict) *BlockIndexBuilder {
	return &BlockIndexBuilder{dict: dict, ptr: []uint32{0}, counts: map[uint32]uint32{}}
}

// AddSeries adds a series and returns its local id: 0 for the first call, 1
// for the next, and so on. Labels with empty values are dropped, and so are
// repeats of a name. New pairs are added to the TagDict, which the caller
// must Sync before the block is written.
func (b *BlockIndexBuilder) AddSeries(lset labels.Labels) uint32 {
	id := len(b.ptr) - 1
	if id == math.MaxUint32 {
		panic("index: block holds 2^32-1 series")
	}
	canonicalLabels(lset).Range(func(l labels.Label) {
		c := b.dict.Add(l.Name, l.Value)
		b.codes = append(b.codes, c)
		b.counts[c]++
	})
	if uint64(len(b.codes)) > math.MaxUint32 {
		panic("index: block holds 2^32-1 tag references")
	}
	b.ptr = append(b.ptr, uint32(len(b.codes)))
	return uint32(id)
}

// NumSeries returns the number of series added.
func (b *BlockIndexBuilder) NumSeries() int { return len(b.ptr) - 1 }

// AppendTo appends the serialized block index: header, tag array section and
// TTMapping section. The output depends only on the sequence of AddSeries
// calls and the codes dict gave them.
func (b *BlockIndexBuilder) AppendTo(dst []byte) []byte {
	// Local codes: most used first, ties by global code (CloudTS).
	tags := make([]uint32, 0, len(b.counts))
	for c := range b.counts {
		tags = append(tags, c)
	}
	slices.SortFunc(tags, func(x, y uint32) int {
		if c := cmp.Compare(b.counts[y], b.counts[x]); c != 0 {
			return c
		}
		return cmp.Compare(x, y)
	})
	local := make(map[uint32]uint32, len(tags))
	for i, c := range tags {
		local[c] = uint32(i)
	}

	dst = binary.BigEndian.AppendUint32(dst, BlockIndexMagic)
	dst = append(dst, BlockIndexVersion)

	start := beginSection(&dst, SectionTagArray)
	dst = binary.AppendUvarint(dst, uint64(len(tags)))
	for _, c := range tags {
		dst = binary.AppendUvarint(dst, uint64(c))
	}
	dst = endSection(dst, start)

	start = beginSection(&dst, SectionTTMapping)
	m := len(b.ptr) - 1
	dst = binary.AppendUvarint(dst, uint64(m))
	for i := 0; i < m; i++ {
		dst = binary.AppendUvarint(dst, uint64(b.ptr[i+1]-b.ptr[i]))
	}
	var row []uint32
	for i := 0; i < m; i++ {
		row = row[:0]
		for _, c := range b.codes[b.ptr[i]:b.ptr[i+1]] {
			row = append(row, local[c])
		}
		slices.Sort(row)
		for j, c := range row {
			if j == 0 {
				dst = binary.AppendUvarint(dst, uint64(c))
			} else {
				dst = binary.AppendUvarint(dst, uint64(c-row[j-1]-1))
			}
		}
	}
	return endSection(dst, start)
}

func beginSection(dst *[]byte, id SectionID) int {
	start := len(*dst)
	*dst = append(*dst, byte(id), 0, 0, 0, 0)
	return start
}

func endSection(dst []byte, start int) []byte {
	binary.BigEndian.PutUint32(dst[start+1:], uint32(len(dst)-start-sectionHeaderSize))
	return binary.BigEndian.AppendUint32(dst, checksum(dst[start:]))
}

// BlockIndex is the decoded, immutable metadata of one block: the tag array,
// the TTMapping (series → tags) and its transpose (tag → series postings).
// It is safe for concurrent use.
type BlockIndex struct {
	numSeries int
	global    []uint32          // local code → global code
	tags      []pair            // local code → pair (strings shared with the TagDict)
	ptr       []uint32          // CSR row pointers, len numSeries+1
	ind       []uint32          // local codes; each row sorted by label name
	postings  []*roaring.Bitmap // local code → local series ids
	all       *roaring.Bitmap
	names     []string            // label names, sorted
	byName    map[string][]uint32 // name → local codes sorted by value
}

// DecodeBlockIndex validates and decodes the output of AppendTo. Global codes
// are resolved in dict. Damage is reported as a *CorruptionError whose Section
// names the failing section and whose Offset counts from src[0].
func DecodeBlockIndex(src []byte, dict *TagDict) (*BlockIndex, error) {
	if len(src) < blockIndexHeaderSize {
		return nil, corruptf("", headerSection, 0, "%d bytes, shorter than the %d-byte header", len(src), blockIndexHeaderSize)
	}
	if m := binary.BigEndian.Uint32(src); m != BlockIndexMagic {
		return nil, corruptf("", headerSection, 0, "bad magic %#08x, want %#08x", m, BlockIndexMagic)
	}
	switch v := src[4]; v {
	case BlockIndexVersion:
	default:
		return nil, corruptf("", headerSection, 4, "unsupported block index version %d", v)
	}
	off := blockIndexHeaderSize
	tagSec, err := readSection(src, &off, SectionTagArray)
	if err != nil {
		return nil, err
	}
	ttSec, err := readSection(src, &off, SectionTTMapping)
	if err != nil {
		return nil, err
	}
	if off != len(src) {
		return nil, corruptf("", "trailer", off, "%d bytes after the last section", len(src)-off)
	}

	bi := &BlockIndex{}
	if err := bi.decodeTagArray(tagSec, dict); err != nil {
		return nil, err
	}
	if err := bi.decodeTTMapping(ttSec); err != nil {
		return nil, err
	}
	if err := bi.finish(tagSec, ttSec); err != nil {
		return nil, err
	}
	return bi, nil
}

// readSection checks the frame and checksum of the section at *off and
// returns a decbuf over its body.
func readSection(src []byte, off *int, want SectionID) (decbuf, error) {
	start := *off
	name := want.String()
	if len(src)-start < sectionHeaderSize+sectionTrailerSize {
		return decbuf{}, corruptf("", name, start, "section frame cut short: %d bytes left", len(src)-start)
	}
	if id := SectionID(src[start]); id != want {
		return decbuf{}, corruptf("", name, start, "section id %d, want %d", id, want)
	}
	n := uint64(binary.BigEndian.Uint32(src[start+1:]))
	if n > uint64(len(src)-start-sectionHeaderSize-sectionTrailerSize) {
		return decbuf{}, corruptf("", name, start+1, "section length %d exceeds the %d bytes left", n, len(src)-start-sectionHeaderSize-sectionTrailerSize)
	}
	end := start + sectionHeaderSize + int(n)
	if checksum(src[start:end]) != binary.BigEndian.Uint32(src[end:]) {
		return decbuf{}, corruptf("", name, start, "section checksum mismatch")
	}
	*off = end + sectionTrailerSize
	return decbuf{b: src, off: start + sectionHeaderSize, end: end, section: name}, nil
}

func (bi *BlockIndex) decodeTagArray(d decbuf, dict *TagDict) error {
	start := d.off
	n := d.count("tags")
	if d.err != nil {
		return d.err
	}
	known := uint64(dict.Len()) // the dictionary only grows
	bi.global = make([]uint32, n)
	for i := range bi.global {
		at := d.off
		c := d.uvarint32()
		if d.err == nil && uint64(c) >= known {
			d.fail(at, "tag %d has global code %d, unknown to the tagdict (%d pairs)", i, c, known)
		}
		bi.global[i] = c
	}
	d.finish("section")
	if d.err != nil {
		return d.err
	}
	bi.tags, _ = dict.resolve(bi.global, make([]pair, 0, n))
	for i, p := range bi.tags {
		if p.value == "" {
			return corruptf("", d.section, start, "tag %d (global code %d) has an empty value", i, bi.global[i])
		}
	}
	return nil
}

func (bi *BlockIndex) decodeTTMapping(d decbuf) error {
	m := d.count("series")
	if d.err != nil {
		return d.err
	}
	bi.numSeries = int(m)
	bi.ptr = make([]uint32, m+1)
	var total uint64
	for i := uint64(0); i < m; i++ {
		at := d.off
		total += d.uvarint()
		if d.err == nil && total > math.MaxUint32 {
			d.fail(at, "row pointer of series %d overflows uint32", i)
		}
		bi.ptr[i+1] = uint32(total)
	}
	if d.err == nil && total > uint64(d.remaining()) {
		d.fail(d.off, "%d tag references cannot fit in %d bytes", total, d.remaining())
	}
	if d.err != nil {
		return d.err
	}
	ntags := uint64(len(bi.global))
	bi.ind = make([]uint32, total)
	for i := uint64(0); i < m && d.err == nil; i++ {
		var prev uint64
		for j := bi.ptr[i]; j < bi.ptr[i+1]; j++ {
			at := d.off
			c := d.uvarint()
			// Bound the gap before adding, so a huge one cannot wrap around.
			if j > bi.ptr[i] && c < ntags {
				c += prev + 1
			}
			if d.err == nil && c >= ntags {
				d.fail(at, "series %d references a tag at or beyond %d, but the tag array has %d", i, c, ntags)
			}
			if d.err != nil {
				break
			}
			bi.ind[j] = uint32(c)
			prev = c
		}
	}
	d.finish("section")
	return d.err
}

// finish builds the postings (the CSR transpose) and the per-name value
// lists, and checks the invariants that span both sections.
func (bi *BlockIndex) finish(tagSec, ttSec decbuf) error {
	ntags := len(bi.global)
	// Transpose: counting sort of (tag, series) by tag.
	start := make([]uint32, ntags+1)
	for _, c := range bi.ind {
		start[c+1]++
	}
	for t := 0; t < ntags; t++ {
		// Canonical order: use count non-increasing, ties by global code.
		if start[t+1] == 0 {
			return corruptf("", tagSec.section, tagSec.off, "tag %d is used by no series", t)
		}
		if t > 0 && (start[t+1] > start[t] || start[t+1] == start[t] && bi.global[t] <= bi.global[t-1]) {
			return corruptf("", tagSec.section, tagSec.off, "tag %d breaks the order by use count, then global code", t)
		}
	}
	for t := 0; t < ntags; t++ {
		start[t+1] += start[t]
	}
	ids := make([]uint32, len(bi.ind))
	fill := slices.Clone(start[:ntags])
	for s := 0; s < bi.numSeries; s++ {
		for _, c := range bi.ind[bi.ptr[s]:bi.ptr[s+1]] {
			ids[fill[c]] = uint32(s)
			fill[c]++
		}
	}
	bi.postings = make([]*roaring.Bitmap, ntags)
	for t := range bi.postings {
		p := roaring.New()
		p.AddMany(ids[start[t]:start[t+1]])
		p.RunOptimize()
		bi.postings[t] = p
	}
	bi.all = roaring.New()
	bi.all.AddRange(0, uint64(bi.numSeries))

	// Rows sorted by name, so Labels needs no sort; a name twice in a row is
	// damage (the builder never writes it).
	for s := 0; s < bi.numSeries; s++ {
		row := bi.ind[bi.ptr[s]:bi.ptr[s+1]]
		for i := 1; i < len(row); i++ {
			for j := i; j > 0 && bi.tags[row[j]].name < bi.tags[row[j-1]].name; j-- {
				row[j], row[j-1] = row[j-1], row[j]
			}
		}
		for i := 1; i < len(row); i++ {
			if bi.tags[row[i]].name == bi.tags[row[i-1]].name {
				return corruptf("", ttSec.section, ttSec.off, "series %d has label %q twice", s, bi.tags[row[i]].name)
			}
		}
	}

	bi.byName = map[string][]uint32{}
	for t, p := range bi.tags {
		bi.byName[p.name] = append(bi.byName[p.name], uint32(t))
	}
	bi.names = make([]string, 0, len(bi.byName))
	for name, codes := range bi.byName {
		bi.names = append(bi.names, name)
		slices.SortFunc(codes, func(x, y uint32) int { return strings.Compare(bi.tags[x].value, bi.tags[y].value) })
		for i := 1; i < len(codes); i++ {
			if bi.tags[codes[i]].value == bi.tags[codes[i-1]].value {
				return corruptf("", tagSec.section, tagSec.off, "tags %d and %d are both %s=%q", codes[i-1], codes[i], name, bi.tags[codes[i]].value)
			}
		}
	}
	slices.Sort(bi.names)
	return nil
}

// NumSeries returns the number of series of the block.
func (bi *BlockIndex) NumSeries() int { return bi.numSeries }

// Labels returns the labels of series id, built in b (which may be nil). It
// returns empty labels for an id out of range.
func (bi *BlockIndex) Labels(id uint32, b *labels.ScratchBuilder) labels.Labels {
	if b == nil {
		sb := labels.NewScratchBuilder(0)
		b = &sb
	}
	b.Reset()
	if uint64(id) < uint64(bi.numSeries) {
		for _, c := range bi.ind[bi.ptr[id]:bi.ptr[id+1]] {
			b.Add(bi.tags[c].name, bi.tags[c].value)
		}
	}
	return b.Labels()
}

// lookup returns the local code of name=value.
func (bi *BlockIndex) lookup(name, value string) (uint32, bool) {
	codes := bi.byName[name]
	i, ok := slices.BinarySearchFunc(codes, value, func(c uint32, v string) int { return strings.Compare(bi.tags[c].value, v) })
	if !ok {
		return 0, false
	}
	return codes[i], true
}

// AllPostings returns the ids of all series of the block.
func (bi *BlockIndex) AllPostings() *roaring.Bitmap { return bi.all.Clone() }

// Postings returns the series with label name set to any of values. The
// caller owns the result.
func (bi *BlockIndex) Postings(name string, values ...string) *roaring.Bitmap {
	var ps []*roaring.Bitmap
	for _, v := range values {
		if c, ok := bi.lookup(name, v); ok {
			ps = append(ps, bi.postings[c])
		}
	}
	return union(ps)
}

// PostingsForLabelMatching returns the series whose label name is set to a
// value for which match returns true. The caller owns the result.
func (bi *BlockIndex) PostingsForLabelMatching(name string, match func(value string) bool) *roaring.Bitmap {
	var ps []*roaring.Bitmap
	for _, c := range bi.byName[name] {
		if match(bi.tags[c].value) {
			ps = append(ps, bi.postings[c])
		}
	}
	return union(ps)
}

func union(ps []*roaring.Bitmap) *roaring.Bitmap {
	switch len(ps) {
	case 0:
		return roaring.New()
	case 1:
		return ps[0].Clone()
	}
	return roaring.FastOr(ps...)
}

// LabelNames returns the sorted label names of the series in ids, or of all
// series when ids is nil.
func (bi *BlockIndex) LabelNames(ids *roaring.Bitmap) []string {
	if ids == nil {
		return slices.Clone(bi.names)
	}
	var out []string
	n := ids.GetCardinality()
	if bi.numSeries > 0 && n*(uint64(len(bi.ind))/uint64(bi.numSeries)+1) < uint64(len(bi.tags)) {
		// Few series: read their rows.
		seen := map[string]struct{}{}
		it := ids.Iterator()
		for it.HasNext() {
			s := it.Next()
			if uint64(s) >= uint64(bi.numSeries) {
				break
			}
			for _, c := range bi.ind[bi.ptr[s]:bi.ptr[s+1]] {
				seen[bi.tags[c].name] = struct{}{}
			}
		}
		for name := range seen {
			out = append(out, name)
		}
		slices.Sort(out)
		return out
	}
	for _, name := range bi.names {
		for _, c := range bi.byName[name] {
			if bi.postings[c].Intersects(ids) {
				out = append(out, name)
				break
			}
		}
	}
	return out
}

// LabelValues returns the sorted values of label name among the series in
// ids, or among all series when ids is nil.
func (bi *BlockIndex) LabelValues(name string, ids *roaring.Bitmap) []string {
	var out []string
	for _, c := range bi.byName[name] {
		if ids == nil || bi.postings[c].Intersects(ids) {
			out = append(out, bi.tags[c].value)
		}
	}
	return out
}

// LabelValue returns series id's value of label name ("" if it has none)
// and whether id is a series of the block.
func (bi *BlockIndex) LabelValue(id uint32, name string) (string, bool) {
	if uint64(id) >= uint64(bi.numSeries) {
		return "", false
	}
	for _, c := range bi.ind[bi.ptr[id]:bi.ptr[id+1]] {
		if bi.tags[c].name == name {
			return bi.tags[c].value, true
		}
	}
	return "", true
}

// MemoryBytes estimates the heap the decoded index holds: its code
// arrays, tag pairs (the strings are the TagDict's), postings bitmaps and
// name map. Bounds on remote blocks' metadata (package tsdb) count it.
func (bi *BlockIndex) MemoryBytes() int64 {
	n := int64(len(bi.global)+len(bi.ptr)+len(bi.ind))*4 + int64(len(bi.tags))*32 + int64(len(bi.postings))*8
	for _, p := range bi.postings {
		n += int64(p.GetSizeInBytes()) + 48
	}
	if bi.all != nil {
		n += int64(bi.all.GetSizeInBytes())
	}
	for _, c := range bi.byName {
		n += int64(len(c))*4 + 64
	}
	return n + int64(len(bi.names))*16
}
