package pointio

import (
	"fmt"
	"math"
	"strconv"

	"github.com/aerie-db/aerie/internal/sensor/enum"
)

// Type is the value type of a sensor, named in the upload URL. Every type
// is stored as a float64; the type decides which values a sensor accepts
// (Fit). The numbers are part of the sensor metadata and never change.
type Type uint8

// The value types of Peregreen's contract.
const (
	Int8    Type = 1
	Int16   Type = 2
	Int32   Type = 3
	Int64   Type = 4
	Float32 Type = 5
	Float64 Type = 6
)

var typeNames = [...]string{Int8: "int8", Int16: "int16", Int32: "int32", Int64: "int64", Float32: "float32", Float64: "float64"}

// ParseType returns the Type named s: int8, int16, int32, int64, float32
// or float64.
func ParseType(s string) (Type, error) {
	if t, ok := enum.Parse[Type](typeNames[:], s); ok {
		return t, nil
	}
	return 0, fmt.Errorf("unknown value type %q: want int8, int16, int32, int64, float32 or float64", s)
}

// String returns the name ParseType reads.
func (t Type) String() string { return enum.Name(typeNames[:], t, "Type") }

func (t Type) valid() bool { return t >= Int8 && t <= Float64 }

func (t Type) isInt() bool { return t >= Int8 && t <= Int64 }

// intRange returns the bounds of an integer type as float64s: min is
// exact, and values must be below lim (2^(bits-1), also exact).
func (t Type) intRange() (lo, lim float64) {
	switch t {
	case Int8:
		return math.MinInt8, math.MaxInt8 + 1
	case Int16:
		return math.MinInt16, math.MaxInt16 + 1
	case Int32:
		return math.MinInt32, math.MaxInt32 + 1
	default:
		return math.MinInt64, -math.MinInt64
	}
}

// Fit returns v as a sensor of type t stores it, or an error saying why t
// cannot hold v:
//
//   - integer types accept integral values within their range, no NaN or
//     ±Inf; -0 is stored as 0;
//   - float32 accepts NaN, ±Inf and every value whose magnitude rounds to
//     at most math.MaxFloat32, and returns float64(float32(v)): a float32
//     sensor stores float32 precision;
//   - float64 accepts every value.
func (t Type) Fit(v float64) (float64, error) {
	switch {
	case t == Float64:
		return v, nil
	case t == Float32:
		f := float32(v)
		if math.IsInf(float64(f), 0) && !math.IsInf(v, 0) {
			return 0, fmt.Errorf("value %s does not fit float32 (magnitude above %g)", formatFloat(v), math.MaxFloat32)
		}
		return float64(f), nil
	case t.isInt():
		lo, lim := t.intRange()
		if math.IsNaN(v) || math.IsInf(v, 0) || v != math.Trunc(v) {
			return 0, fmt.Errorf("value %s does not fit %s: not an integer", formatFloat(v), t)
		}
		if v < lo || v >= lim {
			return 0, fmt.Errorf("value %s does not fit %s (%s to %s)", formatFloat(v), t, formatFloat(lo), strconv.FormatUint(uint64(lim)-1, 10))
		}
		return v + 0, nil // -0 → 0
	}
	return 0, fmt.Errorf("unknown value type %s", t)
}
