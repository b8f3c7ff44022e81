// Package attime reads Graphite times as graphite-web's render/attime.py
// does: the from, until and now of a request, and the time arguments of
// render functions (timeSlice, linearRegression, verticalLine), so that
// both read a time the same way.
//
// Invariants:
//
//  1. Parse returns Unix seconds within Python's datetime range (years
//     1 to 9999), or an error: nothing graphite-web could not represent.
//  2. Day and time-of-day references are wall-clock times in the given
//     location; relative offsets count from now.
//  3. Offset units go by attime.py's prefix rules (UnitSeconds), the same
//     for a time's offset and for package expr's intervals.
package attime
