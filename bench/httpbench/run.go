package httpbench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/aerie-db/aerie/bench/workload"
)

// ErrMismatch is returned (with the report) when two peers answered a
// query differently beyond the documented differences (knownDifference).
var ErrMismatch = errors.New("peers disagree")

// runner carries one run's state.
type runner struct {
	ctx   context.Context
	cfg   Config
	sc    Scale
	fleet *fleet
	root  string
	w     workload.Workload
	prof  profile
	rep   *Report
	specs map[string]peerSpec
	dirs  int // data directories made so far
}

// Run measures Aerie's server against VictoriaMetrics over HTTP on
// loopback (doc.go). A run whose servers disagree on an answer returns the
// report and an error wrapping ErrMismatch.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	sc, err := cfg.check()
	if err != nil {
		return nil, err
	}
	r, cleanup, err := newRunner(ctx, cfg, sc, "aerie-bench-http-")
	if err != nil {
		return nil, err
	}
	defer cleanup()
	cfg = r.cfg
	if r.w, err = newWorkload(cfg.Workload, sc, cfg.Seed); err != nil {
		return nil, err
	}
	r.prof = tsbsProfile
	if cfg.Workload == "node" {
		r.prof = nodeProfile
	}
	r.rep = newReport(cfg, sc, r.w)
	r.rep.Peers = []Peer{
		{Name: aerie, Version: r.rep.Commit, Args: r.specs[aerie].args("DIR", "127.0.0.1:PORT")},
		{Name: vm, Version: vmVersion(cfg.VM), Args: r.specs[vm].args("DIR", "127.0.0.1:PORT")},
		{Name: vmNoCache, Version: vmVersion(cfg.VM), Args: r.specs[vmNoCache].args("DIR", "127.0.0.1:PORT")},
	}
	start := time.Now()
	r.rep.Config["loadavg_start"] = loadavg()
	var mismatch error
	for _, phase := range []struct {
		name string
		fn   func() error
	}{
		{"ingest and queries", r.ingestAndQueries},
		{"cardinality", r.cardinality},
	} {
		r.logf("== %s", phase.name)
		if err := phase.fn(); errors.Is(err, ErrMismatch) {
			mismatch = err
		} else if err != nil {
			return nil, fmt.Errorf("%s: %w", phase.name, err)
		}
	}
	r.rep.Config["loadavg_end"] = loadavg()
	r.rep.Seconds = time.Since(start).Seconds()
	return r.rep, mismatch
}

// newRunner resolves the binaries of cfg and makes the scratch directory
// and the fleet. cleanup stops every server and removes a temporary
// scratch directory.
func newRunner(ctx context.Context, cfg Config, sc Scale, tmpPrefix string) (r *runner, cleanup func(), err error) {
	if cfg.Aerie == "" {
		if cfg.Aerie, err = os.Executable(); err != nil {
			return nil, nil, fmt.Errorf("the aerie binary: %w (pass --aerie)", err)
		}
	}
	if cfg.VM == "" {
		cfg.VM = defaultVMPath()
	}
	if st, err := os.Stat(cfg.VM); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
		return nil, nil, fmt.Errorf("VictoriaMetrics binary not found or not executable at %s: pass --vm=PATH (it is built as described in /work/shared/peers/README.md)", cfg.VM)
	}
	r = &runner{ctx: ctx, cfg: cfg, sc: sc}
	r.specs = map[string]peerSpec{aerie: aerieSpec(cfg.Aerie), vm: vmSpec(cfg.VM, false), vmNoCache: vmSpec(cfg.VM, true)}
	r.root = cfg.Dir
	removeRoot := false
	if r.root == "" {
		if r.root, err = os.MkdirTemp("", tmpPrefix); err != nil {
			return nil, nil, err
		}
		removeRoot = true
	} else if err := os.MkdirAll(r.root, 0o755); err != nil {
		return nil, nil, err
	}
	r.fleet = newFleet(r.root, cfg.Log)
	return r, func() {
		r.fleet.stopAll()
		if removeRoot {
			os.RemoveAll(r.root)
		}
	}, nil
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

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:min(3, len(f))], " ")
}

// newWorkload returns the dataset every load writes: tsbs hosts of 10
// series, or about as many series in node targets of 517.
func newWorkload(kind string, sc Scale, seed int64) (workload.Workload, error) {
	return workload.New(kind, workloadSpec(kind, sc.Hosts, sc.Duration, seed))
}

// workloadSpec sizes a workload. TSBS rows are at exact 10 s ticks, as
// TSBS generates them, so that a range query evaluated on the ticks finds
// each row at its own tick in either engine (high-cpu-1's bare selector
// at a 10 s step; VictoriaMetrics' default_rollup looks back one step,
// Prometheus' lookback 5 minutes). Node targets keep their phase and
// jitter.
func workloadSpec(kind string, hosts int, d time.Duration, seed int64) workload.Spec {
	spec := workload.Spec{Targets: hosts, Duration: d, Seed: seed}
	if kind == "node" {
		spec.Targets = max(2, (hosts*10+258)/517) // about as many series as tsbs
	} else {
		spec.Jitter = -1
	}
	return spec
}

func (r *runner) logf(format string, args ...any) {
	fmt.Fprintf(r.cfg.Log, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

// newDir returns a fresh data directory for a peer.
func (r *runner) newDir(peer string) string {
	r.dirs++
	return filepath.Join(r.root, fmt.Sprintf("%02d-%s", r.dirs, peer))
}

// stopAndRemove stops s and removes its data directory.
func (r *runner) stopAndRemove(s *server) error {
	err := r.fleet.stop(s)
	if rmErr := os.RemoveAll(s.dir); err == nil {
		err = rmErr
	}
	return err
}

// ingestAndQueries loads the dataset into a fresh server of each peer
// for every protocol and client count, then keeps the last load's
// servers for the queries.
func (r *runner) ingestAndQueries() error {
	maxClients := slices.Max(r.cfg.Clients)
	var (
		kept    map[string]*server
		lastEnc *encoded
	)
	for pi, proto := range protocols {
		batch := r.cfg.LPBatch
		if proto == remoteWrite {
			batch = r.cfg.RWBatch
		}
		t0 := time.Now()
		enc, err := encodeWorkload(r.w, proto, maxClients, batch)
		if err != nil {
			return fmt.Errorf("encode %s: %w", proto, err)
		}
		r.logf("%s: %d samples in %d requests (%.1f MB), encoded in %.1f s, untimed",
			proto, enc.samples, enc.requests(), float64(enc.bytes)/1e6, time.Since(t0).Seconds())
		r.rep.Samples = enc.samples
		for ci, n := range r.cfg.Clients {
			order := []string{aerie, vm}
			if (pi+ci)%2 == 1 {
				order = []string{vm, aerie}
			}
			last := pi == len(protocols)-1 && ci == len(r.cfg.Clients)-1
			if last {
				kept = map[string]*server{}
			}
			for _, peer := range order {
				res, s, err := r.load(r.specs[peer], enc, n, last)
				if err != nil {
					return fmt.Errorf("%s %s, %d clients: %w", peer, proto, n, err)
				}
				r.rep.Ingest = append(r.rep.Ingest, res)
				r.logf("%-6s %-12s %d clients: %9.0f samples/s, %.2f CPU s/M samples, peak RSS %.0f MiB",
					peer, proto, n, res.SamplesPerSecond, res.CPUSecondsPerMillion, float64(res.PeakRSSBytes)/(1<<20))
				if s != nil {
					kept[peer] = s
				}
			}
		}
		lastEnc = enc
	}
	if err := r.disk(kept, lastEnc.samples); err != nil {
		return err
	}
	return r.queries(kept, lastEnc)
}

// load writes enc into a fresh server of spec from n clients and measures
// it. With keep it returns the server running; otherwise it stops it and
// removes its data.
func (r *runner) load(spec peerSpec, enc *encoded, n int, keep bool) (IngestResult, *server, error) {
	res := IngestResult{Peer: spec.name, Protocol: enc.protocol, Clients: n, Samples: enc.samples, Requests: enc.requests(), BodyBytes: enc.bytes}
	s, err := r.fleet.start(r.ctx, spec, r.newDir(spec.name))
	if err != nil {
		return res, nil, err
	}
	ok := false
	defer func() {
		if !ok {
			r.stopAndRemove(s)
		}
	}()
	watch := startWatch(s)
	before, err := s.stats()
	if err != nil {
		return res, nil, err
	}
	t0 := time.Now()
	retries, err := r.send(s, enc, n)
	wall := time.Since(t0)
	after, statErr := s.stats()
	peak := watch.stop()
	if err != nil {
		return res, nil, err
	}
	if statErr != nil {
		return res, nil, statErr
	}
	res.Retries = retries
	res.Seconds = wall.Seconds()
	res.SamplesPerSecond = float64(enc.samples) / wall.Seconds()
	res.CPUSeconds = (after.cpu - before.cpu).Seconds()
	res.CPUSecondsPerMillion = res.CPUSeconds / (float64(enc.samples) / 1e6)
	res.PeakRSSBytes = max(peak, after.hwm)
	if err := r.waitCounts(s, r.w, enc.perName); err != nil {
		return res, nil, err
	}
	if keep {
		ok = true
		return res, s, nil
	}
	return res, nil, r.stopAndRemove(s)
}

// send writes every request of enc to s from n clients and returns the
// retries.
func (r *runner) send(s *server, enc *encoded, n int) (int, error) {
	ctx, cancel := context.WithCancel(r.ctx)
	defer cancel()
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		first   error
		retries int
	)
	for c := range n {
		bodies := enc.clientBodies(c, n)
		wg.Add(1)
		go func() {
			defer wg.Done()
			rt := 0
			for _, b := range bodies {
				k, err := write(ctx, s, enc.protocol, b.data)
				rt += k
				if err != nil {
					mu.Lock()
					if first == nil {
						first = err
						cancel()
					}
					mu.Unlock()
					return
				}
			}
			mu.Lock()
			retries += rt
			mu.Unlock()
		}()
	}
	wg.Wait()
	if first != nil {
		if err := s.alive(); err != nil {
			return retries, err
		}
	}
	return retries, first
}

// watch samples a server's resident set every 50 ms.
type watch struct {
	stopc, done chan struct{}
	peak        int64 // written by the sampler until done is closed
}

func startWatch(s *server) *watch {
	w := &watch{stopc: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			if st, err := s.stats(); err == nil {
				w.peak = max(w.peak, st.rss)
			}
			select {
			case <-w.stopc:
				return
			case <-t.C:
			}
		}
	}()
	return w
}

func (w *watch) stop() int64 {
	close(w.stopc)
	<-w.done
	return w.peak
}

// countTimeout bounds the wait for written samples to become visible.
const countTimeout = 2 * time.Minute

// waitCounts polls s until, for every metric name, it counts as many
// samples as were written. VictoriaMetrics makes rows searchable only
// seconds after it acknowledged them, unless /internal/force_flush is
// called first, as here. More than written fails at once.
func (r *runner) waitCounts(s *server, w workload.Workload, want map[string]int64) error {
	if s.spec.flush != "" { // make VictoriaMetrics' buffered rows searchable now
		if _, err := get(r.ctx, s, s.spec.flush); err != nil {
			return err
		}
	}
	names := make([]string, 0, len(want))
	for n := range want {
		names = append(names, n)
	}
	slices.Sort(names)
	window := (time.Duration(w.MaxTime()-w.MinTime())*time.Millisecond + time.Minute).Truncate(time.Second)
	deadline := time.Now().Add(countTimeout)
	for _, name := range names {
		for {
			got, err := r.count(s, fmt.Sprintf(`sum(count_over_time(%s[%ds]))`, name, int64(window.Seconds())), w.MaxTime())
			if err != nil {
				return err
			}
			if got == want[name] {
				break
			}
			if got > want[name] {
				return fmt.Errorf("%s counts %d samples of %s, %d were written", s.spec.name, got, name, want[name])
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%s counts %d samples of %s after %v, %d were written", s.spec.name, got, name, countTimeout, want[name])
			}
			select {
			case <-r.ctx.Done():
				return r.ctx.Err()
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
	return nil
}

// count runs an instant query whose answer is one number (none: 0).
func (r *runner) count(s *server, expr string, at int64) (int64, error) {
	b, _, err := promQuery(r.ctx, s, query{expr: expr, start: at, end: at, instant: true, nocache: true})
	if err != nil {
		return 0, err
	}
	res, err := parseResult(b)
	if err != nil {
		return 0, fmt.Errorf("%s %s: %w", s.spec.name, expr, err)
	}
	if len(res.series) == 0 || len(res.series[0].points) == 0 {
		return 0, nil
	}
	return int64(math.Round(res.series[0].points[0].v)), nil
}

// disk measures the data directories of the kept servers once their
// data are on disk: VictoriaMetrics after /internal/force_flush and its
// in-memory parts' flush, Aerie (which has no flush endpoint) after its
// background loop, which looks for due partitions once a minute, has
// flushed them; for both once the size has not changed for a second.
func (r *runner) disk(kept map[string]*server, samples int64) error {
	for _, peer := range []string{vm, aerie} {
		s := kept[peer]
		t0 := time.Now()
		d := DiskResult{Peer: peer, Samples: samples}
		var err error
		if peer == aerie {
			d.Note, err = r.awaitAerieFlush(s)
		} else {
			err = r.awaitVMFlush(s)
		}
		if err != nil {
			return err
		}
		var byTop map[string]int64
		if d.Bytes, byTop, err = r.stableUsage(s.dir); err != nil {
			return err
		}
		d.Seconds = time.Since(t0).Seconds()
		d.BytesPerSample = float64(d.Bytes) / float64(samples)
		if peer == aerie {
			d.WALBytes = byTop["wal"] + byTop["wal-backfill"]
			d.BlockBytes = byTop["blocks"] + byTop["tagdict"]
			if d.BlockSamples, err = r.blockSamples(s); err != nil {
				return err
			}
			if d.BlockSamples > 0 {
				d.BlockBytesPerSample = float64(d.BlockBytes) / float64(d.BlockSamples)
			}
		}
		r.rep.Disk = append(r.rep.Disk, d)
		detail := ""
		if peer == aerie {
			detail = fmt.Sprintf("; WAL %d bytes; blocks and tag dictionary %d bytes holding %d samples, %.3f B/sample", d.WALBytes, d.BlockBytes, d.BlockSamples, d.BlockBytesPerSample)
		}
		r.logf("%-6s disk: %.3f B/sample (%d bytes%s), %.0f s after the load", peer, d.BytesPerSample, d.Bytes, detail, d.Seconds)
	}
	return nil
}

// awaitAerieFlush waits until Aerie's flush loop has flushed and rests:
// aerie_flushes_total has risen and then not changed for 3 s with no
// flush running. It returns a note if no flush came within 90 s.
func (r *runner) awaitAerieFlush(s *server) (string, error) {
	start := time.Now()
	last, since := -1.0, time.Now()
	for {
		m, err := get(r.ctx, s, "/metrics")
		if err != nil {
			return "", err
		}
		flushes, _ := metricValue(m, "aerie_flushes_total")
		groups, _ := metricValue(m, "aerie_flush_groups")
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
		if err := r.sleep(250 * time.Millisecond); err != nil {
			return "", err
		}
	}
}

// awaitVMFlush calls VictoriaMetrics' /internal/force_flush, which makes
// buffered rows searchable in in-memory parts, and waits until those parts
// are on disk (-inmemoryDataFlushInterval, 5 s by default): no rows left
// in storage/inmemory or indexdb/inmemory.
func (r *runner) awaitVMFlush(s *server) error {
	if _, err := get(r.ctx, s, "/internal/force_flush"); err != nil {
		return err
	}
	deadline := time.Now().Add(time.Minute)
	for {
		m, err := get(r.ctx, s, "/metrics")
		if err != nil {
			return err
		}
		data, ok1 := metricValue(m, `vm_rows{type="storage/inmemory"}`)
		index, ok2 := metricValue(m, `vm_rows{type="indexdb/inmemory"}`)
		if !ok1 || !ok2 {
			return fmt.Errorf("%s /metrics has no vm_rows{type=\"storage/inmemory\"} or vm_rows{type=\"indexdb/inmemory\"}", s.spec.name)
		}
		if data == 0 && index == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: rows still in memory a minute after /internal/force_flush", s.spec.name)
		}
		if err := r.sleep(250 * time.Millisecond); err != nil {
			return err
		}
	}
}

// stableUsage returns diskUsage(dir) once it has not changed for a second.
func (r *runner) stableUsage(dir string) (int64, map[string]int64, error) {
	deadline := time.Now().Add(time.Minute)
	last, stable := int64(-1), 0
	for {
		total, byTop, err := diskUsage(dir)
		if err != nil {
			return 0, nil, err
		}
		if total == last {
			stable++
		} else {
			stable = 0
		}
		if stable >= 4 || time.Now().After(deadline) {
			return total, byTop, nil
		}
		last = total
		if err := r.sleep(250 * time.Millisecond); err != nil {
			return 0, nil, err
		}
	}
}

// blockSamples sums the samples of Aerie's blocks
// (/api/v1/status/tsdb/blocks).
func (r *runner) blockSamples(s *server) (int64, error) {
	b, err := get(r.ctx, s, "/api/v1/status/tsdb/blocks")
	if err != nil {
		return 0, err
	}
	var resp struct {
		Data struct {
			Blocks []struct {
				Stats struct {
					NumSamples int64 `json:"numSamples"`
				} `json:"stats"`
			} `json:"blocks"`
		} `json:"data"`
	}
	if err := json.Unmarshal(b, &resp); err != nil {
		return 0, fmt.Errorf("%s /api/v1/status/tsdb/blocks: %w", s.spec.name, err)
	}
	var n int64
	for _, bl := range resp.Data.Blocks {
		n += bl.Stats.NumSamples
	}
	return n, nil
}

// queries restarts the kept servers (Aerie on its data; VictoriaMetrics
// twice, with -search.disableCache on its data and with its defaults on
// a copy), checks that each holds every sample, and runs the patterns.
func (r *runner) queries(kept map[string]*server, enc *encoded) error {
	aerieOld, vmOld := kept[aerie], kept[vm]
	if err := r.fleet.stop(aerieOld); err != nil {
		return err
	}
	if err := r.fleet.stop(vmOld); err != nil {
		return err
	}
	defer os.RemoveAll(aerieOld.dir)
	defer os.RemoveAll(vmOld.dir)
	copyDirName := vmOld.dir + "-copy"
	if err := copyDir(vmOld.dir, copyDirName); err != nil {
		return err
	}
	defer os.RemoveAll(copyDirName)
	peers := []string{aerie, vmNoCache, vm}
	dirs := map[string]string{aerie: aerieOld.dir, vmNoCache: vmOld.dir, vm: copyDirName}
	srv := map[string]*server{}
	for _, p := range peers {
		s, err := r.fleet.start(r.ctx, r.specs[p], dirs[p])
		if err != nil {
			return err
		}
		defer r.fleet.stop(s)
		srv[p] = s
	}
	for _, p := range peers {
		if err := r.waitCounts(srv[p], r.w, enc.perName); err != nil {
			return err
		}
	}
	r.logf("queries: %d instances per pattern, each warmed once and run %d times per peer", r.sc.Instances, r.sc.Repeats)
	hosts := hostNames(r.w, r.prof)
	var mismatches []string
	for _, pt := range patternsFor(r.prof) {
		qr, err := r.runPattern(pt, peers, srv, hosts)
		if err != nil {
			return err
		}
		r.rep.Queries = append(r.rep.Queries, qr)
		var parts []string
		for _, p := range qr.Peers {
			if p.Error != "" {
				parts = append(parts, fmt.Sprintf("%s error", p.Peer))
			} else {
				parts = append(parts, fmt.Sprintf("%s %.2f ms", p.Peer, p.MedianMs))
			}
		}
		r.logf("%-18s %s; %s", pt.name, strings.Join(parts, ", "), qr.Agreement)
		if qr.mismatch {
			mismatches = append(mismatches, fmt.Sprintf("%s: %s", pt.name, qr.Agreement))
		}
	}
	if len(mismatches) > 0 {
		return fmt.Errorf("%w: %s", ErrMismatch, strings.Join(mismatches, "; "))
	}
	return nil
}

// knownDifference returns why the answers of a pattern may differ
// between Aerie and VictoriaMetrics by design, or "".
func knownDifference(pt pattern, p profile) string {
	if pt.name == "double-groupby-1" && strings.Contains(p.cpuHour, "rate(") {
		return "VictoriaMetrics' rate() does not extrapolate to the window's edges"
	}
	return ""
}

// runPattern runs the instances of one pattern over every peer.
func (r *runner) runPattern(pt pattern, peers []string, srv map[string]*server, hosts []string) (QueryResult, error) {
	qr := QueryResult{Pattern: pt.name, Comment: pt.comment, Agreement: agree}
	h := fnv.New64a()
	h.Write([]byte(pt.name))
	rnd := rand.New(rand.NewPCG(uint64(r.cfg.Seed), h.Sum64()))
	lat := map[string][]time.Duration{}
	errs := map[string]string{}
	empty := 0
	var notes []string
	note := func(s string) {
		if !slices.Contains(notes, s) {
			notes = append(notes, s)
		}
	}
	for inst := 0; inst < r.sc.Instances; inst++ {
		q := pt.instance(rnd, r.prof, hosts, r.w.MinTime(), r.w.MaxTime(), r.w.Interval())
		if inst == 0 {
			qr.Example = q.expr
		}
		// Warm-up: unrecorded; its answers are compared.
		res := map[string]result{}
		for _, p := range peers {
			if errs[p] != "" {
				continue
			}
			b, _, err := promQuery(r.ctx, srv[p], q)
			if err != nil {
				return qr, err
			}
			rs, err := parseResult(b)
			var ae *apiError
			switch {
			case errors.As(err, &ae):
				errs[p] = ae.msg
				continue
			case err != nil:
				return qr, fmt.Errorf("%s %s: %w", p, q.expr, err)
			}
			res[p] = rs
		}
		ref, ok := res[vmNoCache]
		if ok && ref.points() == 0 {
			empty++
		}
		for _, p := range []string{aerie, vm} {
			got, ok2 := res[p]
			if !ok || !ok2 {
				continue
			}
			switch v, msg := compare(got, ref); v {
			case agreeName:
				note(fmt.Sprintf("%s: %s", p, agreeName))
			case differ:
				if why := knownDifference(pt, r.prof); why != "" && p == aerie {
					note(fmt.Sprintf("values differ (%s)", why))
					continue
				}
				note(fmt.Sprintf("MISMATCH %s vs %s on %s [%d..%d]: %s", p, vmNoCache, q.expr, q.start, q.end, msg))
				qr.mismatch = true
			}
		}
		for rep := 0; rep < r.sc.Repeats; rep++ {
			k := inst*r.sc.Repeats + rep
			for j := range peers {
				p := peers[(j+k)%len(peers)] // rotate who goes first
				if errs[p] != "" {
					continue
				}
				b, d, err := promQuery(r.ctx, srv[p], q)
				if err != nil {
					return qr, err
				}
				if _, err := parseResult(b); err != nil {
					errs[p] = err.Error()
					continue
				}
				lat[p] = append(lat[p], d)
			}
		}
	}
	for p, e := range errs {
		note(fmt.Sprintf("%s error: %s", p, e))
	}
	if empty > 0 {
		note(fmt.Sprintf("%d of %d instances answered nothing", empty, r.sc.Instances))
	}
	slices.Sort(notes)
	if len(notes) > 0 {
		qr.Agreement = strings.Join(notes, "; ")
	}
	for _, p := range peers {
		qp := QueryPeer{Peer: p, Runs: len(lat[p]), Error: errs[p]}
		if qp.Error == "" {
			qp.MedianMs = ms(percentile(lat[p], 0.5))
			qp.P99Ms = ms(percentile(lat[p], 0.99))
		}
		qr.Peers = append(qr.Peers, qp)
	}
	return qr, nil
}

// hostNames returns the host label values of w's targets that have the
// profile's first metric.
func hostNames(w workload.Workload, p profile) []string {
	var hs []string
	seen := map[string]bool{}
	for i := 0; i < w.NumTargets(); i++ {
		for _, ls := range w.Series(i) {
			if h := ls.Get(p.host); h != "" && !seen[h] && ls.Get(labels.MetricName) == p.metric1 {
				seen[h] = true
				hs = append(hs, h)
			}
		}
	}
	return hs
}

// cardinality registers new series in a fresh server of each peer over
// line protocol and measures the time and the resident memory they take.
func (r *runner) cardinality() error {
	per := len(r.w.Series(0))
	spec := workloadSpec(r.cfg.Workload, 1, r.w.Interval(), r.cfg.Seed+1)
	spec.Targets = (r.sc.NewSeries + per - 1) / per
	w, err := workload.New(r.cfg.Workload, spec)
	if err != nil {
		return err
	}
	n := slices.Max(r.cfg.Clients)
	enc, err := encodeWorkload(w, lineProtocol, n, r.cfg.LPBatch)
	if err != nil {
		return err
	}
	series := int(enc.samples) // one sample per series
	for _, peer := range []string{aerie, vm} {
		res, err := r.register(r.specs[peer], w, enc, n, series)
		if err != nil {
			return fmt.Errorf("%s: %w", peer, err)
		}
		r.rep.Cardinality = append(r.rep.Cardinality, res)
		r.logf("%-6s %d new series from %d clients in %.2f s; %.0f B of RSS per series", peer, series, n, res.Seconds, res.RSSBytesPerSeries)
	}
	return nil
}

// settle is how long a server rests before and after the cardinality
// load before its resident set is read.
const settle = 3 * time.Second

func (r *runner) register(spec peerSpec, w workload.Workload, enc *encoded, n, series int) (CardinalityResult, error) {
	res := CardinalityResult{Peer: spec.name, Series: series, Clients: n}
	s, err := r.fleet.start(r.ctx, spec, r.newDir(spec.name))
	if err != nil {
		return res, err
	}
	defer r.stopAndRemove(s)
	if err := r.sleep(settle); err != nil {
		return res, err
	}
	before, err := s.stats()
	if err != nil {
		return res, err
	}
	t0 := time.Now()
	if _, err := r.send(s, enc, n); err != nil {
		return res, err
	}
	res.Seconds = time.Since(t0).Seconds()
	mid, err := s.stats()
	if err != nil {
		return res, err
	}
	if err := r.waitCounts(s, w, enc.perName); err != nil {
		return res, err
	}
	if err := r.sleep(settle); err != nil {
		return res, err
	}
	after, err := s.stats()
	if err != nil {
		return res, err
	}
	res.SeriesPerSecond = float64(series) / res.Seconds
	res.CPUSeconds = (mid.cpu - before.cpu).Seconds()
	res.RSSBeforeBytes, res.RSSAfterBytes = before.rss, after.rss
	res.RSSBytesPerSeries = float64(after.rss-before.rss) / float64(series)
	return res, r.stopAndRemove(s)
}

func (r *runner) sleep(d time.Duration) error {
	select {
	case <-r.ctx.Done():
		return r.ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// percentile returns the q-quantile of ds by the nearest-rank method.
func percentile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[min(max(i, 0), len(s)-1)]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
