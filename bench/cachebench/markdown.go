package cachebench

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
)

// WriteTable writes the report as text, for the terminal.
func (rep *Report) WriteTable(w io.Writer) error { return rep.WriteMarkdown(w) }

// WriteMarkdown writes the report's section of docs/BENCHMARKS.md
// (bench.Section).
func (rep *Report) WriteMarkdown(w io.Writer) error {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	c, d := rep.Config, rep.Dataset
	p("## Cache: TSCache §5 — Aerie's cache against memcached 4 h chunks and InfluxDB alone (%s scale)\n\n", rep.Scale)
	p("`aerie bench cache --scale=%s` (bench/cachebench/doc.go) at `%s`, %s; the run took %.0f s; load averages (1, 5, 15 min) %s at the start, %s at the end (the machine is shared). ",
		rep.Scale, rep.Commit, rep.Date, rep.Seconds, c["loadavg_start"], c["loadavg_end"])
	p("Backend: %s (Debian's package; its own process on loopback, default storage settings). ", c["influxdb"])
	p("Data: measurement `%s`, %d sensors (tags `sensor`, `room`) × %d float fields, one point every %d s for %.0f days: %d points, %d values, %s as the caches count them (8 bytes a value's timestamp plus its text), loaded as %s of line protocol in %.1f s. ",
		Measurement, d.Sensors, d.Fields, d.IntervalSeconds, d.Days, d.Points, d.Values, mb(d.Bytes), mb(d.LineBytes), d.LoadSeconds)
	p("Each cache: %s (%s of the data, rounded to whole MiB): %s with `-m %d` holding 4-hour chunks; Aerie's cache (`internal/cache`, %s) with %d KiB slabs. %s client goroutines (the paper's 64); one answer in %s of every system is compared with InfluxDB's own answer (all equal, or the run fails).\n\n",
		mb(d.CacheBytes), pct(parseFloat(c["cache_share"])), c["memcached"], d.MemcachedMB, c["aerie_front_end"], d.AerieSlabBytes>>10, c["clients"], c["check_every"])

	p("### Workloads\n\n| workload | range lengths | queries | mean answer | mean range |\n|---|---|---:|---:|---:|\n")
	for _, wi := range rep.Workloads {
		p("| %s | %s | %d | %s | %.0f min |\n", wi.Name, strings.Join(wi.Ranges, ", "), wi.Queries, kb(wi.MeanBytes), wi.MeanSpan)
	}
	p("\nYCSB-TS-like, seed %s: the key (one of %d sensor × field-set combinations: each field alone, two, four or all eight) Zipfian (θ %s); the end time Latest over the data's %d-second steps (YCSB's SkewedLatest: the newest most likely); the length Zipfian between the workload's bounds (mixed: one of the three bounds of small, medium and large, chosen uniformly). Every system answers the same queries from a fresh, empty cache; InfluxDB is loaded once.\n\n",
		c["seed"], d.Keys, c["zipfian"], d.IntervalSeconds)

	p("### Headline figures\n\n| workload | figure | value | goal | |\n|---|---|---:|---|---|\n")
	for _, r := range rep.Ratios {
		v := fmt.Sprintf("%.2f×", r.Value)
		if strings.Contains(r.Name, "hit ratio") {
			v = pct(r.Value)
		}
		p("| %s | %s | %s | %s | %s |\n", r.Workload, r.Name, v, r.Goal, r.Mark())
	}

	p("\n### Results\n\n| workload | system | hits / partial / misses | hit ratio (bytes) | delivered | bandwidth | queries/s | mean ms | p50 ms | p99 ms | InfluxDB queries | checked | cache counters |\n|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for _, r := range rep.Results {
		p("| %s | %s | %d / %d / %d | %s | %s | %.2f MB/s | %.0f | %.1f | %.1f | %.1f | %d | %d | %s |\n", r.Workload, r.System, r.Hits, r.Partials, r.Misses, pct(r.HitRatio),
			mb(r.Bytes), r.BandwidthMBps, r.QPS, r.MeanMs, r.P50Ms, r.P99Ms, r.DBQueries, r.Checked, counters(r.Stats))
	}
	p("\nHit ratio: bytes of the answers served from the cache ÷ bytes delivered (a partial hit counts its cached part). Bandwidth: bytes delivered to the clients (8 a value plus its text) ÷ the wall time of the workload; latency per query, from asking to holding the assembled answer. memcached: a query is split into the 4-hour chunks it overlaps, fetched with one multi-get; each run of missing chunks is one InfluxDB query over the whole chunks, stored chunk by chunk (a set memcached refuses is not cached), and the answer cut to the range. Aerie: Get; on a hit the answer is the cache's; on a partial hit InfluxDB is asked for the missing head or tail only, which is Set; on a miss for the range, which is Set. Counters: memcached's `stats` and Aerie's `Stats()` at the end of the workload (set_errors: sets refused; for Aerie, sets of more than half the cache).\n\n")
	for _, n := range rep.Notes {
		p("- %s\n", n)
	}
	if len(rep.Notes) > 0 {
		p("\n")
	}
	return nil
}

func counters(m map[string]int64) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

func mb(n int64) string { return fmt.Sprintf("%.1f MB", float64(n)/1e6) }

func kb(n float64) string { return fmt.Sprintf("%.2f KB", n/1e3) }

func pct(x float64) string { return fmt.Sprintf("%.1f %%", 100*x) }

func parseFloat(s string) float64 {
	var x float64
	fmt.Sscan(s, &x)
	return x
}
