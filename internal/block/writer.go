package block

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/aerie-db/aerie/internal/checksum"
	"github.com/aerie-db/aerie/internal/encoding"
	"github.com/aerie-db/aerie/internal/fileutil"
	"github.com/aerie-db/aerie/internal/index"
	"github.com/aerie-db/aerie/internal/invariants"
	"github.com/aerie-db/aerie/internal/mathx"
)

// Meta is the content of meta.json.
type Meta struct {
	Magic          string `json:"magic"`
	Version        int    `json:"version"`
	ULID           string `json:"ulid"`
	MinTime        int64  `json:"minTime"` // inclusive
	MaxTime        int64  `json:"maxTime"` // exclusive
	TupleSize      int    `json:"tupleSize"`
	BlockTuples    int    `json:"blockTuples"`
	MetricInterval int64  `json:"metricInterval"`
	// Seq orders blocks whose samples overlap by when they were written:
	// on equal timestamps the sample of the lower Seq wins (first write
	// wins). A head flush writes 0 (the head's rows for a time are always
	// written before any backfilled row for it); a backfill generation
	// writes its number; a compaction writes the greatest of its inputs.
	Seq uint64 `json:"seq,omitempty"`
	// Backfill is the backfill generation whose WAL this block was flushed
	// from (0: none). Blocks of a generation whose WAL still exists at open
	// are an unfinished flush and are deleted before the WAL is replayed.
	Backfill uint64 `json:"backfill,omitempty"`
	// Compaction records how the block was made: its level (0 for a
	// flushed block) and the ULIDs of the blocks merged into it.
	Compaction Compaction `json:"compaction,omitzero"`
	// HeadMaxTime is the greatest end of a head partition flushed into
	// this block or into a block it was compacted from (0: none). At open
	// the head takes the greatest over all blocks as its minimum valid
	// time: WAL rows below it are already in blocks.
	HeadMaxTime int64 `json:"headMaxTime,omitempty"`
	Stats       Stats `json:"stats"`
	// CRC32C is the Castagnoli checksum of this JSON document written with
	// CRC32C set to "" (hex).
	CRC32C string `json:"crc32c"`
}

// Compaction is the lineage of a compacted block.
type Compaction struct {
	Level   int      `json:"level,omitempty"`
	Parents []string `json:"parents,omitempty"`
}

// Stats count what a block holds.
type Stats struct {
	Series     int   `json:"series"`
	Groups     int   `json:"groups"`
	Rows       int   `json:"rows"`
	Samples    int   `json:"samples"`
	IndexBytes int64 `json:"indexBytes"`
	DataBytes  int64 `json:"dataBytes"`
	// MinSampleTime and MaxSampleTime bound the samples (inclusive).
	MinSampleTime int64 `json:"minSampleTime"`
	MaxSampleTime int64 `json:"maxSampleTime"`
}

// Bytes is the block's size on disk: its data and index files.
func (s Stats) Bytes() int64 { return s.DataBytes + s.IndexBytes }

// BytesPerSample is Bytes over the samples (over 1 for an empty block).
func (s Stats) BytesPerSample() float64 { return float64(s.Bytes()) / float64(max(1, s.Samples)) }

// WriterOptions configure a block writer. Zero values take defaults.
type WriterOptions struct {
	TupleSize      int   // [8]
	BlockTuples    int   // [encoding.DiskBlockTuples]
	MetricInterval int64 // [DefaultMetricInterval]
	// Seq, Backfill, Compaction and HeadMaxTime are copied into Meta.
	Seq         uint64
	Backfill    uint64
	Compaction  Compaction
	HeadMaxTime int64
	// DataVersion is the data file version written: DataVersion (0 means
	// it), or 1 or 2, the value columns of older blocks, which tests write
	// to check that they still read.
	DataVersion uint8
}

// Column is one series' values over the rows of a group.
type Column struct {
	Labels  labels.Labels
	Values  []float64
	Present []bool
}

type colEntry struct {
	series uint32
	meta   encoding.ColumnMeta // data version 1
	ch     chunkMeta           // data versions 2 and 3
}

type groupEntry struct {
	off        int64 // extent offset in data
	tsLen      int64
	rows       int
	minT, maxT int64
	cols       []colEntry
	crc        uint32
}

type loc struct{ group, col uint32 }

// Writer writes one block. It is not safe for concurrent use.
type Writer struct {
	parent, id, tmp string
	mint, maxt      int64
	opts            WriterOptions
	dict            *index.TagDict

	ib       *index.BlockIndexBuilder
	local    map[string]uint32 // labels (string form) → local series id
	locs     [][]loc
	metrics  [][]IntervalMetrics
	groups   []groupEntry
	f        *os.File
	bw       *bufio.Writer
	off      int64
	buf      []byte
	enc      valueEncoder
	samples  int
	finished bool
}

// NewWriter starts a block for [mint, maxt) under parent.
func NewWriter(parent string, mint, maxt int64, dict *index.TagDict, opts WriterOptions) (*Writer, error) {
	if opts.TupleSize <= 0 {
		opts.TupleSize = 8
	}
	if opts.BlockTuples <= 0 {
		opts.BlockTuples = encoding.DiskBlockTuples
	}
	if opts.MetricInterval <= 0 {
		opts.MetricInterval = DefaultMetricInterval
	}
	switch opts.DataVersion {
	case 0:
		opts.DataVersion = DataVersion
	case 1, 2, DataVersion:
	default:
		return nil, fmt.Errorf("block writer: unknown data version %d", opts.DataVersion)
	}
	id := ulid.MustNew(ulid.Timestamp(time.Now()), ulid.DefaultEntropy()).String()
	w := &Writer{
		parent: parent, id: id, tmp: filepath.Join(parent, id+TmpSuffix),
		mint: mint, maxt: maxt, opts: opts, dict: dict,
		ib: index.NewBlockIndexBuilder(dict), local: map[string]uint32{},
	}
	w.enc.rice = opts.DataVersion >= 3
	if err := os.MkdirAll(w.tmp, 0o755); err != nil {
		return nil, err
	}
	f, err := os.Create(filepath.Join(w.tmp, DataFilename))
	if err != nil {
		return nil, err
	}
	w.f, w.bw = f, bufio.NewWriterSize(f, 1<<20)
	hdr := appendHeader(nil, DataMagic, opts.DataVersion)
	if _, err := w.bw.Write(hdr); err != nil {
		w.Abort()
		return nil, err
	}
	w.off = int64(len(hdr))
	return w, nil
}

func appendHeader(dst []byte, magic uint32, version uint8) []byte {
	dst = binary.BigEndian.AppendUint32(dst, magic)
	return append(dst, version, 0, 0, 0)
}

// AddGroup writes one group's extent: ts (strictly increasing, within the
// block's range) and its columns (each len(ts) long).
func (w *Writer) AddGroup(ts []int64, cols []Column) error {
	if len(ts) == 0 || len(cols) == 0 {
		return nil
	}
	if ts[0] < w.mint || ts[len(ts)-1] >= w.maxt {
		return fmt.Errorf("group rows [%d, %d] outside block [%d, %d)", ts[0], ts[len(ts)-1], w.mint, w.maxt)
	}
	ge := groupEntry{off: w.off, rows: len(ts), minT: ts[0], maxT: ts[len(ts)-1]}
	h := checksum.New()
	w.buf = encoding.AppendScaledTimestamps(w.buf[:0], ts)
	ge.tsLen = int64(len(w.buf))
	if err := w.write(h, w.buf); err != nil {
		return err
	}
	gi := uint32(len(w.groups))
	for i, c := range cols {
		if i%8 == 7 {
			runtime.Gosched() // a group can take tens of milliseconds: let queries in
		}
		if len(c.Values) != len(ts) || len(c.Present) != len(ts) {
			return fmt.Errorf("column %s: %d values for %d rows", c.Labels, len(c.Values), len(ts))
		}
		id := w.seriesID(c.Labels)
		ce := colEntry{series: id}
		if w.opts.DataVersion == 1 {
			w.buf, ce.meta = encoding.AppendColumn(w.buf[:0], c.Values, c.Present, w.opts.TupleSize, w.opts.BlockTuples)
		} else {
			w.buf, ce.ch = w.enc.appendColumn(w.buf[:0], c.Values, c.Present)
		}
		if invariants.Enabled {
			checkColumn(&ce, w.buf, c)
		}
		if err := w.write(h, w.buf); err != nil {
			return err
		}
		w.locs[id] = append(w.locs[id], loc{group: gi, col: uint32(len(ge.cols))})
		ge.cols = append(ge.cols, ce)
		w.addMetrics(id, ts, c)
	}
	ge.crc = h.Sum32()
	w.groups = append(w.groups, ge)
	return nil
}

func (w *Writer) write(h interface{ Write([]byte) (int, error) }, b []byte) error {
	h.Write(b)
	n, err := w.bw.Write(b)
	w.off += int64(n)
	return err
}

func (w *Writer) seriesID(lset labels.Labels) uint32 {
	key := lset.String()
	if id, ok := w.local[key]; ok {
		return id
	}
	id := w.ib.AddSeries(lset)
	w.local[key] = id
	w.locs = append(w.locs, nil)
	w.metrics = append(w.metrics, nil)
	return id
}

func (w *Writer) addMetrics(id uint32, ts []int64, c Column) {
	ms := w.metrics[id]
	iv := w.opts.MetricInterval
	j, cur := -1, int64(0) // ms[j] is interval cur; rows are sorted, so it changes rarely
	for i, t := range ts {
		if !c.Present[i] {
			continue
		}
		w.samples++
		k := mathx.FloorDiv(t, iv)
		if j >= 0 && k == cur {
			ms[j].add(t, c.Values[i])
			continue
		}
		var found bool
		j, found = slices.BinarySearchFunc(ms, k, func(m IntervalMetrics, k int64) int {
			switch {
			case m.Interval < k:
				return -1
			case m.Interval > k:
				return 1
			}
			return 0
		})
		if !found {
			ms = slices.Insert(ms, j, IntervalMetrics{Interval: k})
		}
		cur = k
		ms[j].add(t, c.Values[i])
	}
	w.metrics[id] = ms
}

// SetRange narrows the block's range to [mint, maxt), which must hold
// every group added: a writer that streams groups learns where they begin
// and end only after the last.
func (w *Writer) SetRange(mint, maxt int64) error {
	if mint < w.mint || maxt > w.maxt || maxt <= mint {
		return fmt.Errorf("block range [%d, %d) outside block [%d, %d)", mint, maxt, w.mint, w.maxt)
	}
	for _, g := range w.groups {
		if g.minT < mint || g.maxT >= maxt {
			return fmt.Errorf("block range [%d, %d) does not hold group rows [%d, %d]", mint, maxt, g.minT, g.maxT)
		}
	}
	w.mint, w.maxt = mint, maxt
	return nil
}

// Finish writes the index and meta, syncs, and renames the block into
// place. It returns the block's directory.
func (w *Writer) Finish() (string, Meta, error) {
	if w.finished {
		return "", Meta{}, fmt.Errorf("block writer already finished")
	}
	w.finished = true
	fail := func(err error) (string, Meta, error) {
		w.Abort()
		return "", Meta{}, err
	}
	if err := w.bw.Flush(); err != nil {
		return fail(err)
	}
	if err := w.f.Sync(); err != nil {
		return fail(err)
	}
	if err := w.f.Close(); err != nil {
		return fail(err)
	}
	w.f = nil
	// Codes must be durable before a block refers to them.
	if err := w.dict.Sync(); err != nil {
		return fail(err)
	}
	idx := w.appendIndex(nil)
	if err := writeFileSync(filepath.Join(w.tmp, IndexFilename), idx); err != nil {
		return fail(err)
	}
	rows := 0
	minS, maxS := int64(math.MaxInt64), int64(math.MinInt64)
	for _, g := range w.groups {
		rows += g.rows
		minS, maxS = min(minS, g.minT), max(maxS, g.maxT)
	}
	meta := Meta{
		Magic: MetaMagic, Version: MetaVersion, ULID: w.id, MinTime: w.mint, MaxTime: w.maxt,
		TupleSize: w.opts.TupleSize, BlockTuples: w.opts.BlockTuples, MetricInterval: w.opts.MetricInterval,
		Seq: w.opts.Seq, Backfill: w.opts.Backfill, Compaction: w.opts.Compaction, HeadMaxTime: w.opts.HeadMaxTime,
		Stats: Stats{Series: len(w.locs), Groups: len(w.groups), Rows: rows, Samples: w.samples, IndexBytes: int64(len(idx)), DataBytes: w.off,
			MinSampleTime: minS, MaxSampleTime: maxS},
	}
	mb, err := encodeMeta(&meta)
	if err != nil {
		return fail(err)
	}
	if err := writeFileSync(filepath.Join(w.tmp, MetaFilename), mb); err != nil {
		return fail(err)
	}
	if err := fileutil.SyncDir(w.tmp); err != nil {
		return fail(err)
	}
	final := filepath.Join(w.parent, w.id)
	if err := os.Rename(w.tmp, final); err != nil {
		return fail(err)
	}
	if err := fileutil.SyncDir(w.parent); err != nil {
		return "", Meta{}, err
	}
	return final, meta, nil
}

// Abort removes the partial block.
func (w *Writer) Abort() {
	if w.f != nil {
		w.f.Close()
		w.f = nil
	}
	os.RemoveAll(w.tmp)
}

func (w *Writer) appendIndex(dst []byte) []byte {
	iv := IndexVersion
	switch w.opts.DataVersion {
	case 1:
		iv = 2 // version 1 value columns are described by index version 2
	case 2:
		iv = 3
	}
	dst = appendHeader(dst, IndexMagic, iv)
	var secs [numSections][2]int64 // offset, length
	var crcs [numSections]uint32
	mark := func(s int, start int) {
		secs[s] = [2]int64{int64(start), int64(len(dst) - start)}
		crcs[s] = crc(dst[start:])
	}
	start := len(dst)
	dst = w.ib.AppendTo(dst)
	mark(SectionTags, start)

	start = len(dst)
	dst = binary.AppendUvarint(dst, uint64(len(w.groups)))
	for _, g := range w.groups {
		dst = binary.AppendUvarint(dst, uint64(g.off))
		dst = binary.AppendUvarint(dst, uint64(g.tsLen))
		dst = binary.AppendUvarint(dst, uint64(g.rows))
		dst = binary.AppendVarint(dst, g.minT)
		dst = binary.AppendVarint(dst, g.maxT-g.minT)
		dst = binary.LittleEndian.AppendUint32(dst, g.crc)
		dst = binary.AppendUvarint(dst, uint64(len(g.cols)))
		for _, c := range g.cols {
			dst = binary.AppendUvarint(dst, uint64(c.series))
			if iv == 2 {
				dst = encoding.AppendColumnMeta(dst, &c.meta)
			} else {
				dst = appendChunkMeta(dst, &c.ch)
			}
		}
	}
	mark(SectionGroups, start)

	start = len(dst)
	dst = binary.AppendUvarint(dst, uint64(len(w.locs)))
	for _, ls := range w.locs {
		dst = binary.AppendUvarint(dst, uint64(len(ls)))
		for _, l := range ls {
			dst = binary.AppendUvarint(dst, uint64(l.group))
			dst = binary.AppendUvarint(dst, uint64(l.col))
		}
	}
	mark(SectionSeries, start)

	start = len(dst)
	base := mathx.FloorDiv(w.mint, w.opts.MetricInterval)
	dst = binary.AppendUvarint(dst, uint64(w.opts.MetricInterval))
	for _, ms := range w.metrics {
		dst = AppendMetrics(dst, ms, base)
	}
	mark(SectionMetrics, start)

	// Footer: per section offset, length, CRC32C; the footer's own CRC;
	// the magic again so a truncated file is recognised.
	fstart := len(dst)
	for s := range secs {
		dst = binary.LittleEndian.AppendUint64(dst, uint64(secs[s][0]))
		dst = binary.LittleEndian.AppendUint64(dst, uint64(secs[s][1]))
		dst = binary.LittleEndian.AppendUint32(dst, crcs[s])
	}
	dst = binary.LittleEndian.AppendUint32(dst, crc(dst[fstart:]))
	dst = binary.BigEndian.AppendUint32(dst, IndexMagic)
	return dst
}

// encodeMeta writes m as JSON whose "crc32c" field holds the CRC32C of the
// same document with that field empty. The checksum covers the raw bytes,
// so any change to the file is detected.
func encodeMeta(m *Meta) ([]byte, error) {
	m.CRC32C = ""
	b, err := json.MarshalIndent(m, "", "\t")
	if err != nil {
		return nil, err
	}
	sum := fmt.Sprintf("%08x", crc(b))
	m.CRC32C = sum
	return bytes.Replace(b, []byte(metaCRCField+`""`), []byte(metaCRCField+`"`+sum+`"`), 1), nil
}

const metaCRCField = `"crc32c": `

func writeFileSync(path string, b []byte) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// checkColumn decodes a freshly encoded column and panics if it differs bit
// for bit from its input (invariants builds only).
func checkColumn(ce *colEntry, data []byte, c Column) {
	var vals []float64
	var pres []bool
	var err error
	if ce.ch.ends == nil {
		vals, pres, err = encoding.DecodeColumn(nil, nil, &ce.meta, data)
	} else {
		vals, pres, err = decodeColumn(&ce.ch, data, len(c.Values))
	}
	if err != nil {
		panic(fmt.Sprintf("block: column %s does not decode: %v", c.Labels, err))
	}
	for i := range c.Values {
		if pres[i] != c.Present[i] || (pres[i] && math.Float64bits(vals[i]) != math.Float64bits(c.Values[i])) {
			panic(fmt.Sprintf("block: column %s row %d does not round-trip", c.Labels, i))
		}
	}
}
