package vmformat

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/aerie-db/aerie/internal/jsonenc"
)

// Series is one line of JSON lines: a series and some of its samples.
type Series struct {
	Labels     labels.Labels
	Timestamps []int64 // ms
	Values     []float64
}

// AppendJSONLine appends one line, "\n" included, holding the samples
// ts[i], vs[i] of lset. ts and vs must have the same length.
func AppendJSONLine(dst []byte, lset labels.Labels, ts []int64, vs []float64) []byte {
	dst = append(dst, `{"metric":{`...)
	n := 0
	if name := lset.Get(labels.MetricName); name != "" {
		dst = jsonenc.AppendString(dst, labels.MetricName)
		dst = append(dst, ':')
		dst = jsonenc.AppendString(dst, name)
		n++
	}
	lset.Range(func(l labels.Label) {
		if l.Name == labels.MetricName {
			return
		}
		if n > 0 {
			dst = append(dst, ',')
		}
		dst = jsonenc.AppendString(dst, l.Name)
		dst = append(dst, ':')
		dst = jsonenc.AppendString(dst, l.Value)
		n++
	})
	dst = append(dst, `},"values":[`...)
	for i, v := range vs {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = AppendJSONValue(dst, v)
	}
	dst = append(dst, `],"timestamps":[`...)
	for i, t := range ts {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = strconv.AppendInt(dst, t, 10)
	}
	return append(dst, "]}\n"...)
}

// JSONDecoder reads JSON lines. Next advances to the next non-blank line;
// Series holds it if LineErr is nil. A bad line does not stop the decoder.
type JSONDecoder struct {
	lr  *LineReader
	lim Limits

	s       Series
	lineErr *ParseError
	sb      labels.ScratchBuilder
	strs    interner
	lx      jsonLexer
}

// NewJSONDecoder returns a decoder of r.
func NewJSONDecoder(r io.Reader, lim Limits) *JSONDecoder {
	lim = lim.WithDefaults()
	return &JSONDecoder{lr: NewLineReader(r, lim.MaxLineBytes), lim: lim}
}

// Next reads the next non-blank line. It returns false at the end of the
// input or on a read error (see Err).
func (d *JSONDecoder) Next() bool {
	for {
		line, ok := d.lr.Read()
		if !ok {
			return false
		}
		d.lineErr = nil
		if d.lr.tooLong {
			d.lineErr = &ParseError{Line: d.lr.line, Offset: d.lr.off,
				Msg: fmt.Sprintf("line longer than the limit of %d bytes", d.lim.MaxLineBytes)}
			return true
		}
		line = TrimEOL(line)
		if blank(line) {
			continue
		}
		d.parse(line)
		return true
	}
}

// Series returns the series of the current line, valid until the next
// call of Next, if LineErr is nil.
func (d *JSONDecoder) Series() *Series { return &d.s }

// LineErr returns the problem of the current line (a *ParseError), or nil.
func (d *JSONDecoder) LineErr() error {
	if d.lineErr == nil {
		return nil
	}
	return d.lineErr
}

// Line returns the number of the current line, 1-based.
func (d *JSONDecoder) Line() int64 { return d.lr.line }

// Offset returns the byte offset where the current line starts.
func (d *JSONDecoder) Offset() int64 { return d.lr.off }

// Err returns the read error that ended the input (a *ReadError), or nil
// at its end. It is valid once Next returned false.
func (d *JSONDecoder) Err() error { return d.lr.Err() }

// parse decodes one line into d.s, or sets d.lineErr.
func (d *JSONDecoder) parse(line []byte) {
	l := &d.lx
	l.reset(line)
	d.s.Timestamps = d.s.Timestamps[:0]
	d.s.Values = d.s.Values[:0]
	d.s.Labels = labels.EmptyLabels()

	var haveMetric, haveValues, haveTimestamps bool
	var valuesAt, tsAt int
	l.ws()
	l.expect('{')
	l.ws()
	if l.peek() == '}' {
		l.fail(l.i, "empty object: want metric, values and timestamps")
	}
	for l.err == nil {
		l.ws()
		l.at("", -1, "")
		keyAt := l.i
		key := l.str(256, "key")
		l.ws()
		l.expect(':')
		l.ws()
		dup := false
		switch string(key) {
		case "metric":
			dup, haveMetric = haveMetric, true
			l.at("metric", -1, "")
			if !dup {
				d.metric()
			}
		case "values":
			dup, haveValues, valuesAt = haveValues, true, l.i
			l.at("values", -1, "")
			if !dup {
				d.values()
			}
		case "timestamps":
			dup, haveTimestamps, tsAt = haveTimestamps, true, l.i
			l.at("timestamps", -1, "")
			if !dup {
				d.timestamps()
			}
		default:
			l.skip(0) // VictoriaMetrics ignores other keys too
		}
		if dup {
			l.at("", -1, "")
			l.fail(keyAt, fmt.Sprintf("key %q appears twice", key))
		}
		if !l.more('}') {
			break
		}
	}
	l.at("", -1, "")
	l.ws()
	if l.err == nil && l.i < len(l.b) {
		l.fail(l.i, "data after the object")
	}
	switch {
	case l.err != nil:
	case !haveMetric:
		l.fail(-1, "missing key \"metric\"")
	case !haveValues:
		l.fail(-1, "missing key \"values\"")
	case !haveTimestamps:
		l.fail(-1, "missing key \"timestamps\"")
	case len(d.s.Values) == 0:
		l.at("values", -1, "")
		l.fail(valuesAt, "empty array")
	case len(d.s.Values) != len(d.s.Timestamps):
		l.at("timestamps", -1, "")
		l.fail(tsAt, fmt.Sprintf("%d timestamps for %d values", len(d.s.Timestamps), len(d.s.Values)))
	}
	if l.err != nil {
		e := l.err
		e.Line = d.lr.line
		e.Offset = d.lr.off
		if e.Column > 0 {
			e.Offset += int64(e.Column - 1)
		}
		d.lineErr = e
	}
}

// metric reads the labels object.
func (d *JSONDecoder) metric() {
	l := &d.lx
	start := l.i
	l.expect('{')
	d.sb.Reset()
	n := 0
	if !l.empty('}') {
		for l.err == nil {
			l.ws()
			nameAt := l.i
			name := l.str(d.lim.MaxLabelNameBytes, "label name")
			if l.err != nil {
				break
			}
			if len(name) == 0 {
				l.fail(nameAt, "empty label name")
				break
			}
			ns := d.strs.get(name)
			l.at("metric", -1, ns)
			l.ws()
			l.expect(':')
			l.ws()
			if l.err == nil && l.peek() != '"' {
				l.fail(l.i, "label value is not a string")
				break
			}
			value := l.str(d.lim.MaxLabelValueBytes, "label value")
			if l.err != nil {
				break
			}
			if len(value) > 0 { // an empty value is no label, as in Prometheus
				n++
				if n > d.lim.MaxLabels {
					l.fail(nameAt, fmt.Sprintf("more than %d labels", d.lim.MaxLabels))
					break
				}
				d.sb.Add(ns, d.strs.get(value))
			}
			l.at("metric", -1, "")
			if !l.more('}') {
				break
			}
		}
	}
	if l.err != nil {
		return
	}
	d.sb.Sort()
	lset := d.sb.Labels()
	if lset.IsEmpty() {
		l.fail(start, "no labels")
		return
	}
	if name, dup := lset.HasDuplicateLabelNames(); dup {
		l.fail(start, fmt.Sprintf("label %q appears twice", name))
		return
	}
	d.s.Labels = lset
}

// values reads the values array.
func (d *JSONDecoder) values() {
	d.lx.array("values", func() error {
		v, err := d.value()
		if err == nil {
			d.s.Values = append(d.s.Values, v)
		}
		return err
	})
}

// value reads one element of the values array: a bare token or one of
// the special forms in a string.
func (d *JSONDecoder) value() (float64, error) {
	l := &d.lx
	if l.peek() != '"' {
		return parseJSONValue(l.token())
	}
	s := l.str(32, "value")
	if l.err != nil {
		return 0, l.err
	}
	v, err := parseSpecial(s)
	if err == errNotSpecial {
		err = fmt.Errorf("string %q is not a value: want a number, null, \"Infinity\", \"-Infinity\", \"StaleNaN\" or \"NaN:0x<hex>\"", s)
	}
	return v, err
}

// timestamps reads the timestamps array.
func (d *JSONDecoder) timestamps() {
	d.lx.array("timestamps", func() error {
		t, err := parseJSONInt(d.lx.token())
		if err == nil {
			d.s.Timestamps = append(d.s.Timestamps, t)
		}
		return err
	})
}

// parseJSONValue reads a bare value token: a JSON number, null, or a
// special form (VictoriaMetrics' older exports wrote NaN, +Inf, -Inf).
func parseJSONValue(tok []byte) (float64, error) {
	if len(tok) == 0 {
		return 0, fmt.Errorf("missing value")
	}
	if c := tok[0]; c >= '0' && c <= '9' || c == '-' && len(tok) > 1 && tok[1] >= '0' && tok[1] <= '9' {
		if !isJSONNumber(tok) {
			return 0, fmt.Errorf("invalid number %q", tok)
		}
		v, err := strconv.ParseFloat(string(tok), 64)
		if err != nil {
			return 0, fmt.Errorf("number %q is out of float64 range", tok)
		}
		return v, nil
	}
	v, err := parseSpecial(tok)
	if err == errNotSpecial {
		return 0, fmt.Errorf("invalid value %q", tok)
	}
	return v, err
}

// parseJSONInt reads a timestamp: a JSON integer that fits int64.
func parseJSONInt(tok []byte) (int64, error) {
	if len(tok) == 0 {
		return 0, fmt.Errorf("missing timestamp")
	}
	if !isJSONNumber(tok) {
		return 0, fmt.Errorf("invalid timestamp %q: want integer milliseconds", tok)
	}
	t, err := strconv.ParseInt(string(tok), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("invalid timestamp %q: want integer milliseconds within int64", tok)
	}
	return t, nil
}

// isJSONNumber checks JSON's number grammar:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func isJSONNumber(s []byte) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
			n++
		}
		return n
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case digits() == 0:
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(s)
}

// jsonLexer reads one line. Its error is sticky: after the first failure
// every method returns at once, so callers test err once per construct.
type jsonLexer struct {
	b   []byte
	i   int
	err *ParseError
	buf []byte // unescaped string

	// What is being read, for errors: field, and within it the element
	// idx (if >= 0) or the label (if not empty). Kept apart so that the
	// name is formatted only for an error.
	field string
	idx   int
	label string
}

func (l *jsonLexer) reset(b []byte) {
	l.b, l.i, l.err = b, 0, nil
	l.at("", -1, "")
}

func (l *jsonLexer) at(field string, idx int, label string) {
	l.field, l.idx, l.label = field, idx, label
}

// fail records the first problem, at byte at of the line (-1: the line).
func (l *jsonLexer) fail(at int, msg string) {
	if l.err != nil {
		return
	}
	field := l.field
	switch {
	case l.idx >= 0:
		field = fmt.Sprintf("%s[%d]", field, l.idx)
	case l.label != "":
		field = fmt.Sprintf("%s[%q]", field, l.label)
	}
	e := &ParseError{Field: field, Msg: msg}
	if at >= 0 {
		e.Column = at + 1
	}
	l.err = e
	l.i = len(l.b)
}

func (l *jsonLexer) peek() byte {
	if l.err != nil || l.i >= len(l.b) {
		return 0
	}
	return l.b[l.i]
}

func (l *jsonLexer) ws() {
	for l.i < len(l.b) {
		switch l.b[l.i] {
		case ' ', '\t', '\r', '\n':
			l.i++
		default:
			return
		}
	}
}

func (l *jsonLexer) expect(c byte) {
	if l.err != nil {
		return
	}
	if l.i >= len(l.b) {
		l.fail(l.i, fmt.Sprintf("unexpected end of line, want %q", c))
		return
	}
	if l.b[l.i] != c {
		l.fail(l.i, fmt.Sprintf("unexpected %s, want %q", l.describe(), c))
		return
	}
	l.i++
}

// array reads a JSON array, calling elem with l.i at each element; field
// names the elements in errors. A problem elem returns fails the line at
// the element's first byte.
func (l *jsonLexer) array(field string, elem func() error) {
	l.expect('[')
	if l.empty(']') {
		return
	}
	for i := 0; l.err == nil; i++ {
		l.ws()
		l.at(field, i, "")
		at := l.i
		if err := elem(); err != nil {
			l.fail(at, err.Error())
			return
		}
		if !l.more(']') {
			return
		}
	}
}

// empty reads close if it comes next, after white space: the end of an
// empty object or array whose opening byte was read.
func (l *jsonLexer) empty(close byte) bool {
	l.ws()
	if l.peek() == close {
		l.i++
		return true
	}
	return false
}

// more reads what follows an element of an object or array: true after a
// ',' (another element follows), false after close or at an error.
func (l *jsonLexer) more(close byte) bool {
	l.ws()
	if l.peek() == ',' {
		l.i++
		return true
	}
	l.expect(close)
	return false
}

// describe names the byte at l.i for an error message.
func (l *jsonLexer) describe() string {
	if l.i >= len(l.b) {
		return "end of line"
	}
	end := min(len(l.b), l.i+16)
	return strconv.Quote(string(l.b[l.i:end]))
}

// token reads a bare token: a number, literal or special form.
func (l *jsonLexer) token() []byte {
	if l.err != nil {
		return nil
	}
	start := l.i
	for l.i < len(l.b) {
		c := l.b[l.i]
		if c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '+' || c == '-' || c == '.' || c == ':' || c == '_' {
			l.i++
			continue
		}
		break
	}
	if l.i == start {
		l.fail(l.i, fmt.Sprintf("unexpected %s", l.describe()))
		return nil
	}
	return l.b[start:l.i]
}

// str reads a JSON string and returns its unescaped bytes (valid until the
// next call). Strings of more than limit bytes, raw control characters and
// invalid UTF-8 are errors; a lone surrogate escape becomes U+FFFD, as in
// encoding/json.
func (l *jsonLexer) str(limit int, what string) []byte {
	if l.err != nil {
		return nil
	}
	start := l.i
	if l.i >= len(l.b) || l.b[l.i] != '"' {
		l.fail(l.i, fmt.Sprintf("unexpected %s, want a string", l.describe()))
		return nil
	}
	l.i++
	l.buf = l.buf[:0]
	for {
		if l.i >= len(l.b) {
			l.fail(start, "unterminated string")
			return nil
		}
		c := l.b[l.i]
		switch {
		case c == '"':
			l.i++
			if len(l.buf) > limit {
				l.fail(start, fmt.Sprintf("%s of %d bytes is longer than the limit of %d", what, len(l.buf), limit))
				return nil
			}
			return l.buf
		case c == '\\':
			if !l.escape() {
				return nil
			}
		case c < 0x20:
			l.fail(l.i, fmt.Sprintf("control character %#02x in a string", c))
			return nil
		case c < utf8.RuneSelf:
			l.buf = append(l.buf, c)
			l.i++
		default:
			r, size := utf8.DecodeRune(l.b[l.i:])
			if r == utf8.RuneError && size == 1 {
				l.fail(l.i, "invalid UTF-8 in a string")
				return nil
			}
			l.buf = append(l.buf, l.b[l.i:l.i+size]...)
			l.i += size
		}
		if len(l.buf) > limit+utf8.UTFMax {
			l.fail(start, fmt.Sprintf("%s longer than the limit of %d bytes", what, limit))
			return nil
		}
	}
}

// escape decodes the escape sequence at l.i into l.buf.
func (l *jsonLexer) escape() bool {
	at := l.i
	if l.i+1 >= len(l.b) {
		l.fail(at, "unterminated escape")
		return false
	}
	c := l.b[l.i+1]
	l.i += 2
	switch c {
	case '"', '\\', '/':
		l.buf = append(l.buf, c)
	case 'b':
		l.buf = append(l.buf, '\b')
	case 'f':
		l.buf = append(l.buf, '\f')
	case 'n':
		l.buf = append(l.buf, '\n')
	case 'r':
		l.buf = append(l.buf, '\r')
	case 't':
		l.buf = append(l.buf, '\t')
	case 'u':
		r, ok := l.hex4()
		if !ok {
			l.fail(at, "invalid \\u escape")
			return false
		}
		if utf16.IsSurrogate(r) {
			r2 := rune(-1)
			if l.i+1 < len(l.b) && l.b[l.i] == '\\' && l.b[l.i+1] == 'u' {
				save := l.i
				l.i += 2
				var ok2 bool
				if r2, ok2 = l.hex4(); !ok2 {
					l.fail(save, "invalid \\u escape")
					return false
				}
				if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
					l.buf = utf8.AppendRune(l.buf, dec)
					return true
				}
				l.i = save // not a pair: r2 is read on its own
			}
			r = utf8.RuneError
		}
		l.buf = utf8.AppendRune(l.buf, r)
	default:
		l.fail(at, fmt.Sprintf("invalid escape \\%c", c))
		return false
	}
	return true
}

func (l *jsonLexer) hex4() (rune, bool) {
	if l.i+4 > len(l.b) {
		return 0, false
	}
	var r rune
	for _, c := range l.b[l.i : l.i+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	l.i += 4
	return r, true
}

// maxDepth bounds the nesting of values skipped under unknown keys.
const maxDepth = 64

// skip reads and ignores one value.
func (l *jsonLexer) skip(depth int) {
	if l.err != nil {
		return
	}
	if depth > maxDepth {
		l.fail(l.i, fmt.Sprintf("nested deeper than %d", maxDepth))
		return
	}
	switch l.peek() {
	case '"':
		l.str(math.MaxInt-utf8.UTFMax, "string")
	case '{', '[':
		open := l.b[l.i]
		end := byte('}')
		if open == '[' {
			end = ']'
		}
		l.i++
		if l.empty(end) {
			return
		}
		for l.err == nil {
			l.ws()
			if open == '{' {
				l.str(math.MaxInt-utf8.UTFMax, "key")
				l.ws()
				l.expect(':')
				l.ws()
			}
			l.skip(depth + 1)
			if !l.more(end) {
				return
			}
		}
	default:
		tok := l.token()
		if l.err != nil {
			return
		}
		switch string(tok) {
		case "true", "false", "null":
			return
		}
		if !isJSONNumber(tok) {
			l.fail(l.i-len(tok), fmt.Sprintf("invalid value %q", tok))
		}
	}
}

// interner keeps the label strings of a decoder, which repeat from line
// to line, to save allocations.
type interner struct{ m map[string]string }

const maxInterned = 4096

func (in *interner) get(b []byte) string {
	if s, ok := in.m[string(b)]; ok {
		return s
	}
	s := string(b)
	if in.m == nil {
		in.m = map[string]string{}
	}
	if len(in.m) < maxInterned {
		in.m[s] = s
	}
	return s
}
