// Package model holds the identifiers shared by every layer of the engine.
//
// Invariants:
//  1. A SeriesRef names one label set for the lifetime of a data directory:
//     it is written to the WAL and never reused for other labels.
//  2. A GroupID names one group key for the lifetime of a data directory.
//  3. A slot is the dense position of a series inside a group, in order of
//     first appearance; slots are never reused within a group.
package model
