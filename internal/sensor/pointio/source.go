package pointio

import (
	"errors"
	"io"
	"math"
)

// byteSource reads a JSON or MessagePack body through a buffer of its
// own, counting the bytes consumed, and refuses to read more than
// MaxPoint bytes of one point: with the buffer, this bounds the memory a
// Reader holds. It is the io.ByteScanner the msgpack Decoder reads from,
// so no bytes are buffered where they are not counted.
type byteSource struct {
	rd   io.Reader
	buf  []byte
	r, w int   // buf[r:w] is read from rd and not consumed
	rerr error // sticky error of rd, returned once buf is drained

	pos int64 // bytes consumed
	end int64 // bytes at or past end belong to a point over max; math.MaxInt64 outside points
	max int   // Limits.MaxPoint
}

// sourceBufSize is the size of a byteSource's buffer.
const sourceBufSize = 64 << 10

// errRead marks a failure of the body's io.Reader, as distinct from an
// error in the body.
var errRead = errors.New("read body")

// sourceError is a failure of the body's io.Reader. It is errRead to
// errors.Is and unwraps to the reader's error.
type sourceError struct{ err error }

func (e *sourceError) Error() string        { return e.err.Error() }
func (e *sourceError) Unwrap() error        { return e.err }
func (e *sourceError) Is(target error) bool { return target == errRead }

func newByteSource(r io.Reader, maxPoint int) byteSource {
	return byteSource{rd: r, buf: make([]byte, sourceBufSize), end: math.MaxInt64, max: maxPoint}
}

func (s *byteSource) beginPoint() { s.end = s.pos + int64(s.max) }
func (s *byteSource) endPoint()   { s.end = math.MaxInt64 }

// fill reads until at least n bytes are buffered (n ≤ len(s.buf)), or
// returns why not: io.EOF at the end of the body, else a *sourceError.
func (s *byteSource) fill(n int) error {
	if s.w-s.r >= n {
		return nil
	}
	if s.r > 0 {
		s.w = copy(s.buf, s.buf[s.r:s.w])
		s.r = 0
	}
	for empty := 0; s.w < n; {
		if s.rerr != nil {
			return s.rerr
		}
		m, err := s.rd.Read(s.buf[s.w:])
		s.w += m
		switch {
		case err == io.EOF:
			s.rerr = io.EOF
		case err != nil:
			s.rerr = &sourceError{err}
		case m == 0:
			if empty++; empty >= 100 {
				s.rerr = &sourceError{io.ErrNoProgress}
			}
		}
	}
	return nil
}

// peekByte returns the next byte without consuming it.
func (s *byteSource) peekByte() (byte, error) {
	if s.pos >= s.end {
		return 0, errMaxPoint(s.max)
	}
	if s.r == s.w {
		if err := s.fill(1); err != nil {
			return 0, err
		}
	}
	return s.buf[s.r], nil
}

// peek returns the next n bytes (n ≤ 16) without consuming them, or
// fewer and the reason.
func (s *byteSource) peek(n int) ([]byte, error) {
	err := s.fill(n)
	return s.buf[s.r:min(s.w, s.r+n)], err
}

// discard consumes n bytes that peekByte or peek returned.
func (s *byteSource) discard(n int) {
	s.r += n
	s.pos += int64(n)
}

func (s *byteSource) ReadByte() (byte, error) {
	c, err := s.peekByte()
	if err != nil {
		return 0, err
	}
	s.r++
	s.pos++
	return c, nil
}

// UnreadByte unreads the byte ReadByte returned last.
func (s *byteSource) UnreadByte() error {
	if s.r == 0 {
		return errors.New("pointio: UnreadByte without ReadByte")
	}
	s.r--
	s.pos--
	return nil
}

func (s *byteSource) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if s.pos >= s.end {
		return 0, errMaxPoint(s.max)
	}
	if rest := s.end - s.pos; int64(len(p)) > rest {
		p = p[:rest]
	}
	if s.r == s.w {
		if err := s.fill(1); err != nil {
			return 0, err
		}
	}
	n := copy(p, s.buf[s.r:s.w])
	s.r += n
	s.pos += int64(n)
	return n, nil
}

// window returns the buffered bytes that may be consumed without a read
// and within the point's limit. They stay valid until the next read.
func (s *byteSource) window() []byte {
	b := s.buf[s.r:s.w]
	if rest := s.end - s.pos; int64(len(b)) > rest {
		b = b[:rest]
	}
	return b
}
