package tsdb

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"sync"

	"github.com/aerie-db/aerie/internal/checksum"
	"github.com/aerie-db/aerie/internal/compact"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
)

// Tombstones file format (docs/format/tombstones.md).
const (
	TombstonesMagic   uint32 = 0xAE10B570
	TombstonesVersion uint8  = 1
)

// Interval is a deleted time range, inclusive.
type Interval struct{ Mint, Maxt int64 }

// tombstones hold the deleted intervals of series, by label set. They are
// appended to one file, fsync'd before Delete returns, and applied by
// every query.
type tombstones struct {
	path string

	mu    sync.RWMutex // guards the fields below
	f     *os.File
	bySer map[uint64][]tombstone // labels hash → entries
	count int
}

type tombstone struct {
	lset labels.Labels
	ivs  []Interval
}

func openTombstones(path string) (*tombstones, error) {
	ts := &tombstones{path: path, bySer: map[uint64][]tombstone{}}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if st.Size() == 0 {
		hdr := binary.BigEndian.AppendUint32(nil, TombstonesMagic)
		hdr = append(hdr, TombstonesVersion, 0, 0, 0)
		if _, err := f.Write(hdr); err != nil {
			f.Close()
			return nil, err
		}
		if err := f.Sync(); err != nil {
			f.Close()
			return nil, err
		}
	} else {
		good, err := ts.load(bufio.NewReader(f), st.Size())
		if err != nil {
			f.Close()
			return nil, err
		}
		if good < st.Size() { // torn tail of an interrupted Delete
			if err := f.Truncate(good); err != nil {
				f.Close()
				return nil, err
			}
		}
	}
	if _, err := f.Seek(0, io.SeekEnd); err != nil {
		f.Close()
		return nil, err
	}
	ts.f = f
	return ts, nil
}

// load reads every record; it returns the offset after the last good one.
// A bad record followed by more bytes than a torn write leaves is
// corruption.
func (ts *tombstones) load(r *bufio.Reader, size int64) (int64, error) {
	hdr := make([]byte, 8)
	if _, err := io.ReadFull(r, hdr); err != nil || binary.BigEndian.Uint32(hdr) != TombstonesMagic {
		return 0, fmt.Errorf("tombstones file %s: bad header", ts.path)
	}
	if hdr[4] != TombstonesVersion {
		return 0, fmt.Errorf("tombstones file %s: unsupported version %d", ts.path, hdr[4])
	}
	off := int64(8)
	for off < size {
		rec, n, err := readRecord(r)
		if err != nil {
			return off, nil // torn tail: the caller truncates
		}
		lset, ivs, err := decodeTombstone(rec)
		if err != nil {
			return 0, fmt.Errorf("tombstones file %s at byte offset %d: %w", ts.path, off, err)
		}
		ts.addLocked(lset, ivs)
		off += int64(n)
	}
	return off, nil
}

// readRecord reads [uvarint length][CRC32C 4 bytes][payload].
func readRecord(r *bufio.Reader) ([]byte, int, error) {
	ln, err := binary.ReadUvarint(r)
	if err != nil {
		return nil, 0, err
	}
	if ln > 1<<24 {
		return nil, 0, errors.New("record too long")
	}
	buf := make([]byte, 4+ln)
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, 0, err
	}
	if checksum.CRC32C(buf[4:]) != binary.LittleEndian.Uint32(buf) {
		return nil, 0, errors.New("checksum mismatch")
	}
	return buf[4:], len(binary.AppendUvarint(nil, ln)) + len(buf), nil
}

// record: labels count, (name, value) as uvarint-length strings, interval
// count, (mint, maxt) as varints.
func appendTombstone(dst []byte, lset labels.Labels, ivs []Interval) []byte {
	dst = binary.AppendUvarint(dst, uint64(lset.Len()))
	lset.Range(func(l labels.Label) {
		dst = binary.AppendUvarint(dst, uint64(len(l.Name)))
		dst = append(dst, l.Name...)
		dst = binary.AppendUvarint(dst, uint64(len(l.Value)))
		dst = append(dst, l.Value...)
	})
	dst = binary.AppendUvarint(dst, uint64(len(ivs)))
	for _, iv := range ivs {
		dst = binary.AppendVarint(dst, iv.Mint)
		dst = binary.AppendVarint(dst, iv.Maxt)
	}
	return dst
}

func decodeTombstone(b []byte) (labels.Labels, []Interval, error) {
	pos := 0
	uv := func() (uint64, error) {
		v, n := binary.Uvarint(b[pos:])
		if n <= 0 {
			return 0, errors.New("bad varint")
		}
		pos += n
		return v, nil
	}
	str := func() (string, error) {
		n, err := uv()
		if err != nil || n > uint64(len(b)-pos) {
			return "", errors.New("bad string")
		}
		s := string(b[pos : pos+int(n)])
		pos += int(n)
		return s, nil
	}
	nl, err := uv()
	if err != nil || nl > uint64(len(b)) {
		return labels.EmptyLabels(), nil, errors.New("bad label count")
	}
	sb := labels.NewScratchBuilder(int(nl))
	for i := uint64(0); i < nl; i++ {
		n, err := str()
		if err != nil {
			return labels.EmptyLabels(), nil, err
		}
		v, err := str()
		if err != nil {
			return labels.EmptyLabels(), nil, err
		}
		sb.Add(n, v)
	}
	sb.Sort()
	ni, err := uv()
	if err != nil || ni > uint64(len(b)) {
		return labels.EmptyLabels(), nil, errors.New("bad interval count")
	}
	ivs := make([]Interval, 0, ni)
	for i := uint64(0); i < ni; i++ {
		a, n := binary.Varint(b[pos:])
		if n <= 0 {
			return labels.EmptyLabels(), nil, errors.New("bad interval")
		}
		pos += n
		z, n := binary.Varint(b[pos:])
		if n <= 0 {
			return labels.EmptyLabels(), nil, errors.New("bad interval")
		}
		pos += n
		ivs = append(ivs, Interval{a, z})
	}
	if pos != len(b) {
		return labels.EmptyLabels(), nil, errors.New("trailing bytes")
	}
	return sb.Labels(), ivs, nil
}

func (ts *tombstones) addLocked(lset labels.Labels, ivs []Interval) {
	h := lset.Hash()
	for i, t := range ts.bySer[h] {
		if labels.Equal(t.lset, lset) {
			ts.bySer[h][i].ivs = append(ts.bySer[h][i].ivs, ivs...)
			return
		}
	}
	ts.bySer[h] = append(ts.bySer[h], tombstone{lset: lset, ivs: ivs})
	ts.count++
}

// add persists and records deletions for the given series.
func (ts *tombstones) add(series []labels.Labels, iv Interval) error {
	var buf []byte
	for _, lset := range series {
		rec := appendTombstone(nil, lset, []Interval{iv})
		buf = binary.AppendUvarint(buf, uint64(len(rec)))
		buf = binary.LittleEndian.AppendUint32(buf, checksum.CRC32C(rec))
		buf = append(buf, rec...)
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if _, err := ts.f.Write(buf); err != nil {
		return err
	}
	if err := ts.f.Sync(); err != nil {
		return err
	}
	for _, lset := range series {
		ts.addLocked(lset, []Interval{iv})
	}
	return nil
}

// intervals returns the deleted intervals of lset.
func (ts *tombstones) intervals(lset labels.Labels) []Interval {
	ts.mu.RLock()
	defer ts.mu.RUnlock()
	if ts.count == 0 {
		return nil
	}
	for _, t := range ts.bySer[lset.Hash()] {
		if labels.Equal(t.lset, lset) {
			return t.ivs
		}
	}
	return nil
}

func (ts *tombstones) close() error { return ts.f.Close() }

// Delete removes the samples in [mint, maxt] of every series matching ms,
// as Prometheus' admin API does: the deletion is durable (fsync'd) when
// Delete returns and every later query honours it.
func (db *DB) Delete(ctx context.Context, mint, maxt int64, ms ...*labels.Matcher) error {
	q, err := db.Querier(math.MinInt64, math.MaxInt64)
	if err != nil {
		return err
	}
	defer q.Close()
	ss := q.Select(ctx, false, &storage.SelectHints{Start: mint, End: maxt}, ms...)
	var series []labels.Labels
	for ss.Next() {
		series = append(series, ss.At().Labels())
	}
	if err := ss.Err(); err != nil {
		return err
	}
	if len(series) == 0 {
		return nil
	}
	if err := db.tomb.add(series, Interval{mint, maxt}); err != nil {
		return err
	}
	if o := db.lateObserver(); o != nil {
		o.Deleted(mint, maxt, ms)
	}
	return nil
}

// deletedIterator skips samples inside deleted intervals.
type deletedIterator struct {
	chunkenc.Iterator
	ivs []Interval
}

func (d *deletedIterator) deleted(t int64) bool {
	for _, iv := range d.ivs {
		if t >= iv.Mint && t <= iv.Maxt {
			return true
		}
	}
	return false
}

func (d *deletedIterator) Next() chunkenc.ValueType {
	for {
		vt := d.Iterator.Next()
		if vt == chunkenc.ValNone || !d.deleted(d.Iterator.AtT()) {
			return vt
		}
	}
}

func (d *deletedIterator) Seek(t int64) chunkenc.ValueType {
	vt := d.Iterator.Seek(t)
	if vt == chunkenc.ValNone || !d.deleted(d.Iterator.AtT()) {
		return vt
	}
	return d.Next()
}

func (d *deletedIterator) AtHistogram(h *histogram.Histogram) (int64, *histogram.Histogram) {
	return d.Iterator.AtHistogram(h)
}

// deletedIntervals are the series' tombstones and, with
// Options.SeriesRetention, everything before its cutoff.
func (db *DB) deletedIntervals(lset labels.Labels) []Interval {
	ivs := db.tomb.intervals(lset)
	if db.opts.SeriesRetention == nil {
		return ivs
	}
	if c := db.opts.SeriesRetention(lset); c != math.MinInt64 {
		ivs = append(slices.Clip(ivs), Interval{math.MinInt64, c - 1})
	}
	return ivs
}

// ApplySeriesRetention rewrites each local block holding a series whose
// Options.SeriesRetention cutoff is past the block's end, without the
// samples the cutoff removes (compaction drops the rest as it merges
// blocks). It returns how many blocks it rewrote.
func (db *DB) ApplySeriesRetention() (int, error) {
	if db.opts.SeriesRetention == nil {
		return 0, nil
	}
	db.compactMu.Lock()
	defer db.compactMu.Unlock()
	var jobs []compact.Job
	db.mu.RLock()
	for _, b := range db.blocks {
		if b.Remote() {
			continue
		}
		m := b.Meta()
		bi := b.Index()
		var sb labels.ScratchBuilder
		for id := 0; id < bi.NumSeries(); id++ {
			if db.opts.SeriesRetention(bi.Labels(uint32(id), &sb)) > m.MaxTime {
				jobs = append(jobs, compact.Job{Inputs: []string{m.ULID}, MinTime: m.MinTime, MaxTime: m.MaxTime, Level: m.Compaction.Level})
				break
			}
		}
	}
	db.mu.RUnlock()
	for i, j := range jobs {
		select {
		case <-db.stop:
			return i, nil
		default:
		}
		if err := db.runCompaction(j); err != nil {
			db.cstats.failures.Add(1)
			return i, fmt.Errorf("apply series retention: %w", err)
		}
	}
	return len(jobs), nil
}
