package bench

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strings"
	"text/tabwriter"
	"time"

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

// Machine describes where a report was measured.
type Machine struct {
	CPU        string `json:"cpu"`
	Cores      int    `json:"cores"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	MemoryGiB  int    `json:"memory_gib"`
	OS         string `json:"os"`
	Go         string `json:"go"`
}

// Report is the outcome of one run (the --json file).
type Report struct {
	Machine    Machine           `json:"machine"`
	Commit     string            `json:"commit"`
	Date       string            `json:"date"`
	Workload   string            `json:"workload"`
	Scale      string            `json:"scale"`
	Series     int               `json:"series"`
	Samples    int64             `json:"samples"`
	Config     map[string]string `json:"config"`
	Results    []Result          `json:"results"`
	TupleSizes []TupleRow        `json:"tuple_sizes"`
	Seconds    float64           `json:"seconds"`
}

func newReport(cfg Config, sc Scale, w workload.Workload) *Report {
	return &Report{
		Machine:  machine(),
		Commit:   commit(),
		Date:     time.Now().UTC().Format(time.RFC3339),
		Workload: w.Name(),
		Scale:    sc.Name,
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
func (rep *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

// ReadReport reads a report written by WriteJSON.
func ReadReport(path string) (*Report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var rep Report
	if err := json.Unmarshal(b, &rep); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &rep, nil
}

// WriteTable prints the results and the tuple-size table as text.
func (rep *Report) WriteTable(w io.Writer) error {
	fmt.Fprintf(w, "workload %s, scale %s: %d series, %d samples; commit %s; %s, %d cores, GOMAXPROCS %d, %s\n",
		rep.Workload, rep.Scale, rep.Series, rep.Samples, rep.Commit, rep.Machine.CPU, rep.Machine.Cores, rep.Machine.GOMAXPROCS, rep.Machine.Go)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "name\tunit\taerie\tprometheus\tratio\tbetter\t")
	for _, r := range rep.Results {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.3f\t%s\t\n", r.Name, r.Unit, num(r.Aerie), num(r.Prometheus), r.Ratio, r.Better)
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

func machine() Machine {
	m := Machine{Cores: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0), Go: runtime.Version(), OS: runtime.GOOS + "/" + runtime.GOARCH}
	m.CPU = procField("/proc/cpuinfo", "model name")
	if kb := procField("/proc/meminfo", "MemTotal"); kb != "" {
		var n int
		fmt.Sscanf(kb, "%d", &n)
		m.MemoryGiB = (n + 1<<19) >> 20
	}
	return m
}

// procField returns the value of the first "key: value" line of a /proc file.
func procField(path, key string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// commit returns the VCS revision of the binary, or of the working tree
// (go run, and builds with -buildvcs=false, do not stamp one), with
// "-dirty" for uncommitted changes.
func commit() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		var rev, dirty string
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					dirty = "-dirty"
				}
			}
		}
		if rev != "" {
			return rev[:min(12, len(rev))] + dirty
		}
	}
	out, err := exec.Command("git", "rev-parse", "--short=12", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	rev := strings.TrimSpace(string(out))
	// The outputs of a bench run do not make the tree dirty.
	st, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no", "--", ".", ":!bench/results", ":!docs/BENCHMARKS.md").Output()
	if err == nil && len(st) > 0 {
		rev += "-dirty"
	}
	return rev
}

// CurrentMachine describes the machine this process runs on.
func CurrentMachine() Machine { return machine() }

// Commit returns the VCS revision of this binary or of the working tree,
// as reports record it.
func Commit() string { return commit() }
