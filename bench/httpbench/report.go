package httpbench

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/aerie-db/aerie/bench/harness"
	"github.com/aerie-db/aerie/bench/workload"
)

// Kind marks the JSON of an http report.
const Kind = "http"

// Report is the outcome of one run (the --json file).
type Report struct {
	harness.Header
	Workload    string              `json:"workload"`
	Series      int                 `json:"series"`
	Samples     int64               `json:"samples"` // per load
	Config      map[string]string   `json:"config"`
	Peers       []Peer              `json:"peers"`
	Ingest      []IngestResult      `json:"ingest"`
	Disk        []DiskResult        `json:"disk"`
	Queries     []QueryResult       `json:"queries"`
	Cardinality []CardinalityResult `json:"cardinality"`
}

// Peer is one server as it was run.
type Peer struct {
	Name    string   `json:"name"`
	Version string   `json:"version"`
	Args    []string `json:"args"`
}

// IngestResult is one load of the dataset into a fresh server.
type IngestResult struct {
	Peer                 string  `json:"peer"`
	Protocol             string  `json:"protocol"`
	Clients              int     `json:"clients"`
	Samples              int64   `json:"samples"`
	Requests             int     `json:"requests"`
	BodyBytes            int64   `json:"body_bytes"`
	Retries              int     `json:"retries"`
	Seconds              float64 `json:"seconds"`
	SamplesPerSecond     float64 `json:"samples_per_second"`
	CPUSeconds           float64 `json:"cpu_seconds"`
	CPUSecondsPerMillion float64 `json:"cpu_seconds_per_million_samples"`
	PeakRSSBytes         int64   `json:"peak_rss_bytes"`
}

// DiskResult is a peer's data directory after the last load, flushed.
type DiskResult struct {
	Peer           string  `json:"peer"`
	Samples        int64   `json:"samples"`
	Bytes          int64   `json:"bytes"` // every file of the data directory
	BytesPerSample float64 `json:"bytes_per_sample"`
	// Aerie only: its WAL, and its blocks and tag dictionary with the
	// samples the blocks hold.
	WALBytes            int64   `json:"wal_bytes,omitempty"`
	BlockBytes          int64   `json:"block_bytes,omitempty"`
	BlockSamples        int64   `json:"block_samples,omitempty"`
	BlockBytesPerSample float64 `json:"block_bytes_per_sample,omitempty"`
	Seconds             float64 `json:"seconds"` // from the end of the load until measured
	Note                string  `json:"note,omitempty"`
}

// QueryResult is one pattern over every peer.
type QueryResult struct {
	Pattern   string      `json:"pattern"`
	Comment   string      `json:"comment"`
	Example   string      `json:"example"`
	Peers     []QueryPeer `json:"peers"`
	Agreement string      `json:"agreement"` // "agree", or what differed
	mismatch  bool
}

// QueryPeer is one pattern's latencies on one peer.
type QueryPeer struct {
	Peer     string  `json:"peer"`
	Runs     int     `json:"runs"`
	MedianMs float64 `json:"median_ms"`
	P99Ms    float64 `json:"p99_ms"`
	Error    string  `json:"error,omitempty"`
}

// CardinalityResult is the registration of new series in a fresh server.
type CardinalityResult struct {
	Peer              string  `json:"peer"`
	Series            int     `json:"series"`
	Clients           int     `json:"clients"`
	Seconds           float64 `json:"seconds"`
	SeriesPerSecond   float64 `json:"series_per_second"`
	CPUSeconds        float64 `json:"cpu_seconds"`
	RSSBeforeBytes    int64   `json:"rss_before_bytes"`
	RSSAfterBytes     int64   `json:"rss_after_bytes"`
	RSSBytesPerSeries float64 `json:"rss_bytes_per_series"`
	// The Go heap in use (go_memstats_heap_inuse_bytes of the peer's
	// /metrics) at the same two moments: RSS less the collector's headroom
	// and the memory it has not yet returned.
	HeapBeforeBytes    int64   `json:"heap_before_bytes"`
	HeapAfterBytes     int64   `json:"heap_after_bytes"`
	HeapBytesPerSeries float64 `json:"heap_bytes_per_series"`
}

func newReport(cfg Config, sc Scale, w workload.Workload) *Report {
	clients := make([]string, len(cfg.Clients))
	for i, c := range cfg.Clients {
		clients[i] = fmt.Sprint(c)
	}
	rep := &Report{Header: harness.NewHeader(Kind, sc.Name), Workload: w.Name()}
	rep.Series, rep.Config = dataConfig(w)
	maps.Copy(rep.Config, map[string]string{
		"clients":      strings.Join(clients, ","),
		"lp_batch":     fmt.Sprint(cfg.LPBatch),
		"rw_batch":     fmt.Sprint(cfg.RWBatch),
		"instances":    fmt.Sprint(sc.Instances),
		"repeats":      fmt.Sprint(sc.Repeats),
		"new_series":   fmt.Sprint(sc.NewSeries),
		"seed":         fmt.Sprint(cfg.Seed),
		"timestamps":   timestamps(cfg.Workload),
		"aerie_fsync":  "wal.sync=batch (default): a write is acknowledged after its WAL record is fsync'd",
		"vm_fsync":     "acknowledges before fsync (in-memory buffers, flushed about every second)",
		"aerie_binary": cfg.Aerie,
		"vm_binary":    cfg.VM,
	})
	return rep
}

// dataConfig returns the series of w and its targets, interval and span.
func dataConfig(w workload.Workload) (int, map[string]string) {
	series := 0
	for i := range w.NumTargets() {
		series += len(w.Series(i))
	}
	return series, map[string]string{
		"targets":  fmt.Sprint(w.NumTargets()),
		"interval": w.Interval().String(),
		"span":     (time.Duration(w.MaxTime()-w.MinTime()) * time.Millisecond).Round(time.Second).String(),
	}
}

// timestamps describes the rows' timestamps (workloadSpec).
func timestamps(kind string) string {
	if kind == "node" {
		return "with a per-target phase and up to 100 ms of jitter"
	}
	return "at exact ticks, as TSBS generates them (VictoriaMetrics stores such timestamps in almost no space)"
}

// WriteJSON writes the report as indented JSON.
func (rep *Report) WriteJSON(w io.Writer) error { return harness.WriteJSON(w, rep) }

// ingestRows are the ingest table's rows, one per protocol and client
// count: the protocol, the clients and, for samples/s, CPU s per M
// samples and peak RSS (MiB), Aerie's, VM's and the ratio (0 and "—"
// for a missing load).
func (rep *Report) ingestRows() [][]string {
	type key struct {
		protocol string
		clients  int
	}
	var keys []key
	loads := map[key]map[string]IngestResult{}
	for _, r := range rep.Ingest {
		k := key{r.Protocol, r.Clients}
		if loads[k] == nil {
			keys = append(keys, k)
			loads[k] = map[string]IngestResult{}
		}
		loads[k][r.Peer] = r
	}
	var rows [][]string
	for _, k := range keys {
		a, v := loads[k][aerie], loads[k][vm]
		row := []string{k.protocol, fmt.Sprint(k.clients)}
		for _, f := range []func(IngestResult) float64{
			func(r IngestResult) float64 { return r.SamplesPerSecond },
			func(r IngestResult) float64 { return r.CPUSecondsPerMillion },
			func(r IngestResult) float64 { return harness.MiB(r.PeakRSSBytes) },
		} {
			row = append(row, harness.Num(f(a)), harness.Num(f(v)), harness.RatioOf(f(a), f(v)))
		}
		rows = append(rows, row)
	}
	return rows
}

// byPeer returns the result of xs of the peer named name (zero if none).
func byPeer[T interface{ peer() string }](xs []T, name string) T {
	for _, x := range xs {
		if x.peer() == name {
			return x
		}
	}
	var zero T
	return zero
}

func (p Peer) peer() string              { return p.Name }
func (d DiskResult) peer() string        { return d.Peer }
func (c CardinalityResult) peer() string { return c.Peer }
func (q QueryPeer) peer() string         { return q.Peer }
func (s DashboardSystem) peer() string   { return s.Peer }

// queryCells are a pattern's latencies: the medians of aerie-nocache,
// vm-nocache, aerie and vm, then aerie-nocache ÷ vm-nocache (the same
// work: neither has a result cache) and aerie ÷ vm (both with their
// defaults, caches on); the same for the p99.
func (rep *Report) queryCells(q QueryResult) []string {
	an, vn, a, v := peerQuery(q, aerieNoCache), peerQuery(q, vmNoCache), peerQuery(q, aerie), peerQuery(q, vm)
	var cells []string
	for _, f := range []func(QueryPeer) float64{
		func(p QueryPeer) float64 { return p.MedianMs },
		func(p QueryPeer) float64 { return p.P99Ms },
	} {
		for _, p := range []QueryPeer{an, vn, a, v} {
			cells = append(cells, harness.Num(f(p)))
			if p.Error != "" {
				cells[len(cells)-1] = "error"
			}
		}
		for _, pair := range [][2]QueryPeer{{an, vn}, {a, v}} {
			r := "—"
			if pair[0].Error == "" && pair[1].Error == "" {
				r = harness.RatioOf(f(pair[0]), f(pair[1]))
			}
			cells = append(cells, r)
		}
	}
	return cells
}

// tabRow writes a row of a tabwriter table.
func tabRow(w io.Writer, cells ...string) { fmt.Fprintln(w, strings.Join(cells, "\t")+"\t") }

// mdRow is a row of a Markdown table.
func mdRow(cells ...string) string { return "| " + strings.Join(cells, " | ") + " |\n" }

func peerQuery(q QueryResult, peer string) QueryPeer {
	if p := byPeer(q.Peers, peer); p.Peer != "" {
		return p
	}
	return QueryPeer{Peer: peer, Error: "not run"}
}

// WriteTable prints the report as text.
func (rep *Report) WriteTable(w io.Writer) error {
	m := cmp.Or(rep.Machine, &harness.Machine{})
	fmt.Fprintf(w, "aerie bench http: workload %s, scale %s: %d series, %d samples per load; commit %s; %s, %d cores\n",
		rep.Workload, rep.Scale, rep.Series, rep.Samples, rep.Commit, m.CPU, m.Cores)
	fmt.Fprintf(w, "Aerie acknowledges writes after fsync (wal.sync=batch); VictoriaMetrics before fsync. Ratios are Aerie ÷ VM.\n\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "protocol\tclients\taerie samples/s\tvm samples/s\tratio\taerie CPU s/M\tvm CPU s/M\tratio\taerie peak RSS MiB\tvm\tratio\t")
	for _, row := range rep.ingestRows() {
		tabRow(tw, row...)
	}
	fmt.Fprintln(tw)
	da, dv := byPeer(rep.Disk, aerie), byPeer(rep.Disk, vm)
	fmt.Fprintln(tw, "disk\taerie B/sample\tvm B/sample\tratio\taerie blocks B/sample\tratio\t")
	tabRow(tw, "", harness.Num(da.BytesPerSample), harness.Num(dv.BytesPerSample), harness.RatioOf(da.BytesPerSample, dv.BytesPerSample),
		harness.Num(da.BlockBytesPerSample), harness.RatioOf(da.BlockBytesPerSample, dv.BytesPerSample))
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "pattern\taerie-nocache ms\tvm-nocache ms\taerie ms\tvm ms\tnocache ratio\tratio\taerie-nocache p99\tvm-nocache p99\taerie p99\tvm p99\tnocache ratio\tratio\tanswers\t")
	for _, q := range rep.Queries {
		tabRow(tw, slices.Concat([]string{q.Pattern}, rep.queryCells(q), []string{shorten(q.Agreement, 80)})...)
	}
	fmt.Fprintln(tw)
	a, v := byPeer(rep.Cardinality, aerie), byPeer(rep.Cardinality, vm)
	fmt.Fprintln(tw, "new series\taerie s\tvm s\tratio\taerie RSS B/series\tvm RSS B/series\tratio\taerie heap B/series\tvm heap B/series\tratio\t")
	tabRow(tw, fmt.Sprint(a.Series), harness.Num(a.Seconds), harness.Num(v.Seconds), harness.RatioOf(a.Seconds, v.Seconds),
		harness.Num(a.RSSBytesPerSeries), harness.Num(v.RSSBytesPerSeries), harness.RatioOf(a.RSSBytesPerSeries, v.RSSBytesPerSeries),
		harness.Num(a.HeapBytesPerSeries), harness.Num(v.HeapBytesPerSeries), harness.RatioOf(a.HeapBytesPerSeries, v.HeapBytesPerSeries))
	return tw.Flush()
}

func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "…"
}

// WriteMarkdown writes the section "vs VictoriaMetrics over HTTP" of
// docs/BENCHMARKS.md (bench.Section).
func (rep *Report) WriteMarkdown(w io.Writer) error {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	c := rep.Config
	p("## vs VictoriaMetrics over HTTP (%s scale)\n\n", rep.Scale)
	p("`aerie bench http --scale=%s` (bench/httpbench): `aerie serve` and VictoriaMetrics single-node (`%s`) as separate processes on loopback, on the same machine as the clients. ", rep.Scale, byPeer(rep.Peers, vm).Version)
	p("Every load writes the same %s dataset: %s targets, %d series, %s at %s, %d samples", rep.Workload, c["targets"], rep.Series, c["span"], c["interval"], rep.Samples)
	if ts := c["timestamps"]; ts != "" {
		p(", timestamps %s", ts)
	}
	p(". Ratios are Aerie ÷ VictoriaMetrics; lower is better except for samples/s. ")
	p("Commit `%s`, %s; the run took %.0f s; load averages (1, 5, 15 min) %s at the start, %s at the end.\n\n", rep.Commit, rep.Date, rep.Seconds, c["loadavg_start"], c["loadavg_end"])
	p("**Durability differs:** Aerie runs with its defaults, so a write is acknowledged only after its WAL record is fsync'd (`wal.sync=batch`); VictoriaMetrics acknowledges before anything is fsync'd (it buffers rows in memory for up to a few seconds).\n\n")

	p("### Ingest\n\n")
	p("| protocol | clients | Aerie samples/s | VM samples/s | ratio | Aerie CPU s / M samples | VM | ratio | Aerie peak RSS (MiB) | VM | ratio |\n")
	p("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, row := range rep.ingestRows() {
		io.WriteString(w, mdRow(row...))
	}
	p("\nEach row loads the whole dataset into a fresh server of each peer (its own empty data directory), Aerie and VictoriaMetrics one after the other, the order alternating from row to row. ")
	p("Clients: %s concurrent HTTP clients, each owning every n-th target and sending its rows in time order, as line protocol (`POST /write?precision=ms`, about %s samples per request, one line per target and scrape) or Prometheus remote write 1.0 (`POST /api/v1/write`, snappy protobuf, about %s samples per request, one TimeSeries per sample as Prometheus sends them). ", strings.ReplaceAll(c["clients"], ",", ", "), c["lp_batch"], c["rw_batch"])
	p("Request bodies are encoded before the timed part. samples/s is the samples over the wall time from the first request to the last acknowledgement; CPU is the server process' utime+stime (/proc/PID/stat) over the same interval, per million samples; peak RSS is the process' VmHWM (and VmRSS sampled every 50 ms). ")
	p("Every sample is then counted back through the query API. ")
	p("Two cores are shared by the clients and the server, so neither server has the machine to itself; VictoriaMetrics runs with its defaults for ingestion (the cache flag only affects queries).\n\n")

	da, dv := byPeer(rep.Disk, aerie), byPeer(rep.Disk, vm)
	p("### Disk\n\n")
	p("| after the last load | Aerie | VM | ratio |\n|---|---:|---:|---:|\n")
	p("| data directory, B/sample | %s | %s | %s |\n", harness.Num(da.BytesPerSample), harness.Num(dv.BytesPerSample), harness.RatioOf(da.BytesPerSample, dv.BytesPerSample))
	p("| Aerie's blocks and tag dictionary, B/sample of the %d samples in blocks | %s | %s | %s |\n\n", da.BlockSamples, harness.Num(da.BlockBytesPerSample), harness.Num(dv.BytesPerSample), harness.RatioOf(da.BlockBytesPerSample, dv.BytesPerSample))
	p("VictoriaMetrics is measured after `/internal/force_flush`, once its in-memory parts are on disk. Aerie has no flush endpoint and does not flush its head at shutdown: it is measured once its background loop (which looks for due partitions once a minute) has flushed every partition that is due (%.0f s after the load%s); its newest partitions stay in the head, and its WAL (%.0f%% of its bytes) keeps every row until a 128 MiB segment is full and fully flushed. The second row counts only Aerie's blocks, against the samples they hold. Sizes are the bytes of every file, once they have not changed for a second.\n\n",
		da.Seconds, noteSuffix(da.Note), 100*float64(da.WALBytes)/float64(max(da.Bytes, 1)))

	p("### Queries\n\n")
	p("| pattern | Aerie no-cache median (ms) | VM no-cache | Aerie | VM | Aerie no-cache ÷ VM no-cache | Aerie ÷ VM | Aerie no-cache p99 (ms) | VM no-cache p99 | Aerie p99 | VM p99 | Aerie no-cache ÷ VM no-cache | Aerie ÷ VM | answers |\n")
	p("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for _, q := range rep.Queries {
		io.WriteString(w, mdRow(slices.Concat([]string{"`" + q.Pattern + "`"}, rep.queryCells(q), []string{harness.MDEscape(q.Agreement)})...))
	}
	p("\nThe servers of the last load are restarted over its data, each twice: Aerie with its results cache off (`aerie: cache: results: enabled: false`, \"Aerie no-cache\") and VictoriaMetrics with `-search.disableCache` (\"VM no-cache\"), which do the same work for every repeat of a query; and each with its defaults on a copy of the same data (\"Aerie\", \"VM\"), whose result caches answer repeated queries. ")
	p("One client sends `/api/v1/query_range` (`/api/v1/query` for the lastpoints): %s instances of each pattern (hosts and start drawn by seed, start and end on whole steps), each run once unrecorded, its answers compared, then %s times per server, rotating which server goes first. Latency is from sending the request to reading the last byte of the answer. ", c["instances"], c["repeats"])
	p("Answers agree when they hold the same series with the same timestamps and values within 1e-9 relative; \"error\" is an error answer (the run goes on), and any other disagreement fails the run. Expressions (first instance):\n\n")
	for _, q := range rep.Queries {
		p("- `%s` (%s): `%s`\n", q.Pattern, q.Comment, q.Example)
	}
	p("\n### Cardinality\n\n")
	a, v := byPeer(rep.Cardinality, aerie), byPeer(rep.Cardinality, vm)
	p("| new series | Aerie (s) | VM (s) | ratio | Aerie series/s | VM series/s | ratio | Aerie RSS B/series | VM RSS B/series | ratio | Aerie heap B/series | VM heap B/series | ratio |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	p("| %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n\n", a.Series, harness.Num(a.Seconds), harness.Num(v.Seconds), harness.RatioOf(a.Seconds, v.Seconds),
		harness.Num(a.SeriesPerSecond), harness.Num(v.SeriesPerSecond), harness.RatioOf(a.SeriesPerSecond, v.SeriesPerSecond),
		harness.Num(a.RSSBytesPerSeries), harness.Num(v.RSSBytesPerSeries), harness.RatioOf(a.RSSBytesPerSeries, v.RSSBytesPerSeries),
		harness.Num(a.HeapBytesPerSeries), harness.Num(v.HeapBytesPerSeries), harness.RatioOf(a.HeapBytesPerSeries, v.HeapBytesPerSeries))
	p("A fresh server of each peer rests %s, then takes one sample of each of %d new series (line protocol, %d clients); the time is from the first request to the last acknowledgement, and RSS per series is (VmRSS %s after every sample is visible − VmRSS before) ÷ series. Heap per series is the same difference of the Go heap in use (`go_memstats_heap_inuse_bytes` of each peer's /metrics): RSS holds that heap, the collector's headroom above it and memory not yet returned to the system.\n\n", settle, a.Series, a.Clients, settle)
	return nil
}

func noteSuffix(s string) string {
	if s == "" {
		return ""
	}
	return "; " + s
}
