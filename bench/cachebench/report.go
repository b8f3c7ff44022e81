package cachebench

import (
	"io"

	"github.com/aerie-db/aerie/bench/harness"
)

// Kind marks the JSON of this report ("kind"), for `aerie bench report`.
const Kind = "cache"

// Goals from the issue (TSCache §5.2's figures).
const (
	GoalHitRatio    = 0.92 // Aerie's share of delivered bytes served from the cache
	GoalVsMemcached = 1.5  // Aerie's bandwidth ÷ the memcached chunks'
	GoalVsNoCache   = 2.7  // Aerie's bandwidth ÷ InfluxDB alone's
)

// Report is one run of `aerie bench cache`.
type Report struct {
	harness.Header
	Config    map[string]string `json:"config"`
	Dataset   DatasetInfo       `json:"dataset"`
	Workloads []WorkloadInfo    `json:"workloads"`
	Results   []Result          `json:"results"`
	Ratios    []Ratio           `json:"ratios"`
	Notes     []string          `json:"notes,omitempty"`
}

// DatasetInfo describes the data loaded into InfluxDB.
type DatasetInfo struct {
	Sensors         int     `json:"sensors"`
	Fields          int     `json:"fields"`
	Keys            int     `json:"keys"` // (sensor, field set) query keys
	IntervalSeconds int64   `json:"interval_seconds"`
	Days            float64 `json:"days"`
	Points          int64   `json:"points"` // rows (every field at every point)
	Values          int64   `json:"values"`
	Bytes           int64   `json:"bytes"`      // as the caches count them: 8 + value text per value
	LineBytes       int64   `json:"line_bytes"` // line protocol sent
	LoadSeconds     float64 `json:"load_seconds"`
	CacheBytes      int64   `json:"cache_bytes"` // each cache's size
	MemcachedMB     int64   `json:"memcached_mb"`
	AerieSlabBytes  int     `json:"aerie_slab_bytes"`
}

// WorkloadInfo describes one query mix as generated.
type WorkloadInfo struct {
	Name      string   `json:"name"`
	Ranges    []string `json:"ranges"`
	Queries   int      `json:"queries"`
	MeanBytes float64  `json:"mean_bytes"` // of an answer
	MeanSpan  float64  `json:"mean_span_minutes"`
}

// Result is one system under one workload.
type Result struct {
	Workload string `json:"workload"`
	System   string `json:"system"`
	Queries  int    `json:"queries"`
	Hits     int    `json:"hits"`
	Partials int    `json:"partials"`
	Misses   int    `json:"misses"`
	// Bytes delivered to the clients; CacheBytes of them came from the
	// cache.
	Bytes      int64   `json:"bytes"`
	CacheBytes int64   `json:"cache_bytes"`
	HitRatio   float64 `json:"hit_ratio"` // CacheBytes ÷ Bytes
	Seconds    float64 `json:"seconds"`
	// BandwidthMBps is Bytes ÷ Seconds in MB (10⁶ bytes) per second.
	BandwidthMBps float64          `json:"bandwidth_mbps"`
	QPS           float64          `json:"qps"`
	MeanMs        float64          `json:"mean_ms"`
	P50Ms         float64          `json:"p50_ms"`
	P99Ms         float64          `json:"p99_ms"`
	DBQueries     int64            `json:"db_queries"` // InfluxDB /query requests made
	Checked       int              `json:"checked"`    // answers compared with InfluxDB's
	Stats         map[string]int64 `json:"stats,omitempty"`
}

// Ratio is a headline figure of a workload.
type Ratio struct {
	Workload string `json:"workload"`
	harness.Ratio
}

// WriteJSON writes the report as indented JSON.
func (rep *Report) WriteJSON(w io.Writer) error { return harness.WriteJSON(w, rep) }

// result returns the result of system under workload, nil if none.
func (rep *Report) result(workload, system string) *Result {
	for i := range rep.Results {
		if rep.Results[i].Workload == workload && rep.Results[i].System == system {
			return &rep.Results[i]
		}
	}
	return nil
}

// ratios computes the headline figures of every workload that ran all
// three systems.
func (rep *Report) ratios() []Ratio {
	var out []Ratio
	for _, w := range rep.Workloads {
		a, m, n := rep.result(w.Name, Aerie), rep.result(w.Name, Memcached), rep.result(w.Name, NoCache)
		if a == nil || m == nil || n == nil {
			continue
		}
		hit := harness.AtLeast("Aerie's hit ratio (bytes from the cache ÷ bytes delivered)", a.HitRatio, GoalHitRatio)
		hit.Goal = "≥ 92 %"
		for _, r := range []harness.Ratio{
			hit,
			harness.AtLeast("bandwidth, Aerie ÷ memcached 4 h chunks", div(a.BandwidthMBps, m.BandwidthMBps), GoalVsMemcached),
			harness.AtLeast("bandwidth, Aerie ÷ no cache", div(a.BandwidthMBps, n.BandwidthMBps), GoalVsNoCache),
			{Name: "mean latency, Aerie ÷ memcached 4 h chunks", Value: div(a.MeanMs, m.MeanMs)},
			{Name: "mean latency, Aerie ÷ no cache", Value: div(a.MeanMs, n.MeanMs)},
		} {
			out = append(out, Ratio{w.Name, r})
		}
	}
	return out
}

func div(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}
