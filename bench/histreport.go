package bench

import (
	"fmt"
	"io"
)

// writeHistoryMarkdown writes the section of a --workload=history report.
func writeHistoryMarkdown(w io.Writer, r *Report) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	c := r.Config
	p("## History: backfill and compaction (%s scale)\n\n", r.Scale)
	p("`aerie bench --workload=history --scale=%s`: node hosts, %s with every series for %s and %s with only node_cpu_seconds_total (of %s cpus) and node_memory_MemAvailable_bytes for %s, at %s, ending where the head's %s of current data (every host) begin: %d series, %d samples of history. ",
		r.Scale, c["hosts"], c["span"], c["long_hosts"], c["long_cpus"], c["long_span"], c["interval"], c["head_span"], r.Series, r.Samples)
	p("Each engine is opened with the current data in its head; then the history is written through `storage.Appender` by one writer, host after host, each host's range in time order, a commit every %s samples (the appender path, as remote write and a server's imports of short or unordered lines take it; `aerie import` into a data directory writes history runs instead, measured by the sensors section), and flushed into blocks at the end: Aerie `FlushBackfill`, Prometheus (%s) `CompactOOOHead` (`backfill_*`). Both are counted back sample by sample and must hold every one. ",
		c["batch"], c["prometheus_ooo"])
	p("A fresh pair of engines takes every host-day in a random order (`…_shuffled`), another one import per host, each ending with the flush (`…_imports`). On the latter, both heads are flushed (`backfilled_*`), the long-range queries run (both results must agree), each engine compacts while one goroutine queries it (`compaction_query_*`, against `idle_query_*` just before; Aerie `CompactBlocks`, Prometheus `Compact`), and the queries run again (`…_compacted`). ")
	p("Commit `%s`, %s; the run took %.0f s; load averages (1, 5, 15 min) %s at the start, %s at the end.\n\n", r.Commit, r.Date, r.Seconds, c["loadavg_start"], c["loadavg_end"])
	writeResults(w, r)
	p("\n")
}
