package index

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/aerie-db/aerie/internal/fileutil"
)

// Format constants of the tagdict file (docs/format/tagdict.md).
const (
	// TagDictMagic opens every tagdict file ("TAGD").
	TagDictMagic uint32 = 0x54414744
	// TagDictVersion is the only tagdict format version this code writes and reads.
	TagDictVersion uint8 = 1
)

const (
	tagDictHeaderSize = 5 // magic <4b> version <1b>
	frameHeaderSize   = 8 // len <4b> crc32c(len) <4b>
	frameTrailerSize  = 4 // crc32c(payload) <4b>
)

// maxRecordPayload bounds one record so a huge Sync never needs a length
// above 32 bits; a Sync writes as many records as it needs. A variable so
// tests can make it small.
var maxRecordPayload = 64 << 20

type pair struct{ name, value string }

// nameValues holds the values of one label name.
type nameValues struct {
	codes map[string]uint32 // value → global code
	// sorted lists the codes of this name ordered by value when unsorted is
	// false; Add appends and sets unsorted when the new value is out of
	// order, ValueCodes re-sorts lazily (O(n log n) once instead of O(n) per
	// insertion for high-cardinality names).
	sorted   []uint32
	unsorted bool
}

// TagDict is the global, append-only dictionary of label pairs. See doc.go
// for the design and invariants.
//
// Lock order: syncMu before mu. mu is never held across file I/O, so lookups
// do not wait for an fsync.
type TagDict struct {
	path string

	syncMu sync.Mutex // serializes Sync and Close; guards the following
	f      *os.File   // nil after Close
	size   int64      // length of the valid, durable file prefix
	werr   error      // sticky: a failed write that could not be undone
	buf    []byte     // record encoding buffer
	torn   int64      // bytes of torn tail cut off by OpenTagDict; immutable

	mu     sync.RWMutex // guards the following
	pairs  []pair       // global code → pair; append-only
	byName map[string]*nameValues
	names  []string // keys of byName, sorted
	synced int      // pairs[:synced] are in the file
}

func newTagDict(path string) *TagDict {
	return &TagDict{path: path, byName: map[string]*nameValues{}}
}

// OpenTagDict opens the tagdict file at path, creating it if it does not
// exist, and replays it into memory. A torn last record (cut short, or with a
// bad checksum and nothing after it, or an all-zero tail) is truncated away;
// damage anywhere before it is returned as a *CorruptionError naming the file
// and offset.
func OpenTagDict(path string) (*TagDict, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		if err := fileutil.WriteFileAtomic(path, appendTagDictHeader(nil)); err != nil {
			return nil, fmt.Errorf("create tagdict: %w", err)
		}
		f, err = os.OpenFile(path, os.O_RDWR, 0)
	}
	if err != nil {
		return nil, fmt.Errorf("open tagdict: %w", err)
	}
	d, err := openTagDictFile(path, f)
	if err != nil {
		f.Close()
		return nil, err
	}
	return d, nil
}

func openTagDictFile(path string, f *os.File) (*TagDict, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("open tagdict: %w", err)
	}
	data := make([]byte, st.Size())
	if _, err := f.ReadAt(data, 0); err != nil && len(data) > 0 {
		return nil, fmt.Errorf("read tagdict %s: %w", path, err)
	}
	d := newTagDict(path)
	valid, err := d.replay(data)
	if err != nil {
		return nil, err
	}
	if valid < len(data) {
		if err := f.Truncate(int64(valid)); err != nil {
			return nil, fmt.Errorf("truncate torn tail of %s at offset %d: %w", path, valid, err)
		}
		if err := f.Sync(); err != nil {
			return nil, fmt.Errorf("sync %s: %w", path, err)
		}
	}
	d.f = f
	d.size = int64(valid)
	d.torn = int64(len(data) - valid)
	d.synced = len(d.pairs)
	return d, nil
}

func appendTagDictHeader(dst []byte) []byte {
	dst = binary.BigEndian.AppendUint32(dst, TagDictMagic)
	return append(dst, TagDictVersion)
}

// replay decodes data into d and returns the length of its valid prefix.
func (d *TagDict) replay(data []byte) (int, error) {
	if len(data) < tagDictHeaderSize {
		return 0, corruptf(d.path, "header", 0, "file is %d bytes, shorter than the %d-byte header", len(data), tagDictHeaderSize)
	}
	if m := binary.BigEndian.Uint32(data); m != TagDictMagic {
		return 0, corruptf(d.path, "header", 0, "bad magic %#08x, want %#08x", m, TagDictMagic)
	}
	switch v := data[4]; v {
	case TagDictVersion:
	default:
		return 0, corruptf(d.path, "header", 4, "unsupported tagdict version %d", v)
	}
	off := tagDictHeaderSize
	for off < len(data) {
		rest := data[off:]
		if len(rest) < frameHeaderSize {
			return off, nil // torn: partial frame header
		}
		n := binary.BigEndian.Uint32(rest)
		if checksum(rest[:4]) != binary.BigEndian.Uint32(rest[4:]) {
			if allZero(rest) || isLastRecord(rest) {
				return off, nil // torn: zero-filled tail, or a bad header on the last record
			}
			return 0, corruptf(d.path, "record", off, "frame header checksum mismatch")
		}
		end := uint64(frameHeaderSize) + uint64(n) + frameTrailerSize
		if end > uint64(len(rest)) {
			return off, nil // torn: record cut short
		}
		payload := rest[frameHeaderSize : frameHeaderSize+int(n)]
		if checksum(payload) != binary.BigEndian.Uint32(rest[frameHeaderSize+int(n):]) {
			if end == uint64(len(rest)) {
				return off, nil // torn: bad last record
			}
			return 0, corruptf(d.path, "record", off, "payload checksum mismatch")
		}
		if err := d.decodeRecord(data, off+frameHeaderSize, off+frameHeaderSize+int(n)); err != nil {
			return 0, err
		}
		off += int(end)
	}
	return off, nil
}

// isLastRecord reports whether rest, whose frame header is damaged, is
// exactly one record with an intact payload: then the damage is in the last
// record, which the tail rule covers, and nothing valid follows it.
func isLastRecord(rest []byte) bool {
	n := len(rest) - frameHeaderSize - frameTrailerSize
	if n < 0 {
		return false
	}
	return checksum(rest[frameHeaderSize:frameHeaderSize+n]) == binary.BigEndian.Uint32(rest[frameHeaderSize+n:])
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// decodeRecord adds the pairs of the record payload data[start:end].
func (d *TagDict) decodeRecord(data []byte, start, end int) error {
	db := decbuf{b: data, off: start, end: end, file: d.path, section: "record"}
	at := db.off
	first := db.uvarint()
	if db.err == nil && first != uint64(len(d.pairs)) {
		db.fail(at, "record starts at code %d, want %d", first, len(d.pairs))
	}
	at = db.off
	count := db.uvarint()
	// Every pair takes at least two bytes, which bounds count before any
	// allocation.
	if db.err == nil && count > uint64(db.remaining())/2 {
		db.fail(at, "count %d exceeds what %d bytes can hold", count, db.remaining())
	}
	for i := uint64(0); i < count && db.err == nil; i++ {
		at = db.off
		name := db.uvarintString()
		value := db.uvarintString()
		if db.err != nil {
			break
		}
		if _, dup := d.codeLocked(name, value); dup {
			db.fail(at, "duplicate pair %s=%q", name, value)
			break
		}
		if len(d.pairs) == math.MaxUint32 {
			db.fail(at, "more than %d pairs", uint32(math.MaxUint32))
			break
		}
		d.addLocked(name, value)
	}
	db.finish("record")
	return db.err
}

// TornBytes returns how many bytes of a torn last record OpenTagDict cut
// off the file, so the engine can log the repair. The pairs in them were
// never synced, so no block references them.
func (d *TagDict) TornBytes() int64 { return d.torn }

// Code returns the global code of name=value.
func (d *TagDict) Code(name, value string) (uint32, bool) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.codeLocked(name, value)
}

func (d *TagDict) codeLocked(name, value string) (uint32, bool) {
	nv := d.byName[name]
	if nv == nil {
		return 0, false
	}
	c, ok := nv.codes[value]
	return c, ok
}

// Add returns the global code of name=value, assigning the next free code if
// the pair is new. New pairs live in memory until Sync.
func (d *TagDict) Add(name, value string) uint32 {
	if c, ok := d.Code(name, value); ok {
		return c
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if c, ok := d.codeLocked(name, value); ok {
		return c
	}
	if len(d.pairs) == math.MaxUint32 {
		panic("index: tagdict holds 2^32-1 pairs")
	}
	// Copies, so the dictionary does not pin the caller's buffers (labels
	// strings are often substrings of a larger one).
	return d.addLocked(strings.Clone(name), strings.Clone(value))
}

func (d *TagDict) addLocked(name, value string) uint32 {
	code := uint32(len(d.pairs))
	nv := d.byName[name]
	if nv == nil {
		nv = &nameValues{codes: map[string]uint32{}}
		d.byName[name] = nv
		i, _ := slices.BinarySearch(d.names, name)
		d.names = slices.Insert(d.names, i, name)
	} else {
		name = d.pairs[nv.sorted[0]].name // share one copy of the name
	}
	if k := len(nv.sorted); k > 0 && !nv.unsorted && d.pairs[nv.sorted[k-1]].value > value {
		nv.unsorted = true
	}
	nv.codes[value] = code
	nv.sorted = append(nv.sorted, code)
	d.pairs = append(d.pairs, pair{name, value})
	return code
}

// Pair returns the label pair of a global code.
func (d *TagDict) Pair(code uint32) (name, value string, ok bool) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if uint64(code) >= uint64(len(d.pairs)) {
		return "", "", false
	}
	p := d.pairs[code]
	return p.name, p.value, true
}

// resolve looks up many codes under one lock. It returns the index of the
// first unknown code, or -1.
func (d *TagDict) resolve(codes []uint32, dst []pair) ([]pair, int) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	for i, c := range codes {
		if uint64(c) >= uint64(len(d.pairs)) {
			return dst, i
		}
		dst = append(dst, d.pairs[c])
	}
	return dst, -1
}

// Len returns the number of pairs, synced or not.
func (d *TagDict) Len() int {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return len(d.pairs)
}

// Names returns the label names of the dictionary, sorted.
func (d *TagDict) Names() []string {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return slices.Clone(d.names)
}

// ValueCodes returns the codes of the pairs with the given name, sorted by
// value.
func (d *TagDict) ValueCodes(name string) []uint32 {
	d.mu.RLock()
	nv := d.byName[name]
	if nv == nil {
		d.mu.RUnlock()
		return nil
	}
	if !nv.unsorted {
		defer d.mu.RUnlock()
		return slices.Clone(nv.sorted)
	}
	d.mu.RUnlock()

	d.mu.Lock()
	defer d.mu.Unlock()
	if nv.unsorted {
		slices.SortFunc(nv.sorted, func(a, b uint32) int { return strings.Compare(d.pairs[a].value, d.pairs[b].value) })
		nv.unsorted = false
	}
	return slices.Clone(nv.sorted)
}

// Sync appends every pair added since the last Sync to the file and fsyncs
// it. Once Sync returns nil, the codes of those pairs survive a crash. A
// failed write is cut off the file so a later Sync can retry; a failed fsync
// is sticky (the kernel may have dropped the dirty pages), and every later
// Sync returns it.
func (d *TagDict) Sync() error {
	d.syncMu.Lock()
	defer d.syncMu.Unlock()
	if d.f == nil {
		return ErrClosed
	}
	if d.werr != nil {
		return d.werr
	}

	d.mu.RLock()
	start, n := d.synced, len(d.pairs)
	buf := d.buf[:0]
	for i := start; i < n; {
		buf, i = appendRecord(buf, d.pairs, i, n)
	}
	d.mu.RUnlock()
	d.buf = buf
	if start == n {
		return nil
	}

	if _, err := d.f.WriteAt(buf, d.size); err != nil {
		err = fmt.Errorf("write %s: %w", d.path, err)
		if terr := d.f.Truncate(d.size); terr != nil {
			d.werr = fmt.Errorf("%w; undo: %w", err, terr)
		}
		return err
	}
	if err := d.f.Sync(); err != nil {
		d.werr = fmt.Errorf("sync %s: %w", d.path, err)
		return d.werr
	}
	d.size += int64(len(buf))

	d.mu.Lock()
	d.synced = n
	d.mu.Unlock()
	return nil
}

// appendRecord appends one framed record holding pairs[i:n], or as many of
// them as fit in maxRecordPayload (at least one), and returns where it stopped.
func appendRecord(dst []byte, pairs []pair, i, n int) ([]byte, int) {
	j, size := i, 0
	for ; j < n; j++ {
		ps := uvarintSize(len(pairs[j].name)) + len(pairs[j].name) +
			uvarintSize(len(pairs[j].value)) + len(pairs[j].value)
		if j > i && size+ps > maxRecordPayload {
			break
		}
		size += ps
	}
	start := len(dst)
	dst = append(dst, make([]byte, frameHeaderSize)...)
	payload := len(dst)
	dst = binary.AppendUvarint(dst, uint64(i))
	dst = binary.AppendUvarint(dst, uint64(j-i))
	for _, p := range pairs[i:j] {
		dst = binary.AppendUvarint(dst, uint64(len(p.name)))
		dst = append(dst, p.name...)
		dst = binary.AppendUvarint(dst, uint64(len(p.value)))
		dst = append(dst, p.value...)
	}
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-payload))
	binary.BigEndian.PutUint32(dst[start+4:], checksum(dst[start:start+4]))
	dst = binary.BigEndian.AppendUint32(dst, checksum(dst[payload:]))
	return dst, j
}

func uvarintSize(x int) int {
	n := 1
	for ; x >= 0x80; x >>= 7 {
		n++
	}
	return n
}

// Close syncs pending pairs and closes the file. The in-memory dictionary
// stays readable.
func (d *TagDict) Close() error {
	err := d.Sync()
	if errors.Is(err, ErrClosed) {
		return nil
	}
	d.syncMu.Lock()
	defer d.syncMu.Unlock()
	if d.f == nil {
		return err
	}
	cerr := d.f.Close()
	d.f = nil
	return errors.Join(err, cerr)
}
