package httpbench

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/aerie-db/aerie/bench/harness"
	"github.com/aerie-db/aerie/bench/workload"
)

// Kind marks the JSON of an http report, which `aerie bench report` tells
// from the engine reports of `aerie bench` by it.
const Kind = "http"

// Report is the outcome of one run (the --json file).
type Report struct {
	Kind        string              `json:"kind"`
	Machine     harness.Machine     `json:"machine"`
	Commit      string              `json:"commit"`
	Date        string              `json:"date"`
	Workload    string              `json:"workload"`
	Scale       string              `json:"scale"`
	Series      int                 `json:"series"`
	Samples     int64               `json:"samples"` // per load
	Config      map[string]string   `json:"config"`
	Peers       []Peer              `json:"peers"`
	Ingest      []IngestResult      `json:"ingest"`
	Disk        []DiskResult        `json:"disk"`
	Queries     []QueryResult       `json:"queries"`
	Cardinality []CardinalityResult `json:"cardinality"`
	Seconds     float64             `json:"seconds"`
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
}

func newReport(cfg Config, sc Scale, w workload.Workload) *Report {
	series := 0
	for i := 0; i < w.NumTargets(); i++ {
		series += len(w.Series(i))
	}
	clients := make([]string, len(cfg.Clients))
	for i, c := range cfg.Clients {
		clients[i] = fmt.Sprint(c)
	}
	return &Report{
		Kind:     Kind,
		Machine:  harness.CurrentMachine(),
		Commit:   harness.Commit(),
		Date:     time.Now().UTC().Format(time.RFC3339),
		Workload: w.Name(),
		Scale:    sc.Name,
		Series:   series,
		Config: map[string]string{
			"targets":      fmt.Sprint(w.NumTargets()),
			"interval":     w.Interval().String(),
			"span":         (time.Duration(w.MaxTime()-w.MinTime()) * time.Millisecond).Round(time.Second).String(),
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
		},
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
func (rep *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

// IsReport tells whether b is the JSON of an http report.
func IsReport(b []byte) bool {
	var k struct {
		Kind string `json:"kind"`
	}
	return json.Unmarshal(b, &k) == nil && k.Kind == Kind
}

// ReadReport reads a report written by WriteJSON.
func ReadReport(path string) (*Report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if !IsReport(b) {
		return nil, fmt.Errorf("%s: not an `aerie bench http` report (no \"kind\": %q)", path, Kind)
	}
	var rep Report
	if err := json.Unmarshal(b, &rep); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &rep, nil
}

// ingestPair is one protocol and client count: Aerie's load and VM's.
type ingestPair struct {
	protocol string
	clients  int
	a, v     *IngestResult
}

func (rep *Report) ingestPairs() []ingestPair {
	var out []ingestPair
	find := func(proto string, n int) *ingestPair {
		for i := range out {
			if out[i].protocol == proto && out[i].clients == n {
				return &out[i]
			}
		}
		out = append(out, ingestPair{protocol: proto, clients: n})
		return &out[len(out)-1]
	}
	for i := range rep.Ingest {
		r := &rep.Ingest[i]
		p := find(r.Protocol, r.Clients)
		if r.Peer == aerie {
			p.a = r
		} else {
			p.v = r
		}
	}
	return out
}

// ratio formats a ÷ b, or "—" where either is missing.
func ratio(a, b float64) string {
	if a == 0 || b == 0 {
		return "—"
	}
	return fmt.Sprintf("%.3f", a/b)
}

// num formats a measurement with about four significant digits.
func num(v float64) string {
	switch {
	case v == 0:
		return "0"
	case v >= 1e5:
		return fmt.Sprintf("%.0f", v)
	case v >= 100:
		return fmt.Sprintf("%.1f", v)
	case v >= 1:
		return fmt.Sprintf("%.3f", v)
	default:
		return fmt.Sprintf("%.4f", v)
	}
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// ingestColumns are the measures of a load shown beside VM's: samples/s,
// CPU seconds per million samples, peak RSS in MiB.
var ingestColumns = []func(*IngestResult) float64{
	func(r *IngestResult) float64 { return r.SamplesPerSecond },
	func(r *IngestResult) float64 { return r.CPUSecondsPerMillion },
	func(r *IngestResult) float64 { return mib(r.PeakRSSBytes) },
}

func (rep *Report) disk(peer string) DiskResult {
	for _, d := range rep.Disk {
		if d.Peer == peer {
			return d
		}
	}
	return DiskResult{Peer: peer}
}

// field returns a measure of r, or 0 for a missing load.
func field(r *IngestResult, f func(*IngestResult) float64) float64 {
	if r == nil {
		return 0
	}
	return f(r)
}

func (rep *Report) peerQuery(q QueryResult, peer string) QueryPeer {
	for _, p := range q.Peers {
		if p.Peer == peer {
			return p
		}
	}
	return QueryPeer{Peer: peer, Error: "not run"}
}

// latency formats a latency, or "error".
func latency(p QueryPeer, v float64) string {
	if p.Error != "" {
		return "error"
	}
	return num(v)
}

func latencyRatio(a, b QueryPeer, av, bv float64) string {
	if a.Error != "" || b.Error != "" {
		return "—"
	}
	return ratio(av, bv)
}

func (rep *Report) cardinality(peer string) CardinalityResult {
	for _, c := range rep.Cardinality {
		if c.Peer == peer {
			return c
		}
	}
	return CardinalityResult{Peer: peer}
}

// WriteTable prints the report as text.
func (rep *Report) WriteTable(w io.Writer) error {
	fmt.Fprintf(w, "aerie bench http: workload %s, scale %s: %d series, %d samples per load; commit %s; %s, %d cores\n",
		rep.Workload, rep.Scale, rep.Series, rep.Samples, rep.Commit, rep.Machine.CPU, rep.Machine.Cores)
	fmt.Fprintf(w, "Aerie acknowledges writes after fsync (wal.sync=batch); VictoriaMetrics before fsync. Ratios are Aerie ÷ VM.\n\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "protocol\tclients\taerie samples/s\tvm samples/s\tratio\taerie CPU s/M\tvm CPU s/M\tratio\taerie peak RSS MiB\tvm\tratio\t")
	for _, p := range rep.ingestPairs() {
		fmt.Fprintf(tw, "%s\t%d\t", p.protocol, p.clients)
		for _, f := range ingestColumns {
			a, v := field(p.a, f), field(p.v, f)
			fmt.Fprintf(tw, "%s\t%s\t%s\t", num(a), num(v), ratio(a, v))
		}
		fmt.Fprintln(tw)
	}
	fmt.Fprintln(tw)
	da, dv := rep.disk(aerie), rep.disk(vm)
	fmt.Fprintln(tw, "disk\taerie B/sample\tvm B/sample\tratio\taerie blocks B/sample\tratio\t")
	fmt.Fprintf(tw, "\t%s\t%s\t%s\t%s\t%s\t\n", num(da.BytesPerSample), num(dv.BytesPerSample), ratio(da.BytesPerSample, dv.BytesPerSample),
		num(da.BlockBytesPerSample), ratio(da.BlockBytesPerSample, dv.BytesPerSample))
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "pattern\taerie ms\tvm-nocache ms\tvm ms\t÷nocache\t÷vm\taerie p99\tvm-nocache p99\tvm p99\t÷nocache\t÷vm\tanswers\t")
	for _, q := range rep.Queries {
		a, n, v := rep.peerQuery(q, aerie), rep.peerQuery(q, vmNoCache), rep.peerQuery(q, vm)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", q.Pattern,
			latency(a, a.MedianMs), latency(n, n.MedianMs), latency(v, v.MedianMs),
			latencyRatio(a, n, a.MedianMs, n.MedianMs), latencyRatio(a, v, a.MedianMs, v.MedianMs),
			latency(a, a.P99Ms), latency(n, n.P99Ms), latency(v, v.P99Ms),
			latencyRatio(a, n, a.P99Ms, n.P99Ms), latencyRatio(a, v, a.P99Ms, v.P99Ms), shorten(q.Agreement, 80))
	}
	fmt.Fprintln(tw)
	a, v := rep.cardinality(aerie), rep.cardinality(vm)
	fmt.Fprintln(tw, "new series\taerie s\tvm s\tratio\taerie RSS B/series\tvm RSS B/series\tratio\t")
	fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t\n", a.Series, num(a.Seconds), num(v.Seconds), ratio(a.Seconds, v.Seconds),
		num(a.RSSBytesPerSeries), num(v.RSSBytesPerSeries), ratio(a.RSSBytesPerSeries, v.RSSBytesPerSeries))
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
	var vmVersion string
	for _, pe := range rep.Peers {
		if pe.Name == vm {
			vmVersion = pe.Version
		}
	}
	p("## vs VictoriaMetrics over HTTP (%s scale)\n\n", rep.Scale)
	p("`aerie bench http --scale=%s` (bench/httpbench): `aerie serve` and VictoriaMetrics single-node (`%s`) as separate processes on loopback, on the same machine as the clients. ", rep.Scale, vmVersion)
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
	for _, ip := range rep.ingestPairs() {
		p("| %s | %d |", ip.protocol, ip.clients)
		for _, f := range ingestColumns {
			a, v := field(ip.a, f), field(ip.v, f)
			p(" %s | %s | %s |", num(a), num(v), ratio(a, v))
		}
		p("\n")
	}
	p("\nEach row loads the whole dataset into a fresh server of each peer (its own empty data directory), Aerie and VictoriaMetrics one after the other, the order alternating from row to row. ")
	p("Clients: %s concurrent HTTP clients, each owning every n-th target and sending its rows in time order, as line protocol (`POST /write?precision=ms`, about %s samples per request, one line per target and scrape) or Prometheus remote write 1.0 (`POST /api/v1/write`, snappy protobuf, about %s samples per request, one TimeSeries per sample as Prometheus sends them). ", strings.ReplaceAll(c["clients"], ",", ", "), c["lp_batch"], c["rw_batch"])
	p("Request bodies are encoded before the timed part. samples/s is the samples over the wall time from the first request to the last acknowledgement; CPU is the server process' utime+stime (/proc/PID/stat) over the same interval, per million samples; peak RSS is the process' VmHWM (and VmRSS sampled every 50 ms). ")
	p("Every sample is then counted back through the query API. ")
	p("Two cores are shared by the clients and the server, so neither server has the machine to itself; VictoriaMetrics runs with its defaults for ingestion (the cache flag only affects queries).\n\n")

	da, dv := rep.disk(aerie), rep.disk(vm)
	p("### Disk\n\n")
	p("| after the last load | Aerie | VM | ratio |\n|---|---:|---:|---:|\n")
	p("| data directory, B/sample | %s | %s | %s |\n", num(da.BytesPerSample), num(dv.BytesPerSample), ratio(da.BytesPerSample, dv.BytesPerSample))
	p("| Aerie's blocks and tag dictionary, B/sample of the %d samples in blocks | %s | %s | %s |\n\n", da.BlockSamples, num(da.BlockBytesPerSample), num(dv.BytesPerSample), ratio(da.BlockBytesPerSample, dv.BytesPerSample))
	p("VictoriaMetrics is measured after `/internal/force_flush`, once its in-memory parts are on disk. Aerie has no flush endpoint and does not flush its head at shutdown: it is measured once its background loop (which looks for due partitions once a minute) has flushed every partition that is due (%.0f s after the load%s); its newest partitions stay in the head, and its WAL (%.0f%% of its bytes) keeps every row until a 128 MiB segment is full and fully flushed. The second row counts only Aerie's blocks, against the samples they hold. Sizes are the bytes of every file, once they have not changed for a second.\n\n",
		da.Seconds, noteSuffix(da.Note), 100*float64(da.WALBytes)/float64(max(da.Bytes, 1)))

	p("### Queries\n\n")
	p("| pattern | Aerie median (ms) | VM no-cache | VM | Aerie ÷ VM no-cache | Aerie ÷ VM | Aerie p99 (ms) | VM no-cache p99 | VM p99 | Aerie ÷ VM no-cache | Aerie ÷ VM | answers |\n")
	p("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for _, q := range rep.Queries {
		a, n, v := rep.peerQuery(q, aerie), rep.peerQuery(q, vmNoCache), rep.peerQuery(q, vm)
		p("| `%s` | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", q.Pattern,
			latency(a, a.MedianMs), latency(n, n.MedianMs), latency(v, v.MedianMs),
			latencyRatio(a, n, a.MedianMs, n.MedianMs), latencyRatio(a, v, a.MedianMs, v.MedianMs),
			latency(a, a.P99Ms), latency(n, n.P99Ms), latency(v, v.P99Ms),
			latencyRatio(a, n, a.P99Ms, n.P99Ms), latencyRatio(a, v, a.P99Ms, v.P99Ms), mdEscape(q.Agreement))
	}
	p("\nThe servers of the last load are restarted over its data: Aerie; VictoriaMetrics with `-search.disableCache` (no rollup result cache: the same work as Aerie, \"VM no-cache\"); and VictoriaMetrics with its defaults on a copy of the same data (\"VM\", whose cache answers repeated queries). ")
	p("One client sends `/api/v1/query_range` (`/api/v1/query` for the lastpoints): %s instances of each pattern (hosts and start drawn by seed, start and end on whole steps), each run once unrecorded, its answers compared, then %s times per server, rotating which server goes first. Latency is from sending the request to reading the last byte of the answer. ", c["instances"], c["repeats"])
	p("Answers agree when they hold the same series with the same timestamps and values within 1e-9 relative; \"error\" is an error answer (the run goes on), and any other disagreement fails the run. Expressions (first instance):\n\n")
	for _, q := range rep.Queries {
		p("- `%s` (%s): `%s`\n", q.Pattern, q.Comment, q.Example)
	}
	p("\n### Cardinality\n\n")
	a, v := rep.cardinality(aerie), rep.cardinality(vm)
	p("| new series | Aerie (s) | VM (s) | ratio | Aerie series/s | VM series/s | ratio | Aerie RSS B/series | VM RSS B/series | ratio |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	p("| %d | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n\n", a.Series, num(a.Seconds), num(v.Seconds), ratio(a.Seconds, v.Seconds),
		num(a.SeriesPerSecond), num(v.SeriesPerSecond), ratio(a.SeriesPerSecond, v.SeriesPerSecond),
		num(a.RSSBytesPerSeries), num(v.RSSBytesPerSeries), ratio(a.RSSBytesPerSeries, v.RSSBytesPerSeries))
	p("A fresh server of each peer rests %s, then takes one sample of each of %d new series (line protocol, %d clients); the time is from the first request to the last acknowledgement, and RSS per series is (VmRSS %s after every sample is visible − VmRSS before) ÷ series.\n\n", settle, a.Series, a.Clients, settle)
	return nil
}

func noteSuffix(s string) string {
	if s == "" {
		return ""
	}
	return "; " + s
}

// mdEscape keeps a table cell in its cell.
func mdEscape(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}
