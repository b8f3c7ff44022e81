package pointio

import (
	"bufio"
	"errors"
	"io"
	"math"
)

// byteSource reads a JSON or MessagePack body through a bufio.Reader,
// counting the bytes consumed, and refuses to read more than MaxPoint
// bytes of one point: with the bufio buffer, this bounds the memory a
// Reader holds. It is the io.ByteScanner the msgpack Decoder reads from,
// so no bytes are buffered where they are not counted.
type byteSource struct {
	br  *bufio.Reader
	pos int64 // bytes consumed
	end int64 // bytes at or past end belong to a point over max; math.MaxInt64 outside points
	max int   // Limits.MaxPoint
}

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
	return byteSource{br: newBufReader(r, 0), end: math.MaxInt64, max: maxPoint}
}

func (s *byteSource) beginPoint() { s.end = s.pos + int64(s.max) }
func (s *byteSource) endPoint()   { s.end = math.MaxInt64 }

// fail translates an error of the bufio.Reader: io.EOF stays, anything
// else is a *sourceError.
func fail(err error) error {
	if err == io.EOF {
		return err
	}
	return &sourceError{err}
}

// peekByte returns the next byte without consuming it.
func (s *byteSource) peekByte() (byte, error) {
	if s.pos >= s.end {
		return 0, errMaxPoint(s.max)
	}
	b, err := s.br.Peek(1)
	if len(b) == 0 {
		return 0, fail(err)
	}
	return b[0], nil
}

// discard consumes n bytes that peekByte or peek returned.
func (s *byteSource) discard(n int) {
	d, _ := s.br.Discard(n)
	s.pos += int64(d)
}

func (s *byteSource) ReadByte() (byte, error) {
	if s.pos >= s.end {
		return 0, errMaxPoint(s.max)
	}
	c, err := s.br.ReadByte()
	if err != nil {
		return 0, fail(err)
	}
	s.pos++
	return c, nil
}

// UnreadByte unreads the byte ReadByte returned last.
func (s *byteSource) UnreadByte() error {
	if err := s.br.UnreadByte(); err != nil {
		return err
	}
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
	n, err := s.br.Read(p)
	s.pos += int64(n)
	if err != nil {
		return n, fail(err)
	}
	return n, nil
}

// peek returns the next n bytes without consuming them, or fewer and the
// reason.
func (s *byteSource) peek(n int) ([]byte, error) {
	b, err := s.br.Peek(n)
	if err != nil {
		return b, fail(err)
	}
	return b, nil
}
