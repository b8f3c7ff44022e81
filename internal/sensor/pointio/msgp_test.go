package pointio

import (
	"bytes"
	"io"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/vmihailenco/msgpack/v5"
)

// mp encodes values one after another with the msgpack library, integers
// in their smallest form: a string is a msgpack string, kv a map in the
// order given, arr an array, raw bytes as they are.
func mp(t testing.TB, vals ...any) string {
	t.Helper()
	var b bytes.Buffer
	e := msgpack.NewEncoder(&b)
	e.UseCompactInts(true)
	for _, v := range vals {
		var err error
		switch v := v.(type) {
		case raw:
			_, err = b.WriteString(string(v))
		case kv:
			require.NoError(t, e.EncodeMapLen(len(v)/2))
			for _, x := range v {
				b.WriteString(mp(t, x))
			}
		case arr:
			require.NoError(t, e.EncodeArrayLen(len(v)))
			for _, x := range v {
				b.WriteString(mp(t, x))
			}
		default:
			err = e.Encode(v)
		}
		require.NoError(t, err)
	}
	return b.String()
}

type (
	raw string
	kv  []any // key, value, key, value …
	arr []any
)

func TestMsgpReader(t *testing.T) {
	p1 := mp(t, kv{"t", int64(1), "v", 2.5})
	p2 := mp(t, kv{"v", int8(3), "t", uint64(2)})
	a1 := mp(t, arr{int64(1), 2.5})
	a2 := mp(t, arr{int64(2), float32(3)})
	nanBits := math.Float64frombits(0x7ff0000000000123)
	n1, n2 := int64(len(p1)), int64(len(p2))

	runReaderCases(t, FormatMsgp, []readerCase{
		{name: "stream of maps", body: p1 + p2, want: []pt{{1, 2.5, 1, 0}, {2, 3, 2, n1}}},
		{name: "array of maps", body: "\x92" + p1 + p2, want: []pt{{1, 2.5, 1, 1}, {2, 3, 2, 1 + n1}}},
		{name: "array16 of maps", body: "\xdc\x00\x02" + p1 + p2, want: []pt{{1, 2.5, 1, 3}, {2, 3, 2, 3 + n1}}},
		{name: "array of arrays", body: mp(t, arr{arr{int64(1), 2.5}, arr{int64(2), float32(3)}}),
			want: []pt{{1, 2.5, 1, 1}, {2, 3, 2, 1 + int64(len(a1))}}},
		{name: "stream of arrays", body: a1 + a2, want: []pt{{1, 2.5, 1, 0}, {2, 3, 2, int64(len(a1))}}},
		{name: "mixed stream", body: a1 + p2 + a2, want: []pt{{1, 2.5, 1, 0}, {2, 3, 2, int64(len(a1))}, {2, 3, 3, int64(len(a1)) + n2}}},
		{name: "empty body", body: ""},
		{name: "empty array", body: "\x90"},
		{name: "integer types", body: "" +
			"\x82\xa1t\xfb\xa1v\xcc\xc8" + // t fixint -5, v uint8 200
			"\x82\xa1t\xce\x00\x01\x11\x70\xa1v\xd1\xfe\xd4" + // t uint32 70000, v int16 -300
			"\x82\xa1t\xd3\x80\x00\x00\x00\x00\x00\x00\x00\xa1v\xcf\xff\xff\xff\xff\xff\xff\xff\xff" + // t int64 min, v uint64 max
			"\x82\xa1t\xcf\x7f\xff\xff\xff\xff\xff\xff\xff\xa1v\xd2\xff\xfe\xee\x90" + // t uint64 max int64, v int32 -70000
			"\x82\xa1t\xd0\x80\xa1v\xcd\x01\x00" + // t int8 -128, v uint16 256
			"\x82\xa1t\x7f\xa1v\xe0", // t fixint 127, v fixint -32
			want: []pt{{-5, 200, 1, 0}, {70000, -300, 2, 8}, {math.MinInt64, math.MaxUint64, 3, 21}, {math.MaxInt64, -70000, 4, 44}, {-128, 256, 5, 63}, {127, -32, 6, 73}}},
		{name: "nan payload", body: mp(t, kv{"t", int64(1), "v", nanBits}), want: []pt{{1, nanBits, 1, 0}}},
		{name: "str8 key", body: "\x82\xd9\x01t\x01\xa1v\x02", want: []pt{{1, 2, 1, 0}}},
		{name: "int64 exact", typ: Int64, body: mp(t, kv{"t", 1, "v", int64(1) << 60}), want: []pt{{1, 1 << 60, 1, 0}}},
		{name: "float32", typ: Float32, body: mp(t, kv{"t", 1, "v", 0.1}), want: []pt{{1, float64(float32(0.1)), 1, 0}}},

		{name: "int8 overflow", typ: Int8, body: mp(t, kv{"t", 1, "v", 3}, kv{"t", 2, "v", 300}),
			want: []pt{{1, 3, 1, 0}}, err: `row 2 (byte 13), field "v": value 300 does not fit int8 (-128 to 127)`},
		{name: "int8 float", typ: Int8, body: mp(t, kv{"t", 1, "v", 1.5}),
			err: `row 1 (byte 6), field "v": value 1.5 does not fit int8: not an integer`},
		{name: "int64 not exact", typ: Int64, body: mp(t, kv{"t", 1, "v", int64(1)<<53 + 1}),
			err: `row 1 (byte 6), field "v": value 9007199254740993 is not exactly representable: values are stored as float64, which holds every integer up to 2^53 but only some beyond`},
		{name: "int64 uint64 overflow", typ: Int64, body: mp(t, kv{"t", 1, "v", uint64(math.MaxUint64)}),
			err: `row 1 (byte 6), field "v": value 18446744073709551615 does not fit int64`},
		{name: "unknown key", body: mp(t, kv{"t", 1, "v", 2, "x", 3}),
			err: `row 1 (byte 7), field "x": unknown key "x": a point has the keys "t" (timestamp) and "v" (value)`},
		{name: "duplicate key", body: mp(t, kv{"v", 1, "v", 2}),
			err: `row 1 (byte 4), field "v": key "v" appears twice`},
		{name: "missing t", body: p1 + mp(t, kv{"v", 1}),
			want: []pt{{1, 2.5, 1, 0}}, err: `row 2 (byte 15), field "t": missing key "t" (timestamp)`},
		{name: "missing v", body: mp(t, kv{"t", 1}),
			err: `row 1 (byte 0), field "v": missing key "v" (value)`},
		{name: "float timestamp", body: mp(t, kv{"t", 1.0, "v", 1}),
			err: `row 1 (byte 3), field "t": want an integer timestamp (milliseconds), got a float64`},
		{name: "nil timestamp", body: mp(t, kv{"t", nil, "v", 1}),
			err: `row 1 (byte 3), field "t": want an integer timestamp (milliseconds), got nil`},
		{name: "timestamp out of range", body: mp(t, kv{"t", uint64(math.MaxInt64) + 1, "v", 1}),
			err: `row 1 (byte 3), field "t": timestamp 9223372036854775808 is out of range of int64 milliseconds`},
		{name: "float32 timestamp", body: mp(t, arr{float32(1), 1}),
			err: `row 1 (byte 1), field "t": want an integer timestamp (milliseconds), got a float32`},
		{name: "truncated timestamp", body: "\x92\xcf\x00\x00",
			err: `row 1 (byte 4), field "t": unexpected end of input in a point`},
		{name: "truncated uint64 value", body: "\x92\x01\xcf\x00",
			err: `row 1 (byte 4), field "v": unexpected end of input in a point`},
		{name: "truncated int value", body: "\x92\x01\xd1\x00",
			err: `row 1 (byte 4), field "v": unexpected end of input in a point`},
		{name: "binary value", body: mp(t, arr{1, []byte("x")}),
			err: `row 1 (byte 2), field "v": want a number, got binary data`},
		{name: "array value", body: mp(t, arr{1, arr{}}),
			err: `row 1 (byte 2), field "v": want a number, got an array`},
		{name: "map value", body: mp(t, arr{1, kv{}}),
			err: `row 1 (byte 2), field "v": want a number, got a map`},
		{name: "extension value", body: "\x92\x01\xd4\x01\x00",
			err: `row 1 (byte 2), field "v": want a number, got an extension type`},
		{name: "float32 int8", typ: Int8, body: mp(t, arr{1, float32(-128)}), want: []pt{{1, -128, 1, 0}}},
		{name: "nil value", body: mp(t, arr{1, nil}),
			err: `row 1 (byte 2), field "v": want a number, got nil`},
		{name: "string value", body: mp(t, kv{"t", 1, "v", "NaN"}),
			err: `row 1 (byte 6), field "v": want a number, got a string`},
		{name: "integer key", body: mp(t, kv{1, 2}),
			err: `row 1 (byte 1): want a string key "t" or "v", got an integer`},
		{name: "point of 3 at the start", body: mp(t, arr{1, 2, 3}),
			err: `row 1 (byte 1): want an array of points or a point [t, v]: got an array of 3 elements starting with an integer`},
		{name: "point of 3 in an array", body: mp(t, arr{arr{1, 2, 3}}),
			err: `row 1 (byte 1): a point array has 2 elements [t, v], this one 3`},
		{name: "point of 3 in a stream", body: a1 + mp(t, arr{1, 2, 3}),
			want: []pt{{1, 2.5, 1, 0}}, err: `row 2 (byte 11): a point array has 2 elements [t, v], this one 3`},
		{name: "scalar at the start", body: mp(t, 1),
			err: `row 1 (byte 0): want a point (a map {"t", "v"} or an array [t, v]) or an array of points, got an integer`},
		{name: "nil at the start", body: "\xc0",
			err: `row 1 (byte 0): want a point (a map {"t", "v"} or an array [t, v]) or an array of points, got nil`},
		{name: "unused code at the start", body: "\xc1",
			err: `row 1 (byte 0): want a point (a map {"t", "v"} or an array [t, v]) or an array of points, got the unused code 0xc1`},
		{name: "scalar in a stream", body: p1 + mp(t, true),
			want: []pt{{1, 2.5, 1, 0}}, err: `row 2 (byte 15): want a point (a map {"t", "v"} or an array [t, v]), got a boolean`},
		{name: "scalar in an array", body: mp(t, arr{kv{"t", 1, "v", 2}, "x"}),
			want: []pt{{1, 2, 1, 1}}, err: `row 2 (byte 8): want a point (a map {"t", "v"} or an array [t, v]), got a string`},
		{name: "data after the array", body: "\x91" + p1 + "\x01",
			want: []pt{{1, 2.5, 1, 1}}, err: `row 2 (byte 16): an integer after the array of points, want the end of the body`},
		{name: "array too short", body: "\x92" + p1,
			want: []pt{{1, 2.5, 1, 1}}, err: `row 2 (byte 16): unexpected end of input: the array of points has 1 more point(s)`},
		{name: "array header only", body: "\x92",
			err: `row 1 (byte 1): unexpected end of input`},
		{name: "truncated array header", body: "\xdc\x00",
			err: `row 1 (byte 0): unexpected end of input`},
		{name: "truncated value", body: p1 + p1[:len(p1)-3],
			want: []pt{{1, 2.5, 1, 0}}, err: `row 2 (byte 27), field "v": unexpected end of input in a point`},
		{name: "truncated point array header", body: p1 + "\xdc\x00",
			want: []pt{{1, 2.5, 1, 0}}, err: `row 2 (byte 17): unexpected end of input in a point`},
		{name: "truncated key", body: "\x82\xa1",
			err: `row 1 (byte 2): unexpected end of input in a point`},
		{name: "truncated map header", body: "\xde\x00",
			err: `row 1 (byte 2): unexpected end of input in a point`},
		{name: "max point", lim: Limits{MaxPoint: 16}, body: mp(t, kv{"t", 1, "v", 2.5}, kv{"t", 1, "v", 2.5, "t", 1}),
			want: []pt{{1, 2.5, 1, 0}}, err: `row 2 (byte 15): point is longer than MaxPoint (16 bytes)`},
		{name: "max point in a key", lim: Limits{MaxPoint: 16}, body: mp(t, kv{strings.Repeat("k", 100), 1}),
			err: `row 1 (byte 0): point is longer than MaxPoint (16 bytes)`},
		{name: "huge key length", body: "\x81\xdb\xff\xff\xff\xff" + "kkk",
			err: `row 1 (byte 0): point is longer than MaxPoint (65536 bytes)`},
		{name: "max rows", lim: Limits{MaxRows: 1}, body: "\x92" + p1 + p1,
			want: []pt{{1, 2.5, 1, 1}}, err: `row 2 (byte 16): more than MaxRows (1) points`},
	})
}

func TestMsgpReaderLimitsAndReadErrors(t *testing.T) {
	// A point over MaxPoint is refused before it is read to its end: a map
	// of four billion entries is unknown or duplicate keys by its third.
	requireEndlessRefused(t, FormatMsgp, "default", "\x82\xa1t\x01\xa1v\x02\xdb\x7f\xff\xff\xff", 'k', Limits{MaxPoint: 1000}, 7, "want a point (a map {\"t\", \"v\"} or an array [t, v]), got a string")

	for _, tc := range []struct {
		body  string
		row   int
		field string
		off   int64
	}{
		{"\x92\x82\xa1t\x01\xa1v\x02", 2, "", 8},  // between points
		{"\x82\xa1t\x01\xa1", 1, "", 5},           // in a key
		{"\x82\xa1t\x01\xa1v\xcb\x00", 1, "v", 8}, // in a value
		{"", 1, "", 0},
		{"\x82\xa1t\x01\xa1v\x01", 2, "", 7}, // after a point of a stream
		{"\x82", 1, "", 1},                   // before a key
		{"\x82\xa1t", 1, "t", 3},             // before a timestamp
		{"\x82\xa1t\xcf\x00", 1, "t", 5},     // in a timestamp
		{"\x92\x01", 1, "v", 2},              // before a value
		{"\x92\x01\xcf\x00", 1, "v", 4},      // in a value
		{"\x92\x01\xcb\x00", 1, "v", 4},      // in a float
		{"\xdc\x00", 1, "", 0},               // in the header of an array
		{"\x91", 1, "", 1},                   // after the header of an array
		{"\x91\x92\x01\x02", 2, "", 4},       // after the array
		{"\x82\xd9", 1, "", 1},               // in the header of a key
	} {
		_, err := readAll(t, FormatMsgp, "default", Float64, &errReader{tc.body, io.ErrClosedPipe}, Limits{})
		requireInputError(t, err, tc.row, tc.field, tc.off, "read body: io: read/write on closed pipe")
		require.ErrorIs(t, err, io.ErrClosedPipe, "%q", tc.body)
	}
}
