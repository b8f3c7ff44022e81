package sensorbench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/aerie-db/aerie/bench/harness"
)

// ErrMismatch is wrapped when an answer differs from what was uploaded
// or from the other peer's; the run stops at the first.
var ErrMismatch = errors.New("answer does not match")

// runner carries one run's state.
type runner struct {
	ctx  context.Context
	cfg  Config
	sc   Scale
	root string // scratch: data directories and logs
	d    *dataset
	rep  *Report
}

// Run measures Peregreen's operations on Aerie against VictoriaMetrics
// (doc.go). Every server it starts is stopped before it returns.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	sc, err := cfg.check()
	if err != nil {
		return nil, err
	}
	if cfg.Aerie == "" {
		if cfg.Aerie, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("the aerie binary: %w (pass --aerie)", err)
		}
	}
	if cfg.VM == "" {
		cfg.VM = defaultVMPath()
	}
	if st, err := os.Stat(cfg.VM); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
		return nil, fmt.Errorf("VictoriaMetrics binary not found or not executable at %s: pass --vm=PATH (see /work/shared/peers/README.md)", cfg.VM)
	}
	r := &runner{ctx: ctx, cfg: cfg, sc: sc, root: cfg.Dir}
	if r.root == "" {
		if r.root, err = os.MkdirTemp("", "aerie-bench-sensors-"); err != nil {
			return nil, err
		}
		defer os.RemoveAll(r.root)
	} else if err := os.MkdirAll(r.root, 0o755); err != nil {
		return nil, err
	}
	start := time.Now()
	if r.d, err = loadOrGenerate(filepath.Join(r.root, "data"), cfg.Seed, sc.Sensors, sc.Span, r.logf); err != nil {
		return nil, fmt.Errorf("generate data: %w", err)
	}
	r.rep = r.newReport()
	r.rep.Config["loadavg_start"] = loadavg()
	for _, phase := range []struct {
		name string
		fn   func() error
	}{
		{"upload to aerie", r.uploadAerie},
		{"import into victoria-metrics", r.uploadVM},
		{"aerie import", r.importAerie},
		{"decode", r.decode},
		{"index size", r.indexOfImport},
		{"search and extraction", r.queries},
	} {
		r.logf("== %s", phase.name)
		if err := phase.fn(); err != nil {
			return nil, fmt.Errorf("%s: %w", phase.name, err)
		}
	}
	r.rep.Config["loadavg_end"] = loadavg()
	r.rep.Ratios = r.rep.ratios()
	r.rep.Seconds = time.Since(start).Seconds()
	return r.rep, nil
}

func (r *runner) newReport() *Report {
	d := r.d
	return &Report{
		Kind:    Kind,
		Machine: harness.CurrentMachine(),
		Commit:  harness.Commit(),
		Date:    time.Now().UTC().Format(time.RFC3339),
		Scale:   r.sc.Name,
		Sensors: len(d.Sensors),
		Span:    r.sc.Span.String(),
		Points:  d.Points,
		Records: d.totalPoints(),
		RawCSV:  d.RawBytes,
		Config: map[string]string{
			"seed":            fmt.Sprint(r.cfg.Seed),
			"start":           time.UnixMilli(d.Start).UTC().Format(time.RFC3339),
			"rate":            "1 Hz",
			"values":          fmt.Sprintf("base + daily cycle + Ornstein–Uhlenbeck walk (θ=1/1800 s, σ=%g) + noise (σ=%g), quantized to %g", walkSigma, noiseSD, Resolution),
			"upload_clients":  fmt.Sprint(r.cfg.Clients),
			"extract_clients": fmt.Sprint(extractClients),
			"aerie_fsync":     "wal.sync=batch (default): an upload is answered after its batches' WAL records are fsync'd",
			"vm_fsync":        "acknowledges before fsync (in-memory buffers, flushed about every second)",
			"aerie_binary":    r.cfg.Aerie,
			"vm_binary":       r.cfg.VM,
		},
		Peers: []Peer{
			{Name: aerie, Version: harness.Commit(), Args: peerArgs(aerie, "DIR", "127.0.0.1:PORT")},
			{Name: vm, Version: vmVersion(r.cfg.VM), Args: peerArgs(vm, "DIR", "127.0.0.1:PORT")},
		},
	}
}

// defaultVMPath is ../shared/peers/victoria-metrics from the repository
// root (the directory holding go.mod above the working directory).
func defaultVMPath() string {
	dir, err := os.Getwd()
	if err != nil {
		return "../shared/peers/victoria-metrics"
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return filepath.Join(filepath.Dir(d), "shared", "peers", "victoria-metrics")
		}
		if filepath.Dir(d) == d {
			return filepath.Join(dir, "..", "shared", "peers", "victoria-metrics")
		}
	}
}

func vmVersion(bin string) string {
	out, err := exec.Command(bin, "-version").Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(out))
}

// loadavg returns the 1, 5 and 15 min load averages: the machine is
// shared, and they say how much.
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:min(3, len(f))], " ")
}

func (r *runner) logf(format string, args ...any) {
	fmt.Fprintf(r.cfg.Log, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

func (r *runner) dir(name string) string { return filepath.Join(r.root, name) }

func (r *runner) start(name, dir string) (*server, error) {
	bin := r.cfg.Aerie
	if name == vm {
		bin = r.cfg.VM
	}
	return startServer(r.ctx, name, bin, dir, r.root)
}

func (r *runner) sleep(d time.Duration) error {
	select {
	case <-r.ctx.Done():
		return r.ctx.Err()
	case <-time.After(d):
		return nil
	}
}

func (r *runner) note(format string, args ...any) {
	n := fmt.Sprintf(format, args...)
	r.rep.Notes = append(r.rep.Notes, n)
	r.logf("note: %s", n)
}

// queries restarts both peers over their data, checks them again, and
// runs the searches and extractions.
func (r *runner) queries() error {
	a, err := r.start(aerie, r.dir(dirUpload))
	if err != nil {
		return err
	}
	defer a.stop()
	v, err := r.start(vm, r.dir(dirVM))
	if err != nil {
		return err
	}
	defer v.stop()
	// Aerie flushes what is due when it opens; let that, and any
	// compaction it starts, finish before anything is timed.
	if _, err := r.awaitAerieFlush(a, 0); err != nil {
		return err
	}
	ir, err := r.checkMeta(a, loadUpload)
	if err != nil {
		return err
	}
	ir.Note = "points still in the head (its last partitions) are not counted in index or data bytes"
	r.rep.Index = append(r.rep.Index, ir)
	if err := r.checkVMCounts(v); err != nil {
		return err
	}
	if err := r.search(a, v); err != nil {
		return err
	}
	if err := r.extract(a, v); err != nil {
		return err
	}
	if err := a.stop(); err != nil {
		return err
	}
	return v.stop()
}
