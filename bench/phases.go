package bench

import (
	"fmt"
	"slices"
	"time"

	"github.com/aerie-db/aerie/bench/harness"
	"github.com/aerie-db/aerie/bench/tsbs"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
)

var engineKinds = []string{"aerie", "prometheus"}

// mainPhase inserts the main dataset into both engines (insert_throughput),
// runs the TSBS patterns over their heads, flushes both to blocks
// (disk_bytes_per_sample) and runs the patterns again over the blocks.
func (r *runner) mainPhase() error {
	var engines []engine
	defer func() {
		for _, e := range engines {
			r.closeEngine(e, "main")
		}
	}()
	var ins []insertStats
	for _, kind := range engineKinds {
		e, err := r.open(kind, "main", 0)
		if err != nil {
			return err
		}
		engines = append(engines, e)
		st, err := r.insert(e, r.main)
		if err != nil {
			return err
		}
		r.logf("%s: inserted %d samples in %v: %.0f samples/s; GC pauses %v", kind, st.samples, st.write.Round(time.Millisecond),
			float64(st.samples)/st.write.Seconds(), st.gcPause)
		ins = append(ins, st)
	}
	r.rep.Samples = ins[0].samples
	r.rep.add("insert_throughput", "samples/s", higher,
		float64(ins[0].samples)/ins[0].write.Seconds(), float64(ins[1].samples)/ins[1].write.Seconds(),
		fmt.Sprintf("%d writers, one scrape per commit, generation excluded", r.cfg.Writers))
	r.rep.add("insert_gc_pause", "ms", lower, harness.Ms(ins[0].gcPause), harness.Ms(ins[1].gcPause), "Go GC pause total during the insert")

	prof, profErr := tsbs.ProfileOf(r.main)
	if profErr != nil {
		r.logf("skipping the TSBS patterns: %v", profErr)
	} else if err := r.tsbs(engines, prof, "head"); err != nil {
		return err
	}
	var flush [2]time.Duration
	var data, index [2]int64
	for i, e := range engines {
		t0 := time.Now()
		if err := e.flushAll(); err != nil {
			return fmt.Errorf("%s: flush: %w", e.name(), err)
		}
		flush[i] = time.Since(t0)
		var err error
		if data[i], index[i], err = e.diskBytes(); err != nil {
			return err
		}
		r.logf("%s: flushed in %v: %d data + %d index bytes", e.name(), flush[i].Round(time.Millisecond), data[i], index[i])
	}
	n := float64(ins[0].samples)
	r.rep.add("disk_bytes_per_sample", "B", lower, float64(data[0]+index[0])/n, float64(data[1]+index[1])/n, "block data + index after flushing everything")
	r.rep.add("disk_data_bytes_per_sample", "B", lower, float64(data[0])/n, float64(data[1])/n, "Aerie data files; Prometheus chunks/")
	r.rep.add("disk_index_bytes_per_sample", "B", lower, float64(index[0])/n, float64(index[1])/n, "index, meta, Aerie's tag dictionary")
	r.rep.add("flush_all_seconds", "s", lower, flush[0].Seconds(), flush[1].Seconds(), "whole head into 2 h blocks, no concurrent queries")
	if profErr == nil {
		return r.tsbs(engines, prof, "disk")
	}
	return nil
}

// tsbs runs every TSBS pattern QueryRuns times over both engines, with the
// same instances for both, alternating which goes first, and checks that
// both return the same result.
func (r *runner) tsbs(engines []engine, prof tsbs.Profile, variant string) error {
	hs := tsbs.Hosts(r.main, prof)
	for _, pt := range tsbs.Heracles {
		rnd := tsbs.Rand(r.cfg.Seed, pt.Name)
		lat := make([][]time.Duration, len(engines))
		alloc := make([][]float64, len(engines))  // MiB allocated per query
		for i := -1; i < r.scale.QueryRuns; i++ { // i = -1 warms up, unrecorded
			q := instance(pt, rnd, prof, hs, r.main.MinTime(), r.main.MaxTime())
			res := make([]promql.Result, len(engines))
			for j := range engines {
				k := (j + max(i, 0)) % len(engines) // alternate who goes first
				var (
					d   time.Duration
					err error
				)
				a0 := allocatedBytes()
				if res[k], d, err = q.run(r.engineFor(engines[k]), engines[k]); err != nil {
					return fmt.Errorf("%s tsbs %s: %w", engines[k].name(), pt.Name, err)
				}
				if i >= 0 {
					lat[k] = append(lat[k], d)
					alloc[k] = append(alloc[k], harness.MiB(allocatedBytes()-a0))
				}
			}
			if err := sameResult(res[0], res[1]); err != nil {
				return fmt.Errorf("tsbs %s (%s): engines disagree on %s: %w", pt.Name, variant, q.expr, err)
			}
			if empty(res[0]) {
				return fmt.Errorf("tsbs %s (%s): %s returned nothing over %v..%v", pt.Name, variant, q.expr, q.start, q.end)
			}
		}
		name := "tsbs_" + pt.Name + "_" + variant
		r.rep.add(name, "ms", lower, harness.Ms(harness.Percentile(lat[0], 0.5)), harness.Ms(harness.Percentile(lat[1], 0.5)), "median; "+pt.Comment)
		r.rep.add(name+"_p99", "ms", lower, harness.Ms(harness.Percentile(lat[0], 0.99)), harness.Ms(harness.Percentile(lat[1], 0.99)), "")
		r.rep.add(name+"_alloc", "MiB", lower, median(alloc[0]), median(alloc[1]), "heap allocated per query, median: bounds its peak memory")
		r.logf("tsbs %-18s %s: aerie %.3f ms, prometheus %.3f ms (median of %d)", pt.Name, variant,
			harness.Ms(harness.Percentile(lat[0], 0.5)), harness.Ms(harness.Percentile(lat[1], 0.5)), len(lat[0]))
	}
	return nil
}

func empty(res promql.Result) bool {
	switch v := res.Value.(type) {
	case promql.Vector:
		return len(v) == 0
	case promql.Matrix:
		return len(v) == 0
	}
	return true
}

// flushPhase loads a 2 h partition into each engine in turn, measures the
// settled Go heap it added (head_bytes_per_series), then flushes it while a
// goroutine queries the last 15 minutes of one random series in a loop
// (Heracles §4.5) and reports those queries' latencies.
func (r *runner) flushPhase() error {
	var heap [2]float64
	var lat [2][]time.Duration
	var flush [2]time.Duration
	var gcPause [2]time.Duration
	var gcCycles [2]uint32
	nseries := len(allSeries(r.flushW))
	for i, kind := range engineKinds {
		base := settledHeap()
		e, err := r.open(kind, "flush", 0)
		if err != nil {
			return err
		}
		if _, err := r.insert(e, r.flushW); err != nil {
			r.closeEngine(e, "flush")
			return err
		}
		heap[i] = float64(settledHeap()-base) / float64(nseries)
		ms0 := memStats()
		lat[i], flush[i], err = r.flushUnderQueries(e)
		ms1 := memStats()
		gcPause[i] = time.Duration(ms1.PauseTotalNs - ms0.PauseTotalNs)
		gcCycles[i] = ms1.NumGC - ms0.NumGC
		if cerr := r.closeEngine(e, "flush"); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("%s: %w", kind, err)
		}
		r.logf("%s: head %.0f B/series; flush %v under %d queries: p99 %v, p99.99 %v, max %v; %d GC cycles, pauses %v", kind, heap[i], flush[i].Round(time.Millisecond),
			len(lat[i]), harness.Percentile(lat[i], 0.99), harness.Percentile(lat[i], 0.9999), harness.Percentile(lat[i], 1), gcCycles[i], gcPause[i])
	}
	r.rep.add("head_bytes_per_series", "B", lower, heap[0], heap[1],
		fmt.Sprintf("settled Go heap added by %d series x 2 h at %v (Prometheus also mmaps full chunks outside the heap)", nseries, r.flushW.Interval()))
	note := fmt.Sprintf("last 15 min of one series, in a loop during the flush of %d series x 2 h; %d and %d queries", nseries, len(lat[0]), len(lat[1]))
	for _, p := range []struct {
		suffix string
		q      float64
	}{{"_p50", 0.5}, {"_p99", 0.99}, {"_p9999", 0.9999}, {"_max", 1}} {
		r.rep.add("flush_query"+p.suffix, "ms", lower, harness.Ms(harness.Percentile(lat[0], p.q)), harness.Ms(harness.Percentile(lat[1], p.q)), note)
		note = ""
	}
	r.rep.add("flush_seconds", "s", lower, flush[0].Seconds(), flush[1].Seconds(), "the 2 h partition, under the query loop")
	r.rep.add("flush_gc_pause", "ms", lower, harness.Ms(gcPause[0]), harness.Ms(gcPause[1]), "Go GC pause total during that flush (stop-the-world phases)")
	r.rep.add("flush_gc_cycles", "cycles", lower, float64(gcCycles[0]), float64(gcCycles[1]), "Go GC cycles completed during that flush")
	return nil
}

// flushUnderQueries flushes e while one goroutine queries it.
func (r *runner) flushUnderQueries(e engine) ([]time.Duration, time.Duration, error) {
	series := allSeries(r.flushW)
	maxt := r.flushW.MaxTime()
	rnd := tsbs.Rand(r.cfg.Seed, "flush")
	var it chunkenc.Iterator
	return harness.UnderQueries(e.flushAll, func() error {
		ls := series[rnd.IntN(len(series))]
		var n int
		var err error
		n, it, err = lastWindow(e, ls, maxt, it)
		if err == nil && n == 0 {
			err = fmt.Errorf("no samples of %s in the last %v", ls, queryWindow)
		}
		return err
	})
}

// tuplePhase measures Aerie's tuple size trade-off (Heracles §4.4.5) on the
// flush dataset: bytes per sample in the head and on disk, and query
// latency, with Prometheus' 120-sample chunks as the reference row. The
// head's tuples hold at most 8 rows (presence is one byte per tuple), so
// the 16 row has a head of 8 and blocks of 16. It also times a flush
// without concurrent queries (flush_cpu_seconds).
func (r *runner) tuplePhase() error {
	prof, profErr := tsbs.ProfileOf(r.flushW)
	series := allSeries(r.flushW)
	hs := []string{}
	if profErr == nil {
		hs = tsbs.Hosts(r.flushW, prof)
	}
	var flushWall, flushCPU [2]float64
	for _, k := range []int{4, 8, 16, 0} {
		kind := "aerie"
		if k == 0 {
			kind = "prometheus"
		}
		e, err := r.open(kind, "tuple", k)
		if err != nil {
			return err
		}
		row, err := r.tupleRow(e, k, series, prof, hs, profErr == nil)
		if cerr := r.closeEngine(e, "tuple"); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("tuple size %d: %w", k, err)
		}
		r.rep.TupleSizes = append(r.rep.TupleSizes, row)
		r.logf("%s tuple %d: head %.3f B/sample, disk %.3f (data %.3f) B/sample, 15 min query head %.3f ms disk %.3f ms",
			kind, k, row.HeadBytesPerSample, row.DiskBytesPerSample, row.DiskDataBytesPerSample, row.Query15mHeadMs, row.Query15mDiskMs)
		switch k {
		case 8:
			flushWall[0], flushCPU[0] = row.flushWall, row.flushCPU
		case 0:
			flushWall[1], flushCPU[1] = row.flushWall, row.flushCPU
		}
	}
	r.rep.add("flush_idle_seconds", "s", lower, flushWall[0], flushWall[1], "the 2 h partition of the flush phase, no queries")
	r.rep.add("flush_cpu_seconds", "s", lower, flushCPU[0], flushCPU[1], "process CPU (user+sys) during that flush")
	return nil
}

func (r *runner) tupleRow(e engine, k int, series []labels.Labels, prof tsbs.Profile, hs []string, tsbsOK bool) (TupleRow, error) {
	row := TupleRow{Engine: e.name(), TupleSize: k}
	st, err := r.insert(e, r.flushW)
	if err != nil {
		return row, err
	}
	n := float64(st.samples)
	if a, ok := e.(*aerieEngine); ok {
		row.HeadTupleSize = a.Head().Options().TupleSize
		row.HeadBytesPerSample = float64(a.Head().Bytes()) / n
	}
	if row.Query15mHeadMs, err = r.median15m(e, series); err != nil {
		return row, err
	}
	ru0 := harness.SelfCPU()
	t0 := time.Now()
	if err := e.flushAll(); err != nil {
		return row, err
	}
	row.flushWall, row.flushCPU = time.Since(t0).Seconds(), (harness.SelfCPU() - ru0).Seconds()
	data, index, err := e.diskBytes()
	if err != nil {
		return row, err
	}
	row.DiskBytesPerSample, row.DiskDataBytesPerSample = float64(data+index)/n, float64(data)/n
	if row.Query15mDiskMs, err = r.median15m(e, series); err != nil {
		return row, err
	}
	if tsbsOK {
		pt := tsbs.Heracles[slices.IndexFunc(tsbs.Heracles, func(p tsbs.Pattern) bool { return p.Name == "5-1-1" })]
		rnd := tsbs.Rand(r.cfg.Seed, "tuple 5-1-1")
		var lat []time.Duration
		for i := 0; i < r.scale.QueryRuns; i++ {
			q := instance(pt, rnd, prof, hs, r.flushW.MinTime(), r.flushW.MaxTime())
			_, d, err := q.run(r.engineFor(e), e)
			if err != nil {
				return row, err
			}
			lat = append(lat, d)
		}
		row.TSBS511DiskMs = harness.Ms(harness.Percentile(lat, 0.5))
	}
	return row, nil
}

// median15m is the median latency of queries for the last 15 minutes of
// random series.
func (r *runner) median15m(e engine, series []labels.Labels) (float64, error) {
	rnd := tsbs.Rand(r.cfg.Seed, "15m")
	var it chunkenc.Iterator
	var lat []time.Duration
	for i := 0; i < 200; i++ {
		t0 := time.Now()
		var err error
		if _, it, err = lastWindow(e, series[rnd.IntN(len(series))], r.flushW.MaxTime(), it); err != nil {
			return 0, err
		}
		lat = append(lat, time.Since(t0))
	}
	return harness.Ms(harness.Percentile(lat, 0.5)), nil
}
