package bucketbench

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/aerie-db/aerie/bench/harness"
	"github.com/aerie-db/aerie/bench/thanosstore"
	"github.com/aerie-db/aerie/internal/bucket"
)

// Kind marks the JSON of this report ("kind"), for `aerie bench report`.
const Kind = "bucket"

// Report is one run of `aerie bench bucket`.
type Report struct {
	harness.Header
	LatencyMs float64          `json:"latency_ms"`
	Workloads []WorkloadResult `json:"workloads"`
}

// WorkloadResult is one workload's data, layouts and queries.
type WorkloadResult struct {
	Workload string `json:"workload"`
	Targets  int    `json:"targets"`
	Series   int    `json:"series"`
	Interval string `json:"interval"`
	Days     int    `json:"days"`
	Samples  int64  `json:"samples"`
	// The blocks' spans, and the bytes each layout put in the bucket.
	AerieBlocks []string `json:"aerie_blocks"`
	PromBlocks  []string `json:"prom_blocks"`
	AerieBytes  int64    `json:"aerie_bytes"`
	PromBytes   int64    `json:"prom_bytes"`
	// What each reader fetched when it opened the blocks (kept in memory).
	AerieMetaBytes    int64 `json:"aerie_meta_bytes"`
	ThanosHeaderBytes int64 `json:"thanos_header_bytes"`
	// AerieMetaMemory is the heap the open blocks' metadata holds, as
	// the engine's bound counts it (block.Reader.MemoryBytes), before any
	// metrics are read.
	AerieMetaMemory int64 `json:"aerie_meta_memory,omitempty"`
	// AerieMetricsBytes are the blocks' metrics objects (metadata object
	// version 3), fetched only when value search reads them: the
	// MetricsGets of reading every series' metrics of every block once,
	// in MetricsMs.
	AerieMetricsBytes int64 `json:"aerie_metrics_bytes"`
	// What Aerie's metadata objects hold: indexes (without metrics), the
	// groups' timestamp columns, window CRCs.
	AerieIndexBytes     int64         `json:"aerie_index_bytes"`
	AerieTimestampBytes int64         `json:"aerie_timestamp_bytes"`
	AerieWindowBytes    int64         `json:"aerie_window_bytes"`
	MetricsGets         int64         `json:"metrics_gets"`
	MetricsMs           float64       `json:"metrics_ms"`
	Queries             []QueryResult `json:"queries"`
}

// QueryResult sums the instances of one query kind.
type QueryResult struct {
	Name      string `json:"name"`  // "10 series"
	Range     string `json:"range"` // "24h"
	Instances int    `json:"instances"`
	Series    int    `json:"series"` // series answered, over the instances
	Aerie     Cost   `json:"aerie"`
	Thanos    Cost   `json:"thanos"`
}

// Cost sums a reader's requests over a query kind's instances.
type Cost struct {
	Gets      int64     `json:"gets"`
	Rounds    int64     `json:"rounds"` // sequential phases of GETs, summed over blocks
	Fetched   int64     `json:"fetched"`
	Needed    int64     `json:"needed"`
	LatencyMs []float64 `json:"latency_ms"` // per instance
}

// counts is a snapshot of a reader's counters.
type counts struct{ gets, rounds, fetched, needed int64 }

func snapAerie(s *bucket.ReadStats) counts {
	return counts{s.Gets.Load(), s.Rounds.Load(), s.BytesFetched.Load(), s.BytesNeeded.Load()}
}

func snapThanos(s *thanosstore.Stats) counts {
	return counts{s.Gets.Load(), s.RoundTrips.Load(), s.BytesFetched.Load(), s.BytesNeeded.Load()}
}

func (c counts) sub(o counts) counts {
	return counts{c.gets - o.gets, c.rounds - o.rounds, c.fetched - o.fetched, c.needed - o.needed}
}

func (c *Cost) add(d counts, lat time.Duration) {
	c.Gets += d.gets
	c.Rounds += d.rounds
	c.Fetched += d.fetched
	c.Needed += d.needed
	c.LatencyMs = append(c.LatencyMs, float64(lat.Microseconds())/1000)
}

// Amplification is fetched ÷ needed (0 when nothing was needed).
func (c Cost) Amplification() float64 {
	if c.Needed == 0 {
		return 0
	}
	return float64(c.Fetched) / float64(c.Needed)
}

// MedianLatency is the median of the instances' latencies, in ms.
func (c Cost) MedianLatency() float64 {
	if len(c.LatencyMs) == 0 {
		return 0
	}
	l := slices.Clone(c.LatencyMs)
	slices.Sort(l)
	return l[len(l)/2]
}

func (c Cost) summary(n int) string {
	return fmt.Sprintf("%.1f GETs, %.1f rounds, %s fetched, amplification %.2f, median %.0f ms",
		float64(c.Gets)/float64(n), float64(c.Rounds)/float64(n), harness.Bytes(c.Fetched/int64(n)), c.Amplification(), c.MedianLatency())
}

// WriteJSON writes the report for `aerie bench report`.
func (r *Report) WriteJSON(w io.Writer) error { return harness.WriteJSON(w, r) }

// WriteTable writes the report as text, for the terminal.
func (r *Report) WriteTable(w io.Writer) error { return r.WriteMarkdown(w) }

// WriteMarkdown writes the report's section of docs/BENCHMARKS.md.
func (r *Report) WriteMarkdown(w io.Writer) error {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	p("## Object storage: Aerie's layout vs a Thanos-style layout (%s)\n\n", r.Scale)
	p("`aerie bench bucket --scale=%s` at `%s`, %s (bench/bucketbench/doc.go). Both layouts of the same data in one filesystem bucket, every request delayed %.0f ms; metadata (Aerie's metadata objects, Thanos' index headers) fetched once when the blocks open, no data cached between queries. Per query, averaged over its instances: GETs, round trips (sequential phases of GETs, summed over the blocks it touches, which run in parallel), bytes fetched, read amplification (fetched ÷ the bytes of data decoded), median latency. Ratios are Aerie ÷ Thanos-style.\n\n", r.Scale, r.Commit, r.Date, r.LatencyMs)
	p("Goals (issue 12 §3): amplification ≤ 1.5×; ≤ 1 GET per group touched; a 10-series 1-hour query within 2 round trips at 30 ms; ≥ 60 %% fewer bytes fetched than the Thanos-style layout.\n\n")
	for _, wr := range r.Workloads {
		p("### %s: %d series, %d samples, %d days at %s\n\n", wr.Workload, wr.Series, wr.Samples, wr.Days, wr.Interval)
		p("- Blocks: Aerie %s; Prometheus %s.\n", spans(wr.AerieBlocks), spans(wr.PromBlocks))
		p("- In the bucket: Aerie %s, Prometheus blocks %s (%.2f×).\n", harness.Bytes(wr.AerieBytes), harness.Bytes(wr.PromBytes), ratio(float64(wr.AerieBytes), float64(wr.PromBytes)))
		p("- Fetched at open and kept in memory: Aerie's metadata objects %s (%.1f %% of Aerie's bytes in the bucket; issue 24's goal ≤ 5 %%), Thanos' index headers %s.\n", harness.Bytes(wr.AerieMetaBytes), 100*ratio(float64(wr.AerieMetaBytes), float64(wr.AerieBytes)), harness.Bytes(wr.ThanosHeaderBytes))
		if wr.AerieMetaMemory > 0 {
			p("- Aerie's open blocks hold %s of metadata in memory (estimated heap, what `aerie.storage.metadata_memory_size` bounds), %.1f B per series-day.\n", harness.Bytes(wr.AerieMetaMemory), ratio(float64(wr.AerieMetaMemory), float64(wr.Series*wr.Days)))
		}
		p("- Aerie's metadata objects hold indexes %s, timestamp columns %s, window CRCs %s.\n", harness.Bytes(wr.AerieIndexBytes), harness.Bytes(wr.AerieTimestampBytes), harness.Bytes(wr.AerieWindowBytes))
		p("- Aerie's block metrics, in metrics objects fetched only by value search: %s (%.1f %% of the bucket); reading every series' metrics of every block took %d GETs, %.0f ms.\n\n", harness.Bytes(wr.AerieMetricsBytes), 100*ratio(float64(wr.AerieMetricsBytes), float64(wr.AerieBytes)), wr.MetricsGets, wr.MetricsMs)
		p("| query | range | series | GETs A / T | rounds A / T | fetched A / T | fetched ratio | amplification A / T | latency ms A / T |\n|---|---|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, q := range wr.Queries {
			n := float64(q.Instances)
			if n == 0 {
				continue
			}
			a, t := q.Aerie, q.Thanos
			p("| %s | %s | %.0f | %.1f / %.1f | %.1f / %.1f | %s / %s | %.2f | %.2f / %.2f | %.0f / %.0f |\n",
				q.Name, q.Range, float64(q.Series)/n,
				float64(a.Gets)/n, float64(t.Gets)/n,
				float64(a.Rounds)/n, float64(t.Rounds)/n,
				harness.Bytes(int64(float64(a.Fetched)/n)), harness.Bytes(int64(float64(t.Fetched)/n)),
				ratio(float64(a.Fetched), float64(t.Fetched)),
				a.Amplification(), t.Amplification(),
				a.MedianLatency(), t.MedianLatency())
		}
		p("\n")
	}
	return nil
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// spans writes block spans as "3×54h 1×18h".
func spans(s []string) string {
	var out []string
	for i := 0; i < len(s); {
		j := i
		for j < len(s) && s[j] == s[i] {
			j++
		}
		out = append(out, fmt.Sprintf("%d×%s", j-i, s[i]))
		i = j
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, " ")
}
