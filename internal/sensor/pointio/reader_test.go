package pointio

import (
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/vmihailenco/msgpack/v5"
)

func TestNewReader(t *testing.T) {
	for _, tc := range []struct {
		reader, format string
		typ            Type
		err            string
	}{
		{"csv", "0-1-,", Int8, ""},
		{"json", "default", Float32, ""},
		{"msgp", "default", Int64, ""},
		{"csv", "0-1", Float64, `csv format "0-1": want '-' after the value position 1; want tsPos-valPos-sep, e.g. 0-1-,`},
		{"json", "0-1-,", Float64, `json format "0-1-,": want "default"`},
		{"msgp", "", Float64, `msgp format "": want "default"`},
		{"xml", "default", Float64, `unknown reader "xml": want csv, json or msgp`},
		{"csv", "0-1-,", 0, "unknown value type Type(0)"},
	} {
		r, err := NewReader(tc.reader, tc.format, tc.typ, strings.NewReader(""), Limits{})
		if tc.err != "" {
			require.EqualError(t, err, tc.err)
			require.Nil(t, r)
			continue
		}
		require.NoError(t, err)
		require.False(t, r.Next())
		require.NoError(t, r.Err())
	}
}

func TestLimitsDefaults(t *testing.T) {
	require.Equal(t, Limits{MaxLine: 64 << 10, MaxPoint: 64 << 10}, Limits{MaxRows: -1}.withDefaults())
	require.Equal(t, Limits{MaxLine: 1, MaxPoint: 2, MaxRows: 3}, Limits{MaxLine: 1, MaxPoint: 2, MaxRows: 3}.withDefaults())
}

// TestCSVLongLines: lines longer than the 64 KiB read buffer are put
// together up to MaxLine.
func TestCSVLongLines(t *testing.T) {
	long := "1," + strings.Repeat("0", 150_000) + "5\r\n"
	body := long + "2,3\n" + "3," + strings.Repeat(" ", 200_001) + "\n"
	for how, r := range bodyReaders(body) {
		got, err := readAll(t, FormatCSV, "0-1-,", Float64, r, Limits{MaxLine: 200_000})
		requireSamePoints(t, []pt{{T: 1, V: 5}, {T: 2, V: 3}}, got, true)
		require.Equal(t, int64(len(long)), got[1].Off, how)
		requireInputError(t, err, 3, "", int64(len(long))+4, "line is longer than MaxLine (200000 bytes)")
	}
	// A line of exactly MaxLine bytes and "\r\n".
	got, err := readAll(t, FormatCSV, "0-1-,", Float64, strings.NewReader(long), Limits{MaxLine: len(long) - 2})
	require.NoError(t, err)
	require.Len(t, got, 1)
	_, err = readAll(t, FormatCSV, "0-1-,", Float64, strings.NewReader(long), Limits{MaxLine: len(long) - 3})
	requireInputError(t, err, 1, "", 0, "line is longer than MaxLine (150002 bytes)")
}

// TestByteSource: the io.ByteScanner the msgpack Decoder reads through
// counts every byte and keeps a point within MaxPoint.
func TestByteSource(t *testing.T) {
	s := newByteSource(strings.NewReader("abcdefgh"), 4)
	c, err := s.ReadByte()
	require.NoError(t, err)
	require.Equal(t, byte('a'), c)
	require.NoError(t, s.UnreadByte())
	require.Equal(t, int64(0), s.pos)
	require.Error(t, s.UnreadByte(), "nothing to unread")

	n, err := s.Read(nil)
	require.Equal(t, 0, n)
	require.NoError(t, err)

	s.beginPoint()
	p := make([]byte, 8)
	n, err = s.Read(p)
	require.NoError(t, err)
	require.Equal(t, "abcd", string(p[:n]), "a read stops at the point's limit")
	_, err = s.Read(p)
	require.ErrorIs(t, err, ErrLimit)
	_, err = s.ReadByte()
	require.ErrorIs(t, err, ErrLimit)
	s.endPoint()
	n, err = s.Read(p)
	require.NoError(t, err)
	require.Equal(t, "efgh", string(p[:n]))
	require.Equal(t, int64(8), s.pos)
	_, err = s.Read(p)
	require.Equal(t, io.EOF, err)

	// The msgpack Decoder reads through it without a buffer of its own.
	s = newByteSource(strings.NewReader("\xcd\x01\x00\x05"), 64)
	d := msgpack.NewDecoder(&s)
	code, err := d.PeekCode()
	require.NoError(t, err)
	require.Equal(t, byte(0xcd), code)
	i, err := d.DecodeInt64()
	require.NoError(t, err)
	require.Equal(t, int64(256), i)
	require.Equal(t, int64(3), s.pos)
}
