// Package expr parses and evaluates Graphite render targets the way
// graphite-web 1.1.8 does, so that /render answers what Grafana and other
// Graphite clients expect, names included.
//
// # Design
//
// Parse turns a target into an Expr tree following graphite-web's grammar
// (render/grammar.py): path expressions with globs, {a,b} alternatives,
// backslash escapes and ;tag=value suffixes; calls with positional then
// keyword arguments; 'single' and "double" quoted strings; integers,
// floats, scientific numbers and inf; true/false and None in any case;
// and pipes (a.b|f(x) is f(a.b,x)). A number or keyword is only a literal
// where graphite-web's lookahead makes it one (followed by ',' or ')');
// elsewhere "1.5x" or "-1h" are path expressions, as there. Errors are
// *ParseError with the byte offset and what was expected there.
//
// Eval walks the tree. A path expression is one Fetcher.Fetch over the
// request's [from, until); seriesByTag(...) is one Fetcher.FetchTagged.
// A call binds its arguments to the function's parameters exactly as
// graphite-web's validateParams does (positional, then keyword; the last
// parameter may repeat; the same type checks and options), so bad
// arguments fail before the function runs, as *ArgError naming the
// function and parameter. Functions that look outside the request
// (movingWindow and its movingAverage/movingMedian/…, timeShift,
// timeStack, smartSummarize with alignTo, hitcount with alignToInterval)
// evaluate their first argument again over the widened or shifted range,
// as graphite-web re-runs requestContext['args'][0]; applyByNode parses
// and evaluates the targets it builds. Functions that combine series
// bring them to a common step first, as graphite-web's normalize does:
// the lcm of the steps, each series consolidated to it by its own
// consolidation function and xFilesFactor, rows aligned by position
// (izip_longest), not by timestamp.
//
// Consolidate exposes that consolidation for the render API's
// maxDataPoints, so both go through one implementation.
//
// Functions are in a table (funcs) filled at init: 149 of graphite-web
// 1.1.8's 151 (not events, which needs graphite-web's event database, nor
// stacked, whose running total spans the targets of a request);
// template() is not supported either. mapSeries is the one function whose
// value is a list of series lists, which only reduceSeries accepts.
// Functions describes the table in the shape of graphite-web's
// /functions (function signature, group, params with name, type,
// required, default, multiple, options and suggestions).
//
// Names, path expressions and tags follow graphite-web's string formats
// ("%g" numbers in scale(a,2), Python's str() in tag values and in
// constantLine's "42.0", "timeShift(a, \"-1d\")" with its space …)
// because a differential test compares them with graphite-web's output.
// Python regular expressions (grep, exclude, aliasSub) are compiled as Go
// RE2: lookaround and backreferences in patterns are rejected as bad
// arguments; aliasSub's \1 and \g<name> replacements are translated.
// Times of day (timeSlice, smartSummarize's alignTo, hitcount's
// alignToInterval) are in Options.Location, UTC by default. As in
// graphite-web, fetched series carry the request's xFilesFactor
// (Options.XFilesFactor), not the one of the archive they came from.
//
// Graphite-web itself is the specification: testdata/graphiteweb holds
// what Debian's graphite-web 1.1.8 (its functions.py, evaluator and
// pyparsing grammar, run by gen_*.py with a stub fetchData) answered for
// over 300 targets, 100 parser inputs and its /functions metadata, and
// TestReferenceGraphiteWeb, TestParseReference and TestFunctionsReference
// compare names, path expressions, steps, values, tags and parameters
// with it. The few knowing differences are listed in those tests with
// their reasons; in short, Eval answers a bad request where graphite-web
// (which by default only logs invalid parameters, and parses without
// parseAll so trailing text is ignored) goes on and either fails with a
// 500 or evaluates something unintended. Graphite-web's quirks that show
// in its answers are kept (summarize's extra trailing bucket, the window
// that excludes the current point in movingWindow, asPercent keeping the
// series' own step after consolidating, constantLine's "42.0" name …).
// Paths may contain UTF-8 bytes, which graphite-web only accepts with
// UTF8_METRICS.
//
// None is NaN throughout: Series.Values holds NaN for a missing point and
// functions treat NaN exactly as graphite-web treats None.
//
// # Invariants
//
//  1. Eval never writes to a Series the Fetcher returned, nor to its
//     Values or Tags: every function builds new Series (copy-on-write of
//     the struct, new Values slices, copied tag maps). Series returned by
//     Eval may share Values with each other and with the Fetcher's, so
//     callers must treat them as read-only too.
//  2. Every series Eval returns has Step > 0 and
//     End == Start + len(Values)*Step. Where graphite-web keeps an end
//     that disagrees with the number of values (summarize, movingAverage,
//     constantLine …), the values win: they are what graphite-web's
//     renderers emit.
//  3. Eval fetches at most MaxFetches times and no function makes a
//     series longer than MaxPoints; past either it returns an error
//     wrapping ErrLimit. Parse accepts at most MaxTargetLen bytes,
//     MaxDepth nested calls and MaxArgs arguments per call. Neither panics
//     on any input (FuzzParse, FuzzEval).
//  4. For every target Parse accepts, Parse(e.String()) succeeds and
//     yields an expression equal to e except for byte offsets.
//  5. The series of one path expression come back sorted by name with
//     duplicate names dropped, as graphite-web's fetchData returns them,
//     whatever order the Fetcher used.
//  6. An error is IsBadRequest (the target's fault: *ParseError,
//     *UnknownFunctionError, *ArgError, *OffsetError, ErrLimit) or comes
//     from the Fetcher or the context, wrapped.
package expr
