// Package ui serves Aerie's web UI, every page a client of Aerie's own
// HTTP API:
//   - query: a PromQL editor (@prometheus-io/codemirror-promql on
//     CodeMirror 6), a uPlot chart, a table;
//   - explore: metric names with series counts (/api/v1/status/tsdb), a
//     metric's series and labels, a series' head groups and blocks
//     (/api/v1/status/aerie/series);
//   - sensors: a value search (/api/v1/sensor/search) drawn on an
//     overview, a click zooms into an interval, downloads
//     (/api/v1/sensor/extract);
//   - graphite: targets rendered through /render;
//   - cache: each TSCache's hit ratios and slabs (/metrics);
//   - bucket: the tier's blocks and read amplification;
//   - status: build, runtime, flags, configuration, targets, rules,
//     alerts, head statistics, the storage engine
//     (/api/v1/status/aerie/storage).
//
// The sources are TypeScript in web/; web/build.mjs bundles them with
// esbuild into dist/, which is committed and embedded, so `go build` needs
// no npm. scripts/ui-check.sh rebuilds dist/ from the sources and the
// lockfile and fails if it differs from the committed one.
//
// Plain TypeScript, no framework: the two large pieces, CodeMirror and
// uPlot, own their DOM and are driven imperatively; what is left (pages
// of tables and forms) is served by a 60-line element builder
// (web/src/dom.ts). preact or lit would add a rendering model on top of
// that without removing code, and bytes to every page.
//
// Sizes, as measured by TestBundleSize (gzip -9, the compression this
// package serves): the query page, the first page, ~183 KB gzipped
// (~540 KB raw, nearly all of it CodeMirror, the PromQL parser and the
// function docs of codemirror-promql); explore, status, cache and bucket
// 7 to 9 KB each; sensors and graphite ~32 KB each (mostly uPlot, a chunk
// shared with the query page): each page is its own chunk, loaded on
// first visit.
//
// Invariants:
//
//  1. The handler answers only GET and HEAD of its routes (index.html) and
//     of /assets/NAME for the files of dist/assets; any other path gets
//     a 404. Register mounts it on exactly those patterns, so it never
//     shadows an API path, and an unknown /api/ path still gets the mux's
//     404, never index.html.
//  2. A request names a file by exact look-up in a map built from the
//     embedded bundle; no request path is joined onto a directory, so
//     nothing outside dist/ can be served.
//  3. The page needs no network but its own origin: every script and
//     style is in dist/, and the index's Content-Security-Policy forbids
//     any other origin.
//  4. Asset names carry a content hash, so assets are served as immutable;
//     index.html is revalidated (no-cache) by its ETag. Gzipped and plain
//     bodies have distinct ETags.
//  5. The first page stays under 300 KB gzipped (TestBundleSize).
//  6. dist/ is a deterministic function of web/'s sources and lockfile
//     (scripts/ui-check.sh).
package ui
