package graphitebench

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
)

// Whisper's file layout (whisper.py, big-endian): a 16-byte header
// (aggregation type, max retention, xFilesFactor as float32, archive
// count), 12 bytes of (offset, seconds per point, points) per archive,
// then each archive's ring of 12-byte points (uint32 interval, float64
// value); a slot whose interval is 0 holds no point.
const (
	whisperHeader  = 16
	whisperArchive = 12
	whisperPoint   = 12
	// maxWhisperArchiveBytes bounds what countWhisper reads of a file.
	maxWhisperArchiveBytes = 64 << 20
)

// whisperPath is where carbon keeps a metric's file under dir.
func whisperPath(dir, metric string) string {
	return filepath.Join(dir, filepath.FromSlash(strings.ReplaceAll(metric, ".", "/"))+".wsp")
}

// countWhisper reads the finest archive of a whisper file and returns the
// points whose interval is in [from, until] and the sum of their values.
// A missing file has no points.
func countWhisper(path string, from, until int64) (n int64, sum float64, err error) {
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, err
	}
	return countArchive(path, b, from, until)
}

// countArchive is countWhisper over the file's bytes b.
func countArchive(path string, b []byte, from, until int64) (n int64, sum float64, err error) {
	if len(b) < whisperHeader+whisperArchive {
		return 0, 0, fmt.Errorf("%s: %d bytes, shorter than a header with one archive", path, len(b))
	}
	if cnt := binary.BigEndian.Uint32(b[12:16]); cnt == 0 {
		return 0, 0, fmt.Errorf("%s: no archives", path)
	}
	off := int64(binary.BigEndian.Uint32(b[16:20]))
	points := int64(binary.BigEndian.Uint32(b[24:28]))
	end := off + points*whisperPoint
	if points*whisperPoint > maxWhisperArchiveBytes || off < whisperHeader+whisperArchive || end > int64(len(b)) {
		return 0, 0, fmt.Errorf("%s: archive 0 at byte %d with %d points: outside the file's %d bytes", path, off, points, len(b))
	}
	for i := off; i < end; i += whisperPoint {
		ts := int64(binary.BigEndian.Uint32(b[i:]))
		if ts == 0 || ts < from || ts > until {
			continue
		}
		n++
		sum += math.Float64frombits(binary.BigEndian.Uint64(b[i+4:]))
	}
	return n, sum, nil
}
