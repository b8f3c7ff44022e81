package wal

import (
	"bytes"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite testdata/segment_v1, testdata/segment_v2 and the fuzz seed corpora")

// fixtureRecords is one record of every type, as in testdata/segment_v1
// and testdata/segment_v2.
func fixtureRecords() [][]byte {
	sf := specialFloats()
	return [][]byte{
		AppendGroups(nil, []GroupDef{{1, `{job="api"}`}, {2, ""}}),
		AppendSeries(nil, testSeries()),
		AppendRows(nil, testRows()),
		AppendRows(nil, &RowsDef{Group: 2, Width: uint32(len(sf)), Rows: []Row{
			{T: 1700000000000, Present: []uint64{1<<len(sf) - 1}, Values: sf},
			{T: 1700000015000, Present: []uint64{0b10}, Values: []float64{math.Float64frombits(staleNaN)}},
		}}),
		AppendTombstones(nil, []Tombstone{{1, 0, 1000}, {2, math.MinInt64, math.MaxInt64}}),
	}
}

// appendFrameV1 appends rec as a version 1 frame: the framing header
// (length, CRC32C of the record), then the record as is. This package no
// longer writes version 1; the function makes its fixtures.
func appendFrameV1(dst, rec []byte) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(rec)))
	dst = binary.BigEndian.AppendUint32(dst, checksum(rec))
	return append(dst, rec...)
}

// fixtureSegmentV1 is a version 1 segment: a frame per record.
func fixtureSegmentV1() []byte {
	b := binary.BigEndian.AppendUint32(nil, SegmentMagic)
	b = append(b, 1, 0, 0, 0)
	for _, r := range fixtureRecords() {
		b = appendFrameV1(b, r)
	}
	return b
}

// fixtureSegmentV2 is a version 2 segment of three frames: definitions and
// rows as Log writes them (Snappy), and rows and tombstones as a checkpoint
// packs them (zstd). Stored frames are covered by FuzzFrame and
// TestFrameCodecs.
func fixtureSegmentV2() []byte {
	rs := fixtureRecords()
	b := appendSegmentHeader(nil)
	b, _ = appendBatch(b, nil, rs[:2])
	b, _ = appendBatch(b, nil, rs[2:3])
	var payload []byte
	for _, r := range rs[3:] {
		payload = appendPayloadRecord(payload, r)
	}
	return appendFrame(b, payload, FrameZstd)
}

// TestFormatFixtures checks that the fixture of every version still
// replays and decodes. Version 1 must also still be what its encoder
// produces, byte for byte. Version 2's bytes are not compared: a newer
// zstd may compress the same payload differently, in the same format.
func TestFormatFixtures(t *testing.T) {
	for _, tc := range []struct {
		path string
		make func() []byte
		same bool
	}{
		{"testdata/segment_v1", fixtureSegmentV1, true},
		{"testdata/segment_v2", fixtureSegmentV2, false},
	} {
		t.Run(tc.path, func(t *testing.T) {
			if *update {
				require.NoError(t, os.WriteFile(tc.path, tc.make(), 0o666))
			}
			fixture, err := os.ReadFile(tc.path)
			require.NoError(t, err)
			if tc.same {
				require.Equal(t, tc.make(), fixture, "encoders changed a released format; add a new version instead")
			}
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(SegmentName(dir, 1), fixture, 0o666))
			w := openT(t, dir, Options{})
			defer w.Close()
			got := mustReplay(t, w)
			require.Equal(t, fixtureRecords(), recs(got))
			for _, r := range got {
				require.NoError(t, decodeAny(r.rec))
			}
		})
	}
	if *update {
		writeSeedCorpora(t)
	}
}

func TestSeedCorporaPresent(t *testing.T) {
	for _, name := range []string{"FuzzRecords", "FuzzSegmentReplay", "FuzzFrame"} {
		m, err := filepath.Glob(filepath.Join("testdata/fuzz", name, "*"))
		require.NoError(t, err)
		require.NotEmpty(t, m, "run go test -run TestFormatFixtures -update")
	}
}

func writeSeedCorpora(t *testing.T) {
	write := func(target, name string, data []byte) {
		dir := filepath.Join("testdata/fuzz", target)
		require.NoError(t, os.MkdirAll(dir, 0o777))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name),
			fmt.Appendf(nil, "go test fuzz v1\n[]byte(%q)\n", data), 0o666))
	}
	for i, r := range fixtureRecords() {
		write("FuzzRecords", fmt.Sprintf("%d-%s", i, RecordType(r)), r)
	}
	write("FuzzRecords", "empty-rows", AppendRows(nil, &RowsDef{}))
	seg := fixtureSegmentV1()
	write("FuzzSegmentReplay", "valid", seg)
	write("FuzzSegmentReplay", "torn", seg[:len(seg)-5])
	write("FuzzSegmentReplay", "header-only", seg[:SegmentHeaderSize])
	flipped := bytes.Clone(seg)
	flipped[SegmentHeaderSize+RecordHeaderSize+1] ^= 1
	write("FuzzSegmentReplay", "bad-first-record", flipped)
	write("FuzzSegmentReplay", "zero-tail", append(bytes.Clone(seg), make([]byte, 64)...))
	seg = fixtureSegmentV2()
	write("FuzzSegmentReplay", "v2-valid", seg)
	write("FuzzSegmentReplay", "v2-torn", seg[:len(seg)-5])
	write("FuzzSegmentReplay", "v2-header-only", seg[:SegmentHeaderSize])
	write("FuzzSegmentReplay", "v2-zero-tail", append(bytes.Clone(seg), make([]byte, 64)...))
	for i, f := range fixtureFrames() {
		write("FuzzFrame", fmt.Sprintf("%d", i), f)
	}
}

// fixtureFrames are the data of the frames of fixtureSegmentV2, without
// their framing headers.
func fixtureFrames() [][]byte {
	seg := fixtureSegmentV2()
	var out [][]byte
	for off := SegmentHeaderSize; off < len(seg); {
		n := int(binary.BigEndian.Uint32(seg[off:]))
		out = append(out, seg[off+RecordHeaderSize:off+RecordHeaderSize+n])
		off += RecordHeaderSize + n
	}
	return out
}

// FuzzFrame decodes arbitrary bytes as the data of a version 2 frame
// (never panicking, never allocating more than the data can decompress
// to), and checks that any records decoded frame again deterministically
// to data that decode to the same records. It also frames the bytes as a
// payload of one record and checks the round trip.
func FuzzFrame(f *testing.F) {
	for _, d := range fixtureFrames() {
		f.Add(d)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 0 {
			enc, _ := appendBatch(nil, nil, [][]byte{data, data})
			requireDeterministic(t, enc, first(appendBatch(nil, nil, [][]byte{data, data})))
			got := frameRecords(t, enc[RecordHeaderSize:])
			require.Equal(t, [][]byte{data, data}, got)
			require.Equal(t, checksum(enc[RecordHeaderSize:]), binary.BigEndian.Uint32(enc[4:]))
		}
		payload, _, err := decodeFrame(data, nil)
		if err != nil {
			return
		}
		if size, n := binary.Uvarint(data[1:]); n > 0 && data[0] == FrameZstd {
			require.LessOrEqual(t, size, zstdMaxRatio*uint64(len(data)))
		}
		if checkPayload(payload) != nil {
			return
		}
		var rs [][]byte
		for p := payload; len(p) > 0; {
			var r []byte
			r, p = nextRecord(p)
			rs = append(rs, bytes.Clone(r))
		}
		enc, _ := appendBatch(nil, nil, rs)
		require.Equal(t, rs, frameRecords(t, enc[RecordHeaderSize:]))
	})
}

func first[A, B any](a A, _ B) A { return a }

// frameRecords decodes the data of a version 2 frame into its records.
func frameRecords(t *testing.T, data []byte) [][]byte {
	t.Helper()
	payload, _, err := decodeFrame(data, nil)
	require.NoError(t, err)
	require.NoError(t, checkPayload(payload))
	var rs [][]byte
	for len(payload) > 0 {
		var r []byte
		r, payload = nextRecord(payload)
		rs = append(rs, bytes.Clone(r))
	}
	return rs
}

// FuzzRecords decodes arbitrary bytes with every decoder (never panicking)
// and checks that whatever decodes re-encodes deterministically to a fixed
// point: decode(encode(x)) == x.
func FuzzRecords(f *testing.F) {
	for _, r := range fixtureRecords() {
		f.Add(r)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if gs, err := DecodeGroups(data, nil); err == nil {
			requireFixedPoint(t, gs, AppendGroups, DecodeGroups, func(a, b GroupDef) bool { return a == b })
		}
		if ss, err := DecodeSeries(data, nil); err == nil {
			requireFixedPoint(t, ss, AppendSeries, DecodeSeries, func(a, b SeriesDef) bool {
				return a.Ref == b.Ref && a.Group == b.Group && a.Slot == b.Slot && labels.Equal(a.Labels, b.Labels)
			})
		}
		var r RowsDef
		if err := DecodeRows(data, &r); err == nil {
			enc := AppendRows(nil, &r)
			requireDeterministic(t, enc, AppendRows(nil, &r))
			var r2 RowsDef
			require.NoError(t, DecodeRows(enc, &r2))
			rowsEqual(t, &r, &r2)
			require.Equal(t, enc, AppendRows(nil, &r2))
		}
		if ts, err := DecodeTombstones(data, nil); err == nil {
			requireFixedPoint(t, ts, AppendTombstones, DecodeTombstones, func(a, b Tombstone) bool { return a == b })
		}
		RecordType(data)
	})
}

func requireDeterministic(t *testing.T, a, b []byte) {
	t.Helper()
	require.Equal(t, a, b, "encoding is not deterministic")
}

// requireFixedPoint checks that xs, decoded from some bytes, encode
// deterministically and decode to elements equal to theirs.
func requireFixedPoint[T any](t *testing.T, xs []T, enc func([]byte, []T) []byte, dec func([]byte, []T) ([]T, error), equal func(a, b T) bool) {
	t.Helper()
	b := enc(nil, xs)
	requireDeterministic(t, b, enc(nil, xs))
	again, err := dec(b, nil)
	require.NoError(t, err)
	require.Len(t, again, len(xs))
	for i := range xs {
		require.True(t, equal(xs[i], again[i]), "element %d: %+v, decoded again %+v", i, xs[i], again[i])
	}
}

// FuzzSegmentReplay replays arbitrary bytes as a segment file, both as the
// last segment (torn tails are truncated) and as an earlier one (anything
// bad is corruption). Replay returns records or an error, never panics;
// after a successful replay of the last segment, appending works.
func FuzzSegmentReplay(f *testing.F) {
	for _, seg := range [][]byte{fixtureSegmentV1(), fixtureSegmentV2()} {
		f.Add(seg)
		f.Add(seg[:len(seg)-3])
	}
	f.Add([]byte{})
	// fsync proves nothing here and dominates the cost of an iteration.
	noSync := &fileHooks{sync: func(*os.File) error { return nil }}
	f.Fuzz(func(t *testing.T, data []byte) {
		// As an earlier segment: read-only, strict.
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(SegmentName(dir, 1), data, 0o666))
		require.NoError(t, os.WriteFile(SegmentName(dir, 2), appendSegmentHeader(nil), 0o666))
		w := openT(t, dir, Options{})
		_, err := replayAll(w)
		require.NoError(t, w.Close())
		var cerr *CorruptionError
		if err != nil {
			require.True(t, errors.As(err, &cerr), "%v", err)
			require.Equal(t, SegmentName(dir, 1), cerr.Segment)
			require.GreaterOrEqual(t, cerr.Offset, int64(0))
			require.LessOrEqual(t, cerr.Offset, int64(len(data)))
		}
		after, rerr := os.ReadFile(SegmentName(dir, 1))
		require.NoError(t, rerr)
		require.Equal(t, data, after)

		// As the last segment.
		dir = t.TempDir()
		require.NoError(t, os.WriteFile(SegmentName(dir, 1), data, 0o666))
		w = openHooked(t, dir, Options{}, noSync)
		got, err := replayAll(w)
		if err != nil {
			require.NoError(t, w.Close())
			require.True(t, errors.As(err, &cerr), "%v", err)
			return
		}
		require.NoError(t, w.Log([]byte("appended")))
		require.NoError(t, w.Close())
		w = openT(t, dir, Options{})
		defer w.Close()
		got2 := mustReplay(t, w)
		require.Equal(t, append(recs(got), []byte("appended")), recs(got2))
	})
}
