// Package invariants switches expensive consistency checks on with the
// `invariants` build tag (go test -tags invariants), as Pebble does. CI
// runs the test suite once with the tag. Cheap checks are always on and do
// not use this package.
package invariants
