// Package enum names the values of the sensor packages' small enums
// (cond.Metric, pointio.Type, extract.Mode …) through a table of names
// indexed by value, as `var names = [...]string{A: "a", B: "b"}` writes
// it.
//
// Invariants:
//
//  1. Name and Parse agree: Parse(names, Name(names, v, typ)) is v for
//     every named v.
//  2. An empty name names nothing: values without a name print as
//     "typ(N)", and Parse never matches them, not even for "".
package enum
