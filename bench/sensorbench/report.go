package sensorbench

import (
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/aerie-db/aerie/bench/harness"
)

// Kind marks the JSON of this report ("kind"), for `aerie bench report`.
const Kind = "sensors"

// Peregreen's figures (seed 004 §4.1), beside which Aerie's are shown.
const (
	// PeregreenIndexBytesPerSensorYear: 110 MB of indexes for 1000
	// sensors × 1 year of 1-hour blocks.
	PeregreenIndexBytesPerSensorYear = 110_000
	// PeregreenStoredOverRaw: 172 GB stored of 750 GB of raw data.
	PeregreenStoredOverRaw = 172.0 / 750
)

// Goals of issue 13 §4; recorded beside the ratios, never asserted.
const (
	GoalSearchRatio       = 0.1  // Aerie's median search latency ÷ VictoriaMetrics' at most
	GoalExtractRatio      = 1.0  // Aerie's full extraction records per CPU second ÷ VictoriaMetrics' export's at least
	GoalDecodePerCoreRate = 50e6 // decoded samples per CPU second at least
)

// Report is one run of `aerie bench sensors`.
type Report struct {
	harness.Header
	Sensors int               `json:"sensors"`
	Span    string            `json:"span"`
	Points  int64             `json:"points_per_sensor"`
	Records int64             `json:"records"`
	RawCSV  int64             `json:"raw_csv_bytes"`
	Config  map[string]string `json:"config"`
	Peers   []Peer            `json:"peers"`
	Upload  []UploadResult    `json:"upload"`
	Disk    []DiskResult      `json:"disk"`
	Index   []IndexResult     `json:"index"`
	Search  []SearchResult    `json:"search"`
	Extract []ExtractResult   `json:"extract"`
	Decode  *DecodeResult     `json:"decode,omitempty"`
	Ratios  []harness.Ratio   `json:"ratios"`
	Notes   []string          `json:"notes,omitempty"`
}

// Peer is one server as it was run.
type Peer struct {
	Name    string   `json:"name"`
	Version string   `json:"version"`
	Args    []string `json:"args"`
}

// UploadResult is one load of every sensor's history.
type UploadResult struct {
	Peer     string `json:"peer"`
	Path     string `json:"path"` // how the data went in
	Clients  int    `json:"clients"`
	Requests int    `json:"requests"` // requests or processes
	// Rates' wall time is from the first request to the last answer
	// (processes: from the first start to the last exit); its CPU time the
	// server's (or the processes') user+system time.
	Rates
	Note string `json:"note,omitempty"`
}

// Rates are the records of a load or an extraction case over its wall
// and CPU time.
type Rates struct {
	Records             int64   `json:"records"`
	Bytes               int64   `json:"bytes"` // of the bodies, files or answers
	Seconds             float64 `json:"seconds"`
	RecordsPerSecond    float64 `json:"records_per_second"`
	CPUSeconds          float64 `json:"cpu_seconds"`
	RecordsPerCPUSecond float64 `json:"records_per_cpu_second"`
}

func (r *Rates) set(wall, cpu time.Duration) {
	r.Seconds, r.CPUSeconds = wall.Seconds(), cpu.Seconds()
	r.RecordsPerSecond, r.RecordsPerCPUSecond = perSecond(r.Records, r.Seconds), perSecond(r.Records, r.CPUSeconds)
}

// DiskResult is a data directory after a load, once flushed.
type DiskResult struct {
	Peer  string           `json:"peer"`
	Load  string           `json:"load"` // the UploadResult.Path that filled it
	Bytes int64            `json:"bytes"`
	ByTop map[string]int64 `json:"by_top"` // by top-level entry of the directory
	// StoredOverRaw is Bytes ÷ the raw CSV bytes; BytesPerRecord Bytes ÷
	// records.
	StoredOverRaw  float64 `json:"stored_over_raw"`
	BytesPerRecord float64 `json:"bytes_per_record"`
	Seconds        float64 `json:"seconds"` // from the end of the load until measured
	Note           string  `json:"note,omitempty"`
}

// IndexResult is what Aerie's /meta says of every sensor's blocks.
type IndexResult struct {
	Load       string `json:"load"`
	Sensors    int    `json:"sensors"`
	IndexBytes int64  `json:"index_bytes"` // block metrics of every sensor
	DataBytes  int64  `json:"data_bytes"`
	// Intervals are the 1-hour metric intervals holding points.
	Intervals int64 `json:"intervals"`
	// PerSensorYear is IndexBytes ÷ Intervals × 8766 (a year of 1-hour
	// intervals), as Peregreen's 110 KB per sensor-year.
	PerSensorYear float64 `json:"index_bytes_per_sensor_year"`
	Note          string  `json:"note,omitempty"`
}

// SearchResult is one search query kind on both peers.
type SearchResult struct {
	Query     string  `json:"query"`     // "per sensor" or "all sensors"
	Condition string  `json:"condition"` // Peregreen's condition
	AerieURL  string  `json:"aerie"`     // an example request
	PromQL    string  `json:"promql"`    // an example of the equivalent
	Intervals int     `json:"intervals"` // in the answer (all sensors)
	Runs      int     `json:"runs"`      // timed, per peer
	Aerie     Latency `json:"aerie_latency"`
	VM        Latency `json:"vm_latency"`
	Ratio     float64 `json:"ratio"` // median Aerie ÷ median VM
	// AerieReads is what Aerie's counters say it read over the kind's
	// runs (warm-up and timed): search answers from block metrics, so
	// any data read is a finding.
	AerieReads DataReads `json:"aerie_reads"`
}

// DataReads are deltas of Aerie's counters of data reads.
type DataReads struct {
	// BucketGets and WindowCacheHits are reads of block data in the
	// bucket tier (aerie_bucket_data_gets_total, and windows answered
	// from its cache: aerie_bucket_window_cache_hits_total). Reads of
	// local blocks' data have no counter.
	BucketGets      int64 `json:"bucket_data_gets"`
	WindowCacheHits int64 `json:"bucket_window_cache_hits"`
	// DataIntervals are metric intervals search recomputed from data
	// (aerie_sensor_search_data_intervals_total).
	DataIntervals int64 `json:"search_data_intervals"`
}

// Latency is the median and 99th percentile of a query's timed runs, from
// sending the request to reading the last byte of the answer.
type Latency struct {
	MedianMs float64 `json:"median_ms"`
	P99Ms    float64 `json:"p99_ms"`
}

// ExtractResult is one extraction case on one peer: Rates over the wall
// time of the case (two clients) and the server's CPU seconds over it
// (records per CPU second: the rate per core).
type ExtractResult struct {
	Peer     string `json:"peer"`
	Mode     string `json:"mode"`  // full, sampling, aggregation, transformation
	Range    string `json:"range"` // 1h, 24h, 240h
	Writer   string `json:"writer"`
	Func     string `json:"func"`
	Interval int64  `json:"interval_ms"`
	Requests int    `json:"requests"`
	Rates
}

// DecodeResult is the in-process decode of every sample from Aerie's
// blocks.
type DecodeResult struct {
	Method  string `json:"method"`
	Blocks  int    `json:"blocks"`
	Samples int64  `json:"samples"` // per pass
	// The first pass reads the blocks into the page cache and the
	// engine's caches; the second is the one reported.
	FirstSeconds        float64 `json:"first_pass_seconds"`
	Seconds             float64 `json:"seconds"`
	CPUSeconds          float64 `json:"cpu_seconds"`
	SamplesPerSecond    float64 `json:"samples_per_second"`
	SamplesPerCPUSecond float64 `json:"samples_per_cpu_second"`
}

// WriteJSON writes the report as indented JSON.
func (rep *Report) WriteJSON(w io.Writer) error { return harness.WriteJSON(w, rep) }

// ratios returns the headline figures of the report, each with its goal
// where issue 13 §4 sets one (nothing asserts them).
func (rep *Report) ratios() []harness.Ratio {
	var out []harness.Ratio
	add := func(r harness.Ratio) {
		if r.Value != 0 {
			out = append(out, r)
		}
	}
	if i := slices.IndexFunc(rep.Upload, func(u UploadResult) bool { return u.Peer == vm && u.Path == loadVMImport }); i >= 0 && rep.Upload[i].RecordsPerSecond > 0 {
		vu := rep.Upload[i]
		for _, u := range rep.Upload {
			if u.Peer == aerie {
				add(harness.Ratio{Name: fmt.Sprintf("upload records/s, %s ÷ vm %s", u.Path, vu.Path), Value: u.RecordsPerSecond / vu.RecordsPerSecond})
			}
		}
	}
	for _, dr := range rep.Disk {
		add(harness.Ratio{Name: fmt.Sprintf("stored ÷ raw CSV bytes, %s after %s", dr.Peer, dr.Load), Value: dr.StoredOverRaw, Goal: fmt.Sprintf("Peregreen %.3f", PeregreenStoredOverRaw)})
	}
	for _, ir := range rep.Index {
		add(harness.Ratio{Name: fmt.Sprintf("index bytes per sensor-year ÷ Peregreen's 110 KB, after %s", ir.Load), Value: ir.PerSensorYear / PeregreenIndexBytesPerSensorYear})
	}
	for _, s := range rep.Search {
		add(harness.AtMost(fmt.Sprintf("search median latency, %s, %s: aerie ÷ vm", s.Query, s.Condition), s.Ratio, GoalSearchRatio))
	}
	for _, e := range rep.Extract {
		if e.Peer != aerie || e.Mode != "full" {
			continue
		}
		i := slices.IndexFunc(rep.Extract, func(ve ExtractResult) bool { return ve.Peer == vm && ve.Mode == e.Mode && ve.Range == e.Range })
		if i >= 0 && rep.Extract[i].RecordsPerCPUSecond != 0 {
			add(harness.AtLeast(fmt.Sprintf("full extraction records per CPU second, %s, %s: aerie ÷ vm export", e.Range, e.Writer), e.RecordsPerCPUSecond/rep.Extract[i].RecordsPerCPUSecond, GoalExtractRatio))
		}
	}
	if d := rep.Decode; d != nil {
		met := d.SamplesPerCPUSecond >= GoalDecodePerCoreRate
		add(harness.Ratio{Name: "decode samples per CPU second (M)", Value: d.SamplesPerCPUSecond / 1e6, Goal: fmt.Sprintf("≥ %g M", GoalDecodePerCoreRate/1e6), Met: &met})
	}
	return out
}
