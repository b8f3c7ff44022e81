package bench

import (
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/aerie-db/aerie/bench/harness"
	"github.com/aerie-db/aerie/bench/workload"
)

// Directions of a result.
const (
	higher = "higher"
	lower  = "lower"
)

// Result is one measurement of both engines. Ratio is Aerie over
// Prometheus; Better says which direction of it is good.
type Result struct {
	Name       string  `json:"name"`
	Unit       string  `json:"unit"`
	Aerie      float64 `json:"aerie"`
	Prometheus float64 `json:"prometheus"`
	Ratio      float64 `json:"ratio"`
	Better     string  `json:"better"`
	Note       string  `json:"note,omitempty"`
}

// TupleRow is one row of the tuple-size table (Heracles §4.4.5);
// TupleSize 0 is the Prometheus reference (120-sample XOR chunks).
type TupleRow struct {
	Engine                 string  `json:"engine"`
	TupleSize              int     `json:"tuple_size"`      // in blocks
	HeadTupleSize          int     `json:"head_tuple_size"` // in the head (at most 8)
	HeadBytesPerSample     float64 `json:"head_bytes_per_sample"`
	DiskBytesPerSample     float64 `json:"disk_bytes_per_sample"`
	DiskDataBytesPerSample float64 `json:"disk_data_bytes_per_sample"`
	Query15mHeadMs         float64 `json:"query_15m_head_ms"`
	Query15mDiskMs         float64 `json:"query_15m_disk_ms"`
	TSBS511DiskMs          float64 `json:"tsbs_5-1-1_disk_ms"`

	flushWall, flushCPU float64
}

// Report is the outcome of one run (the --json file).
type Report struct {
	harness.Header
	Workload   string            `json:"workload"`
	Series     int               `json:"series"`
	Samples    int64             `json:"samples"`
	Config     map[string]string `json:"config"`
	Results    []Result          `json:"results"`
	TupleSizes []TupleRow        `json:"tuple_sizes"`
}

func newReport(cfg Config, sc Scale, w workload.Workload) *Report {
	return &Report{
		Header:   harness.NewHeader("", sc.Name),
		Workload: w.Name(),
		Series:   len(allSeries(w)),
		Config: map[string]string{
			"interval":         w.Interval().String(),
			"span":             (time.Duration(w.MaxTime()-w.MinTime()) * time.Millisecond).String(),
			"writers":          fmt.Sprint(cfg.Writers),
			"seed":             fmt.Sprint(cfg.Seed),
			"query_runs":       fmt.Sprint(sc.QueryRuns),
			"aerie_wal_sync":   cfg.AerieSync,
			"aerie_flush_cpu":  fmt.Sprint(max(cfg.AerieFlushCPU, 0)),
			"prometheus_wal":   "library defaults: records written at commit, fsync when a segment is full, no compression; automatic compaction off",
			"aerie_tuple_size": "8",
			"flush_series":     fmt.Sprint(sc.FlushSeries),
		},
	}
}

func (rep *Report) add(name, unit, better string, aerie, prom float64, note string) {
	ratio := 0.0
	if prom != 0 {
		ratio = aerie / prom
	}
	rep.Results = append(rep.Results, Result{Name: name, Unit: unit, Aerie: aerie, Prometheus: prom, Ratio: ratio, Better: better, Note: note})
}

// Result returns the named result.
func (rep *Report) Result(name string) (Result, bool) {
	for _, r := range rep.Results {
		if r.Name == name {
			return r, true
		}
	}
	return Result{}, false
}

// WriteJSON writes the report as indented JSON.
func (rep *Report) WriteJSON(w io.Writer) error { return harness.WriteJSON(w, rep) }

// ReadReport reads a report written by WriteJSON.
func ReadReport(path string) (*Report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var rep Report
	if err := harness.ReadJSON(path, b, "", &rep); err != nil {
		return nil, err
	}
	return &rep, nil
}

// WriteTable prints the results and the tuple-size table as text.
func (rep *Report) WriteTable(w io.Writer) error {
	fmt.Fprintf(w, "workload %s, scale %s: %d series, %d samples; commit %s; %s, %d cores, GOMAXPROCS %d, %s\n",
		rep.Workload, rep.Scale, rep.Series, rep.Samples, rep.Commit, rep.machine().CPU, rep.machine().Cores, rep.machine().GOMAXPROCS, rep.machine().Go)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "name\tunit\taerie\tprometheus\tratio\tbetter\t")
	for _, r := range rep.Results {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.3f\t%s\t\n", r.Name, r.Unit, harness.Num(r.Aerie), harness.Num(r.Prometheus), r.Ratio, r.Better)
	}
	if len(rep.TupleSizes) == 0 {
		return tw.Flush()
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "engine\ttuple\thead B/sample\tdisk B/sample\tdisk data B/sample\t15 min head ms\t15 min disk ms\t5-1-1 disk ms\t")
	for _, t := range rep.TupleSizes {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t\n", t.Engine, t.name(), dash(t.HeadBytesPerSample),
			t.DiskBytesPerSample, t.DiskDataBytesPerSample, t.Query15mHeadMs, t.Query15mDiskMs, t.TSBS511DiskMs)
	}
	return tw.Flush()
}

// name is the tuple column of a row: "16 (head 8)" where they differ.
func (t TupleRow) name() string {
	switch {
	case t.TupleSize == 0:
		return "120/chunk"
	case t.HeadTupleSize != 0 && t.HeadTupleSize != t.TupleSize:
		return fmt.Sprintf("%d (head %d)", t.TupleSize, t.HeadTupleSize)
	}
	return fmt.Sprint(t.TupleSize)
}

func dash(v float64) string {
	if v == 0 {
		return "—"
	}
	return fmt.Sprintf("%.3f", v)
}

// machine is where the report was measured (none in old reports).
func (rep *Report) machine() harness.Machine {
	if rep.Machine == nil {
		return harness.Machine{}
	}
	return *rep.Machine
}
