// Package vmformat holds streaming codecs for VictoriaMetrics' import and
// export formats: JSON lines (/api/v1/import, /api/v1/export) and CSV
// (/api/v1/import/csv with a column spec, /api/v1/export/csv). It does no
// I/O of its own beyond reading an io.Reader line by line: encoders append
// to a caller's buffer (AppendJSONLine, AppendCSVRow), decoders
// (JSONDecoder, CSVDecoder) hand out one record per call of Next.
//
// # JSON lines
//
// One series chunk per line:
//
//	{"metric":{"__name__":"up","job":"a"},"values":[1,0.5],"timestamps":[1700000000000,1700000015000]}
//
// The encoder writes __name__ first, then the other labels in the order of
// labels.Labels (sorted by name), finite values as plain JSON numbers in
// the shortest form that parses back to the same float64 (encoding/json's
// choice between fixed and exponent notation), and timestamps as integer
// milliseconds. Values JSON numbers cannot hold are written as follows;
// the decoder reads every form in the second column, in JSON strings or
// as bare tokens, case-insensitively:
//
//	value                               written       also accepted
//	NaN 0x7ff8000000000001 (math.NaN)   null          "NaN", NaN, "null", "-NaN"
//	+Inf                                "Infinity"    "Inf", "+Inf", Inf, +Infinity
//	-Inf                                "-Infinity"   "-Inf", -Inf
//	stale marker 0x7ff0000000000002     "StaleNaN"    StaleNaN
//	any other NaN bit pattern           "NaN:0x7ff8000000000abc" (16 hex digits)
//
// null, "Infinity" and "-Infinity" are what VictoriaMetrics' export writes
// and its import reads, so Aerie's export of finite values, ±Inf and
// ordinary NaN imports into VictoriaMetrics unchanged, and VictoriaMetrics'
// export (also of older versions, which wrote bare NaN, +Inf and -Inf)
// imports into Aerie. A line holding a stale marker or another NaN payload
// is refused by VictoriaMetrics (it has no way to carry them); Aerie keeps
// them bit for bit.
//
// # CSV
//
// Import takes VictoriaMetrics' column spec (ParseCSVFormat):
// `1:time:unix_ms,2:metric:cpu,3:label:host` — 1-based columns; time
// formats unix_s, unix_ms, unix_ns (decimal, fractions allowed, rounded
// down to the millisecond), rfc3339, custom:<Go layout>; any number of
// metric columns (each non-empty one gives a sample); label columns (empty
// means absent). Aerie adds `N:label:__name__`: the series name is taken
// from the data, and the spec has exactly one metric column, whose name is
// used only where that field is empty. This makes Aerie's own CSV export
// importable. Fields may be quoted as in RFC 4180 ("" is a quote; a quoted
// field may span lines). Values are read as strconv.ParseFloat reads them
// plus the special forms above; the encoder writes NaN, +Inf, -Inf,
// StaleNaN and NaN:0x… for them.
//
// Export takes VictoriaMetrics' field list (ParseCSVExportFormat):
// `__name__,__value__,__timestamp__:unix_ms,host` — __timestamp__ takes the
// time formats above (default unix_ms; unix_s rounds down to the second).
//
// # Invariants
//
//  1. Round trip: every record a decoder returns encodes to bytes that
//     decode to the same labels, timestamps and value bits (NaN payloads,
//     the stale marker, ±Inf and -0 included); the fuzz tests check it.
//  2. Determinism: an encoder's output depends only on its arguments, so
//     an export of unchanged data is byte-identical every time.
//  3. Bounded memory: a decoder holds one line (one CSV record) at a time,
//     at most Limits.MaxLineBytes; a longer line is skipped (read and
//     dropped up to its end) and reported, not buffered.
//  4. A bad line is not the end: Next returns true and LineErr says what
//     was wrong and where (*ParseError: line, column, byte offset, field),
//     so a caller can count it and go on. Only a failure of the reader
//     ends the input; Err reports it (*ReadError) once Next returned false.
//  5. Decoders never panic on any input and keep a sticky error within a
//     line: the first problem is the one reported.
package vmformat
