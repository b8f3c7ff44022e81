package harness

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"time"
)

// Machine describes where a report was measured.
type Machine struct {
	CPU        string `json:"cpu"`
	Cores      int    `json:"cores"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	MemoryGiB  int    `json:"memory_gib"`
	OS         string `json:"os"`
	Go         string `json:"go"`
}

// CurrentMachine describes the machine this process runs on.
func CurrentMachine() Machine {
	m := Machine{Cores: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0), Go: runtime.Version(), OS: runtime.GOOS + "/" + runtime.GOARCH}
	m.CPU = procField("/proc/cpuinfo", "model name")
	if kb := procField("/proc/meminfo", "MemTotal"); kb != "" {
		var n int
		fmt.Sscanf(kb, "%d", &n)
		m.MemoryGiB = (n + 1<<19) >> 20
	}
	return m
}

// Commit returns the VCS revision of the binary, or of the working tree
// (go run, and builds with -buildvcs=false, do not stamp one), with
// "-dirty" for uncommitted changes.
func Commit() string {
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

// Header is what every report records about its run, filled by the
// harness (NewHeader, Done), never by hand. Embedded in a report, its
// fields are the report's top-level JSON keys.
type Header struct {
	Kind    string   `json:"kind,omitempty"` // the workload's; "" in engine reports of before the registry
	Machine *Machine `json:"machine,omitempty"`
	Commit  string   `json:"commit"`
	Date    string   `json:"date"`
	Scale   string   `json:"scale"`
	Seconds float64  `json:"seconds"` // the run's wall time
	started time.Time
}

// NewHeader starts a report of kind at scale: commit, machine and date
// of now.
func NewHeader(kind, scale string) Header {
	m := CurrentMachine()
	return Header{Kind: kind, Machine: &m, Commit: Commit(), Date: time.Now().UTC().Format(time.RFC3339), Scale: scale, started: time.Now()}
}

// Done records the run's wall time since NewHeader.
func (h *Header) Done() { h.Seconds = time.Since(h.started).Seconds() }

// WriteJSON writes v as indented JSON.
func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// WriteJSONFile writes v as indented JSON to path.
func WriteJSONFile(path string, v any) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := WriteJSON(f, v); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// KindOf returns the "kind" of a report's JSON ("" for none or not JSON).
func KindOf(b []byte) string {
	var k struct {
		Kind string `json:"kind"`
	}
	if json.Unmarshal(b, &k) != nil {
		return ""
	}
	return k.Kind
}

// ReadJSON decodes b, the JSON of a report of kind read from path, into v.
func ReadJSON(path string, b []byte, kind string, v any) error {
	if k := KindOf(b); k != kind {
		return fmt.Errorf("%s: a report of kind %q, not %q", path, k, kind)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// Ratio is a headline figure with its goal.
type Ratio struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	Goal  string  `json:"goal,omitempty"`
	Met   *bool   `json:"met,omitempty"` // nil where no goal applies
}

// Mark is "met", "behind" or "" (no goal) for a Ratio's table cell.
func (r Ratio) Mark() string {
	switch {
	case r.Met == nil:
		return ""
	case *r.Met:
		return "met"
	}
	return "behind"
}

// AtLeast and AtMost return a Ratio of value against a goal "≥ goal×" or
// "≤ goal×".
func AtLeast(name string, value, goal float64) Ratio {
	met := value >= goal
	return Ratio{Name: name, Value: value, Goal: fmt.Sprintf("≥ %g×", goal), Met: &met}
}

func AtMost(name string, value, goal float64) Ratio {
	met := value > 0 && value <= goal
	return Ratio{Name: name, Value: value, Goal: fmt.Sprintf("≤ %g×", goal), Met: &met}
}

// Percentile returns the nearest-rank q-quantile of ds (q = 1: the
// maximum); ds is not changed.
func Percentile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// Ms is d in milliseconds.
func Ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Num formats a measurement with about four significant digits.
func Num(v float64) string {
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

// RatioOf formats a ÷ b, or "—" where either is missing.
func RatioOf(a, b float64) string {
	if a == 0 || b == 0 {
		return "—"
	}
	return fmt.Sprintf("%.3f", a/b)
}

// Bytes formats a size in B, KiB or MiB.
func Bytes(n int64) string {
	switch {
	case n >= 10<<20:
		return fmt.Sprintf("%.0f MiB", float64(n)/(1<<20))
	case n >= 10<<10:
		return fmt.Sprintf("%.0f KiB", float64(n)/(1<<10))
	default:
		return fmt.Sprintf("%d B", n)
	}
}

// MiB is b in MiB.
func MiB(b int64) float64 { return float64(b) / (1 << 20) }

// MDEscape keeps a table cell in its cell.
func MDEscape(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(strings.TrimSpace(s))
}

// Logf writes a progress line with the time of day to w (nil: nowhere).
func Logf(w io.Writer, format string, args ...any) {
	if w == nil {
		return
	}
	fmt.Fprintf(w, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

// RepoRoot returns the directory holding go.mod at or above the working
// directory ("" if none).
func RepoRoot() string {
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			return ""
		}
	}
}

// SharedPath is a path in ../shared beside the repository root, where
// the benchmark peers' binaries (peers/, ../shared/peers/README.md) and
// the real data (data/) are.
func SharedPath(elem ...string) string {
	dir := filepath.Join("..", "shared")
	if root := RepoRoot(); root != "" {
		dir = filepath.Join(filepath.Dir(root), "shared")
	}
	return filepath.Join(append([]string{dir}, elem...)...)
}

// DefaultPeersDir is ../shared/peers.
func DefaultPeersDir() string { return SharedPath("peers") }

// Version runs bin with args (e.g. -version) and returns its first line
// of output, or "unknown".
func Version(bin string, args ...string) string {
	out, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil {
		return "unknown"
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return line
}
