package wal

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/stretchr/testify/require"
)

const staleNaN = 0x7ff0000000000002 // Prometheus' stale marker

func specialFloats() []float64 {
	return []float64{
		0, math.Copysign(0, -1), 1.5, -2.25, math.Inf(1), math.Inf(-1),
		math.Float64frombits(staleNaN), math.NaN(), math.Float64frombits(0x7ff8dead0000beef),
		math.Float64frombits(0xfff0000000000001), math.SmallestNonzeroFloat64, math.MaxFloat64,
	}
}

// rowsEqual compares rows bit for bit (NaN payloads included).
func rowsEqual(t *testing.T, want, got *RowsDef) {
	t.Helper()
	require.Equal(t, want.Group, got.Group)
	require.Equal(t, want.Width, got.Width)
	require.Len(t, got.Rows, len(want.Rows))
	for i := range want.Rows {
		w, g := want.Rows[i], got.Rows[i]
		require.Equal(t, w.T, g.T, "row %d", i)
		nw := (int(want.Width) + 63) / 64
		for j := 0; j < nw; j++ {
			var ww uint64
			if j < len(w.Present) {
				ww = w.Present[j]
			}
			if j == nw-1 && want.Width%64 != 0 {
				ww &= 1<<(want.Width%64) - 1
			}
			require.Equal(t, ww, g.Present[j], "row %d word %d", i, j)
		}
		require.Len(t, g.Values, len(w.Values), "row %d", i)
		for j := range w.Values {
			require.Equal(t, math.Float64bits(w.Values[j]), math.Float64bits(g.Values[j]), "row %d value %d", i, j)
		}
	}
}

func TestRecordRoundTrip(t *testing.T) {
	sf := specialFloats()
	tests := []struct {
		name string
		enc  func(dst []byte) []byte
		// check decodes rec and compares with the input.
		check func(t *testing.T, rec []byte)
	}{
		{
			name: "groups",
			enc: func(dst []byte) []byte {
				return AppendGroups(dst, []GroupDef{{1, `{job="a"}`}, {2, ""}, {math.MaxUint32, "κλειδί\x00\xff"}})
			},
			check: func(t *testing.T, rec []byte) {
				got, err := DecodeGroups(rec, nil)
				require.NoError(t, err)
				require.Equal(t, []GroupDef{{1, `{job="a"}`}, {2, ""}, {math.MaxUint32, "κλειδί\x00\xff"}}, got)
			},
		},
		{
			name: "groups empty",
			enc:  func(dst []byte) []byte { return AppendGroups(dst, nil) },
			check: func(t *testing.T, rec []byte) {
				got, err := DecodeGroups(rec, []GroupDef{{ID: 9}})
				require.NoError(t, err)
				require.Empty(t, got)
			},
		},
		{
			name: "series",
			enc:  func(dst []byte) []byte { return AppendSeries(dst, testSeries()) },
			check: func(t *testing.T, rec []byte) {
				got, err := DecodeSeries(rec, nil)
				require.NoError(t, err)
				want := testSeries()
				require.Len(t, got, len(want))
				for i := range want {
					require.Equal(t, want[i].Ref, got[i].Ref)
					require.Equal(t, want[i].Group, got[i].Group)
					require.Equal(t, want[i].Slot, got[i].Slot)
					require.True(t, labels.Equal(want[i].Labels, got[i].Labels), "%s != %s", want[i].Labels, got[i].Labels)
				}
			},
		},
		{
			name: "rows",
			enc:  func(dst []byte) []byte { return AppendRows(dst, testRows()) },
			check: func(t *testing.T, rec []byte) {
				var got RowsDef
				require.NoError(t, DecodeRows(rec, &got))
				rowsEqual(t, testRows(), &got)
			},
		},
		{
			name: "rows special floats and extreme timestamps",
			enc: func(dst []byte) []byte {
				return AppendRows(dst, &RowsDef{Group: 3, Width: uint32(len(sf)), Rows: []Row{
					{T: math.MinInt64, Present: []uint64{1<<len(sf) - 1}, Values: sf},
					{T: math.MaxInt64, Present: []uint64{0}},
					{T: -5, Present: []uint64{1 << 6}, Values: []float64{math.Float64frombits(staleNaN)}},
				}})
			},
			check: func(t *testing.T, rec []byte) {
				var got RowsDef
				require.NoError(t, DecodeRows(rec, &got))
				rowsEqual(t, &RowsDef{Group: 3, Width: uint32(len(sf)), Rows: []Row{
					{T: math.MinInt64, Present: []uint64{1<<len(sf) - 1}, Values: sf},
					{T: math.MaxInt64, Present: []uint64{0}},
					{T: -5, Present: []uint64{1 << 6}, Values: []float64{math.Float64frombits(staleNaN)}},
				}}, &got)
			},
		},
		{
			name: "rows width zero and empty",
			enc: func(dst []byte) []byte {
				return AppendRows(dst, &RowsDef{Group: 1, Rows: []Row{{T: 1}, {T: 2}}})
			},
			check: func(t *testing.T, rec []byte) {
				var got RowsDef
				require.NoError(t, DecodeRows(rec, &got))
				require.Equal(t, uint32(0), got.Width)
				require.Len(t, got.Rows, 2)
				require.Equal(t, int64(2), got.Rows[1].T)
			},
		},
		{
			name: "tombstones",
			enc: func(dst []byte) []byte {
				return AppendTombstones(dst, []Tombstone{{1, 0, 10}, {2, math.MinInt64, math.MaxInt64}, {3, 5, -5}})
			},
			check: func(t *testing.T, rec []byte) {
				got, err := DecodeTombstones(rec, nil)
				require.NoError(t, err)
				require.Equal(t, []Tombstone{{1, 0, 10}, {2, math.MinInt64, math.MaxInt64}, {3, 5, -5}}, got)
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := tc.enc(nil)
			tc.check(t, rec)
			// Deterministic, and appends to dst without touching it.
			prefix := []byte("prefix")
			rec2 := tc.enc(append([]byte(nil), prefix...))
			require.Equal(t, prefix, rec2[:len(prefix)])
			require.Equal(t, rec, rec2[len(prefix):])
			// Every proper prefix fails to decode and does not panic.
			for n := 0; n < len(rec); n++ {
				require.Error(t, decodeAny(rec[:n]), "prefix of %d bytes", n)
			}
			// Trailing garbage is rejected.
			require.Error(t, decodeAny(append(rec, 0)))
		})
	}
}

func testSeries() []SeriesDef {
	return []SeriesDef{
		{Ref: 1, Group: 1, Slot: 0, Labels: labels.FromStrings("__name__", "up", "job", "a")},
		{Ref: 2, Group: 1, Slot: 1, Labels: labels.FromStrings("__name__", "up", "empty", "", "job", "b")},
		{Ref: math.MaxUint32, Group: math.MaxUint32, Slot: math.MaxUint32, Labels: labels.EmptyLabels()},
		{Ref: 4, Group: 2, Slot: 7, Labels: labels.FromStrings("ünïcode", "välue\x00")},
	}
}

func testRows() *RowsDef {
	return &RowsDef{Group: 7, Width: 70, Rows: []Row{
		{T: 1000, Present: []uint64{0b101, 1 << 5}, Values: []float64{1, 2, 3}},
		{T: 2000, Present: []uint64{0, 0}},
		{T: 1500, Present: []uint64{math.MaxUint64, 0x3f}, Values: make([]float64, 70)},
	}}
}

// decodeAny decodes rec with the decoder of its type.
func decodeAny(rec []byte) error {
	switch RecordType(rec) {
	case RecordGroups:
		_, err := DecodeGroups(rec, nil)
		return err
	case RecordSeries:
		_, err := DecodeSeries(rec, nil)
		return err
	case RecordRows:
		return DecodeRows(rec, &RowsDef{})
	case RecordTombstones:
		_, err := DecodeTombstones(rec, nil)
		return err
	}
	if _, err := DecodeGroups(rec, nil); err == nil {
		panic("decoded invalid record")
	}
	return errShortRecord
}

func TestAppendRowsIgnoresBitsBeyondWidth(t *testing.T) {
	r := &RowsDef{Group: 1, Width: 3, Rows: []Row{{T: 1, Present: []uint64{0xff}, Values: []float64{1, 2, 3}}}}
	var got RowsDef
	require.NoError(t, DecodeRows(AppendRows(nil, r), &got))
	require.Equal(t, []uint64{0b111}, got.Rows[0].Present)
	require.Equal(t, []float64{1, 2, 3}, got.Rows[0].Values)
}

func TestDecodeRowsReusesSlices(t *testing.T) {
	rec := AppendRows(nil, testRows())
	var dst RowsDef
	require.NoError(t, DecodeRows(rec, &dst))
	allocs := testing.AllocsPerRun(20, func() {
		if err := DecodeRows(rec, &dst); err != nil {
			t.Fatal(err)
		}
	})
	require.Zero(t, allocs)
	rowsEqual(t, testRows(), &dst)
}

func TestDecodeRejects(t *testing.T) {
	tests := []struct {
		name string
		rec  []byte
	}{
		{"empty", nil},
		{"wrong type", AppendGroups(nil, nil)[:0:0]},
		{"huge group count", []byte{byte(RecordGroups), 0xff, 0xff, 0xff, 0xff, 0x0f}},
		{"huge series count", []byte{byte(RecordSeries), 0xff, 0xff, 0xff, 0xff, 0x0f, 1, 1, 1}},
		{"huge label count", []byte{byte(RecordSeries), 1, 1, 1, 1, 0xff, 0xff, 0x7f}},
		{"huge string", []byte{byte(RecordGroups), 1, 1, 0xff, 0xff, 0xff, 0xff, 0x0f}},
		{"id overflows uint32", []byte{byte(RecordGroups), 1, 0x80, 0x80, 0x80, 0x80, 0x10, 0}},
		{"huge width", []byte{byte(RecordRows), 1, 0xff, 0xff, 0xff, 0xff, 0x0f, 1, 0}},
		{"huge row count", []byte{byte(RecordRows), 1, 0, 0xff, 0xff, 0xff, 0xff, 0x0f}},
		{"bit beyond width", []byte{byte(RecordRows), 1, 3, 1, 0, 0b1000}},
		{"missing values", []byte{byte(RecordRows), 1, 3, 1, 0, 0b11, 0, 0, 0, 0, 0, 0, 0, 0}},
		{"bad varint", []byte{byte(RecordTombstones), 1, 1, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}},
		{"huge tombstone count", []byte{byte(RecordTombstones), 0xff, 0xff, 0x03, 1, 1, 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err1 := DecodeGroups(tc.rec, nil)
			_, err2 := DecodeSeries(tc.rec, nil)
			err3 := DecodeRows(tc.rec, &RowsDef{})
			_, err4 := DecodeTombstones(tc.rec, nil)
			for _, err := range []error{err1, err2, err3, err4} {
				require.Error(t, err)
			}
		})
	}
	require.Equal(t, RecordInvalid, RecordType(nil))
	require.Equal(t, RecordInvalid, RecordType([]byte{9}))
	require.Equal(t, RecordRows, RecordType(AppendRows(nil, &RowsDef{})))
}

func TestDecodeSeriesDoesNotAliasRecord(t *testing.T) {
	rec := AppendSeries(nil, testSeries())
	got, err := DecodeSeries(rec, nil)
	require.NoError(t, err)
	clear(rec)
	require.True(t, labels.Equal(testSeries()[0].Labels, got[0].Labels))
	gs, err := DecodeGroups(AppendGroups(nil, []GroupDef{{1, "key"}}), nil)
	require.NoError(t, err)
	require.Equal(t, "key", gs[0].Key)
}

func TestFrameCodecs(t *testing.T) {
	compressible := bytes.Repeat([]byte("rows of a group "), 100)
	random := make([]byte, 1000)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range random {
		random[i] = byte(r.Uint32())
	}
	for _, tc := range []struct {
		name    string
		codec   byte
		payload []byte
		want    byte // codec on disk
	}{
		{"snappy", FrameSnappy, compressible, FrameSnappy},
		{"zstd", FrameZstd, compressible, FrameZstd},
		{"snappy/incompressible", FrameSnappy, random, FrameStored},
		{"zstd/incompressible", FrameZstd, random, FrameStored},
		{"stored", FrameStored, compressible, FrameStored},
	} {
		t.Run(tc.name, func(t *testing.T) {
			payload := appendPayloadRecord(nil, tc.payload)
			f := appendFrame([]byte("prefix"), payload, tc.codec)
			require.Equal(t, []byte("prefix"), f[:6])
			f = f[6:]
			data := f[RecordHeaderSize:]
			require.Equal(t, int(binary.BigEndian.Uint32(f)), len(data))
			require.Equal(t, checksum(data), binary.BigEndian.Uint32(f[4:]))
			require.Equal(t, tc.want, data[0])
			got, _, err := decodeFrame(data, nil)
			require.NoError(t, err)
			require.Equal(t, payload, got)
		})
	}
}

func TestDecodeFrameRejects(t *testing.T) {
	ok := appendFrame(nil, appendPayloadRecord(nil, bytes.Repeat([]byte("x"), 100)), FrameZstd)[RecordHeaderSize:]
	snappy := appendFrame(nil, appendPayloadRecord(nil, bytes.Repeat([]byte("x"), 100)), FrameSnappy)[RecordHeaderSize:]
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"unknown codec", append([]byte{9}, ok[1:]...)},
		{"no size", []byte{FrameZstd}},
		{"zero size", []byte{FrameStored, 0}},
		{"stored short", []byte{FrameStored, 3, 'a', 'b'}},
		{"stored long", []byte{FrameStored, 1, 'a', 'b'}},
		{"size over the limit", binary.AppendUvarint([]byte{FrameStored}, MaxFramePayload+1)},
		{"zstd size beyond ratio", append(binary.AppendUvarint([]byte{FrameZstd}, 1<<29), ok[2:]...)},
		{"snappy size beyond ratio", append(binary.AppendUvarint([]byte{FrameSnappy}, 1<<20), snappy[2:]...)},
		{"zstd size mismatch", append([]byte{FrameZstd, ok[1] - 1}, ok[2:]...)},
		{"snappy size mismatch", append([]byte{FrameSnappy, snappy[1] - 1}, snappy[2:]...)},
		{"zstd garbage", []byte{FrameZstd, 10, 1, 2, 3, 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := decodeFrame(tc.data, nil)
			require.Error(t, err)
		})
	}
	for _, bad := range [][]byte{{0}, {5, 'a'}, {0xff}, {1, 'a', 0}} {
		require.Error(t, checkPayload(bad), "%q", bad)
	}
	require.NoError(t, checkPayload([]byte{1, 'a', 2, 'b', 'c'}))
}
