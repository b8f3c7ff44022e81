package cacheserver

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"unicode/utf8"

	"github.com/aerie-db/aerie/internal/cache"
)

// Limits on input, the same for both protocols.
const (
	// MaxKeyLen is the longest key: the HTTP path's {key}, the memcached
	// item key with its range (memcached's own limit).
	MaxKeyLen = 250
	// MaxFields is the number of fields a body may hold (and an HTTP GET may
	// ask for).
	MaxFields = 1024
	// MaxFieldNameLen is the longest field name, in bytes once unescaped.
	MaxFieldNameLen = 256
	// DefaultMaxPoints is the default number of points one body may hold.
	DefaultMaxPoints = 4 << 20
)

// inputError is a client's mistake: the status an HTTP client gets (400 or
// 413) and a message naming what was wrong and where.
type inputError struct {
	status int
	msg    string
}

func (e *inputError) Error() string { return e.msg }

func badInput(format string, args ...any) *inputError {
	return &inputError{http.StatusBadRequest, fmt.Sprintf(format, args...)}
}

func tooLarge(format string, args ...any) *inputError {
	return &inputError{http.StatusRequestEntityTooLarge, fmt.Sprintf(format, args...)}
}

// resolveKey maps a client's key to a cache key: 40 hexadecimal digits are
// the key itself (a client that hashed its query already); any other
// string is a query text, hashed with cache.KeyOf.
func resolveKey(s string) (cache.Key, *inputError) {
	switch {
	case s == "":
		return cache.Key{}, badInput("key is empty")
	case len(s) > MaxKeyLen:
		return cache.Key{}, badInput("key of %d bytes is longer than %d", len(s), MaxKeyLen)
	case len(s) == 2*len(cache.Key{}) && isHex(s):
		k, err := cache.ParseKey(s)
		if err != nil {
			return k, badInput("%v", err)
		}
		return k, nil
	}
	return cache.KeyOf(s), nil
}

func isHex(s string) bool {
	_, err := hex.DecodeString(s)
	return err == nil
}

// parseBody reads a body {"fields":{"<name>":[[<t>,<value>],...],...}}
// whose every timestamp lies in [start, end]. Values are JSON scalars
// (number, string, true, false, null); each Point.V is the value's text as
// written, a sub-slice of body (a scalar has no insignificant whitespace to
// compact). A field named twice gets the points of both. maxPoints bounds
// the points of the whole body. Errors name the byte offset, and for a bad
// point the field and the point's index.
func parseBody(body []byte, start, end int64, maxPoints int) ([]cache.Field, *inputError) {
	p := &bodyParser{b: body}
	p.ws()
	if err := p.expect('{', "the body's opening '{'"); err != nil {
		return nil, err
	}
	var fields []cache.Field
	seen := false
	p.ws()
	if p.peek() == '}' {
		return nil, badInput("byte %d: body lacks \"fields\"", p.pos)
	}
	for {
		p.ws()
		off := p.pos
		name, err := p.str("a member name")
		if err != nil {
			return nil, err
		}
		if name != "fields" {
			return nil, badInput("byte %d: unknown member %s of the body (only \"fields\")", off, quote(name))
		}
		if seen {
			return nil, badInput("byte %d: \"fields\" appears twice", off)
		}
		seen = true
		p.ws()
		if err := p.expect(':', "':' after \"fields\""); err != nil {
			return nil, err
		}
		if fields, err = p.fields(start, end, maxPoints); err != nil {
			return nil, err
		}
		p.ws()
		if p.peek() == ',' {
			p.pos++
			continue
		}
		if err := p.expect('}', "',' or '}' after \"fields\""); err != nil {
			return nil, err
		}
		break
	}
	p.ws()
	if p.pos < len(p.b) {
		return nil, badInput("byte %d: %s after the body's closing '}'", p.pos, p.found())
	}
	return fields, nil
}

type bodyParser struct {
	b       []byte
	pos     int
	npoints int // points read so far, against maxPoints
}

func (p *bodyParser) ws() {
	for p.pos < len(p.b) {
		switch p.b[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

// peek returns the next byte, 0 at the end.
func (p *bodyParser) peek() byte {
	if p.pos < len(p.b) {
		return p.b[p.pos]
	}
	return 0
}

// found describes what is at pos, for error messages.
func (p *bodyParser) found() string {
	if p.pos >= len(p.b) {
		return "end of body"
	}
	c := p.b[p.pos]
	if c >= ' ' && c < 0x7f {
		return fmt.Sprintf("'%c'", c)
	}
	return fmt.Sprintf("byte 0x%02x", c)
}

func (p *bodyParser) expect(c byte, what string) *inputError {
	if p.peek() != c {
		return badInput("byte %d: want %s, found %s", p.pos, what, p.found())
	}
	p.pos++
	return nil
}

// fields reads the object of fields.
func (p *bodyParser) fields(start, end int64, maxPoints int) ([]cache.Field, *inputError) {
	p.ws()
	if err := p.expect('{', "'{' opening the object of fields"); err != nil {
		return nil, err
	}
	var fields []cache.Field
	index := map[string]int{}
	p.ws()
	if p.peek() == '}' {
		p.pos++
		return fields, nil
	}
	for {
		p.ws()
		off := p.pos
		name, err := p.str("a field name")
		if err != nil {
			return nil, err
		}
		if len(name) > MaxFieldNameLen {
			return nil, badInput("byte %d: field name %s… of %d bytes is longer than %d", off, quote(name[:32]), len(name), MaxFieldNameLen)
		}
		i, ok := index[name]
		if !ok {
			if len(fields) == MaxFields {
				return nil, badInput("byte %d: more than %d fields", off, MaxFields)
			}
			i = len(fields)
			index[name] = i
			fields = append(fields, cache.Field{Name: name})
		}
		p.ws()
		if err := p.expect(':', "':' after a field name"); err != nil {
			return nil, err
		}
		if fields[i].Points, err = p.points(name, fields[i].Points, start, end, maxPoints); err != nil {
			return nil, err
		}
		p.ws()
		if p.peek() == ',' {
			p.pos++
			continue
		}
		if err := p.expect('}', "',' or '}' after a field's points"); err != nil {
			return nil, err
		}
		return fields, nil
	}
}

// points reads a field's array of [t, value] points and appends them to ps.
func (p *bodyParser) points(name string, ps []cache.Point, start, end int64, maxPoints int) ([]cache.Point, *inputError) {
	p.ws()
	if err := p.expect('[', fmt.Sprintf("'[' opening the points of field %s", quote(name))); err != nil {
		return nil, err
	}
	p.ws()
	if p.peek() == ']' {
		p.pos++
		return ps, nil
	}
	for i := len(ps); ; i++ {
		p.ws()
		off := p.pos
		where := func() string { return fmt.Sprintf("field %s point %d (byte %d)", quote(name), i, off) }
		if p.peek() != '[' {
			return nil, badInput("%s: want '[' opening a [t, value] pair, found %s", where(), p.found())
		}
		p.pos++
		p.ws()
		toff := p.pos
		t, err := p.timestamp()
		if err != nil {
			return nil, badInput("%s: timestamp at byte %d: %s", where(), toff, err.msg)
		}
		if t < start || t > end {
			return nil, badInput("%s: timestamp %d outside the range [%d, %d]", where(), t, start, end)
		}
		p.ws()
		if p.peek() != ',' {
			return nil, badInput("%s: want ',' after the timestamp at byte %d, found %s", where(), p.pos, p.found())
		}
		p.pos++
		p.ws()
		voff := p.pos
		v, err := p.scalar()
		if err != nil {
			return nil, badInput("%s: value at byte %d: %s", where(), voff, err.msg)
		}
		p.ws()
		if p.peek() != ']' {
			return nil, badInput("%s: want ']' closing the [t, value] pair at byte %d, found %s", where(), p.pos, p.found())
		}
		p.pos++
		if p.npoints++; p.npoints > maxPoints {
			return nil, tooLarge("%s: the body holds more than %d points", where(), maxPoints)
		}
		ps = append(ps, cache.Point{T: t, V: v})
		p.ws()
		if p.peek() == ',' {
			p.pos++
			continue
		}
		if err := p.expect(']', fmt.Sprintf("',' or ']' after point %d of field %s", i, quote(name))); err != nil {
			return nil, err
		}
		return ps, nil
	}
}

// timestamp reads an integer that fits an int64.
func (p *bodyParser) timestamp() (int64, *inputError) {
	s := p.pos
	e, err := p.number()
	if err != nil {
		return 0, err
	}
	p.pos = e
	text := string(p.b[s:e])
	t, perr := strconv.ParseInt(text, 10, 64)
	if perr != nil {
		if ne, ok := perr.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			return 0, badInput("%s overflows int64", text)
		}
		return 0, badInput("%s is not an integer", text)
	}
	return t, nil
}

// scalar reads a number, string, true, false or null and returns its text.
func (p *bodyParser) scalar() ([]byte, *inputError) {
	s := p.pos
	switch c := p.peek(); {
	case c == '"':
		e, _, err := p.scanString()
		if err != nil {
			return nil, err
		}
		p.pos = e
	case c == '-' || (c >= '0' && c <= '9'):
		e, err := p.number()
		if err != nil {
			return nil, err
		}
		p.pos = e
	case c == 't' || c == 'f' || c == 'n':
		for _, lit := range []string{"true", "false", "null"} {
			if len(p.b)-p.pos >= len(lit) && string(p.b[p.pos:p.pos+len(lit)]) == lit {
				p.pos += len(lit)
				return p.b[s:p.pos], nil
			}
		}
		return nil, badInput("want a number, string, true, false or null, found %s", p.found())
	case c == '{' || c == '[':
		return nil, badInput("values are numbers, strings, true, false or null, not objects or arrays")
	default:
		return nil, badInput("want a number, string, true, false or null, found %s", p.found())
	}
	return p.b[s:p.pos], nil
}

// number checks the JSON number at pos and returns where it ends (pos is
// left unchanged).
func (p *bodyParser) number() (int, *inputError) {
	b, i := p.b, p.pos
	digits := func() int {
		n := 0
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
			n++
		}
		return n
	}
	bad := func() (int, *inputError) {
		p.pos = i
		return 0, badInput("malformed number: found %s at byte %d", p.found(), i)
	}
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case digits() == 0:
		return bad()
	}
	if i < len(b) && b[i] == '.' {
		i++
		if digits() == 0 {
			return bad()
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if digits() == 0 {
			return bad()
		}
	}
	return i, nil
}

// scanString checks the JSON string at pos and returns where it ends (pos
// unchanged) and whether it holds escapes.
func (p *bodyParser) scanString() (int, bool, *inputError) {
	b, s := p.b, p.pos
	escaped := false
	for i := s + 1; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			if !utf8.Valid(b[s+1 : i]) {
				return 0, false, badInput("string at byte %d is not valid UTF-8", s)
			}
			return i + 1, escaped, nil
		case c < ' ':
			return 0, false, badInput("control character 0x%02x at byte %d in a string", c, i)
		case c == '\\':
			escaped = true
			i++
			if i >= len(b) {
				break
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(b) || !isHex(string(b[i+1:i+5])) {
					return 0, false, badInput("bad \\u escape at byte %d", i-1)
				}
				i += 4
			default:
				return 0, false, badInput("bad escape at byte %d", i-1)
			}
		}
	}
	return 0, false, badInput("string at byte %d is not closed before the end of the body", s)
}

// str reads a string and returns it unescaped.
func (p *bodyParser) str(what string) (string, *inputError) {
	if p.peek() != '"' {
		return "", badInput("byte %d: want %s, found %s", p.pos, what, p.found())
	}
	s := p.pos
	e, escaped, err := p.scanString()
	if err != nil {
		return "", err
	}
	p.pos = e
	if !escaped {
		return string(p.b[s+1 : e-1]), nil
	}
	var out string
	if err := json.Unmarshal(p.b[s:e], &out); err != nil {
		return "", badInput("string at byte %d: %v", s, err)
	}
	return out, nil
}

// quote writes a name into an error message: quoted, escaped, on one line.
func quote(s string) string { return strconv.Quote(s) }

// appendResult appends the JSON of a hit or partial hit:
// {"status":"hit","start":S,"end":E,"fields":{"name":[[t,v],...],...}}.
// Values are written as stored: their JSON text (invariant 1 of doc.go).
func appendResult(dst []byte, r cache.Result) []byte {
	dst = append(dst, `{"status":"`...)
	dst = append(dst, r.Status.String()...)
	dst = append(dst, `","start":`...)
	dst = strconv.AppendInt(dst, r.Start, 10)
	dst = append(dst, `,"end":`...)
	dst = strconv.AppendInt(dst, r.End, 10)
	dst = append(dst, `,"fields":{`...)
	for i, f := range r.Fields {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendString(dst, f.Name)
		dst = append(dst, ":["...)
		for j, pt := range f.Points {
			if j > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, '[')
			dst = strconv.AppendInt(dst, pt.T, 10)
			dst = append(dst, ',')
			dst = append(dst, pt.V...)
			dst = append(dst, ']')
		}
		dst = append(dst, ']')
	}
	return append(dst, "}}"...)
}

// appendString appends s as a JSON string; invalid UTF-8 becomes U+FFFD.
func appendString(dst []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	dst = append(dst, '"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			dst = append(dst, '\\', byte(r))
		case r < ' ':
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[r>>4], hexDigits[r&0xf])
		default:
			dst = utf8.AppendRune(dst, r)
		}
	}
	return append(dst, '"')
}
