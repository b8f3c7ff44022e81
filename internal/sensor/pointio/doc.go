// Package pointio decodes the bodies of Peregreen-style uploads and
// encodes the answers of extract and search (issue 13). The HTTP layer
// (internal/sensor) maps URL parts to NewReader and NewWriter; this
// package does no I/O beyond its io.Reader and io.Writer.
//
// # Uploads
//
// POST /upload/{sensor}/{reader}/{format}/{type} carries one sensor's
// points. reader is csv, json or msgp; format is tsPos-valPos-sep for csv
// and "default" for json and msgp; type is int8, int16, int32, int64,
// float32 or float64 (Type). Timestamps are integer milliseconds. Values
// are stored as float64 and must fit the type (Type.Fit):
//
//   - int8 … int64: integers within the type's range; no NaN or ±Inf. An
//     integer written in plain digits is read exactly (not through a
//     float), so an int64 value float64 cannot hold exactly (some beyond
//     2^53, e.g. 9007199254740993) is refused rather than rounded; beyond
//     2^53 an integer must be written in plain digits (not 1e18). -0 is
//     stored as 0.
//   - float32: NaN, ±Inf and values of magnitude up to math.MaxFloat32;
//     the sensor stores float32 precision (the float32 nearest a decimal
//     text; a float64 of JSON or MessagePack rounded to float32).
//   - float64: any number.
//
// A Reader stops at the first problem and reports it as an *InputError:
// row, field ("t", "v", an unknown key, or "" for the row as a whole),
// byte offset and what was wrong, e.g.
//
//	row 17 (byte 402), field "v": value 300 does not fit int8 (-128 to 127)
//
// The offset is that of the field, or of the row when Field is "". An
// exceeded limit wraps ErrLimit; a failure of the body's io.Reader is
// wrapped too ("read body: …", errors.As reaches it).
//
// Limits bound a body: a CSV line may have at most MaxLine bytes (64 KiB
// by default) without its line end, a JSON or MessagePack point at most
// MaxPoint bytes (64 KiB) from its first byte to its last, and a body at
// most MaxRows points (no limit by default). Bodies of any length stream
// through in this much memory.
//
// # CSV: reader csv, format tsPos-valPos-sep
//
// tsPos and valPos are 0-based field positions (0 to 9999, different);
// sep is one byte: any but a digit, '"', '\r' or '\n'. The format is split
// at the first two '-', so "0-1--" separates fields with '-'. A tab is
// the byte itself (a URL's %09 decodes to it) or the two characters \t.
// Examples: "0-1-," for "1700000000000,21.5"; "2-0-;" for
// "21.5;room 1;1700000000000".
//
//   - Lines end in "\n" or "\r\n"; the last may have no line end. Blank
//     lines (empty or only spaces and tabs) are skipped. A UTF-8 byte order
//     mark at the start is skipped.
//   - Fields are split at every sep: two seps in a row make an empty
//     field. Spaces and tabs around a field are dropped (unless they are
//     the separator). Fields after the last one the format names are not
//     looked at.
//   - A field may be quoted: from a '"' that starts it to the next '"' not
//     doubled ("" is a quote inside); only spaces and tabs may follow the
//     closing quote before sep or the line end. A quoted field may hold
//     sep, but not a line end: quoted fields do not span lines. The
//     timestamp and value are read from inside the quotes.
//   - The timestamp is a decimal integer ([+-]digits) in int64.
//   - The value is a number as strconv.ParseFloat reads it (decimal or
//     hex, "NaN", "Inf", "+Inf", "-Inf", "infinity", case-insensitive);
//     integer types read plain integers exactly.
//   - Line 1 is a header, and skipped, if both its timestamp field and
//     its value field are not numbers (strconv.ParseFloat); a line that is
//     half numbers is an error, and so is a header on any other line.
//   - Row is the line number (counting blank lines and the header); the
//     offset of a point is that of its line.
//
// # JSON: reader json, format default
//
// Either one array of point objects, or point objects one after another
// (newline-delimited JSON or simply concatenated; any JSON whitespace
// between them):
//
//	[{"t":1700000000000,"v":21.5},{"t":1700000060000,"v":21.7}]
//	{"t":1700000000000,"v":21.5}
//	{"t":1700000060000,"v":21.7}
//
// A point has the keys "t" and "v", each once, in any order; any other
// key is an error naming it, and so is a missing one. "t" is a JSON
// integer (no fraction or exponent); "v" a JSON number, or one of the
// strings "NaN", "+Inf", "-Inf" (only float types accept them, as any
// NaN or Inf). Keys may use JSON escapes. An empty body or an empty
// array has no points. Nothing but whitespace may follow the array. Row
// is the point number; the offset of a point is that of its '{'.
//
// # MessagePack: reader msgp, format default
//
// Either one array of points, or points one after another. A point is a
// map {"t": integer, "v": number} (string keys, each once, in any order;
// other keys are errors) or an array [t, v]. t may be of any msgpack
// integer type within int64; v of any integer or float type. A body that
// starts with an array of 2 elements whose first element is an integer is
// a stream of points starting with [t, v]; any other array at the start
// is the array of points. Row is the point number; the offset of a point
// is that of its first byte.
//
// # Answers
//
// NewWriter writes csv, json or msgp. An answer has one of three shapes
// (Layout.Shape): Points (extract), Rows (aggregations, with value columns
// named by the caller, e.g. "min", "max", but neither "t" nor "metric")
// and Intervals (search). Numbers
// are written in the shortest form that reads back to the same float64:
// fixed-point from 1e-6 to below 1e21, else with an exponent (as
// encoding/json writes them), except that values from 2^53 to 1e21 are
// written with all their digits. So an integral value comes out as its
// exact integer, which integer types read back (2^60 is
// 1152921504606846976, not the shorter 1152921504606847000).
// NaN, +Inf and -Inf are written as NaN, +Inf and -Inf in CSV and as the
// strings "NaN", "+Inf" and "-Inf" in JSON, as the readers read them.
// MessagePack values are float64, bit for bit.
//
//	shape      csv               json                               msgp (one map per item)
//	Points     1,2.5             [{"t":1,"v":2.5},…]                {"t":1,"v":2.5}…
//	Rows       t,min,max         [{"t":1,"min":0.5,"max":2},…]      {"t":1,"min":0.5,"max":2}…
//	           1,0.5,2
//	Intervals  1,5               [{"from":1,"to":5},…]              {"from":1,"to":5}…
//
// CSV points have no header, so an extract uploads again with format
// 0-1-,; rows have a header line naming the columns; intervals have none.
// MessagePack items are maps one after another, not an array: the number
// of items is not known when the answer starts. The msgp reader reads
// such a stream.
//
// The native API (/api/v1/sensor/extract, /search) answers many series:
// Layout.Series frames each series' items between BeginSeries(labels) and
// EndSeries. Answers of one series (the Peregreen endpoints) have no
// framing.
//
//   - json: {"status":"success","data":[{"metric":{"__name__":"s1","site":"a"},"points":[…]},…]}
//     with the key "points", "rows" or "intervals" after the shape.
//   - csv: every line starts with a field holding the series' labels in
//     Prometheus text form, {__name__="s1",site="a"}, quoted as a CSV
//     field: "{__name__=""s1"",site=""a""}",1,2.5. Rows have the header
//     metric,t,min,max.
//   - msgp: the map {"metric": {"__name__": "s1", "site": "a"}} before
//     the series' items; an item map never has the key "metric".
//
// A Writer writes each item to a bufio.Writer as it comes; Close ends the
// answer (JSON's closing brackets) and flushes.
//
// # Invariants
//
//  1. Bounded memory: a Reader holds one point, a read buffer of at most
//     64 KiB and one line of at most Limits.MaxLine bytes (CSV) or one
//     token or key of at most Limits.MaxPoint bytes (JSON, MessagePack,
//     whose points may be no longer). A longer line or point is an error
//     before it is held; nothing is kept per point. A Writer holds one
//     item, the current series' labels and a 32 KiB bufio buffer.
//  2. Every error of a Reader is an *InputError naming the row (≥ 1), the
//     field where there is one, and a byte offset within the body read so
//     far; the Reader stops there and reports nothing after it.
//  3. Round trip: points written by a Writer without series framing and
//     read back by a Reader of the same format (csv with format 0-1-,)
//     give the same timestamps and value bits (-0 too), but for NaN
//     payloads in csv and json, which have one NaN. Rows, intervals and
//     framed answers parse back (encoding/csv, encoding/json, msgpack) to
//     the same labels, timestamps and values.
//  4. A value a Reader returns has passed Type.Fit: a sensor never stores
//     what its type cannot hold, and an integer is never rounded on the
//     way in.
//  5. Readers never panic, whatever the body (fuzzed: FuzzCSVReader,
//     FuzzJSONReader, FuzzMsgpReader).
//  6. A Writer's output depends only on its calls: the same answer is
//     the same bytes.
package pointio
