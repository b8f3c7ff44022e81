package graphitebench

import (
	"cmp"
	"fmt"
	"io"
	"strings"

	"github.com/aerie-db/aerie/bench/harness"
)

// WriteMarkdown writes the report's section of docs/BENCHMARKS.md
// (bench.Section).
func (rep *Report) WriteMarkdown(w io.Writer) error {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	c := rep.Config
	p("## Graphite: plaintext ingest and render against carbon-cache and graphite-web (%s scale)\n\n", rep.Scale)
	p("`aerie bench graphite --scale=%s` (bench/graphitebench/doc.go) at `%s`, %s; the run took %.0f s; load averages (1, 5, 15 min) %s at the start, %s at the end (the machine is shared). ",
		rep.Scale, rep.Commit, rep.Date, rep.Seconds, c["loadavg_start"], c["loadavg_end"])
	p("Node-like hosts of %s series each (cpu, mem, load, disk and net counters, app, proc, tcp, swap), one point every %s for %s ending %s, integer values; storage schema `%s`, aggregation `%s` on both peers. ",
		c["metrics_per_host"], c["step"], c["span"], c["end"], c["schemas"], c["aggregation"])
	p("Peers: `aerie serve` (`%s`) and Debian's %s, on loopback, one after the other on the same data. **Durability differs:** whisper files are written without fsync (WHISPER_AUTOFLUSH False) and carbon's cache is in memory; Aerie's WAL is fsync'd before each commit returns (`wal.sync: batch`, its default).\n\n", rep.Commit, rep.Peers[1].Version)

	for _, pe := range rep.Peers {
		p("- %s: %s\n", pe.Name, harness.MDEscape(pe.Args))
	}
	p("\n### Headline figures\n\n| figure | value | goal | |\n|---|---:|---|---|\n")
	for _, r := range rep.Ratios {
		p("| %s | %s | %s | %s |\n", r.Name, num(r.Value), r.Goal, r.Mark())
	}

	if big, eq := rep.series(aerie), rep.series(carbon); big > eq {
		p("Carbon is scaled down: Aerie ingests %d series alone, then both peers %d (each whisper file of the schema is 8640 slots, 104 KB, created and written one at a time by carbon's writer: %d series would be %.0f GB of whisper); the ratios against carbon are at equal series counts.\n", big, eq, big, float64(big)*(8640*12+28)/1e9)
	}
	p("\n### Ingest: plaintext over TCP\n\n| peer | series | points | clients | accepted points/s | stored points/s | stored | dropped | CPU s | cores busy | run-queue wait s | stored per CPU s | peak RSS | RSS after | note |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for _, in := range rep.Ingest {
		busy := 0.0
		if in.StoredSeconds > 0 {
			busy = in.CPUSeconds / in.StoredSeconds
		}
		p("| %s | %d | %d | %d | %s | %s | %d | %d | %s | %.2f | %s | %s | %s | %s | %s |\n", in.Peer, in.Series, in.Points, in.Clients,
			num(in.AcceptedPerSecond), num(in.StoredPerSecond), in.Stored, in.Dropped, num(in.CPUSeconds), busy, num(in.RunWaitSeconds), num(in.StoredPerCPUSecond),
			bytesStr(in.RSSPeakBytes), bytesStr(in.RSSEndBytes), harness.MDEscape(in.Note))
	}
	p("\nEach peer starts empty; %s clients each send their share of the hosts over one TCP connection, step after step (every series' point of a step before the next step), as fast as the server reads (TCP backpressure; the payload is generated before the clock starts). Accepted is over the wall time from the first dial until the server closed every connection after reading all; stored until every point was stored: ", c["clients"])
	seen := map[string]bool{}
	for _, in := range rep.Ingest {
		if !seen[in.Peer] {
			seen[in.Peer] = true
			p("%s — %s. ", in.Peer, in.How)
		}
	}
	p("CPU is the server's utime+stime (/proc/PID/stat) over that interval (cores busy: CPU s ÷ the stored interval; run-queue wait: the time the server's threads were runnable but waited for a core, summed over threads from /proc/PID/task/*/schedstat — the machine's other work), peak RSS the largest VmRSS sampled every 250 ms. Tgres: 150 K points/s over 500 K series on 8 cores; issue 14's goal: ≥ 1 M points/s on these 2 cores (shared with the clients).\n\n")

	if len(rep.Panels) > 0 {
		p("### Render: 20 Grafana panels\n\n| panel | target | range | series | points | Aerie p50 ms | p90 | graphite-web p50 ms | p90 | ratio | differing points |\n|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|\n")
		for _, pr := range rep.Panels {
			d := fmt.Sprint(pr.Diffs)
			if len(pr.Examples) > 0 {
				d += ": " + strings.Join(pr.Examples, "; ")
			}
			p("| %s | `%s` | %s | %d | %d | %s | %s | %s | %s | %s | %s |\n", pr.Name, pr.Target, pr.Range, pr.Series, pr.Points,
				num(pr.Aerie.P50Ms), num(pr.Aerie.P90Ms), num(pr.Graphite.P50Ms), num(pr.Graphite.P90Ms), num(pr.Ratio), harness.MDEscape(d))
		}
		p("\nOver the %d-series data of both peers: `/render?target=…&from=END-RANGE&until=END&maxDataPoints=%s&format=json`, END the last point's time; the data cover only the last %s of each range, so most of a 6 h or 24 h answer is nulls, as on a fresh server. Each panel is rendered once by each peer and the answers compared point by point (relative tolerance 1e-9; series, targets, times, nulls and values), then %d times by each, the peers taking turns to go first; latency is from sending the request to reading the last byte, one client. Series and points (non-null) are graphite-web's answer's. Ratio: Aerie's p50 ÷ graphite-web's.\n\n",
			rep.series(carbon), c["max_data_points"], c["span"], rep.Panels[0].Runs)
	}
	if len(rep.Profile) > 0 {
		p("### Aerie's CPU profile over its largest ingest\n\n`/debug/pprof/profile` of the server, %s; `go tool pprof -top`:\n\n```\n%s\n```\n\n", cmp.Or(c["profile"], "its first 20 s"), strings.Join(rep.Profile, "\n"))
	}
	for _, n := range rep.Notes {
		p("- %s\n", n)
	}
	if len(rep.Notes) > 0 {
		p("\n")
	}
	return nil
}

// num formats a figure with about three significant digits, in K and M.
func num(x float64) string {
	switch {
	case x == 0:
		return "0"
	case x >= 1e6:
		return fmt.Sprintf("%.2f M", x/1e6)
	case x >= 1e4:
		return fmt.Sprintf("%.0f K", x/1e3)
	case x >= 100:
		return fmt.Sprintf("%.0f", x)
	case x >= 1:
		return fmt.Sprintf("%.2f", x)
	default:
		return fmt.Sprintf("%.3g", x)
	}
}

func bytesStr(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.0f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.0f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
