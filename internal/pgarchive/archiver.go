package pgarchive

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/model/labels"
	"golang.org/x/time/rate"
)

// Archiver copies a Source's rollup levels into PostgreSQL. New, Start and
// Close may be called from any goroutine; Start and Close once each.
type Archiver struct {
	cfg     Config
	src     Source
	log     *slog.Logger
	pool    *pgxpool.Pool
	limiter *rate.Limiter // nil: no limit
	queue   *queue
	levels  []*levelState
	m       *metrics

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	schemaMu   sync.Mutex // guards schemaDone; held while creating the schema
	schemaDone bool

	bundlesMu sync.Mutex // guards bundles
	bundles   map[int32]*bundleState

	stateMu sync.Mutex // guards started and closed
	started bool
	closed  bool

	flushLog rate.Sometimes // rate-limits the flusher's error log
}

// bundleState is an rra_bundle shared by the levels with its step and size.
type bundleState struct {
	id  int32
	lay Layout
	// latestSlot is the newest slot of any job queued for the bundle
	// (math.MinInt64: none), so a level loop drops points a newer lap
	// has overwritten.
	latestSlot atomic.Int64
}

// raiseLatest makes the bundle's newest slot at least s.
func (b *bundleState) raiseLatest(s int64) {
	for {
		cur := b.latestSlot.Load()
		if cur >= s || b.latestSlot.CompareAndSwap(cur, s) {
			return
		}
	}
}

// levelState is one level's loop. Fields up to gen are owned by the
// level's loop goroutine.
type levelState struct {
	level Level
	lay   Layout // immutable: the configured geometry (the bundle may have another Width)

	inited   bool
	initGen  uint64 // gen when inited
	bundle   *bundleState
	next     int64            // source time (ms) up to which jobs are queued
	pos      map[string]int32 // series (labels.Labels.Bytes) → position
	key      []byte
	builder  rowBuilder
	pending  []pendingSeries
	errLog   rate.Sometimes
	skipLog  rate.Sometimes
	lastSkip int64

	// gen is raised by the flusher when a job of this level finds another
	// watermark in the database: the loop then reloads its state.
	gen atomic.Uint64
	// done is the committed watermark (ms), -1 until known.
	done atomic.Int64
}

// pendingSeries is a series read from the source that has no position yet.
type pendingSeries struct {
	lset string // labels.Labels.String()
	key  string // labels.Labels.Bytes()
	json []byte
	ts   []int64
	vs   []float64
}

// New returns an archiver of src's levels into the database at cfg.DSN.
// It does not connect: Start does, in the background. reg may be nil.
func New(cfg Config, src Source, logger *slog.Logger, reg prometheus.Registerer) (*Archiver, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	pcfg, err := pgxpool.ParseConfig(cfg.DSN)
	if err != nil {
		return nil, fmt.Errorf("pgarchive: parse dsn: %w", err)
	}
	if pcfg.ConnConfig.ConnectTimeout == 0 {
		// An unreachable host would otherwise hold a loop until Close.
		pcfg.ConnConfig.ConnectTimeout = 10 * time.Second
	}
	if _, ok := pcfg.ConnConfig.RuntimeParams["application_name"]; !ok {
		pcfg.ConnConfig.RuntimeParams["application_name"] = "aerie-pgarchive"
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	a := &Archiver{
		cfg:      cfg,
		src:      src,
		log:      logger,
		queue:    newQueue(cfg.QueueSize),
		bundles:  map[int32]*bundleState{},
		flushLog: rate.Sometimes{Interval: 10 * time.Second},
	}
	if cfg.MaxFlushesPerSecond > 0 {
		a.limiter = rate.NewLimiter(rate.Limit(cfg.MaxFlushesPerSecond), 1)
	}
	names := map[string]bool{}
	for _, l := range src.Levels() {
		lay, err := l.layout(int32(cfg.SegmentWidth))
		if err != nil {
			return nil, fmt.Errorf("pgarchive: %w", err)
		}
		if names[l.Name] {
			return nil, fmt.Errorf("pgarchive: two levels named %q", l.Name)
		}
		names[l.Name] = true
		lv := &levelState{
			level:   l,
			lay:     lay,
			errLog:  rate.Sometimes{Interval: 10 * time.Second},
			skipLog: rate.Sometimes{Interval: time.Minute},
		}
		lv.done.Store(-1)
		a.levels = append(a.levels, lv)
	}
	a.m, err = newMetrics(reg, a)
	if err != nil {
		return nil, err
	}
	a.pool, err = pgxpool.NewWithConfig(context.Background(), pcfg)
	if err != nil {
		return nil, fmt.Errorf("pgarchive: %w", err)
	}
	a.ctx, a.cancel = context.WithCancel(context.Background())
	return a, nil
}

// Start starts one loop per level and the flusher, and returns at once:
// it never waits for PostgreSQL.
func (a *Archiver) Start() error {
	a.stateMu.Lock()
	defer a.stateMu.Unlock()
	if a.started || a.closed {
		return errors.New("pgarchive: Start after Start or Close")
	}
	a.started = true
	a.wg.Add(1 + len(a.levels))
	go a.runFlusher()
	for _, lv := range a.levels {
		go a.runLevel(lv)
	}
	return nil
}

// Close stops the loops, abandons queued jobs (their ranges are read again
// from the watermark next time) and closes the connections.
func (a *Archiver) Close() error {
	a.stateMu.Lock()
	if a.closed {
		a.stateMu.Unlock()
		return nil
	}
	a.closed = true
	a.stateMu.Unlock()
	a.cancel()
	a.wg.Wait()
	a.pool.Close()
	return nil
}

// errIdle: the level has nothing new to read.
var errIdle = errors.New("idle")

func (a *Archiver) runLevel(lv *levelState) {
	defer a.wg.Done()
	var bo backoff
	for a.ctx.Err() == nil {
		err := a.stepLevel(a.ctx, lv)
		switch {
		case err == nil:
			bo.reset()
		case errors.Is(err, errIdle):
			bo.reset()
			sleep(a.ctx, a.cfg.Interval)
		case a.ctx.Err() != nil:
			return
		default:
			a.m.levelErrors.WithLabelValues(lv.level.Name).Inc()
			lv.errLog.Do(func() {
				a.log.Warn("pgarchive: level loop failed; retrying", "level", lv.level.Name, "err", err)
			})
			sleep(a.ctx, bo.next(a.cfg.MaxBackoff))
		}
	}
}

// stepLevel queues one job of lv, or returns errIdle.
func (a *Archiver) stepLevel(ctx context.Context, lv *levelState) error {
	if lv.inited && lv.gen.Load() != lv.initGen {
		lv.inited = false
		a.log.Info("pgarchive: watermark moved under us; reloading", "level", lv.level.Name)
	}
	if !lv.inited {
		if err := a.initLevel(ctx, lv); err != nil {
			return err
		}
	}
	ready := a.src.Ready(lv.level)
	from := lv.next
	if ready <= from {
		return errIdle
	}
	b := lv.bundle
	lay := b.lay
	// Points a newer lap has overwritten are not read: the window ends at
	// the newest slot after this job.
	minSlot := max(b.latestSlot.Load(), lay.Slot(ready-1)) - lay.Size + 1
	readFrom := max(from, satMul(minSlot, lay.StepMs))
	if readFrom > from && lv.lastSkip != from {
		lv.lastSkip = from
		lv.skipLog.Do(func() {
			a.log.Info("pgarchive: skipping data older than the round-robin window", "level", lv.level.Name, "from_ms", from, "to_ms", readFrom)
		})
	}
	to := min(ready, satAdd(readFrom, satMul(int64(a.cfg.ChunkSteps), lay.StepMs)))
	latestSlot := max(b.latestSlot.Load(), lay.Slot(to-1))

	bld := &lv.builder
	bld.reset(lay, readFrom, to, latestSlot)
	clear(lv.pending)
	lv.pending = lv.pending[:0]
	err := a.src.Read(ctx, lv.level, readFrom, to, func(lset labels.Labels, ts []int64, vs []float64) error {
		lv.key = lset.Bytes(lv.key[:0])
		if pos, ok := lv.pos[string(lv.key)]; ok {
			bld.add(pos, ts, vs)
			return nil
		}
		js, err := lset.MarshalJSON()
		if err != nil {
			return fmt.Errorf("encode labels of %s: %w", lset, err)
		}
		lv.pending = append(lv.pending, pendingSeries{
			lset: lset.String(), key: string(lv.key), json: js,
			ts: append([]int64(nil), ts...), vs: append([]float64(nil), vs...),
		})
		return nil
	})
	if err != nil {
		return fmt.Errorf("read %s [%d, %d) from the source: %w", lv.level.Name, readFrom, to, err)
	}
	if len(lv.pending) > 0 {
		if err := a.resolve(ctx, lv); err != nil {
			return fmt.Errorf("register %d new series of %s: %w", len(lv.pending), lv.level.Name, err)
		}
		for _, p := range lv.pending {
			bld.add(lv.pos[p.key], p.ts, p.vs)
		}
	}
	for reason, n := range bld.dropped {
		a.m.dropped.WithLabelValues(reason).Add(float64(n))
	}
	j := &job{level: lv, bundle: b, gen: lv.initGen, from: from, to: to, latestSlot: latestSlot, rows: bld.build(), points: bld.points}
	if err := a.queue.push(ctx, j); err != nil {
		return err
	}
	lv.next = to
	b.raiseLatest(latestSlot)
	return nil
}

func (a *Archiver) runFlusher() {
	defer a.wg.Done()
	for {
		j, err := a.queue.pop(a.ctx)
		if err != nil {
			return
		}
		a.flushRetrying(j)
		a.queue.done(j)
	}
}

// flushRetrying writes j, retrying until it is written, found stale, or
// the archiver closes.
func (a *Archiver) flushRetrying(j *job) {
	var bo backoff
	for {
		if j.gen != j.level.gen.Load() {
			return // the level reloads and reads this range again
		}
		err := a.flush(a.ctx, j)
		if err == nil || a.ctx.Err() != nil {
			return
		}
		var st *staleError
		if errors.As(err, &st) {
			a.log.Warn("pgarchive: "+st.Error()+"; the level reloads it", "level", j.level.level.Name)
			j.level.gen.Add(1)
			return
		}
		a.m.flushErrors.Inc()
		a.flushLog.Do(func() {
			a.log.Warn("pgarchive: flush failed; retrying", "level", j.level.level.Name, "from_ms", j.from, "to_ms", j.to, "rows", j.rows.Len(), "err", err)
		})
		sleep(a.ctx, bo.next(a.cfg.MaxBackoff))
	}
}

// waitFlush waits for the rate limit before one flush.
func (a *Archiver) waitFlush(ctx context.Context) error {
	if a.limiter == nil {
		return nil
	}
	return a.limiter.Wait(ctx)
}

// backoff is an exponential wait with jitter: the n-th wait is drawn from
// [d/2, d] with d = min(100ms·2ⁿ, max).
type backoff struct{ d time.Duration }

func (b *backoff) reset() { b.d = 0 }

func (b *backoff) next(maxWait time.Duration) time.Duration {
	b.d = min(max(2*b.d, minBackoff), maxWait)
	return b.d/2 + rand.N(b.d/2+1)
}

// sleep waits d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

func satAdd(x, y int64) int64 {
	if y > 0 && x > math.MaxInt64-y {
		return math.MaxInt64
	}
	if y < 0 && x < math.MinInt64-y {
		return math.MinInt64
	}
	return x + y
}

func satMul(x, y int64) int64 {
	if x == 0 || y == 0 {
		return 0
	}
	p := x * y
	if p/y != x || (x == -1 && y == math.MinInt64) || (y == -1 && x == math.MinInt64) {
		if (x < 0) != (y < 0) {
			return math.MinInt64
		}
		return math.MaxInt64
	}
	return p
}
