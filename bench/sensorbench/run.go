package sensorbench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/aerie-db/aerie/bench/harness"
)

// ErrMismatch is wrapped when an answer differs from what was uploaded
// or from the other peer's; the run stops at the first.
var ErrMismatch = errors.New("answer does not match")

// Peer names.
const (
	aerie = "aerie"
	vm    = "vm"
)

// peerArgs returns the command line of a peer over dir on addr: Aerie
// with its defaults; VictoriaMetrics as bench/httpbench runs it (data of
// 2024 kept, fresh samples visible at once).
func peerArgs(name, dir, addr string) []string {
	if name == aerie {
		return []string{"serve", "--data.dir=" + dir, "--http.addr=" + addr}
	}
	return []string{"-httpListenAddr=" + addr, "-storageDataPath=" + dir, "-retentionPeriod=100y", "-search.latencyOffset=0s"}
}

// runner carries one run's state.
type runner struct {
	ctx   context.Context
	cfg   Config
	sc    Scale
	root  string // scratch: data directories and logs
	fleet *harness.Fleet
	d     *dataset
	rep   *Report
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
	r.fleet = harness.NewFleet(r.root, cfg.Log)
	defer r.fleet.StopAll()
	h := harness.NewHeader(Kind, sc.Name)
	if r.d, err = loadOrGenerate(filepath.Join(r.root, "data"), cfg.Seed, sc.Sensors, sc.Span, r.logf); err != nil {
		return nil, fmt.Errorf("generate data: %w", err)
	}
	r.rep = r.newReport(h)
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
	r.rep.Config["loadavg_end"] = harness.LoadAvg()
	r.rep.Ratios = r.rep.ratios()
	r.rep.Done()
	return r.rep, nil
}

func (r *runner) newReport(h harness.Header) *Report {
	d := r.d
	return &Report{
		Header:  h,
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
			"loadavg_start":   harness.LoadAvg(),
		},
		Peers: []Peer{
			{Name: aerie, Version: h.Commit, Args: peerArgs(aerie, "DIR", "127.0.0.1:PORT")},
			{Name: vm, Version: harness.Version(r.cfg.VM, "-version"), Args: peerArgs(vm, "DIR", "127.0.0.1:PORT")},
		},
	}
}

func (r *runner) logf(format string, args ...any) { harness.Logf(r.cfg.Log, format, args...) }

func (r *runner) dir(name string) string { return filepath.Join(r.root, name) }

// start starts peer name over dir and waits until it is ready.
func (r *runner) start(name, dir string) (*harness.Peer, error) {
	spec := harness.PeerSpec{Name: name, Bin: r.cfg.Aerie, ReadyPath: "/-/ready",
		Args: func(dir string, addrs []string) ([]string, error) { return peerArgs(name, dir, addrs[0]), nil }}
	if name == vm {
		spec.Bin, spec.ReadyPath = r.cfg.VM, "/health"
	}
	return r.fleet.Start(r.ctx, spec, dir)
}

func (r *runner) sleep(d time.Duration) error { return harness.Sleep(r.ctx, d) }

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
	v, err := r.start(vm, r.dir(dirVM))
	if err != nil {
		return err
	}
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
	return errors.Join(r.fleet.Stop(a), r.fleet.Stop(v))
}
