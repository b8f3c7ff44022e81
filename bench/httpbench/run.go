package httpbench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/aerie-db/aerie/bench/harness"
	"github.com/aerie-db/aerie/bench/tsbs"
	"github.com/aerie-db/aerie/bench/workload"
)

// ErrMismatch is returned (with the report) when two peers answered a
// query differently beyond the documented differences (knownDifference).
var ErrMismatch = errors.New("peers disagree")

// httpRun is one `aerie bench http` run.
type httpRun struct {
	*runner
	cfg   Config
	sc    Scale
	prof  tsbs.Profile
	rep   *Report
	specs map[string]harness.PeerSpec
}

// Run measures Aerie's server against VictoriaMetrics over HTTP on
// loopback (doc.go) and returns its *Report. A run whose servers disagree
// on an answer returns the report and an error wrapping ErrMismatch.
func Run(ctx context.Context, cfg Config) (harness.Report, error) {
	sc, err := cfg.check()
	if err != nil {
		return nil, err
	}
	rn, cleanup, err := newRunner(ctx, &cfg.Options, cfg.VM, "aerie-bench-http-")
	if err != nil {
		return nil, err
	}
	defer cleanup()
	r := &httpRun{runner: rn, cfg: cfg, sc: sc, prof: tsbs.CPU}
	if cfg.Workload == "node" {
		r.prof = tsbs.Node
	}
	if r.w, err = workload.New(cfg.Workload, workloadSpec(cfg.Workload, sc.Hosts, sc.Duration, cfg.Seed)); err != nil {
		return nil, err
	}
	off, err := r.cacheOffFlag()
	if err != nil {
		return nil, err
	}
	r.specs = map[string]harness.PeerSpec{aerie: aerieSpec(cfg.Aerie, aerie), aerieNoCache: aerieSpec(cfg.Aerie, aerieNoCache, off),
		vm: vmSpec(cfg.VM, vm), vmNoCache: vmSpec(cfg.VM, vmNoCache, "-search.disableCache")}
	r.rep = newReport(cfg, sc, r.w)
	r.rep.Peers = describe(r.rep.Commit, cfg.VM, r.specs[aerie], r.specs[aerieNoCache], r.specs[vm], r.specs[vmNoCache])
	r.rep.Config["loadavg_start"] = harness.LoadAvg()
	var mismatch error
	for _, phase := range []struct {
		name string
		fn   func() error
	}{
		{"ingest and queries", r.ingestAndQueries},
		{"cardinality", r.cardinality},
	} {
		if !slices.Contains(cfg.Phases, strings.Fields(phase.name)[0]) {
			continue
		}
		r.logf("== %s", phase.name)
		if err := phase.fn(); errors.Is(err, ErrMismatch) {
			mismatch = err
		} else if err != nil {
			return nil, fmt.Errorf("%s: %w", phase.name, err)
		}
	}
	r.rep.Config["loadavg_end"] = harness.LoadAvg()
	r.rep.Done()
	return r.rep, mismatch
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

// ingestAndQueries loads the dataset into a fresh server of each peer
// for every protocol and client count, then keeps the last load's
// servers for the disk and the queries.
func (r *httpRun) ingestAndQueries() error {
	kept := map[string]*harness.Peer{}
	var enc *encoded
	for pi, proto := range protocols {
		batch := r.cfg.LPBatch
		if proto == remoteWrite {
			batch = r.cfg.RWBatch
		}
		t0 := time.Now()
		var err error
		if enc, err = encodeWorkload(r.w, proto, slices.Max(r.cfg.Clients), batch); err != nil {
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
			for _, peer := range order {
				res, p, err := r.load(r.specs[peer], enc, n, last)
				if err != nil {
					return fmt.Errorf("%s %s, %d clients: %w", peer, proto, n, err)
				}
				r.rep.Ingest = append(r.rep.Ingest, res)
				r.logf("%-6s %-12s %d clients: %9.0f samples/s, %.2f CPU s/M samples, peak RSS %.0f MiB",
					peer, proto, n, res.SamplesPerSecond, res.CPUSecondsPerMillion, harness.MiB(res.PeakRSSBytes))
				if p != nil {
					kept[peer] = p
				}
			}
		}
	}
	for _, peer := range []string{vm, aerie} {
		if err := r.disk(kept[peer], enc.samples); err != nil {
			return err
		}
	}
	return r.queries(kept, enc)
}

// disk measures a kept server's data directory once its data are on
// disk: VictoriaMetrics after /internal/force_flush and its in-memory
// parts' flush, Aerie (which has no flush endpoint) after its background
// loop, which looks for due partitions once a minute, has flushed them;
// for both once the size has not changed for a second.
func (r *httpRun) disk(p *harness.Peer, samples int64) error {
	t0 := time.Now()
	d := DiskResult{Peer: p.Spec.Name, Samples: samples}
	var err error
	if isVM(p.Spec.Name) {
		err = harness.AwaitVMFlush(r.ctx, p)
	} else {
		d.Note, err = r.awaitAerieFlush(p)
	}
	if err != nil {
		return err
	}
	var byTop map[string]int64
	if d.Bytes, byTop, err = r.stableUsage(p.Dir); err != nil {
		return err
	}
	d.Seconds = time.Since(t0).Seconds()
	d.BytesPerSample = float64(d.Bytes) / float64(samples)
	detail := ""
	if !isVM(p.Spec.Name) {
		d.WALBytes = byTop["wal"] + byTop["wal-backfill"]
		d.BlockBytes = byTop["blocks"] + byTop["tagdict"]
		if d.BlockSamples, err = r.blockSamples(p); err != nil {
			return err
		}
		if d.BlockSamples > 0 {
			d.BlockBytesPerSample = float64(d.BlockBytes) / float64(d.BlockSamples)
		}
		detail = fmt.Sprintf("; WAL %d bytes; blocks and tag dictionary %d bytes holding %d samples, %.3f B/sample", d.WALBytes, d.BlockBytes, d.BlockSamples, d.BlockBytesPerSample)
	}
	r.rep.Disk = append(r.rep.Disk, d)
	r.logf("%-6s disk: %.3f B/sample (%d bytes%s), %.0f s after the load", d.Peer, d.BytesPerSample, d.Bytes, detail, d.Seconds)
	return nil
}

// stableUsage returns harness.DiskUsage(dir) once it has not changed for
// a second.
func (r *httpRun) stableUsage(dir string) (int64, map[string]int64, error) {
	deadline := time.Now().Add(time.Minute)
	last, stable := int64(-1), 0
	for {
		total, byTop, err := harness.DiskUsage(dir)
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
		if err := harness.Sleep(r.ctx, 250*time.Millisecond); err != nil {
			return 0, nil, err
		}
	}
}

// blockSamples sums the samples of Aerie's blocks
// (/api/v1/status/tsdb/blocks).
func (r *httpRun) blockSamples(p *harness.Peer) (int64, error) {
	b, err := p.Get(r.ctx, "/api/v1/status/tsdb/blocks")
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
		return 0, fmt.Errorf("%s /api/v1/status/tsdb/blocks: %w", p.Spec.Name, err)
	}
	var n int64
	for _, bl := range resp.Data.Blocks {
		n += bl.Stats.NumSamples
	}
	return n, nil
}

// queries restarts the kept servers, each twice: Aerie with its results
// cache off on its data and with its defaults on a copy; VictoriaMetrics
// with -search.disableCache on its data and with its defaults on a copy.
// It checks that each holds every sample, and runs the patterns.
func (r *httpRun) queries(kept map[string]*harness.Peer, enc *encoded) error {
	for _, p := range kept {
		if err := r.fleet.Stop(p); err != nil {
			return err
		}
		defer os.RemoveAll(p.Dir)
	}
	dirs := map[string]string{aerieNoCache: kept[aerie].Dir, aerie: kept[aerie].Dir + "-copy", vmNoCache: kept[vm].Dir, vm: kept[vm].Dir + "-copy"}
	for _, p := range []string{aerie, vm} {
		if err := harness.CopyDir(kept[p].Dir, dirs[p]); err != nil {
			return err
		}
		defer os.RemoveAll(dirs[p])
	}
	peers := []string{aerieNoCache, vmNoCache, aerie, vm}
	srv := map[string]*harness.Peer{}
	for _, name := range peers {
		p, err := r.fleet.Start(r.ctx, r.specs[name], dirs[name])
		if err != nil {
			return err
		}
		defer r.fleet.Stop(p)
		srv[name] = p
	}
	for _, name := range peers {
		if err := r.waitCounts(srv[name], r.w, enc.perName); err != nil {
			return err
		}
	}
	r.logf("queries: %d instances per pattern, each warmed once and run %d times per peer", r.sc.Instances, r.sc.Repeats)
	g := tsbs.Gen{Profile: r.prof, Dialect: tsbs.VictoriaMetrics, Hosts: tsbs.Hosts(r.w, r.prof),
		MinT: r.w.MinTime(), MaxT: r.w.MaxTime(), Interval: r.w.Interval()}
	var mismatches []string
	for _, pt := range tsbs.Patterns(r.prof) {
		qr, err := r.runPattern(g, pt, peers, srv)
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
		r.logf("%-18s %s; %s", pt.Name, strings.Join(parts, ", "), qr.Agreement)
		if qr.mismatch {
			mismatches = append(mismatches, fmt.Sprintf("%s: %s", pt.Name, qr.Agreement))
		}
	}
	if len(mismatches) > 0 {
		return fmt.Errorf("%w: %s", ErrMismatch, strings.Join(mismatches, "; "))
	}
	return nil
}

// knownDifference returns why the answers of a pattern may differ
// between Aerie and VictoriaMetrics by design, or "".
func knownDifference(pt tsbs.Pattern, p tsbs.Profile) string {
	if pt.Name == "double-groupby-1" && strings.Contains(p.CPUHour, "rate(") {
		return "VictoriaMetrics' rate() does not extrapolate to the window's edges"
	}
	return ""
}

// runPattern runs the instances of one pattern over every peer: each
// once unrecorded, its answers compared with vm-nocache's, then Repeats
// times per peer, rotating which goes first.
func (r *httpRun) runPattern(g tsbs.Gen, pt tsbs.Pattern, peers []string, srv map[string]*harness.Peer) (QueryResult, error) {
	qr := QueryResult{Pattern: pt.Name, Comment: pt.Comment, Agreement: agree}
	rnd := tsbs.Rand(r.cfg.Seed, pt.Name)
	lat := map[string][]time.Duration{}
	errs := map[string]string{}
	empty := 0
	var agreement notes
	for inst := range r.sc.Instances {
		q := query{Query: g.Instance(pt, rnd)}
		if inst == 0 {
			qr.Example = q.Expr
		}
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
				return qr, fmt.Errorf("%s %s: %w", p, q.Expr, err)
			}
			res[p] = rs
		}
		ref, ok := res[vmNoCache]
		if ok && ref.points() == 0 {
			empty++
		}
		for _, p := range []string{aerieNoCache, aerie, vm} {
			got, ok2 := res[p]
			if !ok || !ok2 {
				continue
			}
			switch v, msg := compare(got, ref); v {
			case agreeName:
				agreement.add(fmt.Sprintf("%s: %s", p, agreeName))
			case differ:
				if why := knownDifference(pt, r.prof); why != "" && p != vm {
					agreement.add(fmt.Sprintf("values differ (%s)", why))
					continue
				}
				agreement.add(fmt.Sprintf("MISMATCH %s vs %s on %s [%d..%d]: %s", p, vmNoCache, q.Expr, q.Start, q.End, msg))
				qr.mismatch = true
			}
		}
		for rep := range r.sc.Repeats {
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
		agreement.add(fmt.Sprintf("%s error: %s", p, e))
	}
	if empty > 0 {
		agreement.add(fmt.Sprintf("%d of %d instances answered nothing", empty, r.sc.Instances))
	}
	slices.Sort(agreement)
	if len(agreement) > 0 {
		qr.Agreement = strings.Join(agreement, "; ")
	}
	for _, p := range peers {
		qp := QueryPeer{Peer: p, Runs: len(lat[p]), Error: errs[p]}
		if qp.Error == "" {
			qp.MedianMs = harness.Ms(harness.Percentile(lat[p], 0.5))
			qp.P99Ms = harness.Ms(harness.Percentile(lat[p], 0.99))
		}
		qr.Peers = append(qr.Peers, qp)
	}
	return qr, nil
}

// cardinality registers new series in a fresh server of each peer over
// line protocol and measures the time and the resident memory they take.
func (r *httpRun) cardinality() error {
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

// heapInuse reads the Go heap in use from a peer's /metrics (Aerie and
// VictoriaMetrics both expose Go's memstats there, Aerie's with its
// aerie_ prefix).
func heapInuse(ctx context.Context, p *harness.Peer) (int64, error) {
	m, err := p.Get(ctx, "/metrics")
	if err != nil {
		return 0, err
	}
	for _, name := range []string{"go_memstats_heap_inuse_bytes", "aerie_go_memstats_heap_inuse_bytes"} {
		if v, ok := harness.MetricValue(m, name); ok {
			return int64(v), nil
		}
	}
	return 0, fmt.Errorf("%s: no go_memstats_heap_inuse_bytes in /metrics", p.Spec.Name)
}

// settle is how long a server rests before and after the cardinality
// load before its resident set is read.
const settle = 3 * time.Second

func (r *httpRun) register(spec harness.PeerSpec, w workload.Workload, enc *encoded, n, series int) (CardinalityResult, error) {
	res := CardinalityResult{Peer: spec.Name, Series: series, Clients: n}
	p, err := r.start(spec)
	if err != nil {
		return res, err
	}
	defer r.stopAndRemove(p)
	if err := harness.Sleep(r.ctx, settle); err != nil {
		return res, err
	}
	before, err := p.Stats()
	if err != nil {
		return res, err
	}
	if res.HeapBeforeBytes, err = heapInuse(r.ctx, p); err != nil {
		return res, err
	}
	t0 := time.Now()
	if _, err := r.send(p, enc, n); err != nil {
		return res, err
	}
	res.Seconds = time.Since(t0).Seconds()
	mid, err := p.Stats()
	if err != nil {
		return res, err
	}
	// The memory the series take before the count queries below, which
	// add their own (logged only: the report's figures are after them).
	if err := harness.Sleep(r.ctx, settle); err != nil {
		return res, err
	}
	if reg, err := p.Stats(); err == nil {
		heap, _ := heapInuse(r.ctx, p)
		r.logf("%-6s before the count queries: %.0f B of RSS per series, heap %.0f", spec.Name, float64(reg.RSS-before.RSS)/float64(series), float64(heap-res.HeapBeforeBytes)/float64(series))
	}
	if err := r.waitCounts(p, w, enc.perName); err != nil {
		return res, err
	}
	if err := harness.Sleep(r.ctx, settle); err != nil {
		return res, err
	}
	after, err := p.Stats()
	if err != nil {
		return res, err
	}
	if res.HeapAfterBytes, err = heapInuse(r.ctx, p); err != nil {
		return res, err
	}
	if spec.Name == aerie && r.cfg.HeapProfile != "" {
		prof, err := p.Get(r.ctx, "/debug/pprof/heap?gc=1")
		if err != nil {
			return res, err
		}
		if err := os.WriteFile(r.cfg.HeapProfile, prof, 0o644); err != nil {
			return res, err
		}
	}
	res.HeapBytesPerSeries = float64(res.HeapAfterBytes-res.HeapBeforeBytes) / float64(series)
	res.SeriesPerSecond = float64(series) / res.Seconds
	res.CPUSeconds = (mid.CPU - before.CPU).Seconds()
	res.RSSBeforeBytes, res.RSSAfterBytes = before.RSS, after.RSS
	res.RSSBytesPerSeries = float64(after.RSS-before.RSS) / float64(series)
	return res, r.stopAndRemove(p)
}
