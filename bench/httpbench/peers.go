package httpbench

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aerie-db/aerie/bench/harness"
	"github.com/aerie-db/aerie/bench/tsbs"
	"github.com/aerie-db/aerie/bench/workload"
	"golang.org/x/sync/errgroup"
)

// Peer names.
const (
	aerie        = "aerie"         // Aerie with its defaults (results cache on)
	aerieNoCache = "aerie-nocache" // results cache off: the same work as vm-nocache
	aerieOff     = "aerie-off"     // results cache off: aerie.cache.results.enabled: false
	aerieOn      = "aerie-on"      // results cache on, as by default
	vm           = "vm"            // VictoriaMetrics with its defaults
	vmNoCache    = "vm-nocache"    // VictoriaMetrics with -search.disableCache
)

// cacheOffConfig turns Aerie's results cache off.
const cacheOffConfig = "aerie:\n  cache:\n    results:\n      enabled: false\n"

// cacheOffFlag writes cacheOffConfig into the runner's directory and
// returns the `aerie serve` flag that reads it.
func (r *runner) cacheOffFlag() (string, error) {
	path := filepath.Join(r.root, "aerie-cache-off.yml")
	if err := os.WriteFile(path, []byte(cacheOffConfig), 0o644); err != nil {
		return "", err
	}
	return "--config.file=" + path, nil
}

// aerieSpec is this binary's `aerie serve` named name, with extra flags.
func aerieSpec(bin, name string, extra ...string) harness.PeerSpec {
	return harness.PeerSpec{Name: name, Bin: bin, ReadyPath: "/-/ready",
		Args: func(dir string, addrs []string) ([]string, error) {
			return append([]string{"serve", "--data.dir=" + dir, "--http.addr=" + addrs[0]}, extra...), nil
		}}
}

// vmSpec is VictoriaMetrics named name, with extra flags.
func vmSpec(bin, name string, extra ...string) harness.PeerSpec {
	return harness.PeerSpec{Name: name, Bin: bin, ReadyPath: "/health",
		Args: func(dir string, addrs []string) ([]string, error) {
			return append([]string{"-httpListenAddr=" + addrs[0], "-storageDataPath=" + dir,
				"-retentionPeriod=100y", "-search.latencyOffset=0s"}, extra...), nil
		}}
}

// isVM tells a VictoriaMetrics peer, which makes rows searchable only
// seconds after it acknowledged them unless /internal/force_flush is
// called (Aerie's are searchable once acknowledged).
func isVM(name string) bool { return strings.HasPrefix(name, vm) }

// describe returns the peers of specs as the report records them: their
// command lines and versions (Aerie's: the commit).
func describe(commit, vmBin string, specs ...harness.PeerSpec) []Peer {
	vmVersion := harness.Version(vmBin, "-version")
	var peers []Peer
	for _, sp := range specs {
		args, _ := sp.Args("DIR", []string{"127.0.0.1:PORT"})
		p := Peer{Name: sp.Name, Version: commit, Args: args}
		if isVM(sp.Name) {
			p.Version = vmVersion
		}
		peers = append(peers, p)
	}
	return peers
}

// runner carries what the phases of a run share: its peers, its scratch
// directory and the dataset every load writes.
type runner struct {
	ctx   context.Context
	log   io.Writer
	fleet *harness.Fleet
	root  string
	w     workload.Workload
	dirs  int // data directories made so far
}

// newRunner resolves the binaries (o.Aerie "": this executable) and makes
// the scratch directory (o.Dir, or a temporary one) and the fleet.
// cleanup stops every peer and removes a temporary scratch directory.
func newRunner(ctx context.Context, o *harness.Options, vmBin, tmpPrefix string) (r *runner, cleanup func(), err error) {
	if o.Aerie == "" {
		if o.Aerie, err = os.Executable(); err != nil {
			return nil, nil, fmt.Errorf("the aerie binary: %w (pass --aerie)", err)
		}
	}
	if st, err := os.Stat(vmBin); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
		return nil, nil, fmt.Errorf("VictoriaMetrics binary not found or not executable at %s: pass --vm=PATH (it is built as described in /work/shared/peers/README.md)", vmBin)
	}
	r = &runner{ctx: ctx, log: o.Log, root: o.Dir}
	if r.root == "" {
		if r.root, err = os.MkdirTemp("", tmpPrefix); err != nil {
			return nil, nil, err
		}
	} else if err := os.MkdirAll(r.root, 0o755); err != nil {
		return nil, nil, err
	}
	r.fleet = harness.NewFleet(r.root, o.Log)
	return r, func() {
		r.fleet.StopAll()
		if o.Dir == "" {
			os.RemoveAll(r.root)
		}
	}, nil
}

func (r *runner) logf(format string, args ...any) { harness.Logf(r.log, format, args...) }

// start starts spec over a fresh data directory.
func (r *runner) start(spec harness.PeerSpec) (*harness.Peer, error) {
	r.dirs++
	return r.fleet.Start(r.ctx, spec, filepath.Join(r.root, fmt.Sprintf("%02d-%s", r.dirs, spec.Name)))
}

// stopAndRemove stops p and removes its data directory.
func (r *runner) stopAndRemove(p *harness.Peer) error {
	err := r.fleet.Stop(p)
	if rmErr := os.RemoveAll(p.Dir); err == nil {
		err = rmErr
	}
	return err
}

// load writes enc into a fresh peer of spec from n clients and measures
// it. With keep it returns the peer running; otherwise it stops it and
// removes its data.
func (r *runner) load(spec harness.PeerSpec, enc *encoded, n int, keep bool) (IngestResult, *harness.Peer, error) {
	res := IngestResult{Peer: spec.Name, Protocol: enc.protocol, Clients: n, Samples: enc.samples, Requests: enc.requests(), BodyBytes: enc.bytes}
	p, err := r.start(spec)
	if err != nil {
		return res, nil, err
	}
	if err := r.measureLoad(p, enc, &res); err != nil || !keep {
		if rmErr := r.stopAndRemove(p); err == nil {
			err = rmErr
		}
		return res, nil, err
	}
	return res, p, nil
}

func (r *runner) measureLoad(p *harness.Peer, enc *encoded, res *IngestResult) error {
	watch := harness.WatchRSS(p.PID(), 50*time.Millisecond)
	before, err := p.Stats()
	if err != nil {
		watch.End()
		return err
	}
	t0 := time.Now()
	res.Retries, err = r.send(p, enc, res.Clients)
	wall := time.Since(t0)
	after, statErr := p.Stats()
	peak, _ := watch.End()
	if err != nil {
		return err
	}
	if statErr != nil {
		return statErr
	}
	res.Seconds = wall.Seconds()
	res.SamplesPerSecond = float64(enc.samples) / wall.Seconds()
	res.CPUSeconds = (after.CPU - before.CPU).Seconds()
	res.CPUSecondsPerMillion = res.CPUSeconds / (float64(enc.samples) / 1e6)
	res.PeakRSSBytes = max(peak, after.HWM)
	return r.waitCounts(p, r.w, enc.perName)
}

// send writes every request of enc to p from n clients and returns the
// retries.
func (r *runner) send(p *harness.Peer, enc *encoded, n int) (int, error) {
	g, ctx := errgroup.WithContext(r.ctx)
	var retries atomic.Int64
	for c := range n {
		g.Go(func() error {
			for _, b := range enc.clientBodies(c, n) {
				k, err := write(ctx, p, enc.protocol, b.data)
				retries.Add(int64(k))
				if err != nil {
					return err
				}
			}
			return nil
		})
	}
	err := g.Wait()
	if err != nil {
		err = cmp.Or(p.Alive(), err) // a failed request to a peer that died: its log
	}
	return int(retries.Load()), err
}

// countTimeout bounds the wait for written samples to become visible.
const countTimeout = 2 * time.Minute

// waitCounts polls p until, for every metric name, it counts as many
// samples of w as were written; more than written fails at once.
// VictoriaMetrics is asked to make its buffered rows searchable first.
func (r *runner) waitCounts(p *harness.Peer, w workload.Workload, want map[string]int64) error {
	if isVM(p.Spec.Name) {
		if _, err := p.Get(r.ctx, "/internal/force_flush"); err != nil {
			return err
		}
	}
	window := (time.Duration(w.MaxTime()-w.MinTime())*time.Millisecond + time.Minute).Truncate(time.Second)
	deadline := time.Now().Add(countTimeout)
	for _, name := range slices.Sorted(maps.Keys(want)) {
		for {
			got, err := r.count(p, fmt.Sprintf(`sum(count_over_time(%s[%ds]))`, name, int64(window.Seconds())), w.MaxTime())
			switch {
			case err != nil:
				return err
			case got > want[name]:
				return fmt.Errorf("%s counts %d samples of %s, %d were written", p.Spec.Name, got, name, want[name])
			case got < want[name] && time.Now().After(deadline):
				return fmt.Errorf("%s counts %d samples of %s after %v, %d were written", p.Spec.Name, got, name, countTimeout, want[name])
			}
			if got == want[name] {
				break
			}
			if err := harness.Sleep(r.ctx, 200*time.Millisecond); err != nil {
				return err
			}
		}
	}
	return nil
}

// count runs an instant query whose answer is one number (none: 0).
func (r *runner) count(p *harness.Peer, expr string, at int64) (int64, error) {
	b, _, err := promQuery(r.ctx, p, query{Query: tsbs.Query{Expr: expr, Start: at, End: at, Instant: true}, nocache: true})
	if err != nil {
		return 0, err
	}
	res, err := parseResult(b)
	if err != nil {
		return 0, fmt.Errorf("%s %s: %w", p.Spec.Name, expr, err)
	}
	if len(res.series) == 0 || len(res.series[0].points) == 0 {
		return 0, nil
	}
	return int64(math.Round(res.series[0].points[0].v)), nil
}

// awaitAerieFlush waits until Aerie's flush loop has flushed and rests:
// aerie_flushes_total has risen and then not changed for 3 s with no
// flush running. It returns a note if no flush came within 90 s.
func (r *runner) awaitAerieFlush(p *harness.Peer) (string, error) {
	start := time.Now()
	last, since := -1.0, time.Now()
	for {
		m, err := p.Get(r.ctx, "/metrics")
		if err != nil {
			return "", err
		}
		flushes, _ := harness.MetricValue(m, "aerie_flushes_total")
		groups, _ := harness.MetricValue(m, "aerie_flush_groups")
		if flushes != last || groups > 0 {
			last, since = flushes, time.Now()
		}
		switch {
		case flushes > 0 && time.Since(since) >= 3*time.Second:
			return "", nil
		case flushes == 0 && time.Since(start) > 90*time.Second:
			return "no partition flush within 90 s", nil
		case time.Since(start) > 5*time.Minute:
			return "partition flushes still running after 5 min", nil
		}
		if err := harness.Sleep(r.ctx, 250*time.Millisecond); err != nil {
			return "", err
		}
	}
}
