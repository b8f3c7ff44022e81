package expr

import (
	"errors"
	"fmt"
)

// UnknownFunctionError is a call of a function this package does not
// implement. The HTTP layer answers 400 naming it.
type UnknownFunctionError struct {
	Name string
	Pos  int // byte offset of the call in the target
}

func (e *UnknownFunctionError) Error() string {
	return fmt.Sprintf("unknown function %q at byte %d", e.Name, e.Pos)
}

// ArgError is a call with a bad argument, graphite-web's
// InputParameterError: a missing, extra, mistyped or out-of-range
// parameter, or one the function rejects when it runs. The HTTP layer
// answers 400 with it.
type ArgError struct {
	Func  string // function name
	Param string // parameter name; empty if the error is about the call
	Pos   int    // byte offset of the call in the target
	Msg   string
}

func (e *ArgError) Error() string {
	if e.Param == "" {
		return fmt.Sprintf("invalid parameters for function %q at byte %d: %s", e.Func, e.Pos, e.Msg)
	}
	return fmt.Sprintf("invalid parameter %q of function %q at byte %d: %s", e.Param, e.Func, e.Pos, e.Msg)
}

// ErrLimit is wrapped by errors that stop an evaluation which would fetch
// or produce more than the package's limits allow.
var ErrLimit = errors.New("evaluation limit exceeded")

// IsBadRequest reports whether err is the caller's fault (a target that
// does not parse, an unknown function, a bad argument, a limit), so that
// an HTTP layer answers 400 rather than 500.
func IsBadRequest(err error) bool {
	var pe *ParseError
	var ue *UnknownFunctionError
	var ae *ArgError
	var oe *OffsetError
	return errors.As(err, &pe) || errors.As(err, &ue) || errors.As(err, &ae) || errors.As(err, &oe) || errors.Is(err, ErrLimit)
}
