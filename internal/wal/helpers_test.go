package wal

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

type replayed struct {
	seg int
	rec []byte
}

// replayAll replays w and returns copies of the records.
func replayAll(w *WAL) ([]replayed, error) {
	var out []replayed
	err := w.Replay(func(seg int, rec []byte) error {
		out = append(out, replayed{seg, bytes.Clone(rec)})
		return nil
	})
	return out, err
}

// mustReplay replays w, failing t on an error.
func mustReplay(t *testing.T, w *WAL) []replayed {
	t.Helper()
	got, err := replayAll(w)
	require.NoError(t, err)
	return got
}

func recs(rs []replayed) [][]byte {
	out := make([][]byte, len(rs))
	for i, r := range rs {
		out[i] = r.rec
	}
	return out
}

func openT(t *testing.T, dir string, opts Options) *WAL {
	t.Helper()
	w, err := Open(dir, opts)
	require.NoError(t, err)
	return w
}

// testRecord returns a distinct record of roughly size bytes.
func testRecord(i, size int) []byte {
	b := fmt.Appendf(nil, "rec-%d-", i)
	for len(b) < size {
		b = append(b, byte('a'+(i+len(b))%26))
	}
	return b
}

// logAll logs each record as its own batch and closes the WAL.
func writeWAL(t *testing.T, dir string, opts Options, rs [][]byte) {
	t.Helper()
	w := openT(t, dir, opts)
	for _, r := range rs {
		require.NoError(t, w.Log(r))
	}
	require.NoError(t, w.Close())
}

// frameOffsets returns the offsets of the frames in a well-formed segment
// file, plus the file size as a final entry.
func frameOffsets(t *testing.T, path string) []int64 {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var offs []int64
	off := int64(SegmentHeaderSize)
	for off < int64(len(b)) {
		offs = append(offs, off)
		off += RecordHeaderSize + int64(binary.BigEndian.Uint32(b[off:]))
	}
	require.Equal(t, int64(len(b)), off, "frames of %s", path)
	return append(offs, off)
}

// hookFile is a faulty segment file: the hooks may fail, shorten or delay
// writes and fsyncs (like Prometheus' faultySegmentFile).
type hookFile struct {
	*os.File
	h *fileHooks
}

type fileHooks struct {
	mu    sync.Mutex
	write func(f *os.File, p []byte) (int, error) // nil: plain write
	sync  func(f *os.File) error                  // nil: plain fsync
}

func (f *hookFile) Write(p []byte) (int, error) {
	f.h.mu.Lock()
	fn := f.h.write
	f.h.mu.Unlock()
	if fn != nil {
		return fn(f.File, p)
	}
	return f.File.Write(p)
}

func (f *hookFile) Sync() error {
	f.h.mu.Lock()
	fn := f.h.sync
	f.h.mu.Unlock()
	if fn != nil {
		return fn(f.File)
	}
	return f.File.Sync()
}

func openHooked(t *testing.T, dir string, opts Options, h *fileHooks) *WAL {
	t.Helper()
	w, err := open(dir, opts, func(name string) (segmentFile, error) {
		f, err := osCreate(name)
		if err != nil {
			return nil, err
		}
		return &hookFile{File: f.(*os.File), h: h}, nil
	})
	require.NoError(t, err)
	return w
}

// isHeader reports whether p is the segment header write.
func isHeader(p []byte) bool {
	return len(p) == SegmentHeaderSize && binary.BigEndian.Uint32(p) == SegmentMagic
}
