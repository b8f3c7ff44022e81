package vmformat

import (
	"bufio"
	"errors"
	"io"
)

// lineReader splits its input into lines, keeping each line's end ("\n"
// or nothing at the end of input) so that callers see every byte. A line
// longer than max (not counting "\n" or "\r\n") is read to its end and
// dropped, with tooLong set: memory stays bounded by max.
type lineReader struct {
	br  *bufio.Reader
	max int

	line    int64 // number of the line last returned, 1-based
	off     int64 // offset of its first byte
	next    int64 // offset of the line after it
	tooLong bool  // the line last returned was over max and is empty
	long    []byte
	err     error // sticky: io.EOF at the end, else a *ReadError
}

func newLineReader(r io.Reader, limit int) *lineReader {
	size := 64 << 10
	if limit+2 < size {
		size = max(16, limit+2)
	}
	return &lineReader{br: bufio.NewReaderSize(r, size), max: limit}
}

// read returns the next line with its end. The slice is valid until the
// next call. It returns false at the end of input or on a read error.
func (r *lineReader) read() ([]byte, bool) {
	if r.err != nil {
		return nil, false
	}
	r.line++
	r.off = r.next
	r.tooLong = false
	chunk, err := r.br.ReadSlice('\n')
	n := int64(len(chunk))
	line := chunk
	if errors.Is(err, bufio.ErrBufferFull) {
		r.long = append(r.long[:0], chunk...)
		for errors.Is(err, bufio.ErrBufferFull) {
			chunk, err = r.br.ReadSlice('\n')
			n += int64(len(chunk))
			if !r.tooLong && len(r.long)+len(chunk) > r.max+2 {
				r.tooLong = true
				r.long = r.long[:0]
			}
			if !r.tooLong {
				r.long = append(r.long, chunk...)
			}
		}
		line = r.long
	}
	switch {
	case err == nil:
	case err == io.EOF && n > 0:
		r.err = io.EOF // this last line has no "\n"; the next call ends
	case err == io.EOF:
		r.err = io.EOF
		return nil, false
	default:
		r.err = &ReadError{Line: r.line, Offset: r.off, Partial: n > 0, Err: err}
		return nil, false
	}
	r.next += n
	if !r.tooLong && len(trimEOL(line)) > r.max {
		r.tooLong = true
	}
	if r.tooLong {
		return nil, true
	}
	return line, true
}

// error returns the read error that ended the input, or nil at its end.
func (r *lineReader) error() error {
	if r.err == io.EOF {
		return nil
	}
	return r.err
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

// blank reports whether b holds only spaces, tabs and line ends.
func blank(b []byte) bool {
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\r' && c != '\n' {
			return false
		}
	}
	return true
}
