// Package cond parses and evaluates the conditions of Peregreen's search by
// value (paper §3.1): comparisons of block metrics against constants,
// combined with & and |, for example
//
//	min lte 200 & max gte 50 | avg eq 75
//
// which means (min <= 200 && max >= 50) || avg == 75. The HTTP layer
// evaluates a parsed Expr once per series per metric interval, with the
// interval's metrics, and answers with the intervals where it holds; no data
// is read.
//
// Grammar (whitespace is allowed between any two tokens and required
// between a metric, an operator and a value):
//
//	or      = and { "|" and }
//	and     = primary { "&" primary }
//	primary = "(" or ")" | metric op value
//	metric  = count | min | max | avg | sum | stddev | first | last | p50 | p90 | p99
//	op      = lt | lte | gt | gte | eq | ne
//	value   = a float literal as strconv.ParseFloat accepts it ("200", "-1.5e3",
//	          "+2", ".5", "0x1p-2"), except NaN and Inf
//
// Metric names and operators are lower case. The operators are MongoDB's
// ($lt, $lte, …) and, as in MongoDB, eq and ne compare exactly: a metric
// such as avg is rarely exactly equal to a decimal constant.
//
// Invariants:
//  1. Parse never panics. Every error it returns is a *SyntaxError whose
//     Offset is the byte of the condition where the problem is, in
//     [0, len(condition)] (len for a missing token at the end).
//  2. & binds tighter than |; both are associative, and the tree Parse
//     builds is flattened: (a & b) & c and a & (b & c) give the same Expr.
//  3. String is canonical and fully parenthesised: every & and | group is
//     wrapped in parentheses, values are printed in Go's shortest exact
//     form. For every e returned by Parse, Parse(e.String()) returns an Expr
//     with the same String and the same Eval for every input, unless the
//     canonical form exceeds MaxLen (it can be longer than the input:
//     parentheses, spaces, "1e5" printed as "100000").
//  4. Eval compares with IEEE semantics: a NaN metric value makes every
//     comparison false except ne, which is true. A metric the caller cannot
//     supply (get reports false) makes its comparison false, ne included.
//  5. Input is bounded: at most MaxLen bytes, parentheses nested at most
//     MaxDepth deep and &/| groups nested at most MaxDepth deep, so parsing
//     uses bounded stack and the canonical form has bounded depth (3).
//  6. An Expr is immutable once returned; Eval, Metrics and String may be
//     called from many goroutines at once.
package cond
