package sensorbench

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/aerie-db/aerie/bench/harness"
)

// WriteTable writes the report as text, for the terminal.
func (rep *Report) WriteTable(w io.Writer) error { return rep.WriteMarkdown(w) }

// WriteMarkdown writes the report's section of docs/BENCHMARKS.md
// (bench.Section).
func (rep *Report) WriteMarkdown(w io.Writer) error {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	c := rep.Config
	var vmVersion string
	for _, pe := range rep.Peers {
		if pe.Name == vm {
			vmVersion = pe.Version
		}
	}
	p("## Sensor histories: Peregreen's operations (%s scale)\n\n", rep.Scale)
	p("`aerie bench --workload=sensors --scale=%s` (bench/sensorbench/doc.go) at `%s`, %s; the run took %.0f s; load averages (1, 5, 15 min) %s at the start, %s at the end (the machine is shared). ", rep.Scale, rep.Commit, rep.Date, rep.Seconds, c["loadavg_start"], c["loadavg_end"])
	p("Peregreen §4 (seed 004) scaled to this machine: %d sensors × %s at %s from %s (%d records, %s of raw CSV `t,v` rows, %.1f B a record); values %s. ",
		rep.Sensors, rep.Span, c["rate"], c["start"], rep.Records, bytesStr(rep.RawCSV), float64(rep.RawCSV)/float64(max(rep.Records, 1)), c["values"])
	p("Peer: VictoriaMetrics single-node (`%s`) on loopback. **Durability differs:** Aerie answers an upload after its WAL records are fsync'd; VictoriaMetrics acknowledges before anything is fsync'd.\n\n", vmVersion)

	p("### Headline figures\n\n| figure | value | goal | |\n|---|---:|---|---|\n")
	for _, r := range rep.Ratios {
		p("| %s | %s | %s | %s |\n", harness.MDEscape(r.Name), harness.Num(r.Value), r.Goal, r.Mark())
	}

	p("\n### Upload\n\n| peer | path | clients | requests | records/s | CPU s | records per CPU s | note |\n|---|---|---:|---:|---:|---:|---:|---|\n")
	for _, u := range rep.Upload {
		p("| %s | `%s` | %d | %d | %s | %s | %s | %s |\n", u.Peer, u.Path, u.Clients, u.Requests, harness.Num(u.RecordsPerSecond), harness.Num(u.CPUSeconds), harness.Num(u.RecordsPerCPUSecond), harness.MDEscape(u.Note))
	}
	p("\nEvery load stores every sensor's whole history into a fresh data directory: one request (or `aerie import` process) per sensor whose body is the sensor's CSV file as generated; records/s is over the wall time from the first request to the last answer, CPU the server's utime+stime (/proc/PID/stat), or the import processes' own.\n\n")

	p("### Disk and index\n\n| peer | after | bytes | ÷ raw CSV | B/record | note |\n|---|---|---:|---:|---:|---|\n")
	for _, d := range rep.Disk {
		p("| %s | `%s` | %s | %.3f | %.3f | %s |\n", d.Peer, d.Load, bytesStr(d.Bytes), d.StoredOverRaw, d.BytesPerRecord, harness.MDEscape(d.Note+" "+byTop(d.ByTop)))
	}
	p("\nPeregreen stored 172 GB for 750 GB of raw data (%.3f). Every file of the data directory counts, once the size has not changed for a second.\n\n", PeregreenStoredOverRaw)
	p("| Aerie after | index bytes | data bytes | 1-hour intervals | index bytes per sensor-year | note |\n|---|---:|---:|---:|---:|---|\n")
	for _, ir := range rep.Index {
		p("| `%s` | %s | %s | %d | %s | %s |\n", ir.Load, bytesStr(ir.IndexBytes), bytesStr(ir.DataBytes), ir.Intervals, bytesStr(int64(ir.PerSensorYear)), harness.MDEscape(ir.Note))
	}
	p("\nFrom `GET /meta/{sensor}` summed over the sensors: the block metrics (index) and the value and timestamp columns (data) of the sensors' blocks; per sensor-year is index bytes ÷ intervals × 8766. Peregreen's index: 110 KB per sensor-year.\n\n")

	p("### Search by value (index only)\n\n| query | condition | intervals | runs | Aerie median ms | p99 | VM median ms | p99 | ratio | Aerie's bucket data GETs / cached windows / intervals from data |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for _, s := range rep.Search {
		p("| %s | `%s` | %d | %d | %s | %s | %s | %s | %.3f | %d / %d / %d |\n", s.Query, s.Condition, s.Intervals, s.Runs, harness.Num(s.Aerie.MedianMs), harness.Num(s.Aerie.P99Ms), harness.Num(s.VM.MedianMs), harness.Num(s.VM.P99Ms), s.Ratio,
			s.AerieReads.BucketGets, s.AerieReads.WindowCacheHits, s.AerieReads.DataIntervals)
	}
	p("\nOver every sensor's whole range: per sensor `POST /search/{sensor}/{from}-{to}/json` with the condition as body, against VictoriaMetrics' `/api/v1/query_range` at step 1h of the equivalent PromQL; all sensors at once through `/api/v1/sensor/search`, against the same PromQL over `{__name__=~\"sensor_.*\"}`. Examples:\n\n")
	seen := map[string]bool{}
	for _, s := range rep.Search {
		if seen[s.Query] {
			continue
		}
		seen[s.Query] = true
		p("- %s: `%s`; PromQL `%s`\n", s.Query, s.AerieURL, s.PromQL)
	}
	p("\nBoth answers are checked against the hours of the generated data that meet the condition (the amplitude condition is Peregreen's: every hour). Latency is from sending the request to reading the last byte, one client, the peers taking turns. The last column counts Aerie's reads of block data in the bucket tier over all runs of the row (its counters; local blocks' data reads are not counted): an index-only search reads none.\n\n")

	p("### Extraction\n\n| peer | mode | range | writer | requests | records | records/s | records per CPU s |\n|---|---|---|---|---:|---:|---:|---:|\n")
	for _, e := range rep.Extract {
		p("| %s | %s | %s | %s | %d | %d | %s | %s |\n", e.Peer, e.Mode, e.Range, e.Writer, e.Requests, e.Records, harness.Num(e.RecordsPerSecond), harness.Num(e.RecordsPerCPUSecond))
	}
	p("\n`GET /extract/{sensor}/{from}-{to}/{interval}/{func}/{writer}` over whole hours of random sensors: full (interval 0, `none`), sampling (60000, `none`), aggregation (3600000, `min,max,avg`), transformation (0, `movavg:10`); VictoriaMetrics' `/api/v1/export` of the same ranges for the full mode. %s clients; each reads and decodes its whole answer and checks its records' count and times. Records per CPU s is records ÷ the server's CPU seconds over the case: the rate per core.\n\n", c["extract_clients"])

	if d := rep.Decode; d != nil {
		p("### Decode from warm blocks\n\n%d samples from %d blocks: %s samples/s, %s per CPU second (first pass %.2f s, second %.2f s, %.2f CPU s). Method: %s.\n\n",
			d.Samples, d.Blocks, harness.Num(d.SamplesPerSecond), harness.Num(d.SamplesPerCPUSecond), d.FirstSeconds, d.Seconds, d.CPUSeconds, d.Method)
	}
	if len(rep.Notes) > 0 {
		p("Notes: %s.\n\n", strings.Join(rep.Notes, "; "))
	}
	return nil
}

// byTop lists the top-level entries of a data directory by size, largest
// first.
func byTop(m map[string]int64) string {
	if len(m) == 0 {
		return ""
	}
	ks := slices.SortedFunc(maps.Keys(m), func(a, b string) int { return cmp.Or(cmp.Compare(m[b], m[a]), cmp.Compare(a, b)) })
	for i, k := range ks {
		ks[i] = k + " " + bytesStr(m[k])
	}
	return "(" + strings.Join(ks, ", ") + ")"
}

// bytesStr is harness.Bytes, in GiB from 10 GiB.
func bytesStr(n int64) string {
	if n >= 10<<30 {
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	}
	return harness.Bytes(n)
}
