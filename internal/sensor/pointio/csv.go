package pointio

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// csvFormat is a parsed tsPos-valPos-sep.
type csvFormat struct {
	ts, val int // 0-based field positions
	sep     byte
}

// maxCSVPos bounds a field position of a CSV format.
const maxCSVPos = 9999

// parseCSVFormat reads Peregreen's tsPos-valPos-sep: two 0-based field
// positions and a one-byte separator, which may itself be '-' ("0-1--").
// A tab may arrive as the byte or as the two characters `\t`.
func parseCSVFormat(s string) (csvFormat, error) {
	fail := func(format string, args ...any) (csvFormat, error) {
		return csvFormat{}, fmt.Errorf("csv format %q: %s; want tsPos-valPos-sep, e.g. 0-1-,", s, fmt.Sprintf(format, args...))
	}
	var f csvFormat
	rest := s
	for i, what := range []string{"timestamp", "value"} {
		end := 0
		for end < len(rest) && end < 5 && rest[end] >= '0' && rest[end] <= '9' {
			end++
		}
		n, err := strconv.Atoi(rest[:end])
		if err != nil || n > maxCSVPos {
			return fail("the %s position must be a number from 0 to %d", what, maxCSVPos)
		}
		if end == len(rest) || rest[end] != '-' {
			return fail("want '-' after the %s position %d", what, n)
		}
		rest = rest[end+1:]
		if i == 0 {
			f.ts = n
		} else {
			f.val = n
		}
	}
	if rest == `\t` {
		rest = "\t"
	}
	if len(rest) != 1 {
		return fail("the separator must be one byte, got %q", rest)
	}
	switch c := rest[0]; {
	case c >= '0' && c <= '9', c == '"', c == '\r', c == '\n':
		return fail("the separator %q cannot be a digit, a double quote or a line end", rest)
	}
	f.sep = rest[0]
	if f.ts == f.val {
		return fail("timestamp and value are both at position %d", f.ts)
	}
	return f, nil
}

// fieldError is a problem with a field of a CSV line.
type fieldError struct {
	field string // "t", "v" or ""
	at    int    // offset in the line
	err   error
}

// split finds the timestamp and value fields of line (without its end):
// their text without quotes and surrounding blanks, and where each starts.
func (f *csvFormat) split(line []byte) (ts, val []byte, tsAt, valAt int, fe *fieldError) {
	last := max(f.ts, f.val)
	name := func(k int) string {
		switch k {
		case f.ts:
			return "t"
		case f.val:
			return "v"
		}
		return ""
	}
	p := 0
	for k := 0; ; k++ {
		for p < len(line) && isBlank(line[p]) && line[p] != f.sep {
			p++
		}
		start := p
		var text []byte
		if p < len(line) && line[p] == '"' {
			q := p + 1
			for q < len(line) && (line[q] != '"' || q+1 < len(line) && line[q+1] == '"') {
				if line[q] == '"' {
					q++ // "" is a quote within the field
				}
				q++
			}
			if q >= len(line) {
				return nil, nil, 0, 0, &fieldError{name(k), start, fmt.Errorf("field %d: quoted field does not end on its line (a field cannot span lines)", k)}
			}
			text = trimBlank(line[p+1 : q])
			p = q + 1
			for p < len(line) && isBlank(line[p]) && line[p] != f.sep {
				p++
			}
			if p < len(line) && line[p] != f.sep {
				return nil, nil, 0, 0, &fieldError{name(k), p, fmt.Errorf("field %d: %q after the closing quote, want the separator %q", k, line[p], f.sep)}
			}
		} else {
			e := bytes.IndexByte(line[p:], f.sep)
			if e < 0 {
				e = len(line)
			} else {
				e += p
			}
			text = trimBlank(line[p:e])
			p = e
		}
		switch k {
		case f.ts:
			ts, tsAt = text, start
		case f.val:
			val, valAt = text, start
		}
		if k == last {
			return ts, val, tsAt, valAt, nil
		}
		if p >= len(line) {
			missing, pos, what := "v", f.val, "value"
			if k < f.ts {
				missing, pos, what = "t", f.ts, "timestamp"
			}
			return nil, nil, 0, 0, &fieldError{missing, 0, fmt.Errorf("no %s field %d: the line has %d field(s) separated by %q", what, pos, k+1, f.sep)}
		}
		p++ // the separator
	}
}

func isBlank(c byte) bool { return c == ' ' || c == '\t' }

func trimBlank(b []byte) []byte {
	for len(b) > 0 && isBlank(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isBlank(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

// isNumber reports whether a field reads as a number, which a header
// field does not.
func isNumber(b []byte) bool {
	_, err := parseFloat(b, 64, Float64)
	return err == nil
}

var bom = []byte("\xef\xbb\xbf")

// csvReader reads CSV lines (doc.go).
type csvReader struct {
	base
	f  csvFormat
	lr *lineReader
}

func (r *csvReader) Next() bool {
	for !r.done {
		line, off, err := r.lr.read()
		row := r.lr.line
		switch {
		case err == io.EOF:
			r.done = true
			return false
		case errors.Is(err, ErrLimit):
			return r.fail(row, "", off, err)
		case err != nil:
			return r.fail(row, "", off, readError(err))
		}
		if row == 1 && bytes.HasPrefix(line, bom) {
			line = line[len(bom):]
			off += int64(len(bom))
		}
		if len(trimBlank(line)) == 0 {
			continue
		}
		ts, val, tsAt, valAt, fe := r.f.split(line)
		if fe != nil {
			return r.fail(row, fe.field, off+int64(fe.at), fe.err)
		}
		if row == 1 && !isNumber(ts) && !isNumber(val) {
			continue // a header
		}
		if r.overRows() {
			return r.fail(row, "", off, errMaxRows(r.lim.MaxRows))
		}
		t, err := parseTimestamp(ts)
		if err != nil {
			return r.fail(row, "t", off+int64(tsAt), err)
		}
		v, err := parseValue(val, r.typ)
		if err != nil {
			return r.fail(row, "v", off+int64(valAt), err)
		}
		return r.emit(row, off, t, v)
	}
	return false
}

// lineReader splits its input into lines, holding at most one line of at
// most max bytes (without its "\n" or "\r\n").
type lineReader struct {
	br   *bufio.Reader
	max  int
	line int   // number of the line last returned, 1-based
	next int64 // offset of the line after it
	long []byte
	err  error // sticky
}

func newLineReader(r io.Reader, limit int) *lineReader {
	// Enough for a line of limit bytes and its end, within [16, 64 KiB];
	// longer lines are put together in long.
	return &lineReader{br: bufio.NewReaderSize(r, min(max(limit+2, 16), 64<<10)), max: limit}
}

// read returns the next line without its end and its offset. The slice is
// valid until the next call. At the end of input it returns io.EOF; for a
// line over max, an ErrLimit error and the line's offset; for a failure of
// the reader, that error and the offset where it happened.
func (r *lineReader) read() ([]byte, int64, error) {
	if r.err != nil {
		return nil, r.next, r.err
	}
	off := r.next
	r.line++
	line, err := r.br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		r.long = append(r.long[:0], line...)
		for errors.Is(err, bufio.ErrBufferFull) {
			line, err = r.br.ReadSlice('\n')
			if len(r.long)+len(line) > r.max+2 { // more than max bytes and "\r\n"
				r.err = errMaxLine(r.max)
				return nil, off, r.err
			}
			r.long = append(r.long, line...)
		}
		line = r.long
	}
	r.next += int64(len(line))
	switch {
	case err == io.EOF && len(line) == 0:
		r.line--
		r.err = io.EOF
		return nil, off, io.EOF
	case err == io.EOF:
		r.err = io.EOF // the last line has no "\n"
	case err != nil:
		r.err = err
		return nil, r.next, err
	}
	line = trimEOL(line)
	if len(line) > r.max {
		r.err = errMaxLine(r.max)
		return nil, off, r.err
	}
	return line, off, nil
}

// trimEOL drops a final "\n" or "\r\n".
func trimEOL(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
		if n := len(b); n > 0 && b[n-1] == '\r' {
			b = b[:n-1]
		}
	}
	return b
}
