package httpbench

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aerie-db/aerie/bench/harness"
	"github.com/aerie-db/aerie/bench/tsbs"
	"github.com/aerie-db/aerie/bench/workload"
	"golang.org/x/sync/errgroup"
)

// dashboardPeers are the peers of the dashboard replay (doc.go,
// "Dashboard replay") in the order of the report.
var dashboardPeers = []string{aerieOff, aerieOn, vm}

// DashboardConfig is one `aerie bench dashboard` run.
type DashboardConfig struct {
	harness.Options
	VM        string // the victoria-metrics binary
	Refreshes int    // 0 → the scale's
}

// DashboardScale sizes a replay.
type DashboardScale struct {
	Name      string
	Targets   int // node_exporter targets of 517 series
	Refreshes int // dashboard refreshes replayed, 20 queries each
	// Settle waits, before the replay, until Aerie's flush loop (once a
	// minute) has flushed the partitions the load made due, so that the
	// flushes' CPU is not counted as the replay's.
	Settle bool
}

// DashboardScales are the predefined sizes: small is what CI runs (≲1
// min on two cores), medium what `make benchmarks` runs.
var DashboardScales = map[string]DashboardScale{
	"small":  {Name: "small", Targets: 2, Refreshes: 3},
	"medium": {Name: "medium", Targets: 10, Refreshes: 40, Settle: true},
}

const (
	dashRange   = 6 * time.Hour    // the dashboard's time range, "Last 6 hours"
	dashRefresh = 30 * time.Second // its refresh interval
	// dashStep is every panel's step: 6 h over 720 points, what Grafana
	// picks for a ~1000 px panel over 15 s scrapes with its max data
	// points at 720 (its $__interval rounds 21.6 s to 20 s without).
	dashStep = 30 * time.Second
	// dashRate is $__rate_interval: max($__interval + scrape interval,
	// 4 × scrape interval) = max(45 s, 60 s).
	dashRate = "1m"
	// dashClients is how many panels of a refresh are in flight at once:
	// a browser's connections per host.
	dashClients = 6
	// dashLoadClients load the data (remote write).
	dashLoadClients = 4
	// dashMargin is data before the first refresh's range: Prometheus'
	// lookback (5 min) and the rate window, with room.
	dashMargin = 10 * time.Minute
)

// dashboardPanels are the 20 panels: those of a fleet overview of
// node_exporter hosts (Node Exporter Full's queries over every instance
// of job="node"), with $__rate_interval written out.
func dashboardPanels() []DashboardPanel {
	sel := func(name, extra string) string {
		if extra != "" {
			extra = "," + extra
		}
		return fmt.Sprintf(`%s{job="node"%s}`, name, extra)
	}
	rate := func(fn, name, extra string) string {
		return fmt.Sprintf(`%s(%s[%s])`, fn, sel(name, extra), dashRate)
	}
	const fs = `fstype!~"tmpfs|vfat"`
	return []DashboardPanel{
		{Title: "CPU busy %", Expr: fmt.Sprintf(`100 * (1 - avg by (instance) (%s))`, rate("rate", "node_cpu_seconds_total", `mode="idle"`))},
		{Title: "CPU by mode", Expr: fmt.Sprintf(`sum by (instance, mode) (%s)`, rate("rate", "node_cpu_seconds_total", `mode!="idle"`))},
		{Title: "CPU by mode, fleet (irate)", Expr: fmt.Sprintf(`sum by (mode) (%s)`, rate("irate", "node_cpu_seconds_total", ""))},
		{Title: "I/O wait %", Expr: fmt.Sprintf(`avg by (instance) (%s) * 100`, rate("irate", "node_cpu_seconds_total", `mode="iowait"`))},
		{Title: "load 1m", Expr: sel("node_load1", "")},
		{Title: "load 15m per CPU", Expr: fmt.Sprintf(`%s / on (instance) count by (instance) (%s)`, sel("node_load15", ""), sel("node_cpu_seconds_total", `mode="idle"`))},
		{Title: "memory used %", Expr: fmt.Sprintf(`100 * (1 - %s / %s)`, sel("node_memory_MemAvailable_bytes", ""), sel("node_memory_MemTotal_bytes", ""))},
		{Title: "memory available", Expr: sel("node_memory_MemAvailable_bytes", "")},
		{Title: "memory used", Expr: fmt.Sprintf(`%s - %s - %s - %s`, sel("node_memory_MemTotal_bytes", ""), sel("node_memory_MemFree_bytes", ""),
			sel("node_memory_Buffers_bytes", ""), sel("node_memory_Cached_bytes", ""))},
		{Title: "disk read B/s", Expr: rate("rate", "node_disk_read_bytes_total", "")},
		{Title: "disk written B/s", Expr: rate("rate", "node_disk_written_bytes_total", "")},
		{Title: "disk IOPS", Expr: rate("rate", "node_disk_reads_completed_total", "") + " + " + rate("rate", "node_disk_writes_completed_total", "")},
		{Title: "disk busy", Expr: rate("rate", "node_disk_io_time_seconds_total", "")},
		{Title: "filesystem used %", Expr: fmt.Sprintf(`100 - %s * 100 / %s`, sel("node_filesystem_avail_bytes", fs), sel("node_filesystem_size_bytes", fs))},
		{Title: "network received b/s", Expr: rate("rate", "node_network_receive_bytes_total", `device!="lo"`) + " * 8"},
		{Title: "network transmitted b/s", Expr: rate("rate", "node_network_transmit_bytes_total", `device!="lo"`) + " * 8"},
		{Title: "packets received (irate)", Expr: rate("irate", "node_network_receive_packets_total", `device!="lo"`)},
		{Title: "context switches", Expr: rate("rate", "node_context_switches_total", "")},
		{Title: "interrupts", Expr: rate("rate", "node_intr_total", "")},
		{Title: "TCP connections", Expr: sel("node_netstat_Tcp_CurrEstab", "")},
	}
}

// refreshEnds returns the end of every refresh: refresh k of n (from 1)
// ends at tEnd − (n−k)·dashRefresh, tEnd aligned down to the step as
// Grafana aligns its ranges (start and end floored to the step).
func refreshEnds(dataEnd int64, n int) []int64 {
	step := dashStep.Milliseconds()
	tEnd := dataEnd - tsbs.Mod(dataEnd, step)
	ends := make([]int64, n)
	for k := 1; k <= n; k++ {
		e := tEnd - int64(n-k)*dashRefresh.Milliseconds()
		ends[k-1] = e - tsbs.Mod(e, step)
	}
	return ends
}

// refreshQueries returns the panels' queries of the refresh ending at end.
func refreshQueries(panels []DashboardPanel, end int64) []query {
	qs := make([]query, len(panels))
	for i, p := range panels {
		qs[i] = query{Query: tsbs.Query{Expr: p.Expr, Start: end - dashRange.Milliseconds(), End: end, Step: dashStep}, gzip: true}
	}
	return qs
}

// cacheCounters are the results cache's counters on Aerie's /metrics.
var cacheCounters = []string{"hits", "partial_hits", "misses", "passed", "engine_queries", "invalidations", "stores_skipped"}

// vmCacheCounters are VictoriaMetrics' rollup result cache counters.
var vmCacheCounters = []string{"vm_rollup_result_cache_full_hits_total", "vm_rollup_result_cache_partial_hits_total", "vm_rollup_result_cache_miss_total"}

// check fills the defaults of cfg and validates it.
func (cfg *DashboardConfig) check() (DashboardScale, error) {
	sc, ok := DashboardScales[cfg.Scale]
	if !ok {
		return sc, fmt.Errorf("--scale=%q: want small or medium", cfg.Scale)
	}
	if cfg.Refreshes < 0 || cfg.Refreshes > 10_000 {
		return sc, fmt.Errorf("--refreshes=%d: want 1 to 10000 (0: the scale's)", cfg.Refreshes)
	}
	if cfg.Refreshes > 0 {
		sc.Refreshes = cfg.Refreshes
	}
	if cfg.Seed == 0 {
		cfg.Seed = 1
	}
	return sc, nil
}

// RunDashboard replays a Grafana dashboard against Aerie with its results
// cache off and on and against VictoriaMetrics (doc.go, "Dashboard
// replay") and returns its *DashboardReport. If an answer of Aerie with
// the cache differs from Aerie's without, it returns the report and an
// error wrapping ErrMismatch.
func RunDashboard(ctx context.Context, cfg DashboardConfig) (harness.Report, error) {
	sc, err := cfg.check()
	if err != nil {
		return nil, err
	}
	r, cleanup, err := newRunner(ctx, &cfg.Options, cfg.VM, "aerie-bench-dashboard-")
	if err != nil {
		return nil, err
	}
	defer cleanup()
	t0 := time.Now()
	rep := &DashboardReport{Header: harness.NewHeader(DashboardKind, sc.Name)}

	// The data end at the wall clock's now, as a live dashboard's do.
	span := dashRange + time.Duration(sc.Refreshes)*dashRefresh + dashMargin
	interval := (15 * time.Second).Milliseconds()
	start := t0.Add(-span).UnixMilli()
	start -= tsbs.Mod(start, interval)
	if r.w, err = workload.New("node", workload.Spec{Targets: sc.Targets, Duration: span, Start: start, Seed: cfg.Seed}); err != nil {
		return nil, err
	}
	off, err := r.cacheOffFlag()
	if err != nil {
		return nil, err
	}
	specs := []harness.PeerSpec{aerieSpec(cfg.Aerie, aerieOff, off), aerieSpec(cfg.Aerie, aerieOn), vmSpec(cfg.VM, vm)}
	rep.fill(cfg, sc, r.w)
	rep.Peers = describe(rep.Commit, cfg.VM, specs...)
	rep.Config["loadavg_start"] = harness.LoadAvg()

	enc, err := encodeWorkload(r.w, remoteWrite, dashLoadClients, defaultRWBatch)
	if err != nil {
		return nil, fmt.Errorf("encode: %w", err)
	}
	rep.Samples = enc.samples
	r.logf("dashboard: %d targets, %d samples up to now, loading into %v (remote write, %d clients)", sc.Targets, enc.samples, dashboardPeers, dashLoadClients)
	srv := map[string]*harness.Peer{}
	for _, sp := range specs {
		res, p, err := r.load(sp, enc, dashLoadClients, true)
		if err != nil {
			return nil, fmt.Errorf("load %s: %w", sp.Name, err)
		}
		defer r.stopAndRemove(p)
		srv[sp.Name] = p
		rep.Load = append(rep.Load, DashboardLoad{Peer: sp.Name, Seconds: res.Seconds, CPUSeconds: res.CPUSeconds})
		r.logf("%-9s loaded in %.1f s, %.1f CPU s; every sample counted back", sp.Name, res.Seconds, res.CPUSeconds)
	}
	if sc.Settle {
		for _, p := range []string{aerieOff, aerieOn} {
			note, err := r.awaitAerieFlush(srv[p])
			if err != nil {
				return nil, err
			}
			if note != "" {
				rep.Config["settle_"+p] = note
			}
		}
		rep.Config["settled"] = "true"
		r.logf("Aerie's flushes done")
	}
	mismatch := r.replay(srv, sc.Refreshes, rep)
	if mismatch != nil && !errors.Is(mismatch, ErrMismatch) {
		return nil, mismatch
	}
	rep.Config["loadavg_end"] = harness.LoadAvg()
	rep.Done()
	return rep, mismatch
}

// snapshot is what the replay reads of a server between refreshes.
type snapshot struct {
	cpu      time.Duration
	counters map[string]float64 // Aerie-on's and VictoriaMetrics' cache counters
}

func (r *runner) snapshot(p string, s *harness.Peer) (snapshot, error) {
	st, err := s.Stats()
	if err != nil {
		return snapshot{}, err
	}
	snap := snapshot{cpu: st.CPU, counters: map[string]float64{}}
	var names []string
	switch p {
	case aerieOn:
		for _, c := range cacheCounters {
			names = append(names, "aerie_results_cache_"+c+"_total")
		}
	case vm:
		names = vmCacheCounters
	default:
		return snap, nil
	}
	m, err := s.Get(r.ctx, "/metrics")
	if err != nil {
		return snap, err
	}
	for _, n := range names {
		v, ok := harness.MetricValue(m, n)
		if !ok && p == aerieOn {
			return snap, fmt.Errorf("%s /metrics has no %s", p, n)
		}
		snap.counters[n] = v
	}
	return snap, nil
}

// peerRun accumulates one peer's replay.
type peerRun struct {
	lat, steadyLat  []time.Duration
	wall, firstWall time.Duration
	bytes           int64
	snaps           [3]snapshot // before the first refresh, before the second, after the last
}

// replay runs the refreshes on every peer, one peer after the other in
// each refresh (rotating which goes first), compares the answers and
// fills rep. It returns an error wrapping ErrMismatch if Aerie's answers
// with and without its cache differ, or any other error that stopped it.
func (r *runner) replay(srv map[string]*harness.Peer, n int, rep *DashboardReport) error {
	rep.Panels = dashboardPanels()
	panels := rep.Panels
	ends := refreshEnds(r.w.MaxTime(), n)
	rep.Config["data_end"] = time.UnixMilli(ends[n-1]).UTC().Format(time.RFC3339)
	rep.Config["replay_start_lag"] = time.Since(time.UnixMilli(ends[n-1])).Round(time.Second).String()
	r.logf("replay: %d refreshes × %d panels per peer, %v ranges at a %v step, the last ending at %s (%s ago)",
		n, len(panels), dashRange, dashStep, rep.Config["data_end"], rep.Config["replay_start_lag"])
	runs := map[string]*peerRun{}
	for _, p := range dashboardPeers {
		runs[p] = &peerRun{}
	}
	snapAll := func(i int) error {
		for _, p := range dashboardPeers {
			var err error
			if runs[p].snaps[i], err = r.snapshot(p, srv[p]); err != nil {
				return err
			}
		}
		return nil
	}
	if err := snapAll(0); err != nil {
		return err
	}
	var (
		mismatches  []string
		seriesDiffs notes
	)
	for k, end := range ends {
		if k == 1 {
			if err := snapAll(1); err != nil {
				return err
			}
		}
		qs := refreshQueries(panels, end)
		answers := map[string][][]byte{}
		for j := range dashboardPeers {
			p := dashboardPeers[(j+k)%len(dashboardPeers)]
			bodies, lat, wall, err := r.refresh(srv[p], qs)
			if err != nil {
				return fmt.Errorf("refresh %d of %d (%s): %w", k+1, n, p, err)
			}
			pr := runs[p]
			pr.lat = append(pr.lat, lat...)
			pr.wall += wall
			if k == 0 {
				pr.firstWall = wall
			} else {
				pr.steadyLat = append(pr.steadyLat, lat...)
			}
			for _, b := range bodies {
				pr.bytes += int64(len(b))
			}
			answers[p] = bodies
		}
		for i, q := range qs {
			off, on, v := answers[aerieOff][i], answers[aerieOn][i], answers[vm][i]
			rep.Compared++
			if msg := compareBytes(on, off); msg != "" {
				mismatches = append(mismatches, fmt.Sprintf("refresh %d, panel %q: %s, start=%s end=%s step=%gs: %s",
					k+1, panels[i].Title, q.Expr, promTime(q.Start), promTime(q.End), q.Step.Seconds(), msg))
			}
			ro, err := parseResult(off)
			if err != nil {
				mismatches = append(mismatches, fmt.Sprintf("refresh %d, panel %q: %s, start=%s end=%s: %s answered: %v",
					k+1, panels[i].Title, q.Expr, promTime(q.Start), promTime(q.End), aerieOff, err))
				continue
			}
			rv, err := parseResult(v)
			vmSeries := -1
			if err != nil {
				seriesDiffs.add(fmt.Sprintf("panel %q: vm answered: %v", panels[i].Title, err))
			} else {
				vmSeries = len(rv.series)
				if vmSeries != len(ro.series) {
					seriesDiffs.add(fmt.Sprintf("panel %q: %d series from Aerie, %d from vm", panels[i].Title, len(ro.series), vmSeries))
				}
			}
			rep.Panels[i].AerieSeries, rep.Panels[i].VMSeries = len(ro.series), vmSeries
		}
		if (k+1)%10 == 0 || k == n-1 {
			r.logf("refresh %d of %d done", k+1, n)
		}
	}
	if err := snapAll(2); err != nil {
		return err
	}
	rep.Config["replay_end_lag"] = time.Since(time.UnixMilli(ends[n-1])).Round(time.Second).String()
	for _, p := range dashboardPeers {
		pr := runs[p]
		if n == 1 {
			pr.snaps[1] = pr.snaps[2]
		}
		first, mid, last := pr.snaps[0], pr.snaps[1], pr.snaps[2]
		sys := DashboardSystem{
			Peer: p, Queries: len(pr.lat), AnswerBytes: pr.bytes,
			CPUSeconds:       (last.cpu - first.cpu).Seconds(),
			FirstCPUSeconds:  (mid.cpu - first.cpu).Seconds(),
			SteadyCPUSeconds: (last.cpu - mid.cpu).Seconds(),
			WallSeconds:      pr.wall.Seconds(),
			FirstWallSeconds: pr.firstWall.Seconds(),
			P50Ms:            harness.Ms(harness.Percentile(pr.lat, 0.5)),
			P99Ms:            harness.Ms(harness.Percentile(pr.lat, 0.99)),
			SteadyP50Ms:      harness.Ms(harness.Percentile(pr.steadyLat, 0.5)),
			SteadyP99Ms:      harness.Ms(harness.Percentile(pr.steadyLat, 0.99)),
		}
		if len(last.counters) > 0 {
			sys.Counters, sys.FirstCounters = map[string]float64{}, map[string]float64{}
			for c, v := range last.counters {
				sys.Counters[c] = v - first.counters[c]
				sys.FirstCounters[c] = mid.counters[c] - first.counters[c]
			}
		}
		rep.Systems = append(rep.Systems, sys)
		r.logf("%-9s %d queries: %.2f CPU s (first refresh %.2f), wall %.2f s, p50 %.1f ms, p99 %.1f ms",
			p, sys.Queries, sys.CPUSeconds, sys.FirstCPUSeconds, sys.WallSeconds, sys.P50Ms, sys.P99Ms)
	}
	rep.SeriesDifferences = seriesDiffs
	rep.Mismatches = len(mismatches)
	rep.MismatchExamples = mismatches[:min(len(mismatches), 10)]
	if len(mismatches) > 0 {
		return fmt.Errorf("%w: %d of %d answers of %s differ from %s's; the first: %s", ErrMismatch, len(mismatches), rep.Compared, aerieOn, aerieOff, mismatches[0])
	}
	return nil
}

// refresh sends the panels' queries to s from dashClients clients and
// returns the answers (decompressed), each query's latency, and the time
// from the first request to the last answer.
func (r *runner) refresh(s *harness.Peer, qs []query) ([][]byte, []time.Duration, time.Duration, error) {
	bodies := make([][]byte, len(qs))
	lat := make([]time.Duration, len(qs))
	var g errgroup.Group
	g.SetLimit(dashClients)
	t0 := time.Now()
	for i, q := range qs {
		g.Go(func() (err error) {
			bodies[i], lat[i], err = promQuery(r.ctx, s, q)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, nil, 0, cmp.Or(s.Alive(), err)
	}
	return bodies, lat, time.Since(t0), nil
}

// compareBytes returns "" if got equals want byte for byte, or where the
// first difference is, with some context.
func compareBytes(got, want []byte) string {
	if bytes.Equal(got, want) {
		return ""
	}
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	ctx := func(b []byte) string {
		lo, hi := max(0, i-60), min(len(b), i+60)
		return strconv.Quote(string(b[lo:hi]))
	}
	return fmt.Sprintf("%s's answer (%d bytes) differs from %s's (%d bytes) at byte %d: %s vs %s",
		aerieOn, len(got), aerieOff, len(want), i, ctx(got), ctx(want))
}
