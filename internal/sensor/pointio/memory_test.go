package pointio

import (
	"bytes"
	"io"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestReaderAllocs: reading allocates about the same whatever the number
// of points (invariant 1): nothing is held per point.
func TestReaderAllocs(t *testing.T) {
	pts := benchData()
	for _, format := range []string{FormatCSV, FormatJSON, FormatMsgp} {
		rformat := "default"
		if format == FormatCSV {
			rformat = "0-1-,"
		}
		allocs := func(n int) float64 {
			data := encodePoints(t, format, pts[:n])
			return testing.AllocsPerRun(5, func() {
				r, err := NewReader(format, rformat, Float64, bytes.NewReader(data), Limits{})
				require.NoError(t, err)
				for r.Next() {
				}
				require.NoError(t, r.Err())
			})
		}
		small, large := allocs(100), allocs(20_000) // 400 KB and more: many buffer refills
		// A token buffer may grow once, when a token first spans two reads.
		require.InDelta(t, small, large, 2, "%s: allocations grow with the points read", format)
		require.LessOrEqual(t, large, 10.0, format)
	}
}

// TestWriterAllocs: a writer allocates per buffer flushed, not per item.
func TestWriterAllocs(t *testing.T) {
	for _, format := range []string{FormatCSV, FormatJSON, FormatMsgp} {
		allocs := testing.AllocsPerRun(5, func() {
			w, _ := NewWriter(format, io.Discard)
			for i := range 10000 {
				w.Point(int64(i)*60000, float64(i)/100)
			}
			require.NoError(t, w.Close())
		})
		require.Less(t, allocs, 100.0, format)
	}
}
