package index

import (
	"errors"
	"fmt"
)

// ErrClosed is returned by Sync after Close.
var ErrClosed = errors.New("tagdict closed")

// CorruptionError reports bytes that cannot be what this package wrote: a
// checksum mismatch, a bad magic or version, or a value out of bounds. Repair
// code finds it with errors.As and acts on File, Section and Offset.
type CorruptionError struct {
	// File is the path of the damaged file. DecodeBlockIndex leaves it empty
	// because it sees bytes, not a file; the block reader fills it in.
	File string
	// Section names the part of the format that failed to validate, e.g.
	// "header", "record", "tag array", "ttmapping".
	Section string
	// Offset is the byte offset of the damaged frame or field, counted from the
	// start of the file (TagDict) or of the decoded slice (block index).
	Offset int64
	Err    error
}

func (e *CorruptionError) Error() string {
	if e.File == "" {
		return fmt.Sprintf("corrupt %s at offset %d: %v", e.Section, e.Offset, e.Err)
	}
	return fmt.Sprintf("%s: corrupt %s at offset %d: %v", e.File, e.Section, e.Offset, e.Err)
}

func (e *CorruptionError) Unwrap() error { return e.Err }

func corruptf(file, section string, off int, format string, args ...any) *CorruptionError {
	return &CorruptionError{File: file, Section: section, Offset: int64(off), Err: fmt.Errorf(format, args...)}
}
