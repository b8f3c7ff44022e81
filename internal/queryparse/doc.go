// Package queryparse parses PromQL through a cache of parses.
//
// A dashboard asks the same query strings again and again, and a parse
// compiles every regular expression of the query's matchers: 42 µs for
// TSBS' selector of ten metric names against 0.4 µs for a copy from the
// cache (BenchmarkParseExpr), paid by each of the
// layers that parse a query (the results cache, the VictoriaMetrics name
// compatibility, Aerie's evaluator). VictoriaMetrics caches its parses
// the same way. Prometheus' own engine still parses the string it is
// given.
//
// Invariants:
//  1. ParseExpr(s) answers what parser.ParseExpr(s) answers: an equal
//     expression (its label matchers equal by their string) or an error.
//  2. The caller owns what ParseExpr returns: no node, slice or pointer of
//     it is shared with the cache or with another caller's copy, but the
//     label matchers and the functions, which nothing modifies.
//  3. The cache holds at most 1,024 parses, of query strings of at most
//     16 KiB and 1 MiB together; parses that fail are not kept.
package queryparse
