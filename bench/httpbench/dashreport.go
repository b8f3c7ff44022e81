package httpbench

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"strings"
	"text/tabwriter"

	"github.com/aerie-db/aerie/bench/harness"
	"github.com/aerie-db/aerie/bench/workload"
)

// DashboardKind marks the JSON of a dashboard report.
const DashboardKind = "dashboard"

// DashboardReport is the outcome of one `aerie bench dashboard` run.
type DashboardReport struct {
	harness.Header
	Series   int               `json:"series"`
	Samples  int64             `json:"samples"` // per peer
	Config   map[string]string `json:"config"`
	Peers    []Peer            `json:"peers"`
	Load     []DashboardLoad   `json:"load"`
	Panels   []DashboardPanel  `json:"panels"`
	Systems  []DashboardSystem `json:"systems"`
	Compared int               `json:"compared"` // answers of aerie-on compared byte for byte with aerie-off's
	// Mismatches counts the answers that differed; MismatchExamples holds
	// the first ones with their query and range.
	Mismatches       int      `json:"mismatches"`
	MismatchExamples []string `json:"mismatch_examples,omitempty"`
	// SeriesDifferences are panels whose series count differs between
	// Aerie and VictoriaMetrics (reported, not failed).
	SeriesDifferences []string `json:"series_differences,omitempty"`
}

// DashboardLoad is the load of the data into one peer.
type DashboardLoad struct {
	Peer       string  `json:"peer"`
	Seconds    float64 `json:"seconds"`
	CPUSeconds float64 `json:"cpu_seconds"`
}

// DashboardPanel is one panel with the series of its last answer.
type DashboardPanel struct {
	Title       string `json:"title"`
	Expr        string `json:"expr"`
	AerieSeries int    `json:"aerie_series"`
	VMSeries    int    `json:"vm_series"` // -1: an error answer
}

// DashboardSystem is one peer's replay. "First" is the first (cold)
// refresh; steady is every refresh after it (whole − first).
type DashboardSystem struct {
	Peer             string  `json:"peer"`
	Queries          int     `json:"queries"`
	AnswerBytes      int64   `json:"answer_bytes"` // decompressed
	CPUSeconds       float64 `json:"cpu_seconds"`
	FirstCPUSeconds  float64 `json:"first_cpu_seconds"`
	SteadyCPUSeconds float64 `json:"steady_cpu_seconds"`
	WallSeconds      float64 `json:"wall_seconds"` // sum of the refreshes' times
	FirstWallSeconds float64 `json:"first_wall_seconds"`
	P50Ms            float64 `json:"p50_ms"`
	P99Ms            float64 `json:"p99_ms"`
	SteadyP50Ms      float64 `json:"steady_p50_ms"`
	SteadyP99Ms      float64 `json:"steady_p99_ms"`
	// Counters of its cache over the replay and over the first refresh
	// (aerie-on: aerie_results_cache_*_total; vm:
	// vm_rollup_result_cache_*).
	Counters      map[string]float64 `json:"counters,omitempty"`
	FirstCounters map[string]float64 `json:"first_counters,omitempty"`
}

// fill records the run's configuration and data.
func (rep *DashboardReport) fill(cfg DashboardConfig, sc DashboardScale, w workload.Workload) {
	rep.Series, rep.Config = dataConfig(w)
	maps.Copy(rep.Config, map[string]string{
		"refreshes":    fmt.Sprint(sc.Refreshes),
		"range":        dashRange.String(),
		"refresh":      dashRefresh.String(),
		"step":         dashStep.String(),
		"clients":      fmt.Sprint(dashClients),
		"seed":         fmt.Sprint(cfg.Seed),
		"aerie_binary": cfg.Aerie,
		"vm_binary":    cfg.VM,
	})
}

// WriteJSON writes the report as indented JSON.
func (rep *DashboardReport) WriteJSON(w io.Writer) error { return harness.WriteJSON(w, rep) }

// steadyRefreshes is the number of refreshes after the first.
func (rep *DashboardReport) steadyRefreshes() int {
	n := 0
	fmt.Sscan(rep.Config["refreshes"], &n)
	return max(n-1, 0)
}

// dashRatio is one line of the ratios: a measure of two peers.
type dashRatio struct {
	name string
	a, b string // peers
	f    func(DashboardSystem) float64
}

var dashRatios = []dashRatio{
	{"CPU s, whole replay", aerieOn, aerieOff, func(s DashboardSystem) float64 { return s.CPUSeconds }},
	{"CPU s, steady state", aerieOn, aerieOff, func(s DashboardSystem) float64 { return s.SteadyCPUSeconds }},
	{"CPU s, whole replay", aerieOn, vm, func(s DashboardSystem) float64 { return s.CPUSeconds }},
	{"CPU s, steady state", aerieOn, vm, func(s DashboardSystem) float64 { return s.SteadyCPUSeconds }},
	{"CPU s, steady state", aerieOff, vm, func(s DashboardSystem) float64 { return s.SteadyCPUSeconds }},
	{"p50 latency", aerieOn, aerieOff, func(s DashboardSystem) float64 { return s.P50Ms }},
	{"p99 latency", aerieOn, aerieOff, func(s DashboardSystem) float64 { return s.P99Ms }},
	{"p50 latency, steady state", aerieOn, aerieOff, func(s DashboardSystem) float64 { return s.SteadyP50Ms }},
	{"p99 latency, steady state", aerieOn, aerieOff, func(s DashboardSystem) float64 { return s.SteadyP99Ms }},
	{"p50 latency", aerieOn, vm, func(s DashboardSystem) float64 { return s.P50Ms }},
	{"p99 latency", aerieOn, vm, func(s DashboardSystem) float64 { return s.P99Ms }},
	{"p50 latency, steady state", aerieOn, vm, func(s DashboardSystem) float64 { return s.SteadyP50Ms }},
	{"p99 latency, steady state", aerieOn, vm, func(s DashboardSystem) float64 { return s.SteadyP99Ms }},
	{"wall s, whole replay", aerieOn, aerieOff, func(s DashboardSystem) float64 { return s.WallSeconds }},
	{"wall s, whole replay", aerieOn, vm, func(s DashboardSystem) float64 { return s.WallSeconds }},
}

// systemRows are each peer's queries, CPU, wall time and latencies.
func (rep *DashboardReport) systemRows() [][]string {
	var rows [][]string
	for _, s := range rep.Systems {
		row := []string{s.Peer, fmt.Sprint(s.Queries)}
		for _, v := range []float64{s.CPUSeconds, s.FirstCPUSeconds, s.SteadyCPUSeconds, s.WallSeconds, s.P50Ms, s.P99Ms, s.SteadyP50Ms, s.SteadyP99Ms} {
			row = append(row, harness.Num(v))
		}
		rows = append(rows, row)
	}
	return rows
}

// ratioRows are the ratios: measure, peers, value.
func (rep *DashboardReport) ratioRows() [][]string {
	var rows [][]string
	for _, r := range dashRatios {
		rows = append(rows, []string{r.name, r.a + " ÷ " + r.b, harness.RatioOf(r.f(byPeer(rep.Systems, r.a)), r.f(byPeer(rep.Systems, r.b)))})
	}
	return rows
}

func (rep *DashboardReport) correctness() string {
	if rep.Mismatches == 0 {
		return fmt.Sprintf("all %d answers of aerie-on byte-identical to aerie-off's", rep.Compared)
	}
	return fmt.Sprintf("MISMATCH: %d of %d answers of aerie-on differ from aerie-off's", rep.Mismatches, rep.Compared)
}

// WriteTable prints the report as text.
func (rep *DashboardReport) WriteTable(w io.Writer) error {
	m := cmp.Or(rep.Machine, &harness.Machine{})
	fmt.Fprintf(w, "aerie bench dashboard: scale %s: %d series, %d samples up to now; %s refreshes of %d panels over %s at a %s step; commit %s; %s, %d cores\n\n",
		rep.Scale, rep.Series, rep.Samples, rep.Config["refreshes"], len(rep.Panels), rep.Config["range"], rep.Config["step"], rep.Commit, m.CPU, m.Cores)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "system\tqueries\tCPU s\tfirst refresh\tsteady\twall s\tp50 ms\tp99 ms\tsteady p50\tsteady p99\t")
	for _, row := range rep.systemRows() {
		tabRow(tw, row...)
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "ratio\t\tvalue\t")
	for _, row := range rep.ratioRows() {
		tabRow(tw, row...)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\naerie-on's results cache over the replay: %s\n", aerieCounterLine(byPeer(rep.Systems, aerieOn).Counters))
	fmt.Fprintf(w, "vm's rollup result cache over the replay: %s\n", vmCounterLine(byPeer(rep.Systems, vm).Counters))
	fmt.Fprintf(w, "answers: %s\n", rep.correctness())
	for _, m := range rep.MismatchExamples {
		fmt.Fprintf(w, "  %s\n", m)
	}
	for _, d := range rep.SeriesDifferences {
		fmt.Fprintf(w, "series count differs from VictoriaMetrics: %s\n", d)
	}
	return nil
}

func aerieCounterLine(c map[string]float64) string {
	if c == nil {
		return "none read"
	}
	var parts []string
	for _, n := range cacheCounters {
		parts = append(parts, fmt.Sprintf("%s %.0f", n, c["aerie_results_cache_"+n+"_total"]))
	}
	return strings.Join(parts, ", ")
}

func vmCounterLine(c map[string]float64) string {
	if c == nil {
		return "none read"
	}
	return fmt.Sprintf("full hits %.0f, partial hits %.0f, misses %.0f",
		c["vm_rollup_result_cache_full_hits_total"], c["vm_rollup_result_cache_partial_hits_total"], c["vm_rollup_result_cache_miss_total"])
}

// WriteMarkdown writes the section "Results cache: a dashboard replay" of
// docs/BENCHMARKS.md (bench.Section).
func (rep *DashboardReport) WriteMarkdown(w io.Writer) error {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	c := rep.Config
	p("## Results cache: a dashboard replay (%s scale)\n\n", rep.Scale)
	p("`aerie bench dashboard --scale=%s` (bench/httpbench, doc.go \"Dashboard replay\"): a Grafana dashboard of %d node_exporter panels, range \"last %s\", refreshing every %s, replayed fast-forward %s times against three servers on loopback on the same data: ", rep.Scale, len(rep.Panels), c["range"], c["refresh"], c["refreshes"])
	p("`aerie serve` with its results cache off (`aerie: cache: results: enabled: false`, **aerie-off**), `aerie serve` with it on (its default, **aerie-on**), and VictoriaMetrics single-node (`%s`) with its rollup result cache on (its default; `-search.latencyOffset=0s`, **vm**). ", byPeer(rep.Peers, vm).Version)
	p("The data: %s node_exporter targets, %d series at %s, %s ending at the wall clock's now when the run began (%d samples, loaded into each server by remote write). ", c["targets"], rep.Series, c["interval"], c["span"], rep.Samples)
	p("Commit `%s`, %s; the run took %.0f s; load averages (1, 5, 15 min) %s at the start, %s at the end.\n\n", rep.Commit, rep.Date, rep.Seconds, c["loadavg_start"], c["loadavg_end"])

	p("| system | queries | CPU s | first refresh | steady state | wall s | p50 (ms) | p99 (ms) | steady p50 | steady p99 |\n")
	p("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, row := range rep.systemRows() {
		io.WriteString(w, mdRow(row...))
	}
	p("\n| ratio | | value |\n|---|---|---:|\n")
	for _, row := range rep.ratioRows() {
		io.WriteString(w, mdRow(row...))
	}
	on := byPeer(rep.Systems, aerieOn)
	p("\n- aerie-on's results cache over the replay (parts of a day each): %s; over the first refresh: %s.\n",
		aerieCounterLine(on.Counters), aerieCounterLine(on.FirstCounters))
	p("- vm's rollup result cache over the replay: %s.\n", vmCounterLine(byPeer(rep.Systems, vm).Counters))
	p("- Answers: %s (decompressed).", rep.correctness())
	for _, m := range rep.MismatchExamples {
		p(" %s.", harness.MDEscape(m))
	}
	if len(rep.SeriesDifferences) == 0 {
		p(" VictoriaMetrics answered every panel with as many series as Aerie (its values are not compared: its rate() does not extrapolate).\n")
	} else {
		p(" Series counts that differ from VictoriaMetrics' (reported, not failed): %s.\n", harness.MDEscape(fmt.Sprint(rep.SeriesDifferences)))
	}
	p("- The newest data were %s old when the replay began and %s when it ended: the newest minutes of every range (within Aerie's `max_freshness`, 10 min, or VictoriaMetrics' `-search.cacheTimestampOffset`, 5 min, of now) are not cached and are computed again at every refresh, as on a live dashboard.\n\n",
		c["replay_start_lag"], c["replay_end_lag"])

	p("Method. Refresh k of n asks each panel for [E − %s, E] at a %s step, with E = T − (n − k) · %s and T the newest data time floored to the step (Grafana floors start and end to the step), so the replay walks through the data's last %s · n. ", c["range"], c["step"], c["refresh"], c["refresh"])
	p("In every refresh each server gets the %d panels in turn (the order of the servers rotates from refresh to refresh), %s at a time as a browser sends them (`POST /api/v1/query_range`, `Accept-Encoding: gzip`). ", len(rep.Panels), c["clients"])
	p("CPU is the server process' utime+stime (/proc/PID/stat) from before the first refresh to after the last (first refresh: to before the second; steady state: the rest, %d refreshes); wall is the sum of the refreshes' times from the first request to the last answer; latency is per query, from sending it to reading its answer's last byte. ", rep.steadyRefreshes())
	p("Each server was loaded the same way before the replay")
	if c["settled"] == "true" {
		p(", and both Aerie servers had flushed the partitions the load made due (their flush loop runs once a minute) before it began")
	}
	p(". Every answer of aerie-on is compared byte for byte with aerie-off's for the same request; a difference fails the run. Two cores are shared by the client and the three servers; compare ratios.\n\n")
	p("| panel | query | series (Aerie) | series (VM) |\n|---|---|---:|---:|\n")
	for _, pa := range rep.Panels {
		p("| %s | `%s` | %d | %d |\n", harness.MDEscape(pa.Title), harness.MDEscape(pa.Expr), pa.AerieSeries, pa.VMSeries)
	}
	p("\n")
	return nil
}
