// Package jsonenc appends JSON text to a caller's buffer: strings and
// finite numbers, byte for byte as encoding/json writes them with HTML
// escaping off, without reflection or allocation. The writers of JSON
// lines (internal/vmformat) and of the sensor API's points
// (internal/sensor/pointio) build their answers from it.
//
// Invariants:
//
//  1. AppendString(dst, s) is a JSON string that decodes to s, invalid
//     UTF-8 bytes each replaced by U+FFFD; for valid UTF-8 it equals
//     encoding/json's output with SetEscapeHTML(false), except that U+2028
//     and U+2029 are left as they are (encoding/json escapes them for
//     JavaScript's sake).
//  2. AppendFloat(dst, v) equals json.Marshal(v) for every finite v: the
//     shortest text that parses back to the same bits, in exponent form
//     below 1e-6 and from 1e21 (ECMAScript's rule), so -0 is "-0" and 1e21
//     is "1e+21".
package jsonenc
