package pointio

import (
	"io"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestJSONReader(t *testing.T) {
	negZero := math.Copysign(0, -1)
	runReaderCases(t, FormatJSON, []readerCase{
		{name: "array", body: `[{"t":1,"v":2.5},{"t":2,"v":3}]`, want: []pt{{1, 2.5, 1, 1}, {2, 3, 2, 17}}},
		{name: "array with whitespace", body: " [ {\"t\":1, \"v\":2.5} ,\n\t{\"v\":3,\"t\":2}\r\n] \n",
			want: []pt{{1, 2.5, 1, 3}, {2, 3, 2, 23}}},
		{name: "empty body", body: ""},
		{name: "whitespace body", body: " \n\t"},
		{name: "empty array", body: " [ ] \n"},
		{name: "lines", body: "{\"t\":1,\"v\":2.5}\n{\"t\":2,\"v\":3}", want: []pt{{1, 2.5, 1, 0}, {2, 3, 2, 16}}},
		{name: "lines crlf final newline", body: "{\"t\":1,\"v\":2.5}\r\n\r\n{\"t\":2,\"v\":3}\r\n", want: []pt{{1, 2.5, 1, 0}, {2, 3, 2, 19}}},
		{name: "concatenated", body: `{"t":1,"v":1}{"t":2,"v":2}`, want: []pt{{1, 1, 1, 0}, {2, 2, 2, 13}}},
		{name: "bom", body: "\xef\xbb\xbf[{\"t\":1,\"v\":1}]", want: []pt{{1, 1, 1, 4}}},
		{name: "special strings", body: `[{"t":1,"v":"NaN"},{"t":2,"v":"+Inf"},{"t":3,"v":"-Inf"}]`,
			want: []pt{{1, math.NaN(), 1, 1}, {2, math.Inf(1), 2, 19}, {3, math.Inf(-1), 3, 38}}},
		{name: "numbers", body: `[{"t":-1,"v":-0},{"t":0,"v":1E-2},{"t":9223372036854775807,"v":1.5e+300}]`,
			want: []pt{{-1, negZero, 1, 1}, {0, 0.01, 2, 17}, {math.MaxInt64, 1.5e300, 3, 34}}},
		{name: "escaped keys", body: `{"\u0074":1,"\u0076":2}`, want: []pt{{1, 2, 1, 0}}},
		{name: "int64 exact", typ: Int64, body: `{"t":1,"v":1152921504606846976}`, want: []pt{{1, 1 << 60, 1, 0}}},
		{name: "float32", typ: Float32, body: `{"t":1,"v":0.1}`, want: []pt{{1, float64(float32(0.1)), 1, 0}}},

		{name: "int8 overflow", typ: Int8, body: `[{"t":1,"v":2.5e1},{"t":2,"v":300}]`,
			want: []pt{{1, 25, 1, 1}}, err: `row 2 (byte 30), field "v": value 300 does not fit int8 (-128 to 127)`},
		{name: "int8 NaN", typ: Int8, body: `{"t":1,"v":"NaN"}`,
			err: `row 1 (byte 11), field "v": value NaN does not fit int8: not an integer`},
		{name: "int64 not exact", typ: Int64, body: `{"t":1,"v":9007199254740993}`,
			err: `row 1 (byte 11), field "v": value 9007199254740993 is not exactly representable: values are stored as float64, which holds every integer up to 2^53 but only some beyond`},
		{name: "unknown key", body: `{"t":1,"v":2,"x":3}`,
			err: `row 1 (byte 13), field "x": unknown key "x": a point has the keys "t" (timestamp) and "v" (value)`},
		{name: "long unknown key", body: `{"t":1,"` + strings.Repeat("k", 100) + `":3}`,
			err: `row 1 (byte 7), field "` + strings.Repeat("k", 64) + `…": unknown key "` + strings.Repeat("k", 64) + `"…: a point has the keys "t" (timestamp) and "v" (value)`},
		{name: "duplicate key", body: `{"t":1,"t":2,"v":1}`,
			err: `row 1 (byte 7), field "t": key "t" appears twice`},
		{name: "missing t", body: `[{"t":1,"v":1},{"v":1}]`,
			want: []pt{{1, 1, 1, 1}}, err: `row 2 (byte 15), field "t": missing key "t" (timestamp)`},
		{name: "missing v", body: `{"t":1}`,
			err: `row 1 (byte 0), field "v": missing key "v" (value)`},
		{name: "empty object", body: `{ }`,
			err: `row 1 (byte 0), field "t": missing key "t" (timestamp)`},
		{name: "fractional timestamp", body: `{"t":1.5,"v":1}`,
			err: `row 1 (byte 5), field "t": timestamp "1.5" is not an integer (milliseconds)`},
		{name: "exponent timestamp", body: `{"t":1e3,"v":1}`,
			err: `row 1 (byte 5), field "t": timestamp "1e3" is not an integer (milliseconds)`},
		{name: "string timestamp", body: `{"t":"1","v":1}`,
			err: `row 1 (byte 5), field "t": want an integer timestamp (milliseconds), got a string`},
		{name: "null timestamp", body: `{"t":null,"v":1}`,
			err: `row 1 (byte 5), field "t": want an integer timestamp (milliseconds), got null`},
		{name: "timestamp out of range", body: `{"t":9223372036854775808,"v":1}`,
			err: `row 1 (byte 5), field "t": timestamp "9223372036854775808" is out of range of int64 milliseconds`},
		{name: "other string value", body: `{"t":1,"v":"abc"}`,
			err: `row 1 (byte 11), field "v": value "abc" is not a number: the strings a value may be are "NaN", "+Inf" and "-Inf"`},
		{name: "numeric string value", body: `{"t":1,"v":"2.5"}`,
			err: `row 1 (byte 11), field "v": value "2.5" is not a number: the strings a value may be are "NaN", "+Inf" and "-Inf"`},
		{name: "boolean value", body: `{"t":1,"v":true}`,
			err: `row 1 (byte 11), field "v": want a number, got a boolean`},
		{name: "object value", body: `{"t":1,"v":{}}`,
			err: `row 1 (byte 11), field "v": want a number, got an object`},
		{name: "leading zero", body: `{"t":1,"v":01}`,
			err: `row 1 (byte 11), field "v": "01" is not a JSON number`},
		{name: "exponent without digits", body: `{"t":1,"v":1e+}`,
			err: `row 1 (byte 11), field "v": "1e+" is not a JSON number`},
		{name: "end in an escape", body: `{"\`,
			err: `row 1 (byte 3): unexpected end of input: the point is not closed with '}'`},
		{name: "trailing dot", body: `{"t":1,"v":1.}`,
			err: `row 1 (byte 11), field "v": "1." is not a JSON number`},
		{name: "bare minus", body: `{"t":-,"v":1}`,
			err: `row 1 (byte 5), field "t": "-" is not a JSON number`},
		{name: "bare NaN", body: `{"t":1,"v":NaN}`,
			err: `row 1 (byte 11), field "v": want a number, got 'N'`},
		{name: "missing comma between points", body: `[{"t":1,"v":1} {"t":2,"v":2}]`,
			want: []pt{{1, 1, 1, 1}}, err: `row 2 (byte 15): want ',' or ']' after a point, got an object`},
		{name: "trailing comma", body: `[{"t":1,"v":1},]`,
			want: []pt{{1, 1, 1, 1}}, err: `row 2 (byte 15): want '{' to start a point, got ']'`},
		{name: "array of numbers", body: `[1,2]`,
			err: `row 1 (byte 1): want '{' to start a point, got a number`},
		{name: "unclosed array", body: `[{"t":1,"v":1}`,
			want: []pt{{1, 1, 1, 1}}, err: `row 2 (byte 14): unexpected end of input: the array of points is not closed with ']'`},
		{name: "unclosed array after comma", body: `[{"t":1,"v":1}, `,
			want: []pt{{1, 1, 1, 1}}, err: `row 2 (byte 16): unexpected end of input: the array of points is not closed with ']'`},
		{name: "data after array", body: `[] x`,
			err: `row 1 (byte 3): 'x' after the array of points, want the end of the body`},
		{name: "second array", body: `[{"t":1,"v":1}][]`,
			want: []pt{{1, 1, 1, 1}}, err: `row 2 (byte 15): an array after the array of points, want the end of the body`},
		{name: "garbage at start", body: `x`,
			err: `row 1 (byte 0): want '[' (an array of points) or '{' (a point) at the start of the body, got 'x'`},
		{name: "control byte at start", body: "\x00",
			err: `row 1 (byte 0): want '[' (an array of points) or '{' (a point) at the start of the body, got byte 0x00`},
		{name: "array after stream", body: `{"t":1,"v":1}[`,
			want: []pt{{1, 1, 1, 0}}, err: `row 2 (byte 13): want '{' to start a point, got an array`},
		{name: "unclosed point", body: `{"t":1,"v":1`,
			err: `row 1 (byte 12): unexpected end of input: the point is not closed with '}'`},
		{name: "end in key", body: `{"t`,
			err: `row 1 (byte 3): unexpected end of input: the point is not closed with '}'`},
		{name: "end after colon", body: `{"t":`,
			err: `row 1 (byte 5): unexpected end of input: the point is not closed with '}'`},
		{name: "end in value string", body: `{"t":1,"v":"Na`,
			err: `row 1 (byte 14), field "v": unexpected end of input: the point is not closed with '}'`},
		{name: "unquoted key", body: `{t:1}`,
			err: `row 1 (byte 1): want a key "t" or "v", got 't'`},
		{name: "missing colon", body: `{"t" 1}`,
			err: `row 1 (byte 5): want ':' after key "t", got a number`},
		{name: "missing comma", body: `{"t":1 "v":2}`,
			err: `row 1 (byte 7): want ',' or '}' after a value, got a string`},
		{name: "trailing comma in point", body: `{"t":1,"v":2,}`,
			err: `row 1 (byte 13): want a key "t" or "v", got '}'`},
		{name: "control character in key", body: "{\"t\n\":1}",
			err: `row 1 (byte 1): control character '\n' in a string: write it as an escape`},
		{name: "escapes in an unknown key", body: `{"\/t\"\\\b\f\n\r\t\u00e9":1}`,
			err: `row 1 (byte 1), field "/t\"\\\b\f\n\r\té": unknown key "/t\"\\\b\f\n\r\té": a point has the keys "t" (timestamp) and "v" (value)`},
		{name: "long unknown key cut in a rune", body: `{"a` + strings.Repeat("é", 50) + `":1}`,
			err: `row 1 (byte 1), field "a` + strings.Repeat("é", 31) + `…": unknown key "a` + strings.Repeat("é", 31) + `\xc3"…: a point has the keys "t" (timestamp) and "v" (value)`},
		{name: "bad escape", body: `{"\x":1}`,
			err: `row 1 (byte 1): bad escape \x in a string`},
		{name: "bad unicode escape", body: `{"\u12g4":1}`,
			err: `row 1 (byte 1): bad escape in a string: want 4 hex digits after \u, got 'g'`},
		{name: "max point", lim: Limits{MaxPoint: 16}, body: `[{"t":1,"v":2}, {"t":12,"v":2.5},{"t":1,    "v":2}]`,
			want: []pt{{1, 2, 1, 1}, {12, 2.5, 2, 16}}, err: `row 3 (byte 33): point is longer than MaxPoint (16 bytes)`},
		{name: "max point in a string", lim: Limits{MaxPoint: 16}, body: `{"t":1,"v":"` + strings.Repeat("a", 100) + `"}`,
			err: `row 1 (byte 0): point is longer than MaxPoint (16 bytes)`},
		{name: "max point in a number", lim: Limits{MaxPoint: 16}, body: `{"t":1,"v":` + strings.Repeat("1", 100) + `}`,
			err: `row 1 (byte 0): point is longer than MaxPoint (16 bytes)`},
		{name: "max rows", lim: Limits{MaxRows: 1}, body: "{\"t\":1,\"v\":1}\n{\"t\":2,\"v\":2}",
			want: []pt{{1, 1, 1, 0}}, err: `row 2 (byte 14): more than MaxRows (1) points`},
	})
}

func TestJSONReaderLimitsAndReadErrors(t *testing.T) {
	// A body that never gives anything is an error, not a hang.
	_, err := readAll(t, FormatJSON, "default", Float64, zeroReader{}, Limits{})
	requireInputError(t, err, 1, "", 0, "read body: multiple Read calls return no data or error")

	// A point over MaxPoint is refused before it is read to its end.
	err = requireEndlessRefused(t, FormatJSON, "default", `{"t":1,"v":2} {"t":`, '1', Limits{MaxPoint: 1000}, 14, "point is longer than MaxPoint (1000 bytes)")
	require.ErrorIs(t, err, ErrLimit)

	// Whitespace between points is not part of a point and not held.
	r, err := NewReader(FormatJSON, "default", Float64, io.MultiReader(strings.NewReader(`{"t":1,"v":2}`), io.LimitReader(endless(' '), 1<<20), strings.NewReader(`{"t":2,"v":3}`)), Limits{MaxPoint: 16})
	require.NoError(t, err)
	require.True(t, r.Next())
	require.True(t, r.Next())
	require.Equal(t, int64(13+1<<20), r.Offset())
	require.False(t, r.Next())
	require.NoError(t, r.Err())

	for _, tc := range []struct {
		body  string
		row   int
		field string
		off   int64
	}{
		{`[{"t":1,"v":1},`, 2, "", 15}, // between points
		{`[{"t":1,"v":1},{"t"`, 2, "", 19},
		{`{"t":1,"v":12`, 1, "v", 13}, // in a number
		{`{"t":1,"v":"Na`, 1, "v", 14},
		{``, 1, "", 0},
		{`[{"t":1,"v":1}]`, 2, "", 15},    // after the array
		{`{"t":1,"v":1}`, 2, "", 13},      // after a point of a stream
		{`{`, 1, "", 1},                   // in a point
		{`{"t":1 `, 1, "", 7},             // after a value
		{`{"t":`, 1, "", 5},               // after a colon
		{`{"t":1,"v":1,"\u00`, 1, "", 18}, // in an escape
	} {
		_, err := readAll(t, FormatJSON, "default", Float64, &errReader{tc.body, io.ErrClosedPipe}, Limits{})
		requireInputError(t, err, tc.row, tc.field, tc.off, "read body: io: read/write on closed pipe")
		require.ErrorIs(t, err, io.ErrClosedPipe, tc.body)
	}
}
