// Package seriesiter turns tuple-organized storage into Prometheus sample
// iterators (chunkenc.Iterator).
//
// Both the head (time tuples of varint deltas) and blocks (scaled
// timestamp columns) store a series as a sequence of tuples whose first
// timestamps are readable without decoding. An Iterator walks such a
// TupleSource, merging in a sorted list of extra samples (the head's
// out-of-order buffer), and bounds everything to [mint, maxt].
//
// Invariants:
//  1. Seek never decodes a tuple before the one that can hold the target:
//     it binary-searches the tuples' first timestamps (Heracles'
//     "Problem 1": no decoding from the start of a chunk).
//  2. Samples come out in strictly increasing time order; when a tuple
//     sample and an extra sample share a timestamp the tuple sample wins
//     (the writer never stores both).
//  3. Err is valid after Next returns ValNone and reports the first
//     decoding error; the iterator then stays exhausted.
package seriesiter
