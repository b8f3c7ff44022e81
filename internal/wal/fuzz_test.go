package wal

import (
	"bytes"
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

var update = flag.Bool("update", false, "rewrite testdata/segment_v1 and the fuzz seed corpora")

// fixtureRecords is one record of every type, as in testdata/segment_v1.
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

func fixtureSegment() []byte {
	b := appendSegmentHeader(nil)
	for _, r := range fixtureRecords() {
		b = appendFrame(b, r)
	}
	return b
}

// TestFormatV1Fixture checks that the version 1 fixture still replays and
// decodes, and that today's encoders still produce it byte for byte.
func TestFormatV1Fixture(t *testing.T) {
	const path = "testdata/segment_v1"
	if *update {
		require.NoError(t, os.WriteFile(path, fixtureSegment(), 0o666))
		writeSeedCorpora(t)
	}
	fixture, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, fixtureSegment(), fixture, "encoders changed the v1 format; add a new version instead")

	dir := t.TempDir()
	require.NoError(t, os.WriteFile(SegmentName(dir, 1), fixture, 0o666))
	w := openT(t, dir, Options{})
	defer w.Close()
	got := mustReplay(t, w)
	require.Equal(t, fixtureRecords(), recs(got))
	for _, r := range got {
		require.NoError(t, decodeAny(r.rec))
	}
}

func TestSeedCorporaPresent(t *testing.T) {
	for _, name := range []string{"FuzzRecords", "FuzzSegmentReplay"} {
		m, err := filepath.Glob(filepath.Join("testdata/fuzz", name, "*"))
		require.NoError(t, err)
		require.NotEmpty(t, m, "run go test -run TestFormatV1Fixture -update")
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
	seg := fixtureSegment()
	write("FuzzSegmentReplay", "valid", seg)
	write("FuzzSegmentReplay", "torn", seg[:len(seg)-5])
	write("FuzzSegmentReplay", "header-only", seg[:SegmentHeaderSize])
	flipped := bytes.Clone(seg)
	flipped[SegmentHeaderSize+RecordHeaderSize+1] ^= 1
	write("FuzzSegmentReplay", "bad-first-record", flipped)
	write("FuzzSegmentReplay", "zero-tail", append(bytes.Clone(seg), make([]byte, 64)...))
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
	seg := fixtureSegment()
	f.Add(seg)
	f.Add(seg[:len(seg)-3])
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
