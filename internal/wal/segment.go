package wal

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	crc "github.com/aerie-db/aerie/internal/checksum"
	"github.com/aerie-db/aerie/internal/fileutil"
)

// On-disk format constants. docs/format/wal.md lists them; keep both in step.
const (
	// SegmentMagic starts every segment and checkpoint file.
	SegmentMagic uint32 = 0xAE12E0A1
	// SegmentVersion is the segment format version this package writes:
	// 2, frames of zstd-compressed batches. It also reads version 1, a
	// frame per uncompressed record.
	SegmentVersion = 2
	// SegmentHeaderSize is the size of the file header: magic (4 bytes),
	// version (1 byte), 3 reserved bytes that are zero.
	SegmentHeaderSize = 8
	// RecordHeaderSize is the size of a frame's header: data length (4
	// bytes) and CRC32C of the data (4 bytes).
	RecordHeaderSize = 8
	// MaxRecordSize is the largest payload a record may have.
	MaxRecordSize = 1 << 30
	// CheckpointPrefix starts the file name of a checkpoint; the rest is the
	// 8-digit index of the first segment it does not cover.
	CheckpointPrefix = "checkpoint."
)

// segmentFile is what the writer needs of a segment file. Tests substitute
// faulty implementations.
type segmentFile interface {
	io.Writer
	Sync() error
	Close() error
	Name() string
}

// createFileFunc creates a new segment file; it must fail if name exists.
type createFileFunc func(name string) (segmentFile, error)

func osCreate(name string) (segmentFile, error) {
	return os.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o666)
}

// checksum is the one CRC32C helper of the package. It is internal/checksum's.
func checksum(b []byte) uint32 { return crc.CRC32C(b) }

func appendSegmentHeader(dst []byte) []byte {
	dst = binary.BigEndian.AppendUint32(dst, SegmentMagic)
	return append(dst, SegmentVersion, 0, 0, 0)
}

func checkRecordSize(rec []byte) error {
	if len(rec) == 0 {
		return errors.New("empty record")
	}
	if len(rec) > MaxRecordSize {
		return fmt.Errorf("record of %d bytes exceeds MaxRecordSize %d", len(rec), MaxRecordSize)
	}
	return nil
}

// CorruptionError reports a bad segment or checkpoint file: a header or
// record that fails its checks at byte Offset of file Segment. Repair takes
// it.
type CorruptionError struct {
	Segment string // file path
	Offset  int64  // of the segment header or of the bad record's framing header
	Err     error
}

func (e *CorruptionError) Error() string {
	return fmt.Sprintf("wal corruption in %s at byte offset %d: %v", e.Segment, e.Offset, e.Err)
}

func (e *CorruptionError) Unwrap() error { return e.Err }

var (
	errTruncatedHeader = errors.New("truncated segment header")
	errTruncatedRecord = errors.New("truncated record")
	errRecordLength    = errors.New("invalid record length")
	errChecksum        = errors.New("record checksum mismatch")
)

// File names.

// SegmentName returns the path of segment index i in dir.
func SegmentName(dir string, i int) string {
	return filepath.Join(dir, fmt.Sprintf("%08d", i))
}

// CheckpointName returns the path of the checkpoint that covers the
// segments before index i.
func CheckpointName(dir string, i int) string {
	return filepath.Join(dir, fmt.Sprintf("%s%08d", CheckpointPrefix, i))
}

// parseIndex parses an 8-digit decimal index.
func parseIndex(s string) (int, bool) {
	if len(s) != 8 {
		return 0, false
	}
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	i, err := strconv.Atoi(s)
	return i, err == nil
}

// dirListing is what a WAL directory holds, indexes sorted ascending.
type dirListing struct {
	segments    []int
	checkpoints []int
	tmp         []string // names of unfinished checkpoints
}

func listDir(dir string) (dirListing, error) {
	var l dirListing
	ents, err := os.ReadDir(dir)
	if err != nil {
		return l, err
	}
	for _, e := range ents {
		name := e.Name()
		if i, ok := parseIndex(name); ok {
			l.segments = append(l.segments, i)
			continue
		}
		if rest, ok := strings.CutPrefix(name, CheckpointPrefix); ok {
			if i, ok := parseIndex(rest); ok {
				l.checkpoints = append(l.checkpoints, i)
			} else if strings.HasSuffix(rest, ".tmp") {
				l.tmp = append(l.tmp, name)
			}
		}
	}
	slices.Sort(l.segments)
	slices.Sort(l.checkpoints)
	return l, nil
}

func syncDir(dir string) error {
	if err := fileutil.SyncDir(dir); err != nil {
		return fmt.Errorf("fsync directory %s: %w", dir, err)
	}
	return nil
}

// frameReader reads the frames of one segment or checkpoint file. It keeps
// its buffers between files, so replay memory is bounded by the largest
// frame, not by the size of the log.
type frameReader struct {
	br      *bufio.Reader
	size    int64 // bytes of the file to read
	off     int64 // offset of the next frame
	version byte  // of the file, from its header
	hdr     [RecordHeaderSize]byte
	buf     []byte // a frame's data
	raw     []byte // a version 2 frame's decompressed payload
}

func (fr *frameReader) reset(r io.Reader, size int64) {
	if fr.br == nil {
		fr.br = bufio.NewReaderSize(r, 64<<10)
	} else {
		fr.br.Reset(r)
	}
	fr.size, fr.off = size, 0
}

// readHeader reads and checks the file header.
func (fr *frameReader) readHeader() error {
	var h [SegmentHeaderSize]byte
	if fr.size < SegmentHeaderSize {
		return errTruncatedHeader
	}
	if _, err := io.ReadFull(fr.br, h[:]); err != nil {
		return ioErr{err}
	}
	fr.off = SegmentHeaderSize
	fr.version = h[4]
	return checkSegmentHeader(h[:])
}

func checkSegmentHeader(h []byte) error {
	if m := binary.BigEndian.Uint32(h); m != SegmentMagic {
		return fmt.Errorf("bad magic %#08x, want %#08x", m, SegmentMagic)
	}
	switch v := h[4]; v {
	case 1, 2:
	default:
		return fmt.Errorf("unsupported segment format version %d (this build reads 1 to %d)", v, SegmentVersion)
	}
	if h[5] != 0 || h[6] != 0 || h[7] != 0 {
		return errors.New("reserved header bytes are not zero")
	}
	return nil
}

// payload returns the records of a frame's data as a payload that
// checkPayload accepted (records prefixed by their uvarint lengths), or
// for version 1, where the data is the record, nil and the record itself.
func (fr *frameReader) payload(data []byte) (payload, rec []byte, err error) {
	if fr.version == 1 {
		return nil, data, nil
	}
	payload, fr.raw, err = decodeFrame(data, fr.raw)
	if err != nil {
		return nil, nil, err
	}
	if cap(fr.raw) > 64<<20 {
		// Do not pin the memory of one huge frame; payload stays valid
		// until the caller is done with it.
		fr.raw = nil
	}
	if err := checkPayload(payload); err != nil {
		return nil, nil, err
	}
	return payload, nil, nil
}

// ioErr marks a failure to read the file, as opposed to bad content.
type ioErr struct{ err error }

func (e ioErr) Error() string { return e.err.Error() }
func (e ioErr) Unwrap() error { return e.err }

// next returns the data of the next frame, io.EOF at a clean end, an ioErr
// if reading failed, or one of errTruncatedRecord, errRecordLength,
// errChecksum for bad content at frame offset start. After errChecksum the reader stands at the
// end of the bad frame, so scanning can go on.
func (fr *frameReader) next() (rec []byte, start int64, err error) {
	start = fr.off
	left := fr.size - fr.off
	if left == 0 {
		return nil, start, io.EOF
	}
	if left < RecordHeaderSize {
		return nil, start, errTruncatedRecord
	}
	if _, err := io.ReadFull(fr.br, fr.hdr[:]); err != nil {
		return nil, start, ioErr{err}
	}
	n := int64(binary.BigEndian.Uint32(fr.hdr[:4]))
	maxLen := int64(maxFrameData)
	if fr.version == 1 {
		maxLen = MaxRecordSize
	}
	if n == 0 || n > maxLen {
		return nil, start, errRecordLength
	}
	if n > left-RecordHeaderSize {
		return nil, start, errTruncatedRecord
	}
	if int64(cap(fr.buf)) < n {
		fr.buf = make([]byte, max(n, 2*int64(cap(fr.buf))))
	}
	fr.buf = fr.buf[:n]
	if _, err := io.ReadFull(fr.br, fr.buf); err != nil {
		return nil, start, ioErr{err}
	}
	fr.off += RecordHeaderSize + n
	if checksum(fr.buf) != binary.BigEndian.Uint32(fr.hdr[4:]) {
		return nil, start, errChecksum
	}
	return fr.buf, start, nil
}
