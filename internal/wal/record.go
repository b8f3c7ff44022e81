package wal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"unsafe"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/aerie-db/aerie/internal/model"
)

// Type is the first byte of every record payload. The values are persisted:
// never renumber them, only add new ones.
type Type uint8

// Record types.
const (
	// RecordInvalid is returned by RecordType for an empty or unknown record.
	RecordInvalid Type = 0
	// RecordGroups defines groups: GroupID → group key.
	RecordGroups Type = 1
	// RecordSeries defines series: SeriesRef → group, slot, labels.
	RecordSeries Type = 2
	// RecordRows holds rows of samples of one group.
	RecordRows Type = 3
	// RecordTombstones holds deleted time ranges of series.
	RecordTombstones Type = 4
)

func (t Type) String() string {
	switch t {
	case RecordGroups:
		return "groups"
	case RecordSeries:
		return "series"
	case RecordRows:
		return "rows"
	case RecordTombstones:
		return "tombstones"
	default:
		return fmt.Sprintf("invalid(%d)", uint8(t))
	}
}

// GroupDef defines a group. Key is the group key as the head computes it.
type GroupDef struct {
	ID  model.GroupID
	Key string
}

// SeriesDef defines a series and its place in a group. It is written again
// when a series moves to another group.
type SeriesDef struct {
	Ref    model.SeriesRef
	Group  model.GroupID
	Slot   model.Slot
	Labels labels.Labels
}

// Row is one timestamp of a group. Present is a bitmap over slots
// 0..Width-1 (slot s is bit s%64 of word s/64); Values holds the values of
// the present slots only, in slot order.
type Row struct {
	T       int64
	Present []uint64
	Values  []float64
}

// RowsDef holds rows of one group, all of the same width.
type RowsDef struct {
	Group model.GroupID
	Width uint32
	Rows  []Row
}

// Tombstone deletes the samples of series Ref in [Mint, Maxt].
type Tombstone struct {
	Ref  model.SeriesRef
	Mint int64
	Maxt int64
}

// RecordType returns the type of an encoded record, RecordInvalid if it is
// empty or of an unknown type.
func RecordType(rec []byte) Type {
	if len(rec) == 0 {
		return RecordInvalid
	}
	switch t := Type(rec[0]); t {
	case RecordGroups, RecordSeries, RecordRows, RecordTombstones:
		return t
	default:
		return RecordInvalid
	}
}

// AppendGroups appends a RecordGroups record to dst.
func AppendGroups(dst []byte, gs []GroupDef) []byte {
	dst = append(dst, byte(RecordGroups))
	dst = binary.AppendUvarint(dst, uint64(len(gs)))
	for _, g := range gs {
		dst = binary.AppendUvarint(dst, uint64(g.ID))
		dst = appendUvarintStr(dst, g.Key)
	}
	return dst
}

// AppendSeries appends a RecordSeries record to dst.
func AppendSeries(dst []byte, ss []SeriesDef) []byte {
	dst = append(dst, byte(RecordSeries))
	dst = binary.AppendUvarint(dst, uint64(len(ss)))
	for i := range ss {
		s := &ss[i]
		dst = binary.AppendUvarint(dst, uint64(s.Ref))
		dst = binary.AppendUvarint(dst, uint64(s.Group))
		dst = binary.AppendUvarint(dst, uint64(s.Slot))
		dst = binary.AppendUvarint(dst, uint64(s.Labels.Len()))
		s.Labels.Range(func(l labels.Label) {
			dst = appendUvarintStr(dst, l.Name)
			dst = appendUvarintStr(dst, l.Value)
		})
	}
	return dst
}

// AppendRows appends a RecordRows record to dst.
//
// Bits of Present at or above Width are ignored; missing words of Present
// count as zero. Values must hold at least one value per present slot
// (AppendRows panics otherwise, like an out-of-range index).
func AppendRows(dst []byte, r *RowsDef) []byte {
	dst = append(dst, byte(RecordRows))
	dst = binary.AppendUvarint(dst, uint64(r.Group))
	dst = binary.AppendUvarint(dst, uint64(r.Width))
	dst = binary.AppendUvarint(dst, uint64(len(r.Rows)))
	nbytes := bitmapBytes(r.Width)
	var prev int64
	for i := range r.Rows {
		row := &r.Rows[i]
		// Wrapping subtraction: the decoder's wrapping addition restores any
		// int64 exactly, sorted or not.
		dst = binary.AppendVarint(dst, row.T-prev)
		prev = row.T
		n := 0
		for b := 0; b < nbytes; b++ {
			var w uint64
			if b/8 < len(row.Present) {
				w = row.Present[b/8]
			}
			v := byte(w >> (8 * (b % 8)))
			if b == nbytes-1 && r.Width%8 != 0 {
				v &= byte(1)<<(r.Width%8) - 1
			}
			dst = append(dst, v)
			n += bits.OnesCount8(v)
		}
		for _, v := range row.Values[:n] {
			dst = binary.BigEndian.AppendUint64(dst, math.Float64bits(v))
		}
	}
	return dst
}

// AppendTombstones appends a RecordTombstones record to dst.
func AppendTombstones(dst []byte, ts []Tombstone) []byte {
	dst = append(dst, byte(RecordTombstones))
	dst = binary.AppendUvarint(dst, uint64(len(ts)))
	for _, t := range ts {
		dst = binary.AppendUvarint(dst, uint64(t.Ref))
		dst = binary.AppendVarint(dst, t.Mint)
		dst = binary.AppendVarint(dst, t.Maxt-t.Mint)
	}
	return dst
}

// DecodeGroups decodes a RecordGroups record, appending to dst[:0].
func DecodeGroups(rec []byte, dst []GroupDef) ([]GroupDef, error) {
	d := decbuf{b: rec}
	d.recordType(RecordGroups)
	n := d.count(2) // id, key length
	dst = dst[:0]
	for i := 0; i < n && d.err == nil; i++ {
		id := d.uvarint32()
		key := d.uvarintBytes()
		if d.err != nil {
			break
		}
		dst = append(dst, GroupDef{ID: model.GroupID(id), Key: string(key)})
	}
	return dst, d.done()
}

// DecodeSeries decodes a RecordSeries record, appending to dst[:0]. The
// labels do not alias rec.
func DecodeSeries(rec []byte, dst []SeriesDef) ([]SeriesDef, error) {
	d := decbuf{b: rec}
	d.recordType(RecordSeries)
	n := d.count(4) // ref, group, slot, label count
	dst = dst[:0]
	b := labels.NewScratchBuilder(0)
	// Names and values are added as views of rec; the builder copies them
	// (as Prometheus' record.Decoder does).
	b.SetUnsafeAdd(true)
	for i := 0; i < n && d.err == nil; i++ {
		ref := d.uvarint32()
		group := d.uvarint32()
		slot := d.uvarint32()
		nl := d.count(2) // name length, value length
		b.Reset()
		for j := 0; j < nl && d.err == nil; j++ {
			name := d.uvarintBytes()
			value := d.uvarintBytes()
			if d.err == nil {
				b.Add(yoloString(name), yoloString(value))
			}
		}
		if d.err != nil {
			break
		}
		dst = append(dst, SeriesDef{
			Ref:    model.SeriesRef(ref),
			Group:  model.GroupID(group),
			Slot:   model.Slot(slot),
			Labels: b.Labels(),
		})
	}
	return dst, d.done()
}

// DecodeRows decodes a RecordRows record into dst, reusing dst.Rows and the
// Present and Values slices of its rows. Present gets ceil(Width/64) words.
// After an error dst holds partial results.
func DecodeRows(rec []byte, dst *RowsDef) error {
	d := decbuf{b: rec}
	d.recordType(RecordRows)
	group := d.uvarint32()
	width := d.uvarint32()
	nbytes := bitmapBytes(width)
	nrows := d.count(1 + nbytes) // timestamp, bitmap
	dst.Group, dst.Width = model.GroupID(group), width
	dst.Rows = dst.Rows[:0]
	if d.err != nil {
		return d.done()
	}
	nwords := (int(width) + 63) / 64
	var t int64
	for i := 0; i < nrows; i++ {
		t += d.varint()
		bm := d.bytes(nbytes)
		if d.err != nil {
			break
		}
		if width%8 != 0 && bm[nbytes-1]>>(width%8) != 0 {
			d.err = fmt.Errorf("row %d: bits set beyond width %d", i, width)
			break
		}
		if len(dst.Rows) < cap(dst.Rows) {
			dst.Rows = dst.Rows[:len(dst.Rows)+1]
		} else {
			dst.Rows = append(dst.Rows, Row{})
		}
		row := &dst.Rows[len(dst.Rows)-1]
		row.T = t
		row.Present = grow(row.Present[:0], nwords)
		clear(row.Present)
		n := 0
		for b, v := range bm {
			row.Present[b/8] |= uint64(v) << (8 * (b % 8))
			n += bits.OnesCount8(v)
		}
		vals := d.bytes(8 * n)
		if d.err != nil {
			break
		}
		row.Values = grow(row.Values[:0], n)
		for j := range row.Values {
			row.Values[j] = math.Float64frombits(binary.BigEndian.Uint64(vals[8*j:]))
		}
	}
	return d.done()
}

// DecodeTombstones decodes a RecordTombstones record, appending to dst[:0].
func DecodeTombstones(rec []byte, dst []Tombstone) ([]Tombstone, error) {
	d := decbuf{b: rec}
	d.recordType(RecordTombstones)
	n := d.count(3) // ref, mint, maxt
	dst = dst[:0]
	for i := 0; i < n && d.err == nil; i++ {
		ref := d.uvarint32()
		mint := d.varint()
		span := d.varint()
		if d.err != nil {
			break
		}
		dst = append(dst, Tombstone{Ref: model.SeriesRef(ref), Mint: mint, Maxt: mint + span})
	}
	return dst, d.done()
}

func appendUvarintStr(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

// bitmapBytes is the size of a row's presence bitmap on disk.
func bitmapBytes(width uint32) int { return int((uint64(width) + 7) / 8) }

// grow returns s[:n], reallocating only if cap(s) < n.
func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

func yoloString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

var (
	errShortRecord = errors.New("unexpected end of record")
	errVarint      = errors.New("invalid varint")
)

// decbuf decodes a record. Its error is sticky: after the first failure
// every method returns a zero value, and done reports the first error.
type decbuf struct {
	b   []byte
	err error
}

func (d *decbuf) recordType(want Type) {
	if len(d.b) == 0 {
		d.err = errShortRecord
		return
	}
	if got := Type(d.b[0]); got != want {
		d.err = fmt.Errorf("record type %s, want %s", got, want)
		return
	}
	d.b = d.b[1:]
}

func (d *decbuf) uvarint() uint64 { return readVarint(d, binary.Uvarint) }
func (d *decbuf) varint() int64   { return readVarint(d, binary.Varint) }

// readVarint reads a varint with decode, binary.Uvarint or binary.Varint.
func readVarint[T uint64 | int64](d *decbuf, decode func([]byte) (T, int)) T {
	if d.err != nil {
		return 0
	}
	v, n := decode(d.b)
	if n <= 0 {
		if n == 0 {
			d.err = errShortRecord
		} else {
			d.err = errVarint
		}
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decbuf) uvarint32() uint32 {
	v := d.uvarint()
	if v > math.MaxUint32 {
		d.err = fmt.Errorf("value %d overflows uint32", v)
		return 0
	}
	return uint32(v)
}

// count reads an element count and checks it against the remaining bytes,
// given that every element takes at least minSize bytes, so a corrupt count
// cannot make the caller allocate or loop for long.
func (d *decbuf) count(minSize int) int {
	v := d.uvarint()
	if d.err != nil {
		return 0
	}
	if minSize < 1 {
		minSize = 1
	}
	if v > uint64(len(d.b)/minSize) {
		d.err = fmt.Errorf("count %d exceeds the %d bytes left", v, len(d.b))
		return 0
	}
	return int(v)
}

func (d *decbuf) bytes(n int) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || n > len(d.b) {
		d.err = errShortRecord
		return nil
	}
	b := d.b[:n:n]
	d.b = d.b[n:]
	return b
}

func (d *decbuf) uvarintBytes() []byte {
	n := d.uvarint()
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)) {
		d.err = errShortRecord
		return nil
	}
	return d.bytes(int(n))
}

// done returns the sticky error, or an error if bytes are left over.
func (d *decbuf) done() error {
	if d.err != nil {
		return fmt.Errorf("decode record: %w", d.err)
	}
	if len(d.b) != 0 {
		return fmt.Errorf("decode record: %d unexpected trailing bytes", len(d.b))
	}
	return nil
}
