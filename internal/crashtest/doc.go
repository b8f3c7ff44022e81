// Package crashtest runs the kill -9 tests of Aerie's storage: a test
// binary runs one of its own tests as a child process that writes and
// prints an acknowledgement after each write returned, kills it with
// SIGKILL at a random moment, and checks that every acknowledged write
// survived.
//
// The child is a TestXxx that skips unless an environment variable names
// its data directory (ChildDir), so that `go test` alone runs only the
// parent. It prints its acknowledgements with Ack and stops on a failed
// write with Check, whose line fails the parent's test.
//
// Invariants:
//
//  1. KillLoop hands every line the child printed to the caller (its
//     acknowledgements to Config.Acks if set, the others to handle), those
//     read after the kill too (the child printed them before it), before
//     it calls verify; a line holding "error" fails the test instead.
//  2. No child outlives KillLoop, also when the test fails mid-iteration.
//  3. Acks holds exactly the rows of the lines "ack G I" it was given.
package crashtest
