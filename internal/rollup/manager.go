package rollup

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/aerie-db/aerie/internal/mathx"
	"github.com/aerie-db/aerie/internal/tsdb"
)

// Options configure a Manager. Zero values take the defaults in brackets.
type Options struct {
	// Engine is the template of the levels' engines (WAL sync, memory,
	// limits); Retention, PartitionRange, MetricInterval, OOOWindow and
	// SeriesRetention are set per level.
	Engine tsdb.Options
	// Interval is how often the manager looks for raw data that can no
	// longer change in the head and rolls them up [1m]; negative: never
	// (callers call RunOnce).
	Interval time.Duration
	// BatchSeries bounds the series rolled up in memory at once [10000].
	BatchSeries int
	Logger      *slog.Logger
	Registerer  prometheus.Registerer
	Now         func() time.Time // [time.Now]
}

// Level is one rollup archive step: an engine of its own in
// <dir>/<name>, keeping the buckets of every series whose schema has an
// archive of this step.
type Level struct {
	Name      string // the step in carbon's units: "1m", "1h"
	Step      time.Duration
	Retention time.Duration // the longest any schema keeps this step
	DB        *tsdb.DB
}

// Retainer gives the raw engine its per-series retention
// (tsdb.Options.SeriesRetention): a series matched by a schema keeps its
// raw samples for Retentions[0].Duration, and never loses one that a
// rollup level of its schema has not consumed yet. It is made before the
// raw engine opens and handed to Open.
type Retainer struct {
	rules *Rules
	now   func() time.Time
	done  atomic.Pointer[map[time.Duration]int64] // level step → done, set by the Manager
	// dirtyMin is the start of the oldest raw range the levels must
	// compute again (math.MaxInt64: none), set by the Manager.
	dirtyMin atomic.Int64
	// onBackfill is the Manager's, once it is open; before, ranges wait in
	// early (no write reaches the engine before the server is built, but
	// an engine opened by a tool may differ).
	mu         sync.Mutex // guards onBackfill and early
	onBackfill func(mint, maxt int64)
	early      []Interval
}

// Backfilled is tsdb.Options.OnBackfill: samples in [mint, maxt] reached
// the raw engine below the head, maybe inside ranges already rolled up.
func (r *Retainer) Backfilled(mint, maxt int64) {
	r.mu.Lock()
	f := r.onBackfill
	if f == nil {
		r.early = append(r.early, Interval{mint, maxt})
	}
	r.mu.Unlock()
	if f != nil {
		f(mint, maxt)
	}
}

// NewRetainer returns the retention of rules (now: [time.Now]).
func NewRetainer(rules *Rules, now func() time.Time) *Retainer {
	if now == nil {
		now = time.Now
	}
	r := &Retainer{rules: rules, now: now}
	r.done.Store(&map[time.Duration]int64{})
	r.dirtyMin.Store(math.MaxInt64)
	return r
}

// Cutoff is tsdb.Options.SeriesRetention.
// Oldest is the earliest Cutoff of any series: raw data before it may be
// gone for some (math.MinInt64 when no schema deletes raw data).
func (r *Retainer) Oldest() int64 {
	out := int64(math.MaxInt64)
	for _, s := range append(slices.Clone(r.rules.Schemas), DefaultSchema) {
		if len(s.Retentions) > 0 && s.Retentions[0].Duration > 0 {
			out = min(out, r.now().Add(-s.Retentions[0].Duration).UnixMilli())
		}
	}
	if out == math.MaxInt64 {
		return math.MinInt64
	}
	return min(out, r.dirtyMin.Load())
}

func (r *Retainer) Cutoff(lset labels.Labels) int64 {
	s, _ := r.rules.Match(lset.Get(labels.MetricName))
	keep := s.Retentions[0].Duration
	if keep <= 0 {
		return math.MinInt64
	}
	c := min(r.now().Add(-keep).UnixMilli(), r.dirtyMin.Load())
	done := *r.done.Load()
	for _, rt := range s.Retentions[1:] {
		d, ok := done[rt.Step]
		if !ok {
			return math.MinInt64 // its level is not open: keep everything
		}
		c = min(c, d)
	}
	return c
}

// Manager computes the rollup levels from the raw engine: once raw data
// can no longer change in the head (the head moved past them by the out-of-
// order window, or half a partition), it consolidates them, range by
// range in time order, into each level's engine, and records durably how
// far each level got (the state file).
type Manager struct {
	raw    *tsdb.DB
	rules  *Rules
	ret    *Retainer
	dir    string
	opts   Options
	log    *slog.Logger
	levels []*Level

	runMu sync.Mutex // serializes RunOnce

	stMu   sync.Mutex       // guards st, busyTo and the state file; taken under runMu, never the reverse
	st     state            // done per level; raw ranges to compute again
	busyTo map[string]int64 // per level, the end of the range a pass is computing

	// redone counts the passes that computed levels again over backfilled
	// ranges, bumped once their buckets are written: the Version of every
	// level's archive.Grid (caches of level buckets key on it).
	redone atomic.Uint64

	stop chan struct{}
	wg   sync.WaitGroup

	rolled   *prometheus.CounterVec
	stale    *prometheus.CounterVec
	failures prometheus.Counter
	lag      *prometheus.GaugeVec
}

// Open opens (creating) the level engines under dir and the state file.
// ret must be the Retainer the raw engine was opened with (or nil).
func Open(dir string, raw *tsdb.DB, rules *Rules, ret *Retainer, opts Options) (*Manager, error) {
	if opts.Interval == 0 {
		opts.Interval = time.Minute
	}
	if opts.BatchSeries <= 0 {
		opts.BatchSeries = 10000
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if ret == nil {
		ret = NewRetainer(rules, opts.Now)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	st, err := readState(filepath.Join(dir, stateFile))
	if err != nil {
		return nil, err
	}
	m := &Manager{raw: raw, rules: rules, ret: ret, dir: dir, opts: opts, log: opts.Logger, st: st, stop: make(chan struct{})}
	for _, rt := range rules.Levels() {
		l := &Level{Name: fmtDur(rt.Step), Step: rt.Step, Retention: rt.Duration}
		eo := opts.Engine
		eo.PartitionRange = levelPartition(rt.Step).Milliseconds()
		eo.MetricInterval = eo.PartitionRange
		eo.Retention = rt.Duration.Milliseconds()
		eo.OOOWindow = eo.PartitionRange
		eo.NoOOO = false
		eo.MaxFuture = 0
		eo.SeriesRetention = m.levelCutoff(rt.Step)
		eo.Logger = opts.Logger.With("level", l.Name)
		if l.DB, err = tsdb.Open(filepath.Join(dir, l.Name), &eo); err != nil {
			m.closeLevels()
			return nil, fmt.Errorf("open rollup level %s: %w", l.Name, err)
		}
		m.levels = append(m.levels, l)
	}
	m.rolled = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "aerie_rollup_buckets_total", Help: "Rollup buckets written, by level.",
	}, []string{"level"})
	m.stale = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "aerie_rollup_stale_buckets_total",
		Help: "Buckets computed again after a backfill whose level already held another value (the level keeps the first).",
	}, []string{"level"})
	m.failures = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "aerie_rollup_failures_total", Help: "Rollup passes that failed (retried at the next interval).",
	})
	m.lag = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "aerie_rollup_done_timestamp_seconds", Help: "Time up to which each rollup level holds every bucket.",
	}, []string{"level"})
	if opts.Registerer != nil {
		for _, c := range []prometheus.Collector{m.rolled, m.stale, m.failures, m.lag} {
			if err := opts.Registerer.Register(c); err != nil {
				m.closeLevels()
				return nil, err
			}
		}
	}
	m.stMu.Lock()
	m.publishLocked()
	m.stMu.Unlock()
	ret.mu.Lock()
	early := ret.early
	ret.early, ret.onBackfill = nil, m.noteBackfill
	ret.mu.Unlock()
	for _, iv := range early {
		m.noteBackfill(iv.Mint, iv.Maxt)
	}
	return m, nil
}

// noteBackfill records a raw range written below the head durably (the
// state file) if a level already covers part of it, so that the next
// pass computes it again, even after a crash.
func (m *Manager) noteBackfill(mint, maxt int64) {
	m.stMu.Lock()
	defer m.stMu.Unlock()
	covered := false
	for _, l := range m.levels {
		if d, ok := m.st.done[l.Name]; ok && mint < max(d, m.busyTo[l.Name]) {
			covered = true
		}
		if _, ok := m.st.done[l.Name]; !ok {
			covered = true // not started: its first pass must not begin after mint
		}
	}
	if !covered {
		return
	}
	var changed bool
	if m.st.dirty, changed = addInterval(m.st.dirty, Interval{mint, maxt}); !changed {
		return
	}
	if err := writeState(filepath.Join(m.dir, stateFile), m.st, m.levelNames()); err != nil {
		m.log.Error("record backfilled range for the rollups", "mint", mint, "maxt", maxt, "err", err)
	}
	m.publishLocked()
}

// levelPartition is a level engine's partition: about 120 buckets, at
// least the raw engine's default 2h, a whole number of steps.
func levelPartition(step time.Duration) time.Duration {
	p := 120 * step
	if p < 2*time.Hour {
		p = 2 * time.Hour
	}
	return (p + step - 1) / step * step
}

// levelCutoff is the per-series retention inside a level engine: a
// series keeps this step's buckets as long as its own schema asks.
func (m *Manager) levelCutoff(step time.Duration) func(labels.Labels) int64 {
	return func(lset labels.Labels) int64 {
		s, _ := m.rules.Match(lset.Get(labels.MetricName))
		for _, rt := range s.Retentions[1:] {
			if rt.Step == step {
				return m.opts.Now().Add(-rt.Duration).UnixMilli()
			}
		}
		return math.MinInt64
	}
}

// publishLocked hands the done times and the oldest dirty range to the
// Retainer. Caller holds stMu.
func (m *Manager) publishLocked() {
	by := make(map[time.Duration]int64, len(m.levels))
	for _, l := range m.levels {
		if d, ok := m.st.done[l.Name]; ok {
			by[l.Step] = d
		} else {
			by[l.Step] = math.MinInt64
		}
	}
	m.ret.done.Store(&by)
	dm := int64(math.MaxInt64)
	if len(m.st.dirty) > 0 {
		dm = m.st.dirty[0].Mint
	}
	m.ret.dirtyMin.Store(dm)
}

// Levels returns the levels, finest first.
func (m *Manager) Levels() []*Level { return m.levels }

// Level returns the level of a step name ("1m"), or nil.
func (m *Manager) Level(name string) *Level {
	for _, l := range m.levels {
		if l.Name == name {
			return l
		}
	}
	return nil
}

// Done returns the time up to which a level holds every bucket
// (math.MinInt64: nothing rolled up yet).
func (m *Manager) Done(name string) int64 {
	m.stMu.Lock()
	defer m.stMu.Unlock()
	if d, ok := m.st.done[name]; ok {
		return d
	}
	return math.MinInt64
}

// Start runs RunOnce every Interval until Close.
func (m *Manager) Start() {
	if m.opts.Interval < 0 || len(m.levels) == 0 {
		return
	}
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		t := time.NewTicker(m.opts.Interval)
		defer t.Stop()
		for {
			ctx, cancel := context.WithCancel(context.Background())
			go func() {
				select {
				case <-m.stop:
					cancel()
				case <-ctx.Done():
				}
			}()
			if err := m.RunOnce(ctx); err != nil && !errors.Is(err, context.Canceled) {
				m.failures.Inc()
				m.log.Error("rollup failed; retrying at the next interval", "err", err)
			}
			cancel()
			if _, err := m.raw.ApplySeriesRetention(); err != nil {
				m.log.Error("raw retention of the rollup schemas", "err", err)
			}
			select {
			case <-m.stop:
				return
			case <-t.C:
			}
		}
	}()
}

// Close stops the loop and closes the level engines.
func (m *Manager) Close() error {
	select {
	case <-m.stop:
	default:
		close(m.stop)
	}
	m.wg.Wait()
	return m.closeLevels()
}

func (m *Manager) closeLevels() error {
	var errs []error
	for _, l := range m.levels {
		if l.DB != nil {
			errs = append(errs, l.DB.Close())
		}
	}
	return errors.Join(errs...)
}

// settled is the time before which the raw head takes no more samples:
// the engine's newest time (the head's, or the backfill's when the head
// spills a burst of history there) minus the out-of-order window or half a
// partition. Later writes below it go to the backfill, which reports them
// (noteBackfill).
func (m *Manager) settled() int64 {
	o := m.raw.Head().Options()
	maxT := m.raw.NewestTime()
	now := m.opts.Now().UnixMilli()
	if maxT == math.MinInt64 || maxT > now {
		maxT = now
	}
	return maxT - max(o.OOOWindow, o.PartitionRange/2)
}

// RunOnce computes again the ranges backfill wrote into, then rolls every
// level up to the settled time, a range at a time, recording each range
// durably once its buckets are.
func (m *Manager) RunOnce(ctx context.Context) error {
	m.runMu.Lock()
	defer m.runMu.Unlock()
	if err := m.redoDirty(ctx); err != nil {
		return err
	}
	settled := m.settled()
	for _, l := range m.levels {
		step := l.Step.Milliseconds()
		chunk := max(levelPartition(l.Step).Milliseconds()/step, 1) * step
		end := mathx.FloorDiv(settled, step) * step
		m.stMu.Lock()
		done, ok := m.st.done[l.Name]
		m.stMu.Unlock()
		if !ok {
			first := m.rawMinTime()
			if first == math.MaxInt64 {
				continue // nothing stored yet
			}
			done = mathx.FloorDiv(first, step) * step
		}
		for done < end {
			to := min(done+chunk, end)
			m.setBusy(l.Name, to) // a backfill into [done, to) from now on is redone
			n, err := m.rollRange(ctx, l, done, to)
			if err != nil {
				return fmt.Errorf("level %s [%d, %d): %w", l.Name, done, to, err)
			}
			m.rolled.WithLabelValues(l.Name).Add(float64(n))
			done = to
			if err := m.setDone(l.Name, done); err != nil {
				return err
			}
			m.lag.WithLabelValues(l.Name).Set(float64(done) / 1000)
		}
		if !ok && done >= end {
			if err := m.setDone(l.Name, done); err != nil {
				return err
			}
		}
	}
	return nil
}

func (m *Manager) setBusy(name string, to int64) {
	m.stMu.Lock()
	defer m.stMu.Unlock()
	if m.busyTo == nil {
		m.busyTo = map[string]int64{}
	}
	m.busyTo[name] = to
}

// setDone records a level's progress durably.
func (m *Manager) setDone(name string, done int64) error {
	m.stMu.Lock()
	defer m.stMu.Unlock()
	if m.st.done == nil {
		m.st.done = map[string]int64{}
	}
	m.st.done[name] = done
	if err := writeState(filepath.Join(m.dir, stateFile), m.st, m.levelNames()); err != nil {
		return fmt.Errorf("write rollup state: %w", err)
	}
	m.publishLocked()
	return nil
}

// redoDirty computes every level again over the raw ranges backfill wrote
// into (the part each level had already done), then forgets them.
func (m *Manager) redoDirty(ctx context.Context) error {
	m.stMu.Lock()
	dirty := slices.Clone(m.st.dirty)
	m.stMu.Unlock()
	if len(dirty) == 0 {
		return nil
	}
	// Level buckets may change (an empty one gets its value): the version
	// moves after the writes, also those of a pass that fails half way, so
	// a reader of the new version reads the new buckets.
	defer m.redone.Add(1)
	for _, l := range m.levels {
		step := l.Step.Milliseconds()
		chunk := max(levelPartition(l.Step).Milliseconds()/step, 1) * step
		done := m.Done(l.Name)
		for _, iv := range dirty {
			from := mathx.FloorDiv(iv.Mint, step) * step
			end := min(mathx.FloorDiv(iv.Maxt, step)*step+step, done)
			for ; from < end; from += chunk {
				n, err := m.rollRange(ctx, l, from, min(from+chunk, end))
				if err != nil {
					return fmt.Errorf("level %s, backfilled [%d, %d): %w", l.Name, from, min(from+chunk, end), err)
				}
				m.rolled.WithLabelValues(l.Name).Add(float64(n))
			}
		}
	}
	m.stMu.Lock()
	defer m.stMu.Unlock()
	m.st.dirty = slices.DeleteFunc(m.st.dirty, func(iv Interval) bool { return slices.Contains(dirty, iv) })
	if err := writeState(filepath.Join(m.dir, stateFile), m.st, m.levelNames()); err != nil {
		return fmt.Errorf("write rollup state: %w", err)
	}
	m.publishLocked()
	return nil
}

func (m *Manager) levelNames() []string {
	out := make([]string, len(m.levels))
	for i, l := range m.levels {
		out[i] = l.Name
	}
	return out
}

// rawMinTime is the oldest sample time of the raw engine.
func (m *Manager) rawMinTime() int64 {
	t := m.raw.Head().MinTime()
	for _, b := range m.raw.Blocks() {
		t = min(t, b.MinTime)
	}
	return t
}

// rollRange writes the buckets of [from, to) of every series whose schema
// has this level, in batches of series, each batch appended time-major
// (one group row per bucket time) and committed (durable) before the next.
func (m *Manager) rollRange(ctx context.Context, l *Level, from, to int64) (int, error) {
	step := l.Step.Milliseconds()
	now := m.opts.Now().UnixMilli()
	var maxHB int64
	for _, s := range m.rules.Schemas {
		maxHB = max(maxHB, s.Heartbeat.Milliseconds())
	}
	q, err := m.raw.Querier(from-maxHB, to-1)
	if err != nil {
		return 0, err
	}
	defer q.Close()
	ss := q.Select(ctx, true, &storage.SelectHints{Start: from - maxHB, End: to - 1, Func: "series"},
		labels.MustNewMatcher(labels.MatchRegexp, labels.MetricName, ".+"))
	nb := int((to - from) / step)
	type rolled struct {
		lset labels.Labels
		vals []float64
	}
	var (
		batch   []rolled
		ts      []int64
		vs      []float64
		slots   []float64
		written int
		it      chunkenc.Iterator
	)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		app := l.DB.Appender(ctx)
		refs := make([]storage.SeriesRef, len(batch))
		for b := 0; b < nb; b++ {
			t := from + int64(b)*step
			for i := range batch {
				v := batch[i].vals[b]
				if math.IsNaN(v) {
					continue
				}
				ref, err := app.Append(refs[i], batch[i].lset, t, v)
				if err != nil {
					// A bucket computed again after a backfill that the
					// level already holds with another value (first write
					// wins), or one past the level's retention.
					m.stale.WithLabelValues(l.Name).Inc()
					continue
				}
				refs[i] = ref
				written++
			}
		}
		batch = batch[:0]
		return app.Commit()
	}
	for ss.Next() {
		s := ss.At()
		lset := s.Labels()
		sch, agg := m.rules.Match(lset.Get(labels.MetricName))
		step0 := sch.Retentions[0].Step.Milliseconds()
		has := false
		for _, rt := range sch.Retentions[1:] {
			has = has || rt.Step == l.Step
		}
		if !has {
			continue
		}
		ts, vs = ts[:0], vs[:0]
		it = s.Iterator(it)
		for it.Next() == chunkenc.ValFloat {
			t, v := it.At()
			ts, vs = append(ts, t), append(vs, v)
		}
		if err := it.Err(); err != nil {
			return written, err
		}
		k := int(step / step0)
		slots = AppendSlots(slots[:0], ts, vs, from, step0, nb*k, agg.Method, sch.Heartbeat.Milliseconds())
		// Buckets already older than the raw archive keeps when they are
		// rolled up (history sent late or in a burst) take any known
		// slot: whisper writes such points straight into the coarser
		// archive, without the finer archive's xFilesFactor.
		late := 0
		if cut := now - sch.Retentions[0].Duration.Milliseconds(); cut > from {
			late = min(int((cut-from+step-1)/step), nb)
		}
		vals := AppendBuckets(make([]float64, 0, nb), slots[:late*k], k, agg.Method, 0)
		vals = AppendBuckets(vals, slots[late*k:], k, agg.Method, agg.XFilesFactor)
		batch = append(batch, rolled{lset: lset, vals: vals})
		if len(batch) >= m.opts.BatchSeries {
			if err := flush(); err != nil {
				return written, err
			}
		}
	}
	if err := ss.Err(); err != nil {
		return written, err
	}
	return written, flush()
}
