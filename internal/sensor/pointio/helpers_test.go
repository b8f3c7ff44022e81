package pointio

import (
	"errors"
	"io"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// pt is a point as a Reader returns it, with where it was.
type pt struct {
	T   int64
	V   float64
	Row int
	Off int64
}

// readAll reads body to its end and returns the points and Err.
func readAll(t testing.TB, reader, format string, typ Type, body io.Reader, lim Limits) ([]pt, error) {
	t.Helper()
	r, err := NewReader(reader, format, typ, body, lim)
	require.NoError(t, err)
	var pts []pt
	for r.Next() {
		ts, v := r.At()
		pts = append(pts, pt{ts, v, r.Row(), r.Offset()})
	}
	require.False(t, r.Next(), "Next after the end")
	return pts, r.Err()
}

// requireInputError checks that err is an *InputError at row, field and
// offset with the message msg, and that it is within an input of n bytes.
func requireInputError(t *testing.T, err error, row int, field string, off int64, msg string) {
	t.Helper()
	var ie *InputError
	require.True(t, errors.As(err, &ie), "want *InputError, got %T %v", err, err)
	require.Equal(t, row, ie.Row, "row of %v", err)
	require.Equal(t, field, ie.Field, "field of %v", err)
	require.Equal(t, off, ie.Offset, "offset of %v", err)
	require.Equal(t, msg, ie.Err.Error(), "message of %v", err)
}

// requireSamePoints compares timestamps and value bits; NaNs compare equal
// whatever their payload (text formats have one NaN).
func requireSamePoints(t testing.TB, want, got []pt, exactNaN bool) {
	t.Helper()
	require.Len(t, got, len(want))
	for i := range want {
		w, g := want[i].V, got[i].V
		if want[i].T != got[i].T {
			t.Fatalf("point %d: want timestamp %d, got %d", i, want[i].T, got[i].T)
		}
		if math.Float64bits(w) != math.Float64bits(g) && (exactNaN || !math.IsNaN(w) || !math.IsNaN(g)) {
			t.Fatalf("point %d: want %v (%#x), got %v (%#x)", i, w, math.Float64bits(w), g, math.Float64bits(g))
		}
	}
}

// requireEndlessRefused reads head and then fill forever: the first
// point is read, and the second refused (row 2) at offset off saying msg
// before the body's end. It returns the error.
func requireEndlessRefused(t *testing.T, reader, format, head string, fill byte, lim Limits, off int64, msg string) error {
	t.Helper()
	r, err := NewReader(reader, format, Float64, io.MultiReader(strings.NewReader(head), endless(fill)), lim)
	require.NoError(t, err)
	require.True(t, r.Next())
	require.False(t, r.Next())
	requireInputError(t, r.Err(), 2, "", off, msg)
	return r.Err()
}

// endless is a body of one byte repeated forever.
type endless byte

func (e endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(e)
	}
	return len(p), nil
}

// errReader returns its data, then err.
type errReader struct {
	data string
	err  error
}

func (r *errReader) Read(p []byte) (int, error) {
	if r.data == "" {
		return 0, r.err
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

// zeroReader returns nothing and no error, forever.
type zeroReader struct{}

func (zeroReader) Read([]byte) (int, error) { return 0, nil }

// oneByteReader returns one byte per Read, to exercise every buffer
// boundary.
type oneByteReader struct{ r io.Reader }

func (r oneByteReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	return r.r.Read(p[:1])
}

// chunkReader returns reads of the sizes in turn, to move the readers'
// buffers at every kind of place.
type chunkReader struct {
	r     io.Reader
	sizes []int
	i     int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	n := c.sizes[c.i%len(c.sizes)]
	c.i++
	if len(p) > n {
		p = p[:n]
	}
	return c.r.Read(p)
}

// bodyReaders returns the ways tests read a body: at once, a byte at a
// time, and in chunks of odd sizes.
func bodyReaders(data string) map[string]io.Reader {
	return map[string]io.Reader{
		"whole":  strings.NewReader(data),
		"bytes":  oneByteReader{strings.NewReader(data)},
		"chunks": &chunkReader{r: strings.NewReader(data), sizes: []int{5, 1, 17, 3, 64, 2, 9}},
	}
}
