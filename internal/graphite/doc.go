// Package graphite serves graphite-web's HTTP API (release 1.1.8, the
// reference) over a Store, so that Grafana's Graphite data source and
// other Graphite clients work unchanged against Aerie. Target evaluation
// (the function library) is package expr; this package parses requests,
// finds series, feeds expr through a Fetcher and writes the answers.
//
// # Endpoints
//
// New(store, opts).Register(mux, wrap) mounts /render, /metrics/find
// (also /metrics), /metrics/expand, /metrics/index.json, /functions,
// /functions/{name}, /version and the tags API (/tags/tagSeries,
// /tags/tagMultiSeries, /tags, /tags/{tag}, /tags/findSeries,
// /tags/autoComplete/tags, /tags/autoComplete/values). Parameters come
// from the query string and a POST body (URL-encoded or multipart), the
// body's after the query's, and '&' is the only separator: Graphite's
// tagged paths hold ';'.
//
// # Paths and tags
//
// A Graphite path is the __name__ label; Graphite tags are the other
// labels except internal ones (names starting with "__") and a label
// called "name", since tag "name" is the path. A series is named by its
// path, followed when it has tags by ";tag=value" in tag order
// (graphite-web's TaggedSeries.format), so a Prometheus series
// up{job="node"} is reachable as the path "up" (as "up;job=node") and by
// seriesByTag('job=node'). Every series is in the tag index: graphite-web's
// holds only series written with tags, so seriesByTag('name=a.b') here
// also finds an untagged a.b. Find lists a tagged series under its path
// (disk.used;dc=x is the leaf disk.used), where graphite-web's whisper
// finder lists its file under "_tagged". TestDifferential compares the
// rest with graphite-web 1.1.8 itself. A Store that also implements
// TagIndex (QueryableStore does) answers /tags and the autoComplete
// endpoints from its label index; otherwise they list the series.
//
// # Time
//
// Package attime reads times as attime.py does: epoch seconds, offsets
// ("-1h", "now-5min"; units s, min, h, d, w, mon = 30 d, y = 365 d),
// times of day ("noon", "midnight", "teatime", "HH:MM", "9am") and days
// ("today", "yesterday", "YYYYMMDD", "MM/DD/YY", "jan15", "monday") in
// the request's tz or Options.Location; Options.Now is the clock.
// /render's from defaults to -1d, until to now; they are swapped when
// reversed and may not be equal.
//
// # Render
//
// graphite-web draws a PNG unless format says otherwise; this API draws
// nothing: a request without format (or with png, svg, pdf) is a 400 that
// says so, and json, csv, raw and pickle (also the older rawData and
// pickle parameters) are answered as graphite-web writes them: Python's
// float repr, JSON with its separators, null for None and ±1e9999 for
// infinities, CSV rows with CRLF, pickle protocol 2 (AppendPickle*, a
// writer of only the types the answer holds). maxDataPoints applies to
// json only, as in graphite-web, with its consolidation: ⌈points /
// maxDataPoints⌉ values per point by the series' consolidation function
// and xFilesFactor, the first point "nudged" to a multiple of the new step.
//
// A fetched series' consolidation function comes from the store
// (Points.Method: the storage-aggregation rule of its archive), where
// graphite-web 1.1.8 uses "average" for every series: a known difference
// under maxDataPoints for series aggregated by sum, min, max or last
// (consolidateBy sets it explicitly on both). The xFilesFactor of fetched
// series and of aggregates is the request's (default
// Options.XFilesFactor), as in graphite-web: expr.EvalOptions sets it.
//
// # Find
//
// CompileGlob compiles a path expression. Each dot-separated component
// is matched on its own: "*" and "?" never cross a dot, "[a-c]" and
// "[!a-c]" are byte classes and "{a,b*}" alternatives, which may nest.
// The store is asked with one regexp over __name__ (NameRegexp for
// fetches, PrefixRegexp for find) and Glob.Match decides. A node is a leaf
// where a series has exactly its path and a branch where series have
// longer paths under it; the same path may be both. find's from and
// until are checked and then ignored, as graphite-web's whisper finder
// ignores them (API.Find takes a range for other callers).
//
// # Invariants
//
//  1. No input panics a handler; every request parameter has a limit
//     (Options and the max* constants), and an error answer names the
//     parameter (paramError: 400), the limit (LimitError: 422) or the
//     target, function and byte offset (expr's errors: 400).
//  2. For every glob g and path p, g.Match(p) implies that NameRegexp
//     matches p (the store never drops a series the glob accepts), and
//     no glob wildcard or class matches a dot (FuzzGlob).
//  3. A series' name is a function of its label set (SeriesName), and a
//     tagged path parses back to the tags it was formatted from
//     (FuzzParseTagged): a name in a render answer, fed back as a target,
//     selects the same series.
//  4. The Fetcher counts every series and value it reads against the
//     request's limits before handing them on; a Store's Points allocates
//     no grid longer than its MaxPoints.
//  5. A Store's Points grid is whisper's: Values[i] is the interval
//     [Start+i*Step, Start+(i+1)*Step) and End = Start+len(Values)*Step;
//     every answer format writes exactly those timestamps (json after
//     consolidation).
//  6. The API holds no mutable state after New: handlers run concurrently;
//     a Fetcher belongs to one request.
package graphite
