package vmformat

import (
	"fmt"
	"strconv"

	"github.com/aerie-db/aerie/internal/positive"
)

// Limits bound what a decoder accepts. Zero values take the defaults in
// brackets.
type Limits struct {
	MaxLineBytes       int // [16 MiB] one line, or one CSV record, without its line end
	MaxLabels          int // [128] labels of one series, __name__ included
	MaxLabelNameBytes  int // [256]
	MaxLabelValueBytes int // [16 KiB]
}

// Defaults of Limits.
const (
	DefaultMaxLineBytes       = 16 << 20
	DefaultMaxLabels          = 128
	DefaultMaxLabelNameBytes  = 256
	DefaultMaxLabelValueBytes = 16 << 10
)

// WithDefaults returns l with its zero fields set to the defaults.
func (l Limits) WithDefaults() Limits {
	l.MaxLineBytes = positive.Or(l.MaxLineBytes, DefaultMaxLineBytes)
	l.MaxLabels = positive.Or(l.MaxLabels, DefaultMaxLabels)
	l.MaxLabelNameBytes = positive.Or(l.MaxLabelNameBytes, DefaultMaxLabelNameBytes)
	l.MaxLabelValueBytes = positive.Or(l.MaxLabelValueBytes, DefaultMaxLabelValueBytes)
	return l
}

// ParseError is one bad line (or CSV record): where it is and what was
// wrong with it.
type ParseError struct {
	Line   int64  // 1-based line number
	Column int    // 1-based byte column within the line; 0: the whole line
	Offset int64  // 0-based byte offset in the input of the problem (of the line if Column is 0)
	Field  string // what was being read, e.g. "values[3]", `metric["job"]`, "column 2 (time)"; may be empty
	Msg    string
}

func (e *ParseError) Error() string {
	var b []byte
	b = append(b, "line "...)
	b = strconv.AppendInt(b, e.Line, 10)
	if e.Column > 0 {
		b = fmt.Appendf(b, " col %d", e.Column)
	}
	b = fmt.Appendf(b, " (byte %d): ", e.Offset)
	if e.Field != "" {
		b = append(b, e.Field...)
		b = append(b, ": "...)
	}
	b = append(b, e.Msg...)
	return string(b)
}

// ReadError is a failure of the reader under a decoder, which ends the
// input. Partial says that the bytes of an unfinished line had been read
// and were dropped with it.
type ReadError struct {
	Line    int64 // the line being read
	Offset  int64 // where that line starts
	Partial bool
	Err     error
}

func (e *ReadError) Error() string {
	return fmt.Sprintf("read line %d (byte %d): %v", e.Line, e.Offset, e.Err)
}

func (e *ReadError) Unwrap() error { return e.Err }
