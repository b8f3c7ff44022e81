// Package fuzzbytes turns a fuzzer's bytes into the choices a fuzz test
// makes: how many, which style, what value.
//
// Invariants:
//
//  1. A Reader hands out the bytes it was given in order, each once.
//  2. Past their end it hands out zeros, so that every input, the empty
//     one too, makes a test case and the fuzzer can shorten inputs freely.
package fuzzbytes
