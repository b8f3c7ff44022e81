package bench

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/aerie-db/aerie/bench/harness"
	"github.com/aerie-db/aerie/bench/tsbs"
	"github.com/aerie-db/aerie/bench/workload"
)

// backfillBatch is the samples per commit of the history writes, at scrape
// boundaries: `aerie import`'s default (ingest.Options.BatchSamples).
const backfillBatch = 10_000

// compactQueryWindow is the range of the queries run during compactions.
const compactQueryWindow = time.Hour

// rangeQuery is one long-range query of the history run, at a 1 h step,
// ending where the history ends.
type rangeQuery struct {
	name    string
	expr    string
	span    time.Duration
	comment string
}

const (
	busyCPU  = `sum by (instance) (rate(node_cpu_seconds_total{mode!="idle"}[1h]))`
	availMem = `avg by (instance) (avg_over_time(node_memory_MemAvailable_bytes[1h]))`
)

var rangeQueries = []rangeQuery{
	{"range_7d_rate", busyCPU, 7 * day, "rate of 7 cpu modes per cpu, summed per host"},
	{"range_7d_avg", availMem, 7 * day, "avg_over_time of available memory per host"},
	{"range_30d_rate", busyCPU, 30 * day, "as range_7d_rate"},
	{"range_30d_avg", availMem, 30 * day, "as range_7d_avg"},
}

// runHistory runs the history phases (bench/doc.go, "History").
func (r *runner) runHistory() (*Report, error) {
	hs, ok := historyScales[r.cfg.Scale]
	if !ok {
		return nil, fmt.Errorf("--scale=%q: want small, medium or large", r.cfg.Scale)
	}
	if r.cfg.Input != "" {
		return nil, fmt.Errorf("--workload=history generates its own data: --input is not supported")
	}
	if r.cfg.Targets > 0 {
		hs.Hosts = r.cfg.Targets
	}
	if r.cfg.Duration > 0 {
		hs.Span = r.cfg.Duration.Truncate(day)
		hs.LongSpan = max(hs.LongSpan, hs.Span)
	}
	if r.cfg.QueryRuns > 0 {
		hs.QueryRuns = r.cfg.QueryRuns
	}
	interval := r.cfg.Interval
	if interval == 0 {
		interval = 15 * time.Second
	}
	d, err := newHistoryData(hs, interval, r.cfg.Seed)
	if err != nil {
		return nil, err
	}
	r.hist, r.hscale = d, hs
	r.rep = &Report{
		Header:   harness.NewHeader("", hs.Name),
		Workload: historyWorkload,
		Series:   d.series,
		Samples:  d.samples,
		Config: map[string]string{
			"interval":          interval.String(),
			"hosts":             fmt.Sprint(hs.Hosts),
			"span":              span(hs.Span),
			"long_hosts":        fmt.Sprint(hs.LongHosts),
			"long_cpus":         fmt.Sprint(hs.LongCPUs),
			"long_span":         span(hs.LongSpan),
			"head_span":         span(headSpan),
			"batch":             fmt.Sprint(backfillBatch),
			"seed":              fmt.Sprint(r.cfg.Seed),
			"query_runs":        fmt.Sprint(hs.QueryRuns),
			"aerie_wal_sync":    r.cfg.AerieSync,
			"aerie_flush_cpu":   fmt.Sprint(max(r.cfg.AerieFlushCPU, 0)),
			"prometheus_wal":    "library defaults: records written at commit, fsync when a segment is full, no compression; automatic compaction off",
			"prometheus_ooo":    fmt.Sprintf("out_of_order_time_window %s, retention %s, max block duration %s", span(promOOOWindow), span(promOOOWindow), span(promMaxBlockDuration)),
			"aerie_tuple_size":  "8",
			"history_writers":   "1",
			"history_generator": "node, one workload per day (counters restart at day boundaries)",
			"loadavg_start":     harness.LoadAvg(),
		},
	}
	r.logf("history: %d hosts × %v with every series, %d hosts × %v with %d series each; %d series, %d samples at %v",
		hs.Hosts, span(hs.Span), hs.LongHosts, span(hs.LongSpan), len(d.hosts[len(d.hosts)-1].series), d.series, d.samples, interval)
	if err := harness.RunPhases(r.log,
		harness.Phase{Name: "backfill host after host in one stream", Run: r.streamPhase},
		harness.Phase{Name: "backfill of shuffled days in one stream", Run: r.shuffledPhase},
		harness.Phase{Name: "backfill in one import per host, long-range queries, compaction under queries", Run: r.importsPhase},
	); err != nil {
		return nil, err
	}
	r.rep.Done()
	r.rep.Config["loadavg_end"] = harness.LoadAvg()
	return r.rep, nil
}

// backfillStats describe one engine's backfill.
type backfillStats struct {
	write, flush      time.Duration // appends and commits; then the flush into blocks
	cpu               time.Duration // process CPU over both
	samples           int64
	peakRSS, peakHeap int64 // above their values at the start
}

func (s backfillStats) throughput() float64 {
	return float64(s.samples) / (s.write + s.flush).Seconds()
}

// openWithHead opens both engines for a phase and writes the head's
// current data into each (untimed).
func (r *runner) openWithHead(phase string) ([]historyEngine, error) {
	var es []historyEngine
	for _, kind := range engineKinds {
		e, err := r.openHistory(kind, phase)
		if err != nil {
			closeAll(r, es, phase)
			return nil, err
		}
		es = append(es, e)
		if _, err := r.insert(e, r.hist.current); err != nil {
			closeAll(r, es, phase)
			return nil, fmt.Errorf("%s: current data: %w", kind, err)
		}
	}
	return es, nil
}

func closeAll(r *runner, es []historyEngine, phase string) {
	for _, e := range es {
		r.closeEngine(e, phase)
	}
}

// backfillAndCheck backfills the imports into every engine in turn
// (timed), then counts the history back out of each (untimed) and fails
// unless every sample is there.
func (r *runner) backfillAndCheck(es []historyEngine, imports [][]histUnit, variant string) ([]backfillStats, error) {
	var sts []backfillStats
	for _, e := range es {
		var (
			st  backfillStats
			err error
		)
		labeled(e.name(), "backfill_"+variant, func() { st, err = r.timedBackfill(e, imports) })
		if err != nil {
			return nil, fmt.Errorf("%s: %w", e.name(), err)
		}
		r.logf("%s: backfilled %d samples (%s) in %v + flush %v: %.0f samples/s; CPU %v; peak RSS +%d MiB, heap +%d MiB",
			e.name(), st.samples, variant, st.write.Round(time.Millisecond), st.flush.Round(time.Millisecond), st.throughput(),
			st.cpu.Round(time.Millisecond), st.peakRSS>>20, st.peakHeap>>20)
		if err := r.checkHistory(e, "after the backfill"); err != nil {
			return nil, err
		}
		sts = append(sts, st)
	}
	return sts, nil
}

// timedBackfill writes the imports into e one after the other, each
// host-day after host-day, committing every backfillBatch samples, and
// flushes the backfill into blocks at the end of every import (as `aerie
// import` does). Rows are generated untimed, one batch at a time.
func (r *runner) timedBackfill(e historyEngine, imports [][]histUnit) (backfillStats, error) {
	var st backfillStats
	d := r.hist
	maxRows := 1
	for _, h := range d.hosts {
		maxRows = max(maxRows, backfillBatch/len(h.series))
	}
	rows := make([]workload.Row, maxRows)
	runtime.GC()
	debug.FreeOSMemory()
	mw := startMemWatch()
	cpu0 := harness.SelfCPU()
	for _, units := range imports {
		if err := r.writeUnits(e, units, rows, &st); err != nil {
			mw.finish()
			return st, err
		}
		t0 := time.Now()
		err := e.flushBackfill()
		st.flush += time.Since(t0)
		if err != nil {
			mw.finish()
			return st, fmt.Errorf("flush the backfill: %w", err)
		}
	}
	st.cpu = harness.SelfCPU() - cpu0
	st.peakRSS, st.peakHeap = mw.finish()
	return st, nil
}

// writeUnits writes units into e, adding to st's write time and samples.
func (r *runner) writeUnits(e historyEngine, units []histUnit, rows []workload.Row, st *backfillStats) error {
	d := r.hist
	ctx := context.Background()
	for _, u := range units {
		h := &d.hosts[u.host]
		sc := d.days[u.day].Scraper(h.target)
		nrows := max(1, backfillBatch/len(h.series))
		for {
			n := 0
			for n < nrows && sc.Next(&rows[n]) {
				n++
			}
			if n == 0 {
				break
			}
			t0 := time.Now()
			app := e.Appender(ctx)
			var m int64
			for _, row := range rows[:n] {
				for j, ls := range h.series {
					i := j
					if h.keep != nil {
						i = h.keep[j]
					}
					if row.Present != nil && !row.Present[i] {
						continue
					}
					if _, err := app.Append(0, ls, row.T, row.Values[i]); err != nil {
						app.Rollback()
						return fmt.Errorf("append %s at %d: %w", ls, row.T, err)
					}
					m++
				}
			}
			if err := app.Commit(); err != nil {
				return fmt.Errorf("commit: %w", err)
			}
			st.write += time.Since(t0)
			st.samples += m
			if n < nrows {
				break
			}
		}
	}
	return nil
}

// checkHistory counts the samples of the history range through e's
// querier and fails unless it holds exactly the history's samples.
func (r *runner) checkHistory(e engine, when string) error {
	n, err := countSamples(e, r.hist.minTime(), r.hist.now-1)
	if err != nil {
		return fmt.Errorf("%s: count %s: %w", e.name(), when, err)
	}
	if n != r.hist.samples {
		return fmt.Errorf("%s: %d samples of the history %s, want %d", e.name(), n, when, r.hist.samples)
	}
	return nil
}

// countSamples reads every sample in [mint, maxt] through e's querier.
func countSamples(e engine, mint, maxt int64) (int64, error) {
	q, err := e.Querier(mint, maxt)
	if err != nil {
		return 0, err
	}
	defer q.Close()
	ss := q.Select(context.Background(), false, nil, labels.MustNewMatcher(labels.MatchRegexp, labels.MetricName, ".+"))
	var (
		n  int64
		it chunkenc.Iterator
	)
	for ss.Next() {
		it = ss.At().Iterator(it)
		for it.Next() != chunkenc.ValNone {
			if t := it.AtT(); t >= mint && t <= maxt {
				n++
			}
		}
		if err := it.Err(); err != nil {
			return n, err
		}
	}
	return n, ss.Err()
}

// diskState is an engine's blocks at one point.
type diskState struct {
	blocks      int
	spans       []time.Duration
	data, index int64
}

func diskStateOf(e historyEngine) (diskState, error) {
	s := diskState{blocks: e.numBlocks(), spans: e.blockSpans()}
	var err error
	s.data, s.index, err = e.diskBytes()
	return s, err
}

// streamPhase backfills the history host after host in one stream (one
// flush at its end) into both engines: backfill_throughput, its parts,
// and the peak memory.
func (r *runner) streamPhase() error {
	const phase = "stream"
	es, err := r.openWithHead(phase)
	if err != nil {
		return err
	}
	defer closeAll(r, es, phase)
	sts, err := r.backfillAndCheck(es, [][]histUnit{r.hist.byHost()}, phase)
	if err != nil {
		return err
	}
	a, p := sts[0], sts[1]
	r.rep.add("backfill_throughput", "samples/s", higher, a.throughput(), p.throughput(),
		fmt.Sprintf("host after host, each host's range in time order, one stream, %d samples per commit, 1 writer; write + Aerie FlushBackfill / Prometheus CompactOOOHead at the end", backfillBatch))
	r.rep.add("backfill_write_seconds", "s", lower, a.write.Seconds(), p.write.Seconds(), "appends and commits (durable in the WAL / WBL)")
	r.rep.add("backfill_flush_seconds", "s", lower, a.flush.Seconds(), p.flush.Seconds(), "the backfill generations into blocks / the out-of-order head into 2 h blocks")
	r.rep.add("backfill_cpu_seconds", "s", lower, a.cpu.Seconds(), p.cpu.Seconds(), "process CPU (user+sys) over write and flush; Aerie flushes full generations in the background meanwhile")
	r.rep.add("backfill_peak_rss", "MiB", lower, harness.MiB(a.peakRSS), harness.MiB(p.peakRSS), "peak resident set over write and flush, above its value at the start (after a GC and FreeOSMemory)")
	r.rep.add("backfill_peak_heap", "MiB", lower, harness.MiB(a.peakHeap), harness.MiB(p.peakHeap), "peak Go heap objects over write and flush, above the start")
	r.rep.add("backfill_blocks", "blocks", lower, float64(es[0].numBlocks()), float64(es[1].numBlocks()), "blocks after the backfill's flush (the head not flushed)")
	r.logBlocks(es, "after the stream's flush")
	return nil
}

// shuffledPhase backfills every host-day in a random order, in one stream,
// into a fresh pair of engines.
func (r *runner) shuffledPhase() error {
	const phase = "shuffled"
	es, err := r.openWithHead(phase)
	if err != nil {
		return err
	}
	defer closeAll(r, es, phase)
	sts, err := r.backfillAndCheck(es, [][]histUnit{r.hist.shuffledDays(tsbs.Rand(r.cfg.Seed, "shuffled days"))}, phase)
	if err != nil {
		return err
	}
	a, p := sts[0], sts[1]
	r.rep.add("backfill_throughput_shuffled", "samples/s", higher, a.throughput(), p.throughput(),
		"every host-day in a random order, each in time order, one stream; write + flush as above")
	r.rep.add("backfill_cpu_seconds_shuffled", "s", lower, a.cpu.Seconds(), p.cpu.Seconds(), "")
	r.rep.add("backfill_peak_rss_shuffled", "MiB", lower, harness.MiB(a.peakRSS), harness.MiB(p.peakRSS), "")
	r.logBlocks(es, "after the shuffled backfill")
	return nil
}

// importsPhase backfills the history in one import per host, host after
// host, each ending with a flush, so that the blocks of different imports
// overlap (backfill_throughput_imports). Then it flushes both heads,
// measures the blocks (backfilled_*), runs the long-range queries,
// compacts each engine while a goroutine queries it (compaction_query_*),
// measures the blocks again (compacted_*) and runs the long-range queries
// again.
func (r *runner) importsPhase() error {
	const phase = "imports"
	es, err := r.openWithHead(phase)
	if err != nil {
		return err
	}
	defer closeAll(r, es, phase)
	d := r.hist
	sts, err := r.backfillAndCheck(es, d.perHost(), phase)
	if err != nil {
		return err
	}
	a, p := sts[0], sts[1]
	r.rep.add("backfill_throughput_imports", "samples/s", higher, a.throughput(), p.throughput(),
		fmt.Sprintf("one import per host (%d), host after host, each ending with the flush", len(d.hosts)))
	r.rep.add("backfill_flush_seconds_imports", "s", lower, a.flush.Seconds(), p.flush.Seconds(), "")
	r.rep.add("backfill_peak_rss_imports", "MiB", lower, harness.MiB(a.peakRSS), harness.MiB(p.peakRSS), "")

	total := float64(d.samples + d.current.Samples())
	var before, after [2]diskState
	for i, e := range es {
		if err := e.flushAll(); err != nil {
			return fmt.Errorf("%s: flush the head: %w", e.name(), err)
		}
		if before[i], err = diskStateOf(e); err != nil {
			return err
		}
	}
	r.logBlocks(es, "after the imports and the head's flush")
	r.addDisk("backfilled", before, total, "after the imports' flushes and the head's flush, before any compaction")
	if err := r.rangeQueries(es, "backfilled"); err != nil {
		return err
	}

	var idle, busy [2][]time.Duration
	var took [2]time.Duration
	for i, e := range es {
		if idle[i], _, err = r.underQueries(e, func() error { time.Sleep(r.hscale.QueryLoop); return nil }); err != nil {
			return fmt.Errorf("%s: query loop: %w", e.name(), err)
		}
		labeled(e.name(), "compaction", func() { busy[i], took[i], err = r.underQueries(e, e.compact) })
		if err != nil {
			return fmt.Errorf("%s: compaction: %w", e.name(), err)
		}
		if after[i], err = diskStateOf(e); err != nil {
			return err
		}
		r.logf("%s: compacted in %v under %d queries: p99 %v, p99.99 %v (without compaction %v, %v)",
			e.name(), took[i].Round(time.Millisecond), len(busy[i]), harness.Percentile(busy[i], 0.99), harness.Percentile(busy[i], 0.9999),
			harness.Percentile(idle[i], 0.99), harness.Percentile(idle[i], 0.9999))
		if err := r.checkHistory(e, "after the compaction"); err != nil {
			return err
		}
	}
	r.logBlocks(es, "after the compaction")
	if ae, ok := es[0].(*aerieEngine); ok {
		cs := ae.CompactionStats()
		r.logf("aerie: %d compactions, %d bytes in, %d out, %v; blocks by level %v", cs.Compactions, cs.BytesIn, cs.BytesOut, cs.Duration.Round(time.Millisecond), cs.BlocksByLevel)
	}
	r.rep.add("compaction_seconds", "s", lower, took[0].Seconds(), took[1].Seconds(), "Aerie CompactBlocks, Prometheus Compact, each under the query loop")
	r.addDisk("compacted", after, total, "after every compaction due")
	note := fmt.Sprintf("one random series of the %d full hosts, a random %s of its history, in a loop during the compaction; %d and %d queries",
		d.full, span(compactQueryWindow), len(busy[0]), len(busy[1]))
	idleNote := fmt.Sprintf("the same loop for %v just before the compaction; %d and %d queries", r.hscale.QueryLoop, len(idle[0]), len(idle[1]))
	for _, q := range []struct {
		suffix string
		q      float64
	}{{"_p50", 0.5}, {"_p99", 0.99}, {"_p9999", 0.9999}, {"_max", 1}} {
		r.rep.add("compaction_query"+q.suffix, "ms", lower, harness.Ms(harness.Percentile(busy[0], q.q)), harness.Ms(harness.Percentile(busy[1], q.q)), note)
		r.rep.add("idle_query"+q.suffix, "ms", lower, harness.Ms(harness.Percentile(idle[0], q.q)), harness.Ms(harness.Percentile(idle[1], q.q)), idleNote)
		note, idleNote = "", ""
	}
	return r.rangeQueries(es, "compacted")
}

// logBlocks logs both engines' blocks and bytes.
func (r *runner) logBlocks(es []historyEngine, when string) {
	for _, e := range es {
		s, err := diskStateOf(e)
		if err != nil {
			r.logf("%s: blocks %s: %v", e.name(), when, err)
			continue
		}
		r.logf("%s: %d blocks %s (%s): %d data + %d index bytes", e.name(), s.blocks, when, blockSpans(s.spans), s.data, s.index)
	}
}

// addDisk reports the blocks of both engines at one stage.
func (r *runner) addDisk(stage string, s [2]diskState, samples float64, note string) {
	r.rep.add(stage+"_blocks", "blocks", lower, float64(s[0].blocks), float64(s[1].blocks), note)
	r.rep.add(stage+"_bytes", "MiB", lower, harness.MiB(s[0].data+s[0].index), harness.MiB(s[1].data+s[1].index), "")
	r.rep.add(stage+"_bytes_per_sample", "B", lower, float64(s[0].data+s[0].index)/samples, float64(s[1].data+s[1].index)/samples,
		"block data + index (Aerie: with its tag dictionary) over the history and the head's samples")
	r.rep.add(stage+"_index_bytes_per_sample", "B", lower, float64(s[0].index)/samples, float64(s[1].index)/samples, "index and meta files")
}

// rangeQueries runs every long-range query QueryRuns times over both
// engines (after one unrecorded run), alternating which goes first, checks
// that they agree and are not empty, and reports median and p99.
func (r *runner) rangeQueries(es []historyEngine, variant string) error {
	d := r.hist
	for _, rq := range rangeQueries {
		step := time.Hour
		q := query{expr: rq.expr, step: step, start: time.UnixMilli(d.now - rq.span.Milliseconds() + step.Milliseconds()), end: time.UnixMilli(d.now)}
		lat := make([][]time.Duration, len(es))
		for i := -1; i < r.hscale.QueryRuns; i++ {
			res := make([]promql.Result, len(es))
			for j := range es {
				k := (j + max(i, 0)) % len(es)
				var (
					dt  time.Duration
					err error
				)
				labeled(es[k].name(), "range_"+variant, func() { res[k], dt, err = q.run(r.engineFor(es[k]), es[k]) })
				if err != nil {
					return fmt.Errorf("%s %s: %w", es[k].name(), rq.name, err)
				}
				if i >= 0 {
					lat[k] = append(lat[k], dt)
				}
			}
			if err := sameResult(res[0], res[1]); err != nil {
				return fmt.Errorf("%s (%s): engines disagree on %s: %w", rq.name, variant, q.expr, err)
			}
			if empty(res[0]) {
				return fmt.Errorf("%s (%s): %s returned nothing", rq.name, variant, q.expr)
			}
		}
		name := rq.name + "_" + variant
		note := fmt.Sprintf("median; %v at a 1 h step up to the history's end, %s; the data reach back %v (%d hosts), %v (%d)",
			span(rq.span), rq.comment, span(r.hscale.Span), r.hscale.Hosts, span(r.hscale.LongSpan), r.hscale.LongHosts)
		r.rep.add(name, "ms", lower, harness.Ms(harness.Percentile(lat[0], 0.5)), harness.Ms(harness.Percentile(lat[1], 0.5)), note)
		r.rep.add(name+"_p99", "ms", lower, harness.Ms(harness.Percentile(lat[0], 0.99)), harness.Ms(harness.Percentile(lat[1], 0.99)), "")
		r.logf("%-16s %s: aerie %.1f ms, prometheus %.1f ms (median of %d)", rq.name, variant,
			harness.Ms(harness.Percentile(lat[0], 0.5)), harness.Ms(harness.Percentile(lat[1], 0.5)), len(lat[0]))
	}
	return nil
}

// underQueries runs fn while one goroutine reads a random compactQueryWindow
// of one random full host's series in a loop, and returns those reads'
// latencies and fn's duration.
func (r *runner) underQueries(e engine, fn func() error) ([]time.Duration, time.Duration, error) {
	d := r.hist
	var series []labels.Labels
	for _, h := range d.hosts[:d.full] {
		series = append(series, h.series...)
	}
	lo := d.now - int64(len(d.days)-d.hosts[0].first)*day.Milliseconds()
	win := compactQueryWindow.Milliseconds()
	rnd := tsbs.Rand(r.cfg.Seed, "compaction queries")
	var it chunkenc.Iterator
	return harness.UnderQueries(fn, func() error {
		ls := series[rnd.IntN(len(series))]
		mint := lo + rnd.Int64N(d.now-win-lo)
		var n int
		var err error
		n, it, err = readRange(e, ls, mint, mint+win-1, it)
		if err == nil && n == 0 {
			err = fmt.Errorf("no samples of %s in [%d, %d)", ls, mint, mint+win)
		}
		return err
	})
}

// labeled runs fn with pprof labels engine and step, so that a
// --cpuprofile of a history run splits by them: go tool pprof
// -tagfocus=step=range_compacted -tagfocus=engine=aerie. Goroutines the
// engines started before (background flushes) are not labeled.
func labeled(engine, step string, fn func()) {
	pprof.Do(context.Background(), pprof.Labels("engine", engine, "step", step), func(context.Context) { fn() })
}

// span formats a duration of whole days or hours as "30 d" or "2 h".
func span(d time.Duration) string {
	switch {
	case d%day == 0:
		return fmt.Sprintf("%d d", d/day)
	case d%time.Hour == 0:
		return fmt.Sprintf("%d h", d/time.Hour)
	}
	return d.String()
}

func sortedDurations(ds []time.Duration) []time.Duration {
	slices.Sort(ds)
	return ds
}
