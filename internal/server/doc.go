// Package server holds `aerie serve`: its configuration (a prometheus.yml
// plus an `aerie:` section), the lifecycle of the engine, scrape, discovery
// and rule managers, and the HTTP mux with ingestion, query, health,
// metrics and profiling endpoints.
//
// Invariants:
//  1. /-/ready answers 200 only after the WAL is replayed and every
//     manager runs; /-/healthy answers 200 while the process serves.
//  2. Shutdown order: stop accepting HTTP, stop scraping and rule
//     evaluation (their last appends commit), then close the engine, which
//     flushes and fsyncs the WAL. Nothing acknowledged is lost.
//  3. Every metric the server exports is prefixed aerie_.
package server
