// Command aerie is Aerie's one binary: one subcommand per operator task,
// each in its own file with its own test. Today it carries `demo` (load a
// workload into the engine and query it with PromQL — what `make run`
// starts) and `inspect` (list a data directory's blocks); `serve` arrives
// with the HTTP server.
package main
