package encoding

import (
	"errors"
	"fmt"
)

// ErrCorrupt is the error every decoder's *DecodeError wraps: the input bytes
// are not a valid encoding of the format being decoded.
var ErrCorrupt = errors.New("corrupt encoding")

// ErrArgument is returned (wrapped) when a decoder is called with arguments
// that no input could satisfy, such as a negative count. It is a bug in the
// caller, not in the data.
var ErrArgument = errors.New("invalid argument")

// DecodeError reports where and why a decoder rejected its input. It wraps
// ErrCorrupt, so callers that quarantine corrupt data can test with
// errors.Is(err, ErrCorrupt) and still log Format and Offset.
type DecodeError struct {
	Format string // which codec rejected the input, e.g. "value tuple"
	Offset int    // byte offset into the decoder's input where the problem was found
	Reason string
}

func (e *DecodeError) Error() string {
	return fmt.Sprintf("decode %s: byte %d: %s", e.Format, e.Offset, e.Reason)
}

func (e *DecodeError) Unwrap() error { return ErrCorrupt }

func corrupt(format string, off int, reason string) error {
	return &DecodeError{Format: format, Offset: off, Reason: reason}
}

func argErr(format, reason string) error {
	return fmt.Errorf("decode %s: %s: %w", format, reason, ErrArgument)
}

const (
	fmtTimeTuple  = "time tuple"
	fmtValueTuple = "value tuple"
	fmtTimestamps = "timestamp column"
	fmtColumnMeta = "column meta"
	fmtColumn     = "value column"
	fmtXORValues  = "XOR values"
)
