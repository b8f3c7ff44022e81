package wal

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// copyDir copies the flat directory src to a new temporary directory.
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	ents, err := os.ReadDir(src)
	require.NoError(t, err)
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dst, e.Name()), b, 0o666))
	}
	return dst
}

// twoSegments writes records into segments 1 and 2 and returns them.
func twoSegments(t *testing.T) (dir string, want [][]byte) {
	dir = t.TempDir()
	w := openT(t, dir, Options{})
	for i := range 10 {
		if i == 5 {
			_, err := w.Cut()
			require.NoError(t, err)
		}
		r := testRecord(i, 12+i)
		want = append(want, r)
		require.NoError(t, w.Log(r))
	}
	require.NoError(t, w.Close())
	return dir, want
}

// TestTornTail truncates the last segment at every offset inside its last
// record: Replay returns all earlier records, truncates the file to the
// last good record, and a later Log lands after them.
func TestTornTail(t *testing.T) {
	src, want := twoSegments(t)
	offs := frameOffsets(t, SegmentName(src, 2))
	start, end := offs[len(offs)-2], offs[len(offs)-1]
	for cut := start; cut < end; cut++ {
		t.Run(fmt.Sprintf("cut=%d", cut), func(t *testing.T) {
			dir := copyDir(t, src)
			seg := SegmentName(dir, 2)
			require.NoError(t, os.Truncate(seg, cut))
			checkTruncatedTail(t, dir, seg, start, want[:len(want)-1])
		})
	}
}

// checkTruncatedTail opens dir, replays (expecting want and seg truncated
// to size), logs one more record and checks it replays after a reopen.
func checkTruncatedTail(t *testing.T, dir, seg string, size int64, want [][]byte) {
	t.Helper()
	w := openT(t, dir, Options{})
	got := mustReplay(t, w)
	require.Equal(t, want, recs(got))
	st, err := os.Stat(seg)
	require.NoError(t, err)
	require.Equal(t, size, st.Size())
	require.NoError(t, w.Log([]byte("later")))
	require.NoError(t, w.Close())

	w = openT(t, dir, Options{})
	defer w.Close()
	got = mustReplay(t, w)
	require.Equal(t, append(append([][]byte(nil), want...), []byte("later")), recs(got))
}

// TestCorruptionNonLastSegment flips every byte of segment 1 (not the last):
// Replay must fail with a *CorruptionError naming the file and the offset
// of the header or of the record holding the byte.
func TestCorruptionNonLastSegment(t *testing.T) {
	src, _ := twoSegments(t)
	orig, err := os.ReadFile(SegmentName(src, 1))
	require.NoError(t, err)
	offs := frameOffsets(t, SegmentName(src, 1))
	for pos := 0; pos < len(orig); pos++ {
		wantOff := int64(0)
		for _, o := range offs[:len(offs)-1] {
			if int64(pos) >= o {
				wantOff = o
			}
		}
		for _, flip := range []byte{0x01, 0x80} {
			dir := copyDir(t, src)
			seg := SegmentName(dir, 1)
			b := bytes.Clone(orig)
			b[pos] ^= flip
			require.NoError(t, os.WriteFile(seg, b, 0o666))

			w := openT(t, dir, Options{})
			_, err := replayAll(w)
			require.NoError(t, w.Close())
			var cerr *CorruptionError
			require.True(t, errors.As(err, &cerr), "pos %d flip %#x: %v", pos, flip, err)
			require.Equal(t, seg, cerr.Segment)
			require.Equal(t, wantOff, cerr.Offset, "pos %d flip %#x: %v", pos, flip, err)
			require.Contains(t, err.Error(), seg)
			require.Contains(t, err.Error(), fmt.Sprintf("offset %d", wantOff))
			after, err := os.ReadFile(seg)
			require.NoError(t, err)
			require.Equal(t, b, after, "corruption must not be changed without Repair")
		}
	}
}

// TestCorruptionLastSegment flips bytes in the last segment: a flip in the
// last record is a torn tail (truncated); a flip in the checksum or payload
// of an earlier record, followed by valid records, is corruption. A flipped
// length that points past the end of the file cannot be told from a torn
// write (see the package doc).
func TestCorruptionLastSegment(t *testing.T) {
	src, want := twoSegments(t)
	orig, err := os.ReadFile(SegmentName(src, 2))
	require.NoError(t, err)
	offs := frameOffsets(t, SegmentName(src, 2))
	last := offs[len(offs)-2]
	for pos := offs[0]; pos < int64(len(orig)); pos++ {
		dir := copyDir(t, src)
		seg := SegmentName(dir, 2)
		b := bytes.Clone(orig)
		b[pos] ^= 0x10
		require.NoError(t, os.WriteFile(seg, b, 0o666))
		if pos >= last {
			checkTruncatedTail(t, dir, seg, last, want[:len(want)-1])
			continue
		}
		frame := offs[0]
		for _, o := range offs {
			if o <= pos {
				frame = o
			}
		}
		w := openT(t, dir, Options{})
		_, err := replayAll(w)
		require.NoError(t, w.Close())
		var cerr *CorruptionError
		if pos < frame+4 && err == nil { // length field
			st, err := os.Stat(seg)
			require.NoError(t, err)
			require.Equal(t, frame, st.Size(), "pos %d", pos)
			continue
		}
		require.True(t, errors.As(err, &cerr), "pos %d: %v", pos, err)
		require.Equal(t, seg, cerr.Segment)
		require.Equal(t, frame, cerr.Offset)
	}
}

func TestTornHeader(t *testing.T) {
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"partial", appendSegmentHeader(nil)[:3]},
		{"zeros", make([]byte, SegmentHeaderSize+20)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeWAL(t, dir, Options{}, [][]byte{[]byte("a")})
			w := openT(t, dir, Options{})
			_, err := w.Cut()
			require.NoError(t, err)
			require.NoError(t, w.Close())
			seg := SegmentName(dir, 2)
			require.NoError(t, os.WriteFile(seg, tc.data, 0o666))
			checkTruncatedTail(t, dir, seg, SegmentHeaderSize, [][]byte{[]byte("a")})
		})
	}
}

func TestBadHeader(t *testing.T) {
	for _, tc := range []struct {
		name string
		pos  int
		val  byte
		msg  string
	}{
		{"magic", 0, 0x00, "bad magic"},
		{"version", 4, 3, "unsupported segment format version 3"},
		{"reserved", 6, 1, "reserved"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeWAL(t, dir, Options{}, [][]byte{[]byte("a")})
			seg := SegmentName(dir, 1)
			b, err := os.ReadFile(seg)
			require.NoError(t, err)
			b[tc.pos] = tc.val
			require.NoError(t, os.WriteFile(seg, b, 0o666))
			w := openT(t, dir, Options{})
			defer w.Close()
			_, err = replayAll(w)
			var cerr *CorruptionError
			require.ErrorAs(t, err, &cerr)
			require.Equal(t, int64(0), cerr.Offset)
			require.ErrorContains(t, err, tc.msg)
		})
	}
}

func TestRepair(t *testing.T) {
	dir := t.TempDir()
	w := openT(t, dir, Options{})
	var want [][]byte
	for i := range 15 {
		if i%5 == 0 && i > 0 {
			_, err := w.Cut()
			require.NoError(t, err)
		}
		r := testRecord(i, 20)
		want = append(want, r)
		require.NoError(t, w.Log(r))
	}
	require.NoError(t, w.Close())
	// Corrupt the third record of segment 2 (records 5..9).
	seg := SegmentName(dir, 2)
	offs := frameOffsets(t, seg)
	b, err := os.ReadFile(seg)
	require.NoError(t, err)
	b[offs[2]+RecordHeaderSize+3] ^= 0xff
	require.NoError(t, os.WriteFile(seg, b, 0o666))

	w = openT(t, dir, Options{})
	_, err = replayAll(w)
	var cerr *CorruptionError
	require.ErrorAs(t, err, &cerr)
	require.Equal(t, offs[2], cerr.Offset)
	require.NoError(t, w.Repair(err))
	first, last, err := w.Segments()
	require.NoError(t, err)
	require.Equal(t, [2]int{1, 2}, [2]int{first, last})
	got := mustReplay(t, w)
	require.Equal(t, want[:7], recs(got))
	require.NoError(t, w.Log([]byte("after repair")))
	require.NoError(t, w.Close())

	w = openT(t, dir, Options{})
	defer w.Close()
	got = mustReplay(t, w)
	require.Equal(t, append(want[:7:7], []byte("after repair")), recs(got))
	require.Equal(t, 3, got[len(got)-1].seg)

	require.Error(t, w.Repair(errors.New("not corruption")))
	require.Error(t, w.Repair(&CorruptionError{Segment: "/elsewhere/00000001"}))
}

func TestRepairActiveSegment(t *testing.T) {
	dir := t.TempDir()
	writeWAL(t, dir, Options{}, [][]byte{[]byte("a"), []byte("b")})
	w := openT(t, dir, Options{})
	defer w.Close()
	require.NoError(t, w.Log([]byte("c"))) // segment 2 is active
	offs := frameOffsets(t, SegmentName(dir, 1))
	require.NoError(t, w.Repair(&CorruptionError{Segment: SegmentName(dir, 1), Offset: offs[1], Err: errChecksum}))
	require.NoError(t, w.Log([]byte("d")))
	got := mustReplay(t, w)
	require.Equal(t, []replayed{{1, []byte("a")}, {2, []byte("d")}}, got)
}
