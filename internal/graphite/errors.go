package graphite

import "fmt"

// PatternError is a malformed path expression, tag expression or tagged
// path; the API answers it with 400.
type PatternError struct{ Msg string }

func (e *PatternError) Error() string { return e.Msg }

func patternErrorf(format string, args ...any) error {
	return &PatternError{Msg: fmt.Sprintf(format, args...)}
}
