// Package harness holds what every benchmark of Aerie shares, so that a
// workload package declares only its data, its peers, its phases and its
// figures:
//
//   - Peer and Fleet: a server process (aerie serve, VictoriaMetrics,
//     InfluxDB, memcached, carbon-cache, graphite-web) started on loopback
//     over its own data directory, waited for until ready, measured through
//     /proc (CPU seconds, RSS and its peak, run-queue wait) and stopped
//     gracefully, its log kept in the run's directory and quoted on failure.
//   - DiskUsage, CopyDir: a data directory's bytes, in all and by entry.
//   - Header, WriteJSON, ReadJSON: a report section's JSON, which records
//     the commit and the machine itself (never patched by hand), and is
//     read back by `aerie bench report` by its kind.
//   - Percentile, Num, Ratio, Bytes, MDEscape: the timers' statistics and
//     the Markdown cells every section writes.
//   - Workload, Register, Lookup: the registry behind `aerie bench NAME`,
//     `aerie bench list` and `aerie bench report`.
//
// # Adding a workload
//
// A workload is one package: it declares a *Workload (its name, what it
// compares, its own flags and the run that reads them, its report's kind
// and reader: ReadAs), a report type that embeds Header and writes its
// table, its Markdown section and its JSON, and whatever data, peers and
// phases it needs, taking the generic parts from here. One line in
// bench/workloads registers it; `aerie bench NAME`, `aerie bench list`,
// `aerie bench report` and scripts/benchmarks.sh (WORKLOADS) then know it.
//
// Invariants:
//
//  1. A Peer runs as an internal/childproc process, which the kernel kills
//     if the benchmark process dies (Pdeathsig), and a Fleet stops every
//     peer it started, even when the run fails or is interrupted: a
//     benchmark leaves no server running.
//  2. Stop sends SIGTERM, waits the peer's grace period, then SIGKILL; it
//     reports an unclean exit or a kill as an error. Stopping a stopped
//     peer is a no-op.
//  3. Every error about a peer names it and ends with the last lines of its
//     log.
//  4. A report's Header is filled by NewHeader from the running binary
//     (its VCS stamp, or the working tree's HEAD with "-dirty") and from
//     /proc; ReadJSON rejects a file of another kind.
//  5. Nothing here asserts a timing: figures are recorded, goals are
//     compared and marked, and the caller decides what fails a run.
package harness
