package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/aerie-db/aerie/internal/queryeval"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/aerie-db/aerie/bench/harness"
	"github.com/aerie-db/aerie/bench/workload"
	"github.com/aerie-db/aerie/internal/head"
	"github.com/aerie-db/aerie/internal/wal"
)

// Config is one bench run.
type Config struct {
	Workload string        // node, random or tsbs; ignored when Input is set
	Input    string        // a remote-write dump or timestamped OpenMetrics file
	Scale    string        // small, medium or large
	Dir      string        // scratch directory ("" → a temporary one, removed after)
	Keep     bool          // with Dir: each phase's data directories stay after the run
	Seed     int64         // workload seed
	Interval time.Duration // scrape interval (0 → 15 s for node/random, 10 s for tsbs)
	Targets  int           // targets (hosts for tsbs) of the main dataset (0 → the scale's series)
	Duration time.Duration // span of the main dataset (0 → the scale's, 12 h)
	Writers  int           // concurrent writers (0 → GOMAXPROCS)
	// AerieSync is Aerie's WAL sync mode: "interval" (default: fsync once a
	// second in the background, the closest to prometheus/tsdb, whose WAL
	// writes at commit and fsyncs when a segment is full) or "batch" (fsync
	// before every commit returns).
	AerieSync string
	// AerieQueryEngine is what Aerie's queries run on: "aerie" (default:
	// queryeval over Prometheus' engine, as aerie serve) or "prometheus"
	// (Prometheus' engine alone, the evaluation before issue 23).
	AerieQueryEngine string
	// AerieFlushCPU is Aerie's flush CPU budget, a share of one core
	// (tsdb.Options.FlushCPUBudget; 0 → 1).
	AerieFlushCPU float64
	QueryRuns     int       // instances of each TSBS pattern (0 → the scale's)
	Log           io.Writer // progress; nil discards
}

// Scale sizes a run. Series counts are rounded up to whole targets.
type Scale struct {
	Name        string
	Series      int           // series of the main (insert and TSBS) dataset
	Duration    time.Duration // span of the main dataset
	FlushSeries int           // series of the 2 h partition flushed under queries
	QueryRuns   int
}

// Scales are the predefined sizes. large is Heracles' 150 K series for
// 12 h (§4.4.1) at 15 s: 432 M samples.
var Scales = map[string]Scale{
	"small":  {Name: "small", Series: 1_000, Duration: 12 * time.Hour, FlushSeries: 1_000, QueryRuns: 10},
	"medium": {Name: "medium", Series: 10_000, Duration: 12 * time.Hour, FlushSeries: 10_000, QueryRuns: 50},
	"large":  {Name: "large", Series: 150_000, Duration: 12 * time.Hour, FlushSeries: 10_000, QueryRuns: 30},
}

// flushSpan is the partition flushed under queries (Heracles §4.5).
const flushSpan = 2 * time.Hour

// queryWindow is the range of the queries issued during the flush.
const queryWindow = 15 * time.Minute

// runner carries one run's state.
type runner struct {
	cfg    Config
	scale  Scale
	log    io.Writer
	dir    string
	sync   wal.SyncMode
	eng    *promql.Engine    // Prometheus' engine: prometheus/tsdb's queries
	aeng   *queryeval.Engine // Aerie's: range functions over arrays, the rest by eng
	rep    *Report
	main   workload.Workload
	flushW workload.Workload
	hist   *historyData // --workload=history
	hscale historyScale
}

// Run runs every measurement of cfg and returns the report.
func Run(cfg Config) (*Report, error) {
	sc, ok := Scales[cfg.Scale]
	if !ok {
		return nil, fmt.Errorf("--scale=%q: want small, medium or large", cfg.Scale)
	}
	if cfg.QueryRuns > 0 {
		sc.QueryRuns = cfg.QueryRuns
	}
	if cfg.Writers <= 0 {
		cfg.Writers = runtime.GOMAXPROCS(0)
	}
	r := &runner{cfg: cfg, scale: sc, log: cfg.Log}
	if r.log == nil {
		r.log = io.Discard
	}
	switch cfg.AerieSync {
	case "", "interval":
		cfg.AerieSync, r.sync = "interval", wal.SyncInterval
	case "batch":
		r.sync = wal.SyncBatch
	default:
		return nil, fmt.Errorf("--aerie.wal-sync=%q: want interval or batch", cfg.AerieSync)
	}
	switch cfg.AerieQueryEngine {
	case "", "aerie", "prometheus":
	default:
		return nil, fmt.Errorf("--aerie.query-engine=%q: want aerie or prometheus", cfg.AerieQueryEngine)
	}
	r.cfg = cfg
	if cfg.Workload != historyWorkload {
		if err := r.workloads(); err != nil {
			return nil, err
		}
	}
	dir := cfg.Dir
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "aerie-bench-"); err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
	}
	r.dir = dir
	r.eng = promql.NewEngine(promql.EngineOpts{
		MaxSamples:    1 << 40,
		Timeout:       time.Hour,
		LookbackDelta: 5 * time.Minute,
		// Keeps __name__ through max_over_time, so that label_replace can
		// copy it into a label the 5-x-y patterns group the metrics by.
		EnableDelayedNameRemoval: true,
	})
	r.aeng = queryeval.New(r.eng, queryeval.Options{DelayedNameRemoval: true})
	if cfg.Workload == historyWorkload {
		return r.runHistory()
	}
	r.rep = newReport(r.cfg, sc, r.main)
	if err := harness.RunPhases(r.log,
		harness.Phase{Name: "insert, TSBS queries and disk size", Run: r.mainPhase},
		harness.Phase{Name: "flush under queries and head memory", Run: r.flushPhase},
		harness.Phase{Name: "tuple sizes", Run: r.tuplePhase},
	); err != nil {
		return nil, err
	}
	r.rep.Done()
	return r.rep, nil
}

// engineFor is the PromQL engine that queries e, as its server would:
// Aerie's evaluator for Aerie, Prometheus' engine for prometheus/tsdb.
func (r *runner) engineFor(e interface{ name() string }) promql.QueryEngine {
	if e.name() == "aerie" && r.cfg.AerieQueryEngine != "prometheus" {
		return r.aeng
	}
	return r.eng
}

func (r *runner) logf(format string, args ...any) { harness.Logf(r.log, format, args...) }

// workloads builds the main and the flush datasets.
func (r *runner) workloads() error {
	if r.cfg.Input != "" {
		w, err := workload.FromFile(r.cfg.Input)
		if err != nil {
			return err
		}
		r.main, r.flushW = w, w
		return nil
	}
	spec := workload.Spec{Interval: r.cfg.Interval, Seed: r.cfg.Seed}
	if spec.Interval == 0 {
		spec.Interval = 15 * time.Second
		if r.cfg.Workload == "tsbs" {
			spec.Interval = 10 * time.Second
		}
	}
	perTarget, err := seriesPerTarget(r.cfg.Workload, spec)
	if err != nil {
		return err
	}
	spec.Targets = (r.scale.Series + perTarget - 1) / perTarget
	if r.cfg.Targets > 0 {
		spec.Targets = r.cfg.Targets
	}
	spec.Duration = r.scale.Duration
	if r.cfg.Duration > 0 {
		spec.Duration = r.cfg.Duration
	}
	if r.main, err = workload.New(r.cfg.Workload, spec); err != nil {
		return err
	}
	spec.Targets = (r.scale.FlushSeries + perTarget - 1) / perTarget
	spec.Duration = flushSpan
	spec.Seed++
	r.flushW, err = workload.New(r.cfg.Workload, spec)
	return err
}

func seriesPerTarget(kind string, spec workload.Spec) (int, error) {
	spec.Targets, spec.Duration = 1, spec.Interval
	w, err := workload.New(kind, spec)
	if err != nil {
		return 0, err
	}
	return len(w.Series(0)), nil
}

// open opens a fresh engine of the named kind under the scratch directory.
func (r *runner) open(kind, phase string, tupleSize int) (engine, error) {
	dir := filepath.Join(r.dir, phase+"-"+kind)
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	if kind == "aerie" {
		// Only the flush phase keeps a flushed partition in memory (the
		// default): it measures queries during and after the flush. The
		// others measure reads of blocks after the flush (…_disk).
		hot := -1
		if phase == "flush" {
			hot = 0
		}
		return openAerie(dir, aerieOptions{tupleSize: min(tupleSize, head.MaxTupleSize), blockTupleSize: tupleSize, walSync: r.sync,
			flushCPU: r.cfg.AerieFlushCPU, hotPartitions: hot})
	}
	return openProm(dir)
}

// closeEngine closes e and removes its directory.
func (r *runner) closeEngine(e engine, phase string) error {
	err := e.close()
	if r.cfg.Keep && r.cfg.Dir != "" {
		return err
	}
	if rmErr := os.RemoveAll(filepath.Join(r.dir, phase+"-"+e.name())); err == nil {
		err = rmErr
	}
	return err
}

// sliceSpan is how much time of every target's scrapes is generated
// (untimed) before it is written (timed). Writers run free within a slice,
// so it must stay well inside both engines' out-of-bounds window (half a
// 2 h block behind the newest sample).
const sliceSpan = 15 * time.Minute

// insertStats describes one insert.
type insertStats struct {
	write   time.Duration // time spent writing, generation excluded
	samples int64
	gcPause time.Duration // GC pause total over the insert
}

// insert writes every row of w into e with r.cfg.Writers goroutines, each
// owning every Writers-th target and writing its targets' rows in time
// order, one scrape (one appender's Commit) at a time. Rows are generated 15 minutes of scrapes at a time before the
// timed write, so the generator's cost is not measured.
func (r *runner) insert(e engine, w workload.Workload) (insertStats, error) {
	var st insertStats
	nw := r.cfg.Writers
	stepsPerSlice := max(1, int(sliceSpan/w.Interval()))
	type targetState struct {
		tw   targetWriter
		sc   workload.Scraper
		rows []workload.Row
		n    int // rows filled in the current slice
		done bool
	}
	ts := make([]*targetState, w.NumTargets())
	for i := range ts {
		ts[i] = &targetState{sc: w.Scraper(i), rows: make([]workload.Row, stepsPerSlice)}
	}
	ms0 := memStats()
	var (
		wg     sync.WaitGroup
		errMu  sync.Mutex
		runErr error
	)
	parallel := func(fn func(k int) error) {
		for k := 0; k < nw; k++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := fn(k); err != nil {
					errMu.Lock()
					runErr = err
					errMu.Unlock()
				}
			}()
		}
		wg.Wait()
	}
	// Targets are prepared inside the timed part (both engines create a
	// series at its first append).
	t0 := time.Now()
	parallel(func(k int) error {
		for i := k; i < len(ts); i += nw {
			tw, err := e.target(w.Series(i))
			if err != nil {
				return err
			}
			ts[i].tw = tw
		}
		return nil
	})
	st.write += time.Since(t0)
	for runErr == nil {
		var filled int64
		var mu sync.Mutex
		parallel(func(k int) error { // generate, untimed
			var n int64
			for i := k; i < len(ts); i += nw {
				s := ts[i]
				s.n = 0
				for s.n < stepsPerSlice && !s.done {
					if !s.sc.Next(&s.rows[s.n]) {
						s.done = true
						break
					}
					n += int64(countPresent(&s.rows[s.n]))
					s.n++
				}
			}
			mu.Lock()
			filled += n
			mu.Unlock()
			return nil
		})
		if filled == 0 {
			break
		}
		t0 := time.Now()
		parallel(func(k int) error { // write, timed
			for j := 0; j < stepsPerSlice; j++ {
				for i := k; i < len(ts); i += nw {
					if s := ts[i]; j < s.n {
						if err := s.tw.write(&s.rows[j]); err != nil {
							return err
						}
					}
				}
			}
			return nil
		})
		st.write += time.Since(t0)
		st.samples += filled
	}
	st.gcPause = time.Duration(memStats().PauseTotalNs - ms0.PauseTotalNs)
	return st, runErr
}

func countPresent(row *workload.Row) int {
	if row.Present == nil {
		return len(row.Values)
	}
	n := 0
	for _, p := range row.Present {
		if p {
			n++
		}
	}
	return n
}

func memStats() runtime.MemStats {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms
}

// settledHeap returns the live heap after two full collections.
func settledHeap() int64 {
	runtime.GC()
	runtime.GC()
	return int64(memStats().HeapAlloc)
}

// allSeries returns every series of w.
func allSeries(w workload.Workload) []labels.Labels {
	var out []labels.Labels
	for i := 0; i < w.NumTargets(); i++ {
		out = append(out, w.Series(i)...)
	}
	return out
}

// lastWindow reads every sample of one series in [maxt-window, maxt]
// through e's Querier, as Heracles §4.5's query thread does, and returns
// the samples read.
func lastWindow(e engine, ls labels.Labels, maxt int64, it chunkenc.Iterator) (int, chunkenc.Iterator, error) {
	return readRange(e, ls, maxt-queryWindow.Milliseconds(), maxt, it)
}

// readRange reads every sample of one series in [mint, maxt] through e's
// Querier and returns the samples read.
func readRange(e engine, ls labels.Labels, mint, maxt int64, it chunkenc.Iterator) (int, chunkenc.Iterator, error) {
	ms := make([]*labels.Matcher, 0, ls.Len())
	ls.Range(func(l labels.Label) { ms = append(ms, labels.MustNewMatcher(labels.MatchEqual, l.Name, l.Value)) })
	q, err := e.Querier(mint, maxt)
	if err != nil {
		return 0, it, err
	}
	defer q.Close()
	ss := q.Select(context.Background(), false, nil, ms...)
	n := 0
	for ss.Next() {
		it = ss.At().Iterator(it)
		for it.Next() != chunkenc.ValNone {
			n++
		}
		if it.Err() != nil {
			return n, it, it.Err()
		}
	}
	return n, it, ss.Err()
}
