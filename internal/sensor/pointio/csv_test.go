package pointio

import (
	"errors"
	"io"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseCSVFormat(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want csvFormat
		err  string
	}{
		{in: "0-1-,", want: csvFormat{0, 1, ','}},
		{in: "2-0-;", want: csvFormat{2, 0, ';'}},
		{in: "0-1--", want: csvFormat{0, 1, '-'}},
		{in: "0-1-\t", want: csvFormat{0, 1, '\t'}},
		{in: `0-1-\t`, want: csvFormat{0, 1, '\t'}},
		{in: "0-1- ", want: csvFormat{0, 1, ' '}},
		{in: "10-9999-|", want: csvFormat{10, 9999, '|'}},
		{in: "", err: `csv format "": the timestamp position must be a number from 0 to 9999; want tsPos-valPos-sep, e.g. 0-1-,`},
		{in: "a-1-,", err: `csv format "a-1-,": the timestamp position must be a number from 0 to 9999; want tsPos-valPos-sep, e.g. 0-1-,`},
		{in: "10000-1-,", err: `csv format "10000-1-,": the timestamp position must be a number from 0 to 9999; want tsPos-valPos-sep, e.g. 0-1-,`},
		{in: "0-", err: `csv format "0-": the value position must be a number from 0 to 9999; want tsPos-valPos-sep, e.g. 0-1-,`},
		{in: "0,1,,", err: `csv format "0,1,,": want '-' after the timestamp position 0; want tsPos-valPos-sep, e.g. 0-1-,`},
		{in: "0-1", err: `csv format "0-1": want '-' after the value position 1; want tsPos-valPos-sep, e.g. 0-1-,`},
		{in: "0-1-", err: `csv format "0-1-": the separator must be one byte, got ""; want tsPos-valPos-sep, e.g. 0-1-,`},
		{in: "0-1-,;", err: `csv format "0-1-,;": the separator must be one byte, got ",;"; want tsPos-valPos-sep, e.g. 0-1-,`},
		{in: "0-1-→", err: `csv format "0-1-→": the separator must be one byte, got "→"; want tsPos-valPos-sep, e.g. 0-1-,`},
		{in: "0-1-2", err: `csv format "0-1-2": the separator "2" cannot be a digit, a double quote or a line end; want tsPos-valPos-sep, e.g. 0-1-,`},
		{in: `0-1-"`, err: `csv format "0-1-\"": the separator "\"" cannot be a digit, a double quote or a line end; want tsPos-valPos-sep, e.g. 0-1-,`},
		{in: "0-1-\n", err: `csv format "0-1-\n": the separator "\n" cannot be a digit, a double quote or a line end; want tsPos-valPos-sep, e.g. 0-1-,`},
		{in: "1-1-,", err: `csv format "1-1-,": timestamp and value are both at position 1; want tsPos-valPos-sep, e.g. 0-1-,`},
	} {
		got, err := parseCSVFormat(tc.in)
		if tc.err != "" {
			require.EqualError(t, err, tc.err, tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		require.Equal(t, tc.want, got, tc.in)
	}
}

// readerCase is a body, what a Reader makes of it, and the error it ends
// with: the whole of InputError.Error(), row, byte offset, field and
// message.
type readerCase struct {
	name   string
	format string // csv only
	typ    Type   // Float64 if 0
	body   string
	lim    Limits
	want   []pt
	err    string
}

// runReaderCases reads every case at once, a byte at a time and in odd
// chunks (every buffer boundary), expecting the same.
func runReaderCases(t *testing.T, reader string, cases []readerCase) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			typ := tc.typ
			if typ == 0 {
				typ = Float64
			}
			format := tc.format
			if reader != FormatCSV {
				format = "default"
			}
			for how, r := range bodyReaders(tc.body) {
				got, err := readAll(t, reader, format, typ, r, tc.lim)
				requireSamePoints(t, tc.want, got, true)
				for i := range tc.want {
					require.Equal(t, tc.want[i].Row, got[i].Row, "%s: row of point %d", how, i)
					require.Equal(t, tc.want[i].Off, got[i].Off, "%s: offset of point %d", how, i)
				}
				if tc.err == "" {
					require.NoError(t, err, how)
					continue
				}
				require.EqualError(t, err, tc.err, how)
				var ie *InputError
				require.True(t, errors.As(err, &ie), "%T", err)
				require.Positive(t, ie.Row)
				require.GreaterOrEqual(t, ie.Offset, int64(0))
				require.LessOrEqual(t, ie.Offset, int64(len(tc.body)))
			}
		})
	}
}

func TestCSVReader(t *testing.T) {
	f32 := float64(float32(0.1))
	runReaderCases(t, FormatCSV, []readerCase{
		{name: "basic", format: "0-1-,", body: "1,2.5\n2,3\n", want: []pt{{1, 2.5, 1, 0}, {2, 3, 2, 6}}},
		{name: "empty", format: "0-1-,", body: ""},
		{name: "blank lines only", format: "0-1-,", body: "\n \r\n\t\n"},
		{name: "crlf blank spaces no final newline", format: "0-1-,", body: "1,2.5\r\n\r\n  \n 2 , 3 \n3,4",
			want: []pt{{1, 2.5, 1, 0}, {2, 3, 4, 12}, {3, 4, 5, 20}}},
		{name: "header", format: "0-1-,", body: "time,value\n1,2\n", want: []pt{{1, 2, 2, 11}}},
		{name: "header and bom", format: "0-1-,", body: "\xef\xbb\xbftime,value\n1,2", want: []pt{{1, 2, 2, 14}}},
		{name: "bom without header", format: "0-1-,", body: "\xef\xbb\xbf1,2", want: []pt{{1, 2, 1, 3}}},
		{name: "dash separator", format: "0-1--", body: "1-2\n3-4.5\n", want: []pt{{1, 2, 1, 0}, {3, 4.5, 2, 4}}},
		{name: "positions 2 and 0", format: "2-0-;", body: "21.5;room 1;1700000000000\n", want: []pt{{1700000000000, 21.5, 1, 0}}},
		{name: "tab", format: "0-1-\t", body: "1\t2\n 3 \t 4\n", want: []pt{{1, 2, 1, 0}, {3, 4, 2, 4}}},
		{name: "space separator", format: "0-1- ", body: "1 2\n3 4\n", want: []pt{{1, 2, 1, 0}, {3, 4, 2, 4}}},
		{name: "quoted", format: "0-1-,", body: `"1", " 2.5 "` + "\n", want: []pt{{1, 2.5, 1, 0}}},
		{name: "quoted separator skipped", format: "0-2-,", body: `1,"a, ""b""",3` + "\n", want: []pt{{1, 3, 1, 0}}},
		{name: "fields after ignored", format: "0-1-,", body: "1,2,x,\"unterminated\n", want: []pt{{1, 2, 1, 0}}},
		{name: "signs and forms", format: "0-1-,", body: "-5,-1e3\n+6,0x1p-2\n7,+Inf\n8,nan\n9,-Inf\n",
			want: []pt{{-5, -1000, 1, 0}, {6, 0.25, 2, 8}, {7, math.Inf(1), 3, 18}, {8, math.NaN(), 4, 25}, {9, math.Inf(-1), 5, 31}}},
		{name: "int64 timestamp bounds", format: "0-1-,", body: "9223372036854775807,1\n-9223372036854775808,2\n",
			want: []pt{{math.MaxInt64, 1, 1, 0}, {math.MinInt64, 2, 2, 22}}},
		{name: "int64 exact beyond 2^53", format: "0-1-,", typ: Int64, body: "1,1152921504606846976\n2,-9223372036854775808\n3,1e3\n",
			want: []pt{{1, 1 << 60, 1, 0}, {2, math.MinInt64, 2, 22}, {3, 1000, 3, 45}}},
		{name: "float32 precision", format: "0-1-,", typ: Float32, body: "1,0.1\n2,3.4028234663852886e38\n", want: []pt{{1, f32, 1, 0}, {2, math.MaxFloat32, 2, 6}}},
		{name: "blanks after a closing quote", format: "0-1-,", body: `"1" , "2"` + " \n", want: []pt{{1, 2, 1, 0}}},
		{name: "underflow", format: "0-1-,", typ: Float32, body: "1,1e-46\n2,1e-400\n", want: []pt{{1, 0, 1, 0}, {2, 0, 2, 8}}},
		{name: "int8 range", format: "0-1-,", typ: Int8, body: "1,127\n2,-128\n3,-0\n", want: []pt{{1, 127, 1, 0}, {2, -128, 2, 6}, {3, 0, 3, 13}}},

		{name: "int8 overflow", format: "0-1-,", typ: Int8, body: "1,1\n2, 300\n",
			want: []pt{{1, 1, 1, 0}}, err: `row 2 (byte 7), field "v": value 300 does not fit int8 (-128 to 127)`},
		{name: "int8 fraction", format: "0-1-,", typ: Int8, body: "1,1.5\n",
			err: `row 1 (byte 2), field "v": value 1.5 does not fit int8: not an integer`},
		{name: "int8 NaN", format: "0-1-,", typ: Int8, body: "1,NaN\n",
			err: `row 1 (byte 2), field "v": value NaN does not fit int8: not an integer`},
		{name: "int8 huge float", format: "0-1-,", typ: Int8, body: "1,1e400\n",
			err: `row 1 (byte 2), field "v": value "1e400" does not fit int8`},
		{name: "int64 not exact", format: "0-1-,", typ: Int64, body: "1,9007199254740993\n",
			err: `row 1 (byte 2), field "v": value 9007199254740993 is not exactly representable: values are stored as float64, which holds every integer up to 2^53 but only some beyond`},
		{name: "int64 max not exact", format: "0-1-,", typ: Int64, body: "1,9223372036854775807\n",
			err: `row 1 (byte 2), field "v": value 9223372036854775807 is not exactly representable: values are stored as float64, which holds every integer up to 2^53 but only some beyond`},
		{name: "int64 overflow", format: "0-1-,", typ: Int64, body: "1,9223372036854775808\n",
			err: `row 1 (byte 2), field "v": value "9223372036854775808" does not fit int64`},
		{name: "int64 exponent beyond 2^53", format: "0-1-,", typ: Int64, body: "1,1e18\n",
			err: `row 1 (byte 2), field "v": value "1e18": an integer beyond 2^53 must be written in plain digits to be read exactly`},
		{name: "float32 overflow", format: "0-1-,", typ: Float32, body: "1,1e39\n",
			err: `row 1 (byte 2), field "v": value "1e39" does not fit float32`},
		{name: "float64 overflow", format: "0-1-,", body: "1,1e400\n",
			err: `row 1 (byte 2), field "v": value "1e400" does not fit float64`},
		{name: "not a number", format: "0-1-,", body: "1,2\n2,abc\n",
			want: []pt{{1, 2, 1, 0}}, err: `row 2 (byte 6), field "v": value "abc" is not a number`},
		{name: "empty value", format: "0-1-,", body: "1,\n",
			err: `row 1 (byte 2), field "v": the value is empty`},
		{name: "empty value with space separator", format: "0-1- ", body: "1  2\n",
			err: `row 1 (byte 2), field "v": the value is empty`},
		{name: "fractional timestamp", format: "0-1-,", body: "1.5,2\n",
			err: `row 1 (byte 0), field "t": timestamp "1.5" is not an integer (milliseconds)`},
		{name: "timestamp out of range", format: "0-1-,", body: "1,1\n 99999999999999999999,1\n",
			want: []pt{{1, 1, 1, 0}}, err: `row 2 (byte 5), field "t": timestamp "99999999999999999999" is out of range of int64 milliseconds`},
		{name: "empty timestamp", format: "0-1-,", body: "1,1\n ,1\n",
			want: []pt{{1, 1, 1, 0}}, err: `row 2 (byte 5), field "t": timestamp "" is not an integer (milliseconds)`},
		{name: "half a header", format: "0-1-,", body: "time,1\n",
			err: `row 1 (byte 0), field "t": timestamp "time" is not an integer (milliseconds)`},
		{name: "header on line 2", format: "0-1-,", body: "\ntime,value\n",
			err: `row 2 (byte 1), field "t": timestamp "time" is not an integer (milliseconds)`},
		{name: "missing value field", format: "0-1-,", body: "1,1\n2\n",
			want: []pt{{1, 1, 1, 0}}, err: `row 2 (byte 4), field "v": no value field 1: the line has 1 field(s) separated by ','`},
		{name: "missing timestamp field", format: "2-0-;", body: "1;2\n",
			err: `row 1 (byte 0), field "t": no timestamp field 2: the line has 2 field(s) separated by ';'`},
		{name: "wrong separator", format: "0-1-;", body: "1,2\n",
			err: `row 1 (byte 0), field "v": no value field 1: the line has 1 field(s) separated by ';'`},
		{name: "unterminated quote", format: "0-1-,", body: `1,"2` + "\n",
			err: `row 1 (byte 2), field "v": field 1: quoted field does not end on its line (a field cannot span lines)`},
		{name: "unterminated quote in another field", format: "0-2-,", body: `1,"a,2` + "\n",
			err: `row 1 (byte 2): field 1: quoted field does not end on its line (a field cannot span lines)`},
		{name: "text after quote", format: "0-1-,", body: `"1"x,2` + "\n",
			err: `row 1 (byte 3), field "t": field 0: 'x' after the closing quote, want the separator ','`},
		{name: "max line", format: "0-1-,", lim: Limits{MaxLine: 8}, body: "12345,78\r\n1,2\n123456789,1\n",
			want: []pt{{12345, 78, 1, 0}, {1, 2, 2, 10}}, err: `row 3 (byte 14): line is longer than MaxLine (8 bytes)`},
		{name: "max line without newline", format: "0-1-,", lim: Limits{MaxLine: 8}, body: "1,2\n123456789",
			want: []pt{{1, 2, 1, 0}}, err: `row 2 (byte 4): line is longer than MaxLine (8 bytes)`},
		{name: "max line of blanks", format: "0-1-,", lim: Limits{MaxLine: 8}, body: strings.Repeat(" ", 100) + "\n",
			err: `row 1 (byte 0): line is longer than MaxLine (8 bytes)`},
		{name: "max rows", format: "0-1-,", lim: Limits{MaxRows: 2}, body: "t,v\n1,1\n\n2,2\n3,3\n",
			want: []pt{{1, 1, 2, 4}, {2, 2, 4, 9}}, err: `row 5 (byte 13): more than MaxRows (2) points`},
	})
}

func TestCSVReaderLimitsAndReadErrors(t *testing.T) {
	// A line over MaxLine is refused before it is read to its end: the
	// body is endless.
	err := requireEndlessRefused(t, FormatCSV, "0-1-,", "1,2\n", '9', Limits{MaxLine: 100}, 4, "line is longer than MaxLine (100 bytes)")
	require.ErrorIs(t, err, ErrLimit)

	// A failure of the body's reader is wrapped, at the offset reached.
	_, err = readAll(t, FormatCSV, "0-1-,", Float64, &errReader{"1,1\n2,", io.ErrClosedPipe}, Limits{})
	requireInputError(t, err, 2, "", 6, "read body: io: read/write on closed pipe")
	require.ErrorIs(t, err, io.ErrClosedPipe)
	require.NotErrorIs(t, err, ErrLimit)
}
