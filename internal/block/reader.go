package block

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/aerie-db/aerie/internal/checksum"
	"github.com/aerie-db/aerie/internal/encoding"
	"github.com/aerie-db/aerie/internal/index"
	"github.com/aerie-db/aerie/internal/seriesiter"
)

// ReaderOptions configure Open.
type ReaderOptions struct {
	// WrapData, if set, wraps the data file's reader (tests count reads).
	WrapData func(io.ReaderAt) io.ReaderAt
}

type colInfo struct {
	series uint32
	meta   *encoding.ColumnMeta // index versions 1 and 2 (data version 1); nil after
	ch     chunkMeta            // index versions 3, 4 (data versions 2, 3): ch.ends != nil
	off    int64                // absolute offset of the column's data
}

func (c *colInfo) dataLen() int64 {
	if c.ch.ends != nil {
		return c.ch.dataLen()
	}
	return c.meta.DataLen()
}

// sparse reports whether some row of the column may be absent.
func (c *colInfo) sparse() bool {
	if c.ch.ends != nil {
		return c.ch.sparse
	}
	return c.meta.Flags&encoding.ColumnSparse != 0
}

type groupInfo struct {
	off, tsLen int64
	rows       int
	minT, maxT int64
	crc        uint32
	cols       []colInfo
}

// Reader is an open block. It is safe for concurrent use; it is
// reference-counted so a block being deleted waits for its readers.
type Reader struct {
	dir    string
	meta   Meta
	bi     *index.BlockIndex
	groups []groupInfo
	// locs are the series' locations, series id's at
	// locs[locOff[id]:locOff[id+1]] (seriesLocs).
	locs    []loc
	locOff  []uint32
	version uint8 // of the index file
	// msec is the metrics section opened with the index; nil for a
	// remote block whose index was cut by SplitIndex, whose section mload
	// gives when it is needed. mLen and mCRC are the section's length and
	// CRC32C from the index footer.
	msec  *MetricsSection
	mload MetricsLoader
	mLen  int64
	mCRC  uint32
	f     *os.File
	data  io.ReaderAt
	size  int64
	// mm is the data file mapped read-only (invariant 11), nil for a
	// remote block, with ReaderOptions.WrapData, or where mapping failed:
	// then reads go through data. Slices of it live in selections and
	// their column sources, which keep r reachable; the mapping is
	// released by a cleanup once r is unreachable, never by Close.
	mm []byte

	reads atomic.Int64 // data reads by selections (DataReads)

	// unloaded marks a stand-in (Unloaded): meta only, never acquired.
	unloaded bool

	refs    atomic.Int64
	closeMu sync.Mutex // guards closed
	closed  bool
}

// Open opens the block in dir and verifies every checksum.
func Open(dir string, dict *index.TagDict, opts ReaderOptions) (*Reader, error) {
	r := &Reader{dir: dir}
	mb, err := os.ReadFile(filepath.Join(dir, MetaFilename))
	if err != nil {
		return nil, err
	}
	if err := decodeMeta(mb, &r.meta); err != nil {
		return nil, &CorruptionError{File: filepath.Join(dir, MetaFilename), Offset: 0, Err: err}
	}
	ipath := filepath.Join(dir, IndexFilename)
	ib, err := os.ReadFile(ipath)
	if err != nil {
		return nil, err
	}
	if err := r.decodeIndexFile(ib, dict, ipath, false); err != nil {
		return nil, err
	}
	dpath := filepath.Join(dir, DataFilename)
	f, err := os.Open(dpath)
	if err != nil {
		return nil, err
	}
	r.f = f
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	r.size = st.Size()
	if err := r.verifyData(dpath); err != nil {
		f.Close()
		return nil, err
	}
	r.data = f
	if opts.WrapData != nil {
		r.data = opts.WrapData(f)
	} else if mm, err := mapFile(f, r.size); err == nil && mm != nil {
		// Mapped after verifyData, which reads through the file, so that
		// opening a block does not fault every page into the process.
		r.mm = mm
		runtime.AddCleanup(r, unmapFile, mm)
	}
	r.refs.Store(1)
	return r, nil
}

// decodeIndexFile decodes the index file ipath (b) into r; any failure is
// a *CorruptionError naming ipath.
func (r *Reader) decodeIndexFile(b []byte, dict *index.TagDict, ipath string, cut bool) error {
	err := r.decodeIndex(b, dict, ipath, cut)
	if err == nil {
		return nil
	}
	var ce *CorruptionError
	if errors.As(err, &ce) {
		ce.File = ipath
		return ce
	}
	var ic *index.CorruptionError
	if errors.As(err, &ic) {
		return &CorruptionError{File: ipath, Offset: ic.Offset, Err: err}
	}
	return &CorruptionError{File: ipath, Err: err}
}

func decodeMeta(b []byte, m *Meta) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(m); err != nil {
		return err
	}
	if m.Magic != MetaMagic {
		return fmt.Errorf("bad magic %q", m.Magic)
	}
	if m.Version != MetaVersion {
		return fmt.Errorf("unsupported meta version %d", m.Version)
	}
	field := []byte(metaCRCField + `"` + m.CRC32C + `"`)
	i := bytes.Index(b, field)
	if i < 0 || len(m.CRC32C) != 8 {
		return fmt.Errorf("checksum field missing or malformed")
	}
	blank := append(append(append([]byte(nil), b[:i]...), metaCRCField+`""`...), b[i+len(field):]...)
	if got := fmt.Sprintf("%08x", crc(blank)); got != m.CRC32C {
		return fmt.Errorf("checksum mismatch: stored %s, computed %s", m.CRC32C, got)
	}
	if m.TupleSize <= 0 || m.TupleSize > seriesiter.MaxRows || m.BlockTuples <= 0 || m.MetricInterval <= 0 || m.MaxTime <= m.MinTime {
		return fmt.Errorf("invalid parameters")
	}
	return nil
}

// verifyData checks the data header and every extent's CRC32C, reading the
// file once sequentially.
func (r *Reader) verifyData(path string) error {
	br := bufio.NewReaderSize(io.NewSectionReader(r.f, 0, r.size), 1<<20)
	hdr := make([]byte, HeaderLen)
	if _, err := io.ReadFull(br, hdr); err != nil {
		return &CorruptionError{File: path, Offset: 0, Err: fmt.Errorf("short header: %w", err)}
	}
	if binary.BigEndian.Uint32(hdr) != DataMagic {
		return &CorruptionError{File: path, Offset: 0, Err: fmt.Errorf("bad magic %#x", binary.BigEndian.Uint32(hdr))}
	}
	if hdr[4] != r.dataVersion() {
		return &CorruptionError{File: path, Offset: 4, Err: fmt.Errorf("data version %d, index version %d wants %d", hdr[4], r.version, r.dataVersion())}
	}
	if hdr[5]|hdr[6]|hdr[7] != 0 {
		return &CorruptionError{File: path, Offset: 5, Err: fmt.Errorf("reserved header bytes not zero")}
	}
	pos := int64(HeaderLen)
	for i, g := range r.groups {
		if g.off != pos {
			return &CorruptionError{File: path, Offset: pos, Err: fmt.Errorf("group %d extent starts at %d, index says %d", i, pos, g.off)}
		}
		end := g.off + g.tsLen
		for _, c := range g.cols {
			end += c.dataLen()
		}
		h := checksum.New()
		if _, err := io.CopyN(h, br, end-g.off); err != nil {
			return &CorruptionError{File: path, Offset: pos, Err: fmt.Errorf("group %d extent truncated: %w", i, err)}
		}
		if h.Sum32() != g.crc {
			return &CorruptionError{File: path, Offset: g.off, Err: fmt.Errorf("group %d extent [%d, %d): checksum mismatch", i, g.off, end)}
		}
		pos = end
	}
	if pos != r.size {
		return &CorruptionError{File: path, Offset: pos, Err: fmt.Errorf("%d trailing bytes", r.size-pos)}
	}
	return nil
}

// decodeIndex decodes index file b (named file in errors); cut: without
// its metrics section (SplitIndex), which starts where the footer now is.
func (r *Reader) decodeIndex(b []byte, dict *index.TagDict, file string, cut bool) error {
	if len(b) < HeaderLen+FooterLen {
		return &CorruptionError{Offset: 0, Err: fmt.Errorf("index too short: %d bytes", len(b))}
	}
	if binary.BigEndian.Uint32(b) != IndexMagic {
		return &CorruptionError{Offset: 0, Err: fmt.Errorf("bad magic %#x", binary.BigEndian.Uint32(b))}
	}
	switch b[4] {
	case 1, 2, 3, IndexVersion:
		r.version = b[4]
	default:
		return &CorruptionError{Offset: 4, Err: fmt.Errorf("unsupported index version %d (this code reads 1 to %d)", b[4], IndexVersion)}
	}
	if b[5]|b[6]|b[7] != 0 {
		return &CorruptionError{Offset: 5, Err: fmt.Errorf("reserved header bytes not zero")}
	}
	fstart := len(b) - FooterLen
	if binary.BigEndian.Uint32(b[len(b)-4:]) != IndexMagic {
		return &CorruptionError{Offset: int64(len(b) - 4), Err: fmt.Errorf("bad trailing magic")}
	}
	fcrc := binary.LittleEndian.Uint32(b[len(b)-8:])
	if crc(b[fstart:len(b)-8]) != fcrc {
		return &CorruptionError{Offset: int64(fstart), Err: fmt.Errorf("footer checksum mismatch")}
	}
	var secs [numSections][]byte
	var at [numSections]int
	for s := 0; s < numSections; s++ {
		p := fstart + s*20
		off := binary.LittleEndian.Uint64(b[p:])
		ln := binary.LittleEndian.Uint64(b[p+8:])
		want := binary.LittleEndian.Uint32(b[p+16:])
		if s == SectionMetrics {
			r.mLen, r.mCRC = int64(ln), want
			if cut {
				if off != uint64(fstart) || ln == 0 || ln > math.MaxInt64 {
					return &CorruptionError{Offset: int64(p), Err: fmt.Errorf("section %s [%d, +%d) was not cut at the footer (%d)", sectionNames[s], off, ln, fstart)}
				}
				continue
			}
		}
		if off < HeaderLen || off > uint64(fstart) || ln > uint64(fstart)-off {
			return &CorruptionError{Offset: int64(p), Err: fmt.Errorf("section %s out of bounds", sectionNames[s])}
		}
		secs[s] = b[off : off+ln]
		at[s] = int(off)
		if crc(secs[s]) != want {
			return &CorruptionError{Offset: int64(off), Err: fmt.Errorf("section %s [%d, %d): checksum mismatch", sectionNames[s], off, off+ln)}
		}
	}
	bi, err := index.DecodeBlockIndex(secs[SectionTags], dict)
	if err != nil {
		var ic *index.CorruptionError
		if errors.As(err, &ic) {
			return &CorruptionError{Offset: int64(at[SectionTags]) + ic.Offset, Err: err}
		}
		return &CorruptionError{Offset: int64(at[SectionTags]), Err: err}
	}
	r.bi = bi
	ns := bi.NumSeries()

	d := &decbuf{b: secs[SectionGroups], what: "section groups", at: at[SectionGroups]}
	ng := d.count(8)
	r.groups = make([]groupInfo, 0, ng)
	for i := 0; i < ng && d.err == nil; i++ {
		g := groupInfo{off: int64(d.uvarint()), tsLen: int64(d.uvarint()), rows: int(d.uvarint())}
		g.minT = d.varint()
		g.maxT = g.minT + d.varint()
		g.crc = d.u32()
		nc := d.count(3)
		pos := g.off + g.tsLen
		var arena []uint32 // the group's chunk ends, one allocation
		if r.version >= 3 && d.err == nil && g.rows > 0 && g.rows <= encoding.MaxRows {
			// Each chunk length takes a byte at least: a damaged count
			// cannot make this allocation larger than the section.
			if n := nc * numChunks(g.rows); n <= len(d.b)-d.pos {
				arena = make([]uint32, n)
			}
		}
		for j := 0; j < nc && d.err == nil; j++ {
			c := colInfo{series: uint32(d.uvarint())}
			if d.err != nil {
				break
			}
			if r.version >= 3 {
				if int(c.series) >= ns {
					d.fail("column of group %d inconsistent", i)
					break
				}
				c.ch, c.off = d.chunkMeta(g.rows, &arena), pos
				pos += c.dataLen()
				g.cols = append(g.cols, c)
				continue
			}
			m, n, err := encoding.DecodeColumnMeta(d.b[d.pos:])
			if err != nil {
				d.fail("column meta: %w", err)
				break
			}
			d.pos += n
			if int(c.series) >= ns || int(m.Rows) != g.rows || m.TupleSize != uint8(r.meta.TupleSize) {
				d.fail("column of group %d inconsistent", i)
				break
			}
			m.Index()
			c.meta, c.off = &m, pos
			pos += m.DataLen()
			g.cols = append(g.cols, c)
		}
		r.groups = append(r.groups, g)
	}
	if d.err != nil {
		return d.err
	}

	d = &decbuf{b: secs[SectionSeries], what: "section series", at: at[SectionSeries]}
	if n := d.count(1); d.err == nil && n != ns {
		return &CorruptionError{Offset: int64(d.at), Err: fmt.Errorf("section series: %d series, tags section has %d", n, ns)}
	}
	r.locOff = make([]uint32, ns+1)
	r.locs = make([]loc, 0, ns)
	for i := 0; i < ns && d.err == nil; i++ {
		nl := d.count(2)
		for j := 0; j < nl && d.err == nil; j++ {
			l := loc{group: uint32(d.uvarint()), col: uint32(d.uvarint())}
			if d.err == nil && (int(l.group) >= len(r.groups) || int(l.col) >= len(r.groups[l.group].cols)) {
				d.fail("location out of range")
			}
			r.locs = append(r.locs, l)
		}
		r.locOff[i+1] = uint32(len(r.locs))
	}
	if d.err != nil {
		return d.err
	}

	if cut {
		return nil
	}
	r.msec, err = r.parseMetrics(secs[SectionMetrics], file, int64(at[SectionMetrics]))
	return err
}

// dataVersion is the data file version that goes with the index's.
func (r *Reader) dataVersion() uint8 {
	switch {
	case r.version >= 4:
		return 3
	case r.version == 3:
		return 2
	}
	return 1
}

// Meta returns the block's meta.json content.
func (r *Reader) Meta() Meta { return r.meta }

// Dir returns the block's directory.
func (r *Reader) Dir() string { return r.dir }

// Index returns the block's label index.
func (r *Reader) Index() *index.BlockIndex { return r.bi }

// Acquire takes a reference; it returns false if the block is closed.
func (r *Reader) Acquire() bool {
	if r.unloaded {
		return false
	}
	for {
		n := r.refs.Load()
		if n <= 0 {
			return false
		}
		if r.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// Release drops a reference; the last one closes the file.
func (r *Reader) Release() {
	n := r.refs.Add(-1)
	if n < 0 {
		panic("block: negative reference count")
	}
	if n == 0 && r.f != nil {
		r.f.Close()
	}
}

// Close drops the opener's reference.
func (r *Reader) Close() error {
	r.closeMu.Lock()
	defer r.closeMu.Unlock()
	if r.closed {
		return nil
	}
	r.closed = true
	r.Release()
	return nil
}

// Series is a series of a block selection.
type Series struct {
	ID     uint32
	Labels labels.Labels
	q      *Selection
}

// Selection is the result of Select: the series and a per-selection cache
// of the timestamp columns read so far (one read per group).
type Selection struct {
	r          *Reader
	mint, maxt int64
	Series     []Series
	mu         sync.Mutex
	ts         map[uint32]*encoding.ScaledTimestamps

	preMu  sync.Mutex // guards pre and preErr; taken before mu
	pre    io.ReaderAt
	preErr error

	tsMu   sync.Mutex // guards tsPre, tsErr, tsDone and whole; taken after mu and preMu
	tsPre  io.ReaderAt
	tsErr  error
	tsDone bool
	// whole are the groups whose value columns prefetchTimestamps fetched
	// whole, with their timestamps, in one round (fetchWhole).
	whole map[uint32]bool
}

// DataReads returns how many reads of the data file (or of a remote
// block's data) selections of r have made: index-only operations, such as
// value search from block metrics, must leave it unchanged.
func (r *Reader) DataReads() int64 { return r.reads.Load() }

// Select returns the series matching ms with locations overlapping
// [mint, maxt]. Data are read lazily by the iterators.
func (r *Reader) Select(mint, maxt int64, ms ...*labels.Matcher) (*Selection, error) {
	ids, err := index.Select(r.bi, ms...)
	if err != nil {
		return nil, err
	}
	q := &Selection{r: r, mint: mint, maxt: maxt, ts: map[uint32]*encoding.ScaledTimestamps{}}
	if maxt < r.meta.MinTime || mint >= r.meta.MaxTime {
		return q, nil
	}
	var sb labels.ScratchBuilder
	it := ids.Iterator()
	for it.HasNext() {
		id := it.Next()
		overlap := false
		for _, l := range r.seriesLocs(id) {
			g := &r.groups[l.group]
			if g.minT <= maxt && g.maxT >= mint {
				overlap = true
			}
		}
		if !overlap {
			continue
		}
		q.Series = append(q.Series, Series{ID: id, Labels: r.bi.Labels(id, &sb), q: q})
	}
	return q, nil
}

// SelectIDs returns the series of the given local ids (those of Index) as
// a selection over [mint, maxt], without matching labels: Series[i] is
// ids[i], whether or not it has samples in the range. Compaction walks a
// block this way, a few series at a time, so the timestamp columns it
// caches are those of the groups it is merging. Data are read lazily.
func (r *Reader) SelectIDs(mint, maxt int64, ids []uint32) (*Selection, error) {
	q := &Selection{r: r, mint: mint, maxt: maxt, ts: map[uint32]*encoding.ScaledTimestamps{}, Series: make([]Series, len(ids))}
	var sb labels.ScratchBuilder
	for i, id := range ids {
		if int(id) >= r.numSeries() {
			return nil, fmt.Errorf("block %s: series %d out of range [0, %d)", r.dir, id, r.numSeries())
		}
		q.Series[i] = Series{ID: id, Labels: r.bi.Labels(id, &sb), q: q}
	}
	return q, nil
}

func (q *Selection) timestamps(gi uint32) (*encoding.ScaledTimestamps, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if ts, ok := q.ts[gi]; ok {
		return ts, nil
	}
	g := &q.r.groups[gi]
	q.r.reads.Add(1)
	var buf []byte
	if mm := q.r.mm; mm != nil {
		buf = mm[g.off : g.off+g.tsLen : g.off+g.tsLen]
	} else {
		buf = make([]byte, g.tsLen)
		if err := q.readData(buf, g.off, false); err != nil {
			return nil, fmt.Errorf("block %s: read timestamps of group %d: %w", q.r.dir, gi, err)
		}
	}
	ts, _, err := encoding.ParseScaledTimestamps(buf)
	if err != nil {
		return nil, &CorruptionError{File: filepath.Join(q.r.dir, DataFilename), Offset: g.off, Err: err}
	}
	if ts.Len() != g.rows {
		return nil, &CorruptionError{File: filepath.Join(q.r.dir, DataFilename), Offset: g.off, Err: fmt.Errorf("%d timestamps, index says %d rows", ts.Len(), g.rows)}
	}
	q.ts[gi] = &ts
	return &ts, nil
}

// Iterator returns an iterator over the series' samples in the selection's
// range. A series with several locations (it moved groups) merges them.
func (s *Series) Iterator(it chunkenc.Iterator) chunkenc.Iterator {
	locs := s.q.r.seriesLocs(s.ID)
	if len(locs) == 1 {
		src, err := s.q.source(locs[0])
		if err != nil {
			return &errIterator{err: err}
		}
		return seriesiter.NewIterator(it, src, nil, s.q.mint, s.q.maxt)
	}
	its := make([]chunkenc.Iterator, 0, len(locs))
	for _, l := range locs {
		src, err := s.q.source(l)
		if err != nil {
			return &errIterator{err: err}
		}
		its = append(its, seriesiter.NewIterator(nil, src, nil, s.q.mint, s.q.maxt))
	}
	return seriesiter.Merge(its...)
}

// AppendRange appends the series' samples in [mint, maxt] and in the
// selection's range to ts and vs, in time order and as its Iterator gives
// them (stale markers and other NaNs included), for a caller that wants
// them all: a series in one version 2 or 3 column is decoded a whole
// chunk at a time straight into the arrays, without the tuple iterator;
// any other goes through its Iterator.
func (s *Series) AppendRange(ts []int64, vs []float64, mint, maxt int64) ([]int64, []float64, error) {
	mint, maxt = max(mint, s.q.mint), min(maxt, s.q.maxt)
	if mint > maxt {
		return ts, vs, nil
	}
	if locs := s.q.r.seriesLocs(s.ID); len(locs) == 1 {
		src, err := s.q.source(locs[0])
		if err != nil {
			return ts, vs, err
		}
		if src.ch != nil {
			return src.appendRange(ts, vs, mint, maxt)
		}
	}
	it := s.Iterator(nil)
	if it.Seek(mint) != chunkenc.ValFloat {
		return ts, vs, it.Err()
	}
	for t, v := it.At(); t <= maxt; t, v = it.At() {
		ts, vs = append(ts, t), append(vs, v)
		if it.Next() != chunkenc.ValFloat {
			break
		}
	}
	return ts, vs, it.Err()
}

// SurelyHasSample reports, from the index alone, that the series has a
// sample in the selection's range: one of its columns holds every row of
// its group (not ColumnSparse) and the group's first or last row lies in
// the range. false means only that the data must be read to tell.
func (s *Series) SurelyHasSample() bool {
	q := s.q
	for _, l := range q.r.seriesLocs(s.ID) {
		g := &q.r.groups[l.group]
		if g.rows == 0 || g.cols[l.col].sparse() {
			continue
		}
		if (g.minT >= q.mint && g.minT <= q.maxt) || (g.maxT >= q.mint && g.maxT <= q.maxt) {
			return true
		}
	}
	return false
}

// source reads the byte range of the column covering the selection.
func (q *Selection) source(l loc) (*colSource, error) {
	src, off, end, err := q.span(l)
	if err != nil {
		return nil, err
	}
	if q.r.mm != nil {
		src.pin = q.r
	}
	if src.n == 0 {
		return src, nil
	}
	c := &q.r.groups[l.group].cols[l.col]
	switch mm := q.r.mm; {
	case end <= off:
	case mm != nil:
		q.r.reads.Add(1)
		src.buf = mm[c.off+off : c.off+end : c.off+end]
	default:
		src.buf = make([]byte, end-off)
		if err := q.read(src.buf, c.off+off); err != nil {
			return nil, fmt.Errorf("block %s: read column: %w", q.r.dir, err)
		}
	}
	src.off0 = off
	src.dir = q.r.dir
	src.fileOff = c.off
	return src, nil
}

// span returns the source of location l, without its bytes, and the byte
// range of its column (from the column's start) holding the tuples of the
// selection's time range; src.n is 0 when it has none.
func (q *Selection) span(l loc) (src *colSource, off, end int64, err error) {
	g := &q.r.groups[l.group]
	c := &g.cols[l.col]
	ts, err := q.timestamps(l.group)
	if err != nil {
		return nil, 0, 0, err
	}
	r0 := ts.Search(q.mint)
	r1 := ts.Search(q.maxt+1) - 1
	if q.maxt == math.MaxInt64 {
		r1 = ts.Len() - 1
	}
	if c.ch.ends != nil {
		src = &colSource{ts: ts, ch: &c.ch, tupleSize: tupleRows, rows: g.rows, rice: q.r.dataVersion() >= 3}
		if r0 > r1 {
			return src, 0, 0, nil
		}
		src.t0 = r0 / tupleRows
		src.n = r1/tupleRows - src.t0 + 1
		off, end = c.ch.chunkRange(r0/ChunkRows, r1/ChunkRows)
		return src, off, end, nil
	}
	src = &colSource{ts: ts, meta: c.meta, tupleSize: int(c.meta.TupleSize)}
	if r0 > r1 {
		return src, 0, 0, nil
	}
	src.t0 = r0 / src.tupleSize
	src.n = r1/src.tupleSize - src.t0 + 1
	off, end = c.meta.TupleRange(src.t0, src.t0+src.n-1)
	return src, off, end, nil
}

// readData fills p from data-file offset off: when the block's data is a
// Prefetcher, from what the selection prefetched (prefetchTimestamps at
// the first read, then, for values, prefetch), else from the data.
func (q *Selection) readData(p []byte, off int64, values bool) error {
	if pf, ok := q.r.data.(Prefetcher); ok {
		readers := []func(Prefetcher) (io.ReaderAt, error){q.prefetchTimestamps}
		if values {
			readers = append(readers, q.prefetch)
		}
		for _, prefetched := range readers {
			pre, err := prefetched(pf)
			if err != nil {
				return err
			}
			if _, err := pre.ReadAt(p, off); err == nil {
				return nil
			}
		}
	}
	_, err := q.r.data.ReadAt(p, off)
	return err
}

// prefetchTimestamps asks pf once (tsMu) for the timestamp column of
// every group holding a series of the selection in its range, and, of the
// groups most of whose time span lies in the range (fetchWhole), for the
// selected series' whole value columns too: those need no timestamps to
// be located, and a remote block reads them in the same round trip,
// beside their group's timestamps. The other groups' value ranges are
// known only once their timestamps are read (prefetch, a second round).
func (q *Selection) prefetchTimestamps(pf Prefetcher) (io.ReaderAt, error) {
	q.tsMu.Lock()
	defer q.tsMu.Unlock()
	if q.tsDone {
		return q.tsPre, q.tsErr
	}
	q.tsDone = true
	var ranges []ByteRange
	seen := map[uint32]bool{}
	q.whole = map[uint32]bool{}
	for _, s := range q.Series {
		for _, l := range q.r.seriesLocs(s.ID) {
			g := &q.r.groups[l.group]
			if g.minT > q.maxt || g.maxT < q.mint {
				continue
			}
			if !seen[l.group] {
				seen[l.group] = true
				ranges = append(ranges, ByteRange{Off: g.off, Len: g.tsLen})
				q.whole[l.group] = fetchWhole(g, q.mint, q.maxt)
			}
			if c := &g.cols[l.col]; q.whole[l.group] && c.dataLen() > 0 {
				ranges = append(ranges, ByteRange{Off: c.off, Len: c.dataLen()})
			}
		}
	}
	q.tsPre, q.tsErr = pf.Prefetch(ranges)
	return q.tsPre, q.tsErr
}

// wholeShare is the share of a group's time span a selection's range must
// cover for its value columns to be fetched whole, without waiting for its
// timestamps: a round trip saved for at most 1/wholeShare of the bytes
// needed, if its rows are spread evenly (issue 12's amplification goal is
// 1.5×).
const wholeShare = 2.0 / 3

// fetchWhole tells whether [mint, maxt] covers wholeShare of g's span.
func fetchWhole(g *groupInfo, mint, maxt int64) bool {
	span := g.maxT - g.minT
	in := min(maxt, g.maxT) - max(mint, g.minT)
	return span <= 0 || float64(in) >= wholeShare*float64(span)
}

// ByteRange is a range of a block's data file.
type ByteRange struct{ Off, Len int64 }

// Prefetcher is implemented by the data of a remote block (OpenRemote):
// given every range a selection will read, it fetches them at once
// (coalesced, in parallel) and returns a reader over them, which the
// selection's reads try first. A range it does not hold is an error of
// its ReadAt, and the read goes to the block's data. A selection asks
// twice: for the timestamp columns of its groups, then for the value
// columns' ranges those timestamps give.
type Prefetcher interface {
	Prefetch(ranges []ByteRange) (io.ReaderAt, error)
}

// read fills p, value bytes, from data-file offset off (readData),
// counted in DataReads.
func (q *Selection) read(p []byte, off int64) error {
	q.r.reads.Add(1)
	return q.readData(p, off, true)
}

// prefetch asks pf once for the column ranges of every series of the
// selection (preMu) but those prefetchTimestamps fetched.
func (q *Selection) prefetch(pf Prefetcher) (io.ReaderAt, error) {
	q.preMu.Lock()
	defer q.preMu.Unlock()
	if q.pre != nil || q.preErr != nil {
		return q.pre, q.preErr
	}
	if _, err := q.prefetchTimestamps(pf); err != nil {
		q.preErr = err
		return nil, err
	}
	var ranges []ByteRange
	for _, s := range q.Series {
		for _, l := range q.r.seriesLocs(s.ID) {
			g := &q.r.groups[l.group]
			if g.minT > q.maxt || g.maxT < q.mint || q.whole[l.group] {
				continue
			}
			src, off, end, err := q.span(l)
			if err != nil {
				q.preErr = err
				return nil, err
			}
			if src.n > 0 && end > off {
				ranges = append(ranges, ByteRange{Off: g.cols[l.col].off + off, Len: end - off})
			}
		}
	}
	q.pre, q.preErr = pf.Prefetch(ranges)
	return q.pre, q.preErr
}

// colSource is a seriesiter.TupleSource over the tuples [t0, t0+n) of one
// column, whose bytes were read in one piece. A version 3 column (ch set)
// serves tuples of tupleRows rows from the chunk that holds them, decoded
// once (dec, chunk) and given back to decoders when its last tuple is
// loaded.
type colSource struct {
	ts        *encoding.ScaledTimestamps
	meta      *encoding.ColumnMeta // version 1
	ch        *chunkMeta           // version 3
	rows      int                  // version 3: the group's rows
	tupleSize int
	t0, n     int
	buf       []byte
	off0      int64
	dir       string // the block's directory (errors name its data file)
	fileOff   int64
	vals      []float64
	pres      []bool
	dec       *valueDecoder
	chunk     int  // the chunk dec holds
	rice      bool // data version 3: Rice codes allowed
	// pin keeps the reader, and so its mapping, alive while buf or ts's
	// bytes are slices of it (Reader.mm).
	pin *Reader
}

// decoders recycles the chunk decoders of version 3 columns (4 KiB each).
var decoders = sync.Pool{New: func() any { return new(valueDecoder) }}

func (s *colSource) NumTuples() int    { return s.n }
func (s *colSource) First(k int) int64 { return s.ts.At((s.t0 + k) * s.tupleSize) }
func (s *colSource) Load(k int, ts []int64, vs []float64) (int, uint32, error) {
	if s.ch != nil {
		return s.loadChunked(k, ts, vs)
	}
	i := s.t0 + k
	off, end := s.meta.TupleRange(i, i)
	var tuple []byte
	if end > off {
		tuple = s.buf[off-s.off0 : end-s.off0]
	}
	var err error
	s.vals, s.pres, err = encoding.DecodeColumnTuple(s.vals[:0], s.pres[:0], s.meta, tuple, i)
	if err != nil {
		return 0, 0, &CorruptionError{File: filepath.Join(s.dir, DataFilename), Offset: s.fileOff + off, Err: err}
	}
	var p uint32
	base := i * s.tupleSize
	for j, v := range s.vals {
		ts[j] = s.ts.At(base + j)
		vs[j] = v
		if s.pres[j] {
			p |= 1 << j
		}
	}
	return len(s.vals), p, nil
}

func (s *colSource) loadChunked(k int, ts []int64, vs []float64) (int, uint32, error) {
	row := (s.t0 + k) * tupleRows
	ci := row / ChunkRows
	if s.dec == nil || s.chunk != ci {
		if s.dec == nil {
			s.dec = decoders.Get().(*valueDecoder)
			s.dec.rice = s.rice
		}
		off, end := s.ch.chunkRange(ci, ci)
		if err := s.dec.decode(s.buf[off-s.off0:end-s.off0], min(ChunkRows, s.rows-ci*ChunkRows), s.fileOff+off); err != nil {
			decoders.Put(s.dec)
			s.dec = nil
			if ce, ok := err.(*CorruptionError); ok {
				ce.File = filepath.Join(s.dir, DataFilename)
			}
			return 0, 0, err
		}
		s.chunk = ci
	}
	n := min(tupleRows, s.rows-row)
	j := row % ChunkRows
	for i := range n {
		ts[i] = s.ts.At(row + i)
	}
	copy(vs[:n], s.dec.vals[j:j+n])
	p := s.dec.pres[j/tupleRows]
	if j+n == ChunkRows || k == s.n-1 || row+n == s.rows {
		decoders.Put(s.dec)
		s.dec = nil
	}
	return n, p, nil
}

// appendRange appends the present rows of a version 2 or 3 column in
// [mint, maxt] (the rows span gave s the chunks of) to ts and vs.
func (s *colSource) appendRange(ts []int64, vs []float64, mint, maxt int64) ([]int64, []float64, error) {
	if s.n == 0 {
		return ts, vs, nil
	}
	r0, r1 := s.ts.Search(mint), s.rows // rows [r0, r1)
	if maxt < math.MaxInt64 {
		r1 = s.ts.Search(maxt + 1)
	}
	dec := decoders.Get().(*valueDecoder)
	defer decoders.Put(dec)
	dec.rice = s.rice
	for base := r0 / ChunkRows * ChunkRows; base < r1; base += ChunkRows {
		rows := min(ChunkRows, s.rows-base)
		off, end := s.ch.chunkRange(base/ChunkRows, base/ChunkRows)
		if err := dec.decode(s.buf[off-s.off0:end-s.off0], rows, s.fileOff+off); err != nil {
			if ce, ok := err.(*CorruptionError); ok {
				ce.File = filepath.Join(s.dir, DataFilename)
			}
			return ts, vs, err
		}
		lo, hi := max(r0, base), min(r1, base+rows)
		if dec.full {
			ts = s.ts.AppendRange(ts, lo, hi)
			vs = append(vs, dec.vals[lo-base:hi-base]...)
			continue
		}
		for r := lo; r < hi; r++ {
			if j := r - base; dec.pres[j/tupleRows]>>(j%tupleRows)&1 != 0 {
				ts, vs = append(ts, s.ts.At(r)), append(vs, dec.vals[j])
			}
		}
	}
	return ts, vs, nil
}

type errIterator struct {
	seriesiter.Iterator
	err error
}

func (e *errIterator) Next() chunkenc.ValueType      { return chunkenc.ValNone }
func (e *errIterator) Seek(int64) chunkenc.ValueType { return chunkenc.ValNone }
func (e *errIterator) Err() error                    { return e.err }

// OpenRemote opens a block whose files are elsewhere (a bucket): meta and
// index are the bytes of its meta.json and index files, both checked here
// as Open checks them, and data reads byte ranges of its data file. name
// stands for the block's directory in errors. Nothing of the data is
// read at open: data must check what it returns (the bucket's reader
// checks each group extent against its CRC). With a metrics loader, idx
// is the index without its metrics section (SplitIndex), which the loader
// gives when Metrics first needs it; without one, idx is the whole file.
func OpenRemote(name string, meta, idx []byte, dict *index.TagDict, data io.ReaderAt, metrics MetricsLoader) (*Reader, error) {
	r := &Reader{dir: name, data: data, mload: metrics}
	if err := decodeMeta(meta, &r.meta); err != nil {
		return nil, &CorruptionError{File: filepath.Join(name, MetaFilename), Offset: 0, Err: err}
	}
	if err := r.decodeIndexFile(idx, dict, filepath.Join(name, IndexFilename), metrics != nil); err != nil {
		return nil, err
	}
	r.refs.Store(1)
	return r, nil
}

// numSeries is the number of series the index locates (0 for a stand-in).
func (r *Reader) numSeries() int { return max(len(r.locOff)-1, 0) }

// seriesLocs returns the locations of local series id.
func (r *Reader) seriesLocs(id uint32) []loc { return r.locs[r.locOff[id]:r.locOff[id+1]] }

// Remote reports whether the block was opened with OpenRemote (or is an
// Unloaded stand-in for one).
func (r *Reader) Remote() bool { return r.f == nil }

// Unloaded returns a stand-in for a remote block whose metadata is not in
// memory: it has the block's meta and nothing else, Acquire always fails
// on it and Close is a no-op beyond its own state. The engine (package
// tsdb) puts it in place of a remote block it drops from memory, and
// opens the block again when a read needs it.
func Unloaded(meta Meta) *Reader {
	r := &Reader{meta: meta, unloaded: true}
	r.refs.Store(1)
	return r
}

// IsUnloaded reports whether r is an Unloaded stand-in.
func (r *Reader) IsUnloaded() bool { return r.unloaded }

// MemoryBytes estimates the heap r's metadata holds: the decoded label
// index, the groups with their column metas, the series' locations and,
// if it is held, the metrics section. It is 0 for an Unloaded stand-in.
func (r *Reader) MemoryBytes() int64 {
	if r.unloaded {
		return 0
	}
	n := r.bi.MemoryBytes() + int64(len(r.groups))*int64(unsafe.Sizeof(groupInfo{}))
	for i := range r.groups {
		for _, c := range r.groups[i].cols {
			n += int64(unsafe.Sizeof(c)) + int64(len(c.ch.ends))*4
			if c.meta != nil {
				n += int64(unsafe.Sizeof(*c.meta)) + int64(len(c.meta.Widths))*2
			}
		}
	}
	n += int64(len(r.locs))*8 + int64(len(r.locOff))*4
	if r.msec != nil {
		n += int64(len(r.msec.b)) + int64(len(r.msec.offs))*8
	}
	return n
}

// GroupOf returns the index of the group whose extent holds data-file
// offset off, or -1.
func (r *Reader) GroupOf(off int64) int {
	i := sort.Search(len(r.groups), func(i int) bool { return r.groups[i].off > off }) - 1
	if i < 0 {
		return -1
	}
	g := &r.groups[i]
	end := g.off + g.tsLen
	for _, c := range g.cols {
		end += c.dataLen()
	}
	if off >= end {
		return -1
	}
	return i
}

// Extent is one group's contiguous range of the data file (invariant 2).
type Extent struct {
	Off, Len   int64
	CRC        uint32   // CRC32C of the extent's bytes, from the index
	MinT, MaxT int64    // the group's first and last timestamps
	Series     []uint32 // local ids of the series of its columns
	// Parts are the lengths of the extent's parts, in order: its
	// timestamp column, then each value column.
	Parts []int64
}

// Extents returns the block's group extents in data-file order.
func (r *Reader) Extents() []Extent {
	out := make([]Extent, len(r.groups))
	for i, g := range r.groups {
		e := Extent{Off: g.off, Len: g.tsLen, CRC: g.crc, MinT: g.minT, MaxT: g.maxT, Parts: []int64{g.tsLen}}
		for _, c := range g.cols {
			e.Len += c.dataLen()
			e.Series = append(e.Series, c.series)
			e.Parts = append(e.Parts, c.dataLen())
		}
		out[i] = e
	}
	return out
}

// SeriesLabels returns the labels of the series with local id id.
func (r *Reader) SeriesLabels(id uint32) labels.Labels {
	var sb labels.ScratchBuilder
	return r.bi.Labels(id, &sb)
}
