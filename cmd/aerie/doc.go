// Command aerie is Aerie's one binary: one subcommand per operator task,
// each in its own file. `serve` runs the server (what `make run` starts;
// tested end to end in internal/e2e and in-process in internal/server),
// `demo` loads a workload into the engine and queries it with PromQL,
// `inspect` lists a data directory's blocks, and `import` loads files
// (Influx, Prometheus text, VictoriaMetrics JSON lines or CSV) into a data
// directory or through a running server, sorted by time in bounded memory
// (internal/importer).
// `cache` runs the standalone time-series cache (TSCache) for clients of
// any database, over HTTP and memcached's protocol (docs/cache-api.md).
package main
