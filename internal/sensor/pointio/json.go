package pointio

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
)

// jsonReader reads one JSON array of points or a stream of point objects
// (doc.go) byte by byte, holding one token of at most MaxPoint bytes.
type jsonReader struct {
	base
	src   byteSource
	state jsonState
	tok   []byte
}

type jsonState uint8

const (
	jsonStart  jsonState = iota
	jsonArray            // inside [ … ]
	jsonStream           // objects one after another
)

func newJSONReader(b base, body io.Reader) *jsonReader {
	return &jsonReader{base: b, src: newByteSource(body, b.lim.MaxPoint)}
}

func (r *jsonReader) Next() bool {
	if r.done {
		return false
	}
	row := r.n + 1
	c, err := r.ws()
	if r.state == jsonStart {
		if err == nil && c == 0xef { // a UTF-8 byte order mark
			if b, _ := r.src.peek(len(bom)); bytes.Equal(b, bom) {
				r.src.discard(len(bom))
				c, err = r.ws()
			}
		}
		switch {
		case err == io.EOF:
			r.done = true
			return false
		case err != nil:
			return r.ioFail(row, "", err, "")
		case c == '[':
			r.src.discard(1)
			r.state = jsonArray
			c, err = r.ws()
		case c == '{':
			r.state = jsonStream
		default:
			return r.fail(row, "", r.src.pos, fmt.Errorf("want '[' (an array of points) or '{' (a point) at the start of the body, got %s", describeJSON(c)))
		}
	}
	switch r.state {
	case jsonArray:
		if err != nil {
			return r.ioFail(row, "", err, "the array of points is not closed with ']'")
		}
		if c == ']' {
			r.src.discard(1)
			switch c, err := r.ws(); {
			case err == io.EOF:
				r.done = true
				return false
			case err != nil:
				return r.ioFail(row, "", err, "")
			default:
				return r.fail(row, "", r.src.pos, fmt.Errorf("%s after the array of points, want the end of the body", describeJSON(c)))
			}
		}
		if r.n > 0 {
			if c != ',' {
				return r.fail(row, "", r.src.pos, fmt.Errorf("want ',' or ']' after a point, got %s", describeJSON(c)))
			}
			r.src.discard(1)
			if c, err = r.ws(); err != nil {
				return r.ioFail(row, "", err, "the array of points is not closed with ']'")
			}
		}
	case jsonStream:
		if err == io.EOF {
			r.done = true
			return false
		}
		if err != nil {
			return r.ioFail(row, "", err, "")
		}
	}
	return r.point(row, c)
}

// point reads one point object; c is its first byte, not yet read.
func (r *jsonReader) point(row int, c byte) bool {
	start := r.src.pos
	if r.overRows() {
		return r.fail(row, "", start, errMaxRows(r.lim.MaxRows))
	}
	if c != '{' {
		return r.fail(row, "", start, fmt.Errorf("want '{' to start a point, got %s", describeJSON(c)))
	}
	r.src.beginPoint()
	r.src.discard(1)
	var t int64
	var v float64
	var keys pointKeys
	c, err := r.ws()
	if err != nil {
		return r.pointFail(row, err, start)
	}
	if c == '}' {
		r.src.discard(1)
	} else {
		for {
			keyAt := r.src.pos
			if c != '"' {
				return r.fail(row, "", keyAt, fmt.Errorf(`want a key "t" or "v", got %s`, describeByte(c)))
			}
			key, err := r.str()
			if err != nil {
				return r.fieldFail(row, "", keyAt, start, err)
			}
			if c, err = r.ws(); err != nil {
				return r.pointFail(row, err, start)
			}
			if c != ':' {
				return r.fail(row, "", r.src.pos, fmt.Errorf("want ':' after key %s, got %s", quoteText(key), describeJSON(c)))
			}
			r.src.discard(1)
			if c, err = r.ws(); err != nil {
				return r.pointFail(row, err, start)
			}
			valAt := r.src.pos
			field, err := keys.add(key)
			if err != nil {
				return r.fail(row, field, keyAt, err)
			}
			if field == "t" {
				t, err = r.timestamp(c)
			} else {
				v, err = r.value(c)
			}
			if err != nil {
				return r.fieldFail(row, field, valAt, start, err)
			}
			if c, err = r.ws(); err != nil {
				return r.pointFail(row, err, start)
			}
			r.src.discard(1)
			if c == '}' {
				break
			}
			if c != ',' {
				return r.fail(row, "", r.src.pos-1, fmt.Errorf("want ',' or '}' after a value, got %s", describeJSON(c)))
			}
			if c, err = r.ws(); err != nil {
				return r.pointFail(row, err, start)
			}
		}
	}
	r.src.endPoint()
	if field, err := keys.missing(); err != nil {
		return r.fail(row, field, start, err)
	}
	return r.emit(row, start, t, v)
}

// timestamp reads a JSON integer; c is its first byte.
func (r *jsonReader) timestamp(c byte) (int64, error) {
	if !isNumberStart(c) {
		return 0, fmt.Errorf("want an integer timestamp (milliseconds), got %s", describeJSON(c))
	}
	tok, err := r.number()
	if err != nil {
		return 0, err
	}
	return parseTimestamp(tok)
}

// value reads a JSON number, or one of the strings "NaN", "+Inf", "-Inf";
// c is its first byte.
func (r *jsonReader) value(c byte) (float64, error) {
	switch {
	case isNumberStart(c):
		tok, err := r.number()
		if err != nil {
			return 0, err
		}
		return parseValue(tok, r.typ)
	case c == '"':
		s, err := r.str()
		if err != nil {
			return 0, err
		}
		var v float64
		switch string(s) {
		case "NaN":
			v = math.NaN()
		case "+Inf":
			v = math.Inf(1)
		case "-Inf":
			v = math.Inf(-1)
		default:
			return 0, fmt.Errorf(`value %s is not a number: the strings a value may be are "NaN", "+Inf" and "-Inf"`, quoteText(s))
		}
		return r.typ.Fit(v)
	}
	return 0, fmt.Errorf("want a number, got %s", describeJSON(c))
}

// number reads the bytes of a JSON number and checks them. They stay
// valid until the next read.
func (r *jsonReader) number() ([]byte, error) {
	if win := r.src.window(); len(win) > 0 {
		// Fast path: the number ends within the buffer.
		i := 0
		for i < len(win) && isNumberByte(win[i]) {
			i++
		}
		if i < len(win) {
			r.src.discard(i)
			if !isJSONNumber(win[:i]) {
				return nil, fmt.Errorf("%s is not a JSON number", quoteText(win[:i]))
			}
			return win[:i], nil
		}
	}
	r.tok = r.tok[:0]
	for {
		c, err := r.src.peekByte()
		if err == io.EOF {
			break // the caller's next read reports the end
		}
		if err != nil {
			return nil, err
		}
		if !isNumberByte(c) {
			break
		}
		r.src.discard(1)
		r.tok = append(r.tok, c)
	}
	if !isJSONNumber(r.tok) {
		return nil, fmt.Errorf("%s is not a JSON number", quoteText(r.tok))
	}
	return r.tok, nil
}

// str reads a JSON string, its opening quote not yet read, and returns its
// value, valid until the next call.
func (r *jsonReader) str() ([]byte, error) {
	r.src.discard(1)
	win := r.src.window()
	for i, c := range win {
		// Fast path: a string without escapes that ends within the buffer.
		if c == '"' {
			r.tok = append(r.tok[:0], win[:i]...) // the buffer moves on the next read
			r.src.discard(i + 1)
			return r.tok, nil
		}
		if c == '\\' || c < 0x20 {
			break
		}
	}
	r.tok = r.tok[:0]
	escaped := false
	for {
		c, err := r.src.ReadByte()
		if err != nil {
			return nil, err
		}
		switch {
		case c == '"':
			if !escaped {
				return r.tok, nil
			}
			var s string
			if err := json.Unmarshal(append(append([]byte{'"'}, r.tok...), '"'), &s); err != nil {
				return nil, fmt.Errorf("bad string %s: %v", quoteText(r.tok), err)
			}
			return []byte(s), nil
		case c < 0x20:
			return nil, fmt.Errorf("control character %q in a string: write it as an escape", c)
		case c == '\\':
			escaped = true
			r.tok = append(r.tok, c)
			e, err := r.src.ReadByte()
			if err != nil {
				return nil, err
			}
			r.tok = append(r.tok, e)
			switch e {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				for range 4 {
					h, err := r.src.ReadByte()
					if err != nil {
						return nil, err
					}
					if !isHex(h) {
						return nil, fmt.Errorf("bad escape in a string: want 4 hex digits after \\u, got %q", h)
					}
					r.tok = append(r.tok, h)
				}
			default:
				return nil, fmt.Errorf("bad escape \\%c in a string", e)
			}
		default:
			r.tok = append(r.tok, c)
		}
	}
}

// ws skips JSON whitespace and returns the next byte, unread.
func (r *jsonReader) ws() (byte, error) {
	for i, c := range r.src.window() {
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			r.src.discard(i)
			return c, nil
		}
	}
	for {
		c, err := r.src.peekByte()
		if err != nil {
			return 0, err
		}
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return c, nil
		}
		r.src.discard(1)
	}
}

// ioFail ends the body on an error of r.src outside a point; eof says what
// an unexpected end of input left unfinished ("" if nothing).
func (r *jsonReader) ioFail(row int, field string, err error, eof string) bool {
	if err == io.EOF {
		return r.fail(row, field, r.src.pos, errors.New("unexpected end of input: "+eof))
	}
	return r.fail(row, field, r.src.pos, readError(errors.Unwrap(err)))
}

// pointFail ends the body on an error of r.src inside the point at start.
func (r *jsonReader) pointFail(row int, err error, start int64) bool {
	return r.fieldFail(row, "", r.src.pos, start, err)
}

// fieldFail ends the body on an error reading a field at off of the point
// at start: a limit is reported at the point, the end of input where it
// is, anything else at the field.
func (r *jsonReader) fieldFail(row int, field string, off, start int64, err error) bool {
	switch {
	case errors.Is(err, ErrLimit):
		return r.fail(row, "", start, err)
	case err == io.EOF:
		return r.fail(row, field, r.src.pos, errors.New("unexpected end of input: the point is not closed with '}'"))
	case errors.Is(err, errRead):
		return r.fail(row, field, r.src.pos, readError(errors.Unwrap(err)))
	}
	return r.fail(row, field, off, err)
}

// describeJSON names the JSON token that starts with c, for errors.
func describeJSON(c byte) string {
	switch {
	case c == '"':
		return "a string"
	case c == '{':
		return "an object"
	case c == '[':
		return "an array"
	case c == 'n':
		return "null"
	case c == 't' || c == 'f':
		return "a boolean"
	case isNumberStart(c):
		return "a number"
	}
	return describeByte(c)
}

func describeByte(c byte) string {
	if c >= 0x20 && c < 0x7f {
		return strconv.QuoteRune(rune(c))
	}
	return fmt.Sprintf("byte 0x%02x", c)
}

func isNumberByte(c byte) bool {
	return c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'
}

func isNumberStart(c byte) bool { return c == '-' || c >= '0' && c <= '9' }

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

// isJSONNumber reports whether b is a number in JSON's grammar:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func isJSONNumber(b []byte) bool {
	digits := func(i int) int {
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		return i
	}
	i := 0
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = digits(i)
	default:
		return false
	}
	if i < len(b) && b[i] == '.' {
		j := digits(i + 1)
		if j == i+1 {
			return false
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(i)
		if j == i {
			return false
		}
		i = j
	}
	return i == len(b)
}
