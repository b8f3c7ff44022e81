// Package servertest starts an Aerie server in the test's own process
// (Start) and stops it when the test ends. Child processes of tests
// (Aerie's binary, Prometheus, carbon-cache, graphite-web) are
// internal/childproc's.
//
// It does not import internal/server: Start takes the few methods it calls
// as an interface, so that package server's own tests, which read the
// server's unexported fields, can use it without an import cycle.
//
// Invariants:
//
//  1. Start returns only once the server's /-/ready answered 200; when Run
//     returns first, or ready takes longer than ReadyTimeout, the test fails
//     with Run's error.
//  2. A server that Start started is stopped (its context cancelled, Run
//     waited for) exactly once: by Running.Stop or at the test's end, and
//     the test fails if Run returned an error.
package servertest
