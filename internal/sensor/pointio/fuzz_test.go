package pointio

import (
	"bytes"
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// Fuzz targets: every reader is fed the raw fuzz bytes, with a type (and
// for CSV a format) picked by the first argument. It must not panic;
// every error is an *InputError with a row and an offset within the
// input; every point lies within the input and holds a value of its type;
// reading again, or a byte at a time, gives the same; and the points
// written by a Writer of the same format read back the same (invariant
// 3). Seed corpora live in testdata/fuzz/FuzzX/. Run one with:
// go test -run=NONE -fuzz=FuzzCSVReader -fuzztime=20s ./internal/sensor/pointio

// fuzzLimits are small, so that the limits are reached too.
var fuzzLimits = Limits{MaxLine: 256, MaxPoint: 64, MaxRows: 1000}

var fuzzCSVFormats = []string{"0-1-,", "2-0-;", "0-1- ", "1-0-\t", "0-1--", "0-2-,"}

func FuzzCSVReader(f *testing.F) {
	f.Fuzz(func(t *testing.T, sel uint8, data []byte) {
		fuzzReader(t, FormatCSV, fuzzCSVFormats[int(sel>>3)%len(fuzzCSVFormats)], Type(1+sel%6), data)
	})
}

func FuzzJSONReader(f *testing.F) {
	f.Fuzz(func(t *testing.T, sel uint8, data []byte) {
		fuzzReader(t, FormatJSON, "default", Type(1+sel%6), data)
	})
}

func FuzzMsgpReader(f *testing.F) {
	f.Fuzz(func(t *testing.T, sel uint8, data []byte) {
		fuzzReader(t, FormatMsgp, "default", Type(1+sel%6), data)
	})
}

func fuzzReader(t *testing.T, reader, format string, typ Type, data []byte) {
	pts, err := readAll(t, reader, format, typ, bytes.NewReader(data), fuzzLimits)
	if err != nil {
		var ie *InputError
		require.True(t, errors.As(err, &ie), "%T %v", err, err)
		require.Positive(t, ie.Row, "%v", err)
		require.GreaterOrEqual(t, ie.Offset, int64(0), "%v", err)
		require.LessOrEqual(t, ie.Offset, int64(len(data)), "%v", err)
		require.NotEmpty(t, ie.Err.Error())
		if reader == FormatCSV {
			require.True(t, len(pts) == 0 || ie.Row > pts[len(pts)-1].Row, "an error before the last point: %v", err)
		} else {
			require.Equal(t, len(pts)+1, ie.Row, "an error but in the point after the last: %v", err)
		}
	}
	require.LessOrEqual(t, len(pts), fuzzLimits.MaxRows)
	lastRow, lastOff := 0, int64(-1)
	for _, p := range pts {
		require.Greater(t, p.Row, lastRow)
		require.Greater(t, p.Off, lastOff)
		require.Less(t, p.Off, int64(len(data)))
		lastRow, lastOff = p.Row, p.Off
		v, ferr := typ.Fit(p.V)
		require.NoError(t, ferr, "a value the type does not hold: %v", p.V)
		if !math.IsNaN(v) {
			require.Equal(t, math.Float64bits(p.V), math.Float64bits(v), "Fit changes a value read: %v", p.V)
		}
	}

	// Deterministic, and the same whatever the reads' sizes.
	for how, r := range bodyReaders(string(data)) {
		again, err2 := readAll(t, reader, format, typ, r, fuzzLimits)
		require.Equal(t, errString(err), errString(err2), how)
		requireSamePoints(t, pts, again, true)
		for i := range pts {
			require.Equal(t, pts[i].Row, again[i].Row, how)
			require.Equal(t, pts[i].Off, again[i].Off, how)
		}
	}

	// What the reader took, the writer gives back the same.
	var b bytes.Buffer
	w, err := NewWriter(reader, &b)
	require.NoError(t, err)
	for _, p := range pts {
		require.NoError(t, w.Point(p.T, p.V))
	}
	require.NoError(t, w.Close())
	enc := b.Bytes()
	rformat := "default"
	if reader == FormatCSV {
		rformat = "0-1-,"
	}
	back, err := readAll(t, reader, rformat, typ, bytes.NewReader(enc), Limits{})
	require.NoError(t, err, "%q", enc)
	requireSamePoints(t, pts, back, reader == FormatMsgp && typ == Float64)
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
