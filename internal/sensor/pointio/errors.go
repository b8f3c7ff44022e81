package pointio

import (
	"errors"
	"strconv"
)

// Limits bound what a Reader accepts and so the memory it holds. Zero
// fields take the defaults.
type Limits struct {
	MaxLine  int // CSV: bytes of one line without its line end [DefaultMaxLine]
	MaxPoint int // JSON, MessagePack: bytes of one point [DefaultMaxPoint]
	MaxRows  int // points in one body; 0: no limit
}

// Defaults of Limits.
const (
	DefaultMaxLine  = 64 << 10
	DefaultMaxPoint = 64 << 10
)

func (l Limits) withDefaults() Limits {
	if l.MaxLine <= 0 {
		l.MaxLine = DefaultMaxLine
	}
	if l.MaxPoint <= 0 {
		l.MaxPoint = DefaultMaxPoint
	}
	if l.MaxRows < 0 {
		l.MaxRows = 0
	}
	return l
}

// ErrLimit is wrapped by every InputError that reports an exceeded Limits
// field: errors.Is(err, ErrLimit) tells a body that is too large (HTTP 413)
// from a malformed one (HTTP 400).
var ErrLimit = errors.New("limit exceeded")

// limitError names the limit a body exceeded; it is ErrLimit to errors.Is.
type limitError struct {
	msg string
}

func (e *limitError) Error() string        { return e.msg }
func (e *limitError) Is(target error) bool { return target == ErrLimit }

func errMaxLine(n int) error {
	return &limitError{"line is longer than MaxLine (" + strconv.Itoa(n) + " bytes)"}
}

func errMaxPoint(n int) error {
	return &limitError{"point is longer than MaxPoint (" + strconv.Itoa(n) + " bytes)"}
}

func errMaxRows(n int) error {
	return &limitError{"more than MaxRows (" + strconv.Itoa(n) + ") points"}
}

// InputError is what was wrong with an upload body and where. A Reader
// stops at the first one. Errors of the underlying io.Reader are wrapped
// too (Err is that error, so errors.As finds an *http.MaxBytesError).
type InputError struct {
	Row    int    // 1-based: CSV line, or JSON/MessagePack point number
	Field  string // "t", "v", an unknown key, or "" for the row as a whole
	Offset int64  // 0-based byte offset in the body of the field, or of the row if Field is ""
	Err    error
}

// Error reads like `row 17 (byte 402), field "v": value 300 does not fit
// int8 (-128 to 127)`.
func (e *InputError) Error() string {
	b := make([]byte, 0, 64)
	b = append(b, "row "...)
	b = strconv.AppendInt(b, int64(e.Row), 10)
	b = append(b, " (byte "...)
	b = strconv.AppendInt(b, e.Offset, 10)
	b = append(b, ')')
	if e.Field != "" {
		b = append(b, ", field "...)
		b = strconv.AppendQuote(b, e.Field)
	}
	b = append(b, ": "...)
	if e.Err != nil {
		b = append(b, e.Err.Error()...)
	}
	return string(b)
}

func (e *InputError) Unwrap() error { return e.Err }
