package vmformat

import (
	"bufio"
	"errors"
	"io"
)

// LineReader splits its input into lines, keeping each line's end ("\n"
// or nothing at the end of input) so that callers see every byte. A line
// longer than max (not counting "\n" or "\r\n") is read to its end and
// dropped, with TooLong set: memory stays bounded by max. The decoders
// read through one, and so do internal/ingest's file readers, so every
// line-based input has the same limit rule and positions.
type LineReader struct {
	br  *bufio.Reader
	max int

	line    int64 // number of the line last returned, 1-based
	off     int64 // offset of its first byte
	next    int64 // offset of the line after it
	tooLong bool  // the line last returned was over max and is empty
	long    []byte
	err     error // sticky: io.EOF at the end, else a *ReadError
}

// NewLineReader returns a reader of r's lines of at most limit bytes.
func NewLineReader(r io.Reader, limit int) *LineReader {
	size := 64 << 10
	if limit+2 < size {
		size = max(16, limit+2)
	}
	return &LineReader{br: bufio.NewReaderSize(r, size), max: limit}
}

// Read returns the next line with its end (nil if TooLong). The slice is
// valid until the next call. It returns false at the end of input or on a
// read error (see Err).
func (r *LineReader) Read() ([]byte, bool) {
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
	if !r.tooLong && len(TrimEOL(line)) > r.max {
		r.tooLong = true
	}
	if r.tooLong {
		return nil, true
	}
	return line, true
}

// Line returns the number of the line last read, 1-based (after the end
// of input: the number the next line would have).
func (r *LineReader) Line() int64 { return r.line }

// Offset returns the byte offset of the line last read.
func (r *LineReader) Offset() int64 { return r.off }

// End returns the byte offset just after the line last read.
func (r *LineReader) End() int64 { return r.next }

// TooLong reports whether the line last read was over the limit (and
// dropped).
func (r *LineReader) TooLong() bool { return r.tooLong }

// Err returns the read error that ended the input (a *ReadError), or nil
// at its end.
func (r *LineReader) Err() error {
	if r.err == io.EOF {
		return nil
	}
	return r.err
}

// TrimEOL drops a final "\n" or "\r\n": it gives a line of LineReader
// without its end.
func TrimEOL(b []byte) []byte {
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
