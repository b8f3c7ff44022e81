package block

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/aerie-db/aerie/internal/mathx"
)

// MetricsSection is a block's metrics section (index section 3), checked
// and indexed by series: every record decoded once when it was parsed, so
// Append never meets a record its checksum passed but the decoder refuses.
// It is immutable and safe for concurrent use.
type MetricsSection struct {
	b       []byte
	offs    []int // per local series, the offset of its record in b
	version uint8 // of the index whose section it is
	base    int64 // ⌊minTime / interval⌋
	file    string
	at      int64 // offset of b in file, for errors
}

// Size is the memory the section holds: its bytes and its offsets.
func (s *MetricsSection) Size() int64 { return int64(len(s.b)) + 8*int64(len(s.offs)) }

// Append appends the metrics of local series id to dst, in interval order.
func (s *MetricsSection) Append(dst []IntervalMetrics, id uint32) ([]IntervalMetrics, error) {
	if int(id) >= len(s.offs) {
		return dst, fmt.Errorf("series %d out of range", id)
	}
	var err error
	if s.version == 1 {
		var ms []IntervalMetrics
		ms, _, err = decodeMetricsV1(s.b[s.offs[id]:], s.base)
		dst = append(dst, ms...)
	} else {
		dst, _, err = DecodeMetrics(dst, s.b[s.offs[id]:], s.base)
	}
	if err != nil {
		return dst, s.recordError(int(id), err)
	}
	return dst, nil
}

// RecordLen is the length of local series id's record.
func (s *MetricsSection) RecordLen(id uint32) int64 {
	end := len(s.b)
	if int(id)+1 < len(s.offs) {
		end = s.offs[id+1]
	}
	return int64(end - s.offs[id])
}

// recordError turns an error decoding the record of series id into a
// *CorruptionError at its offset in the file.
func (s *MetricsSection) recordError(id int, err error) error {
	off := s.at + int64(s.offs[id])
	var ce *CorruptionError
	if errors.As(err, &ce) {
		off += ce.Offset
		err = ce.Err
	}
	return &CorruptionError{File: s.file, Offset: off, Err: fmt.Errorf("section metrics, series %d: %w", id, err)}
}

// parseMetrics checks and indexes b, the metrics section of r's index,
// found at offset at of file.
func (r *Reader) parseMetrics(b []byte, file string, at int64) (*MetricsSection, error) {
	d := &decbuf{b: b, what: "section metrics", at: int(at)}
	if iv := int64(d.uvarint()); d.err == nil && iv != r.meta.MetricInterval {
		return nil, &CorruptionError{File: file, Offset: at, Err: fmt.Errorf("section metrics: interval %d, meta says %d", iv, r.meta.MetricInterval)}
	}
	ns := r.bi.NumSeries()
	s := &MetricsSection{b: b, offs: make([]int, ns), version: r.version, base: mathx.FloorDiv(r.meta.MinTime, r.meta.MetricInterval), file: file, at: at}
	var scratch []IntervalMetrics
	for i := 0; i < ns && d.err == nil; i++ {
		s.offs[i] = d.pos
		var n int
		var err error
		switch r.version {
		case 1:
			_, n, err = decodeMetricsV1(d.b[d.pos:], s.base)
		default:
			scratch, n, err = DecodeMetrics(scratch[:0], d.b[d.pos:], s.base)
		}
		if err != nil {
			return nil, s.recordError(i, err)
		}
		d.pos += n
	}
	if d.err == nil && d.pos != len(d.b) {
		return nil, &CorruptionError{File: file, Offset: at + int64(d.pos), Err: fmt.Errorf("section metrics: %d trailing bytes", len(d.b)-d.pos)}
	}
	if d.err != nil {
		var ce *CorruptionError
		if errors.As(d.err, &ce) {
			ce.File = file
		}
		return nil, d.err
	}
	return s, nil
}

// MetricsLoader gives a block opened without its metrics section
// (OpenRemote with an index cut by SplitIndex) that section when it is
// first needed: the bucket fetches it from an object of its own and keeps
// it in a cache bounded in bytes. It must return what r.ParseMetrics
// returned for the section's bytes.
type MetricsLoader interface {
	LoadMetrics(ctx context.Context, r *Reader) (*MetricsSection, error)
}

// MetricsLen returns the length of the block's metrics section, from the
// index footer, whether or not the section was opened with the index.
func (r *Reader) MetricsLen() int64 { return r.mLen }

// ParseMetrics checks b, the metrics section of r's index held apart
// (SplitIndex), against the length and CRC32C of the index footer and
// indexes it. name stands for b in errors, and offsets count from b's
// first byte.
func (r *Reader) ParseMetrics(name string, b []byte) (*MetricsSection, error) {
	switch {
	case int64(len(b)) != r.mLen:
		return nil, &CorruptionError{File: name, Offset: int64(len(b)), Err: fmt.Errorf("metrics section of %d bytes, the index footer says %d", len(b), r.mLen)}
	case crc(b) != r.mCRC:
		return nil, &CorruptionError{File: name, Err: errors.New("metrics section: checksum mismatch with the index footer")}
	}
	return r.parseMetrics(b, name, 0)
}

// MetricsSection returns the block's metrics section: the one opened with
// the index, or the loader's.
func (r *Reader) MetricsSection(ctx context.Context) (*MetricsSection, error) {
	if r.msec != nil {
		return r.msec, nil
	}
	if r.mload == nil {
		return nil, fmt.Errorf("block %s: opened without its metrics section and without a loader", r.dir)
	}
	return r.mload.LoadMetrics(ctx, r)
}

// Metrics returns the block metrics of local series id, in interval
// order. An error decoding them is a *CorruptionError; a remote block's
// section is fetched first if it is not in memory (ctx bounds that).
func (r *Reader) Metrics(ctx context.Context, id uint32) ([]IntervalMetrics, error) {
	return r.AppendMetrics(ctx, nil, id)
}

// AppendMetrics appends the block metrics of local series id to dst, so a
// scan over many series can reuse one slice.
func (r *Reader) AppendMetrics(ctx context.Context, dst []IntervalMetrics, id uint32) ([]IntervalMetrics, error) {
	s, err := r.MetricsSection(ctx)
	if err != nil {
		return dst, err
	}
	return s.Append(dst, id)
}

// SplitIndex cuts the metrics section out of index file b: head is b
// without the section's bytes (the footer unchanged, so it still gives the
// section's length and CRC32C), metrics the section. The writer puts the
// metrics section last, just before the footer; an index whose section is
// elsewhere, or whose footer does not check, is an error.
func SplitIndex(b []byte) (head, metrics []byte, err error) {
	fstart, off, ln, _, err := metricsEntry(b)
	if err != nil {
		return nil, nil, err
	}
	if off < HeaderLen || off > uint64(fstart) || off+ln != uint64(fstart) {
		return nil, nil, &CorruptionError{Offset: int64(fstart + SectionMetrics*20), Err: fmt.Errorf("section metrics [%d, +%d) does not end at the footer (%d)", off, ln, fstart)}
	}
	head = append(b[:off:off], b[fstart:]...)
	return head, b[off:fstart], nil
}

// metricsEntry checks index file b's trailing magic and footer checksum
// and returns where the footer starts and the metrics section's offset,
// length and CRC32C as the footer gives them.
func metricsEntry(b []byte) (fstart int, off, ln uint64, crc32c uint32, err error) {
	if len(b) < HeaderLen+FooterLen || binary.BigEndian.Uint32(b) != IndexMagic || binary.BigEndian.Uint32(b[len(b)-4:]) != IndexMagic {
		return 0, 0, 0, 0, &CorruptionError{Err: errors.New("not an index file")}
	}
	fstart = len(b) - FooterLen
	if crc(b[fstart:len(b)-8]) != binary.LittleEndian.Uint32(b[len(b)-8:]) {
		return 0, 0, 0, 0, &CorruptionError{Offset: int64(fstart), Err: errors.New("footer checksum mismatch")}
	}
	p := fstart + SectionMetrics*20
	return fstart, binary.LittleEndian.Uint64(b[p:]), binary.LittleEndian.Uint64(b[p+8:]), binary.LittleEndian.Uint32(b[p+16:]), nil
}

// MetricsFooter returns the metrics section's length and CRC32C from the
// footer of index file b, whole or cut by SplitIndex; the footer's own
// checksum is checked.
func MetricsFooter(b []byte) (length int64, crc32c uint32, err error) {
	fstart, _, ln, c, err := metricsEntry(b)
	if err != nil {
		return 0, 0, err
	}
	if ln == 0 || ln > math.MaxInt64 {
		return 0, 0, &CorruptionError{Offset: int64(fstart + SectionMetrics*20), Err: fmt.Errorf("section metrics of %d bytes", ln)}
	}
	return int64(ln), c, nil
}
