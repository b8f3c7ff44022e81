package tsdb

import (
	"cmp"
	"context"
	"errors"
	"math"
	"sync"

	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/metadata"
	"github.com/prometheus/prometheus/storage"

	"github.com/aerie-db/aerie/internal/head"
	"github.com/aerie-db/aerie/internal/mathx"
	"github.com/aerie-db/aerie/internal/model"
)

// ErrNativeHistogram is returned for native histogram samples: Aerie
// stores float samples only (classic histograms, as _bucket series, work).
var ErrNativeHistogram = errors.New("native histograms are not supported by Aerie; send classic histograms")

// Appender implements storage.Appendable, so Prometheus' scrape manager,
// rules manager and remote-write handler write into Aerie. Each Append is
// checked against the committed state as Prometheus' head does, so its
// callers count out-of-bounds and duplicate samples per sample; Commit
// forms the group rows (one scrape of one target is one row) and returns
// once they are durable.
//
// A sample the head refuses as too old goes to the backfill (backfill.go)
// unless Options.NoBackfill is set; one older than the retention, or
// further ahead of the clock than MaxFuture, is rejected.
//
// Append returns the series' ref (0 for a sample that went to the
// backfill as the first of its series): passed back with the same
// series' next samples, it skips the label lookup, as in Prometheus, and
// the labels may then be empty.
func (db *DB) Appender(ctx context.Context) storage.Appender {
	a := &appender{db: db, app: db.head.Appender(), below: math.MinInt64, lateBefore: math.MinInt64, future: math.MinInt64}
	a.app.SetSpill(a.spill)
	if o := db.lateObserver(); o != nil {
		a.lateBefore = o.Horizon()
		a.observer = o
		if ls, ok := latePool.Get().(*lateScratch); ok {
			a.late, a.lateWs = ls.late, ls.ws
		}
	}
	return a
}

// HistoryAppender is Appender for bulk writes of history (sensor
// uploads): a sample of a partition that reaches below the head's in-order
// bound (Head.InOrderBound, as it was when the appender was made) goes to
// the backfill whatever the head would say. A series written after others
// moved the head on would otherwise split that partition between the
// backfill (its older samples) and the head (its newer ones), and the
// partition's metric intervals would have two sources, so value search
// would read their data, until compaction merged them.
func (db *DB) HistoryAppender(ctx context.Context) storage.Appender {
	a := db.Appender(ctx).(*appender)
	if db.backfillOn() {
		if b := db.head.InOrderBound(); b != math.MinInt64 {
			pr := db.opts.PartitionRange
			a.below = mathx.FloorDiv(b, pr)*pr + pr
		}
	}
	return a
}

type appender struct {
	db  *DB
	app *head.Appender
	bf  []bfSample // bound for the backfill at Append
	// spilled are the samples the head's commit found too old: bound for
	// the backfill too, committed after the head (bf is committed while
	// the head commits, so the two fsyncs overlap).
	spilled []bfSample
	opts    storage.AppendOptions
	below   int64 // HistoryAppender: samples before go to the backfill
	// future is the max_future bound (DB.futureBound) last read from the
	// clock: a sample at or before it is not too far in the future, so
	// the clock is read again only for a sample past it (a history load
	// reads it once, a live one about once per max_future).
	future int64

	observer   LateObserver // SetLateObserver's when the appender was made
	lateBefore int64        // its horizon then
	late       []lateSample // head samples before lateBefore (backfill ones are in bf)
	lateWs     []LateWrite  // reportLate's
}

// lateSample is a head sample older than the late horizon.
type lateSample struct {
	ref model.SeriesRef
	t   int64
}

// lateScratch is the memory of an appender's late samples, reused through
// latePool: an appender lives for one commit, and in a load of history
// every sample is late.
type lateScratch struct {
	late []lateSample
	ws   []LateWrite
}

var latePool sync.Pool

// releaseLate gives the late samples' memory to the next appender.
func (a *appender) releaseLate() {
	if a.observer == nil || cap(a.late) > 1<<20 || cap(a.lateWs) > 1<<20 {
		a.late, a.lateWs = nil, nil
		return
	}
	clear(a.late)
	clear(a.lateWs)
	latePool.Put(&lateScratch{a.late[:0], a.lateWs[:0]})
	a.late, a.lateWs = nil, nil
}

func (a *appender) Append(ref storage.SeriesRef, l labels.Labels, t int64, v float64) (storage.SeriesRef, error) {
	if t > a.future {
		if a.future = a.db.futureBound(); t > a.future {
			return 0, ErrTooFarInFuture
		}
	}
	if t < a.below {
		if err := a.db.checkRetention(t); err != nil {
			return 0, err
		}
		// A sample by ref keeps its ref alone: commitBackfill reads the
		// labels only if the generation does not know the series.
		if l.IsEmpty() && (ref == 0 || !a.db.head.HasSeries(model.SeriesRef(ref))) {
			return 0, head.ErrUnknownRef
		}
		a.bf = append(a.bf, bfSample{l: l, ref: model.SeriesRef(ref), t: t, v: v})
		return ref, nil
	}
	if ref != 0 {
		return a.appendRef(ref, l, t, v)
	}
	if err := a.app.Check(l, t, v, a.opts.DiscardOutOfOrder); err != nil {
		if !a.db.backfillable(err) {
			return 0, err
		}
		if err := a.db.checkRetention(t); err != nil {
			return 0, err
		}
		a.bf = append(a.bf, bfSample{l: l, t: t, v: v})
		return 0, nil
	}
	r, err := a.app.AppendLabels(l, t, v)
	if err != nil {
		return 0, err
	}
	if t < a.lateBefore {
		a.late = append(a.late, lateSample{ref: r, t: t})
	}
	return storage.SeriesRef(r), nil
}

// appendRef appends by a ref that Append returned: refs name one head
// series for the life of the DB, so l is not looked up and may be empty
// (the ingest handlers' series caches pass none). A ref the head does not
// know falls back to l.
func (a *appender) appendRef(ref storage.SeriesRef, l labels.Labels, t int64, v float64) (storage.SeriesRef, error) {
	hr := model.SeriesRef(ref)
	err := a.app.CheckRef(hr, t, v, a.opts.DiscardOutOfOrder)
	switch {
	case errors.Is(err, head.ErrUnknownRef):
		if l.IsEmpty() {
			return 0, err
		}
		return a.Append(0, l, t, v)
	case err != nil:
		if !a.db.backfillable(err) {
			return 0, err
		}
		if err := a.db.checkRetention(t); err != nil {
			return 0, err
		}
		a.bf = append(a.bf, bfSample{l: l, ref: hr, t: t, v: v}) // l may be empty: see bfSample
		return ref, nil
	}
	if err := a.app.AppendRef(hr, t, v); err != nil {
		return 0, err
	}
	if t < a.lateBefore {
		a.late = append(a.late, lateSample{ref: hr, t: t})
	}
	return ref, nil
}

func (a *appender) SetOptions(o *storage.AppendOptions) {
	if o != nil {
		a.opts = *o
	}
}

// Commit stores the batch. Samples the head rejects at commit (a race with
// another commit, or a duplicate inside the batch) are counted and
// dropped, as Prometheus' head does; only a storage failure is an error.
//
// The samples bound for the backfill at Append are committed to their
// generations while the head commits, and the commit then waits for the
// head's WAL and the generations' together: a request that writes both (a
// lagging client's) waits for the slower fsync, not for the sum. The ones
// the head's commit spills follow it.
// When one part fails the other may have been stored: a retry rewrites
// the same samples, which both heads accept as duplicates of equal value.
func (a *appender) Commit() error {
	d, err := a.commitNoWait()
	if werr := d.wait(); err == nil {
		err = werr
	}
	return err
}

// CommitNoWait is Commit without waiting for the WALs' fsyncs: every
// sample is applied and its records written, the head's and the backfill
// generations' alike, and wait, never nil, returns once they are all
// durable or with the error that keeps them from it. The caller must not
// acknowledge the samples before wait returned nil. A batch of several
// commits (one request's) waits once, after its last: its commits share
// fsyncs instead of each waiting for its own.
func (a *appender) CommitNoWait() (wait func() error, err error) {
	d, err := a.commitNoWait()
	return d.wait, err
}

// commitNoWait is CommitNoWait, returning what its wait waits for.
func (a *appender) commitNoWait() (d *durable, err error) {
	d = &durable{}
	d.waits = d.one[:0]
	defer func() {
		clear(a.bf)
		clear(a.spilled)
		a.bf, a.spilled = a.bf[:0], a.spilled[:0]
		a.releaseLate()
	}()
	var (
		bfErr   error
		bfWaits []walTicket
		bfDone  chan struct{}
	)
	if len(a.bf) > 0 {
		bfDone = make(chan struct{})
		go func() {
			defer close(bfDone)
			bfWaits, bfErr = a.db.commitBackfill(a.bf, nil)
		}()
	}
	ticket, err := a.app.CommitNoWait()
	if ticket != 0 {
		d.waits = append(d.waits, walTicket{a.db.head, ticket})
	}
	if bfDone != nil {
		<-bfDone
		d.waits = append(d.waits, bfWaits...)
	}
	var ae *head.AppendError
	if errors.As(err, &ae) {
		a.db.countCommitRejections(ae)
		err = nil
	}
	if errors.As(bfErr, &ae) {
		a.db.countCommitRejections(ae)
		bfErr = nil
	}
	if err = cmp.Or(err, bfErr); err != nil {
		return d, err
	}
	if len(a.spilled) > 0 {
		d.waits, err = a.db.commitBackfill(a.spilled, d.waits)
		if errors.As(err, &ae) {
			a.db.countCommitRejections(ae)
			err = nil
		}
	}
	a.reportLate()
	return d, err
}

// walTicket is a commit's WAL ticket in the head (main or backfill
// generation) that wrote it.
type walTicket struct {
	h      *head.Head
	ticket uint64
}

// durable is what one commit waits for before its samples may be
// acknowledged: the tickets of the heads it wrote.
type durable struct {
	waits []walTicket
	one   [1]walTicket // waits' memory for the usual commit, into the main head alone
}

// wait returns once every ticket is durable, or with the first error.
func (d *durable) wait() error {
	var first error
	for _, w := range d.waits {
		if err := w.h.WaitDurable(w.ticket); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// reportLate tells the late observer of the commit's samples older than its
// horizon, in one call: a range per run of samples of one series (a
// series whose samples are not adjacent in the commit is reported once
// per run, which costs the observer a lookup, not an answer). A sample the
// commit refused is reported too: a cache entry dropped for nothing costs
// a query, never an answer. The head keeps each series' labels hash, so a
// sample appended by ref hashes nothing.
func (a *appender) reportLate() {
	o := a.observer
	if o == nil || (len(a.late) == 0 && len(a.bf) == 0 && len(a.spilled) == 0) {
		return
	}
	ws := a.lateWs[:0]
	var last model.SeriesRef
	note := func(ref model.SeriesRef, l labels.Labels, t int64) {
		if ref != 0 && ref == last {
			w := &ws[len(ws)-1]
			w.MinT, w.MaxT = min(w.MinT, t), max(w.MaxT, t)
			return
		}
		last = ref
		if ref != 0 {
			h, _ := a.db.head.SeriesHash(ref)
			ws = append(ws, LateWrite{Hash: h, MinT: t, MaxT: t, ref: ref, head: a.db.head})
		} else {
			ws = append(ws, NewLateWrite(l, t, t))
		}
	}
	for _, s := range a.late {
		note(s.ref, labels.EmptyLabels(), s.t)
	}
	for _, bf := range [][]bfSample{a.bf, a.spilled} {
		last = 0
		for _, s := range bf {
			if s.t < a.lateBefore {
				note(s.ref, s.l, s.t)
			}
		}
	}
	o.Written(ws)
	a.lateWs = ws
}

// spill takes the samples the head's commit found too old (its bounds
// moved since Append checked them) for the backfill.
func (a *appender) spill(l labels.Labels, t int64, v float64) bool {
	if !a.db.backfillOn() || a.db.checkRetention(t) != nil {
		return false
	}
	a.spilled = append(a.spilled, bfSample{l: l, t: t, v: v})
	return true
}

func (a *appender) Rollback() error {
	clear(a.bf)
	clear(a.spilled)
	a.bf, a.spilled = a.bf[:0], a.spilled[:0]
	a.releaseLate()
	return a.app.Rollback()
}

// AppendExemplar drops the exemplar: Aerie does not store exemplars, and
// /api/v1/query_exemplars answers empty.
func (a *appender) AppendExemplar(ref storage.SeriesRef, _ labels.Labels, _ exemplar.Exemplar) (storage.SeriesRef, error) {
	return ref, nil
}

func (a *appender) AppendHistogram(storage.SeriesRef, labels.Labels, int64, *histogram.Histogram, *histogram.FloatHistogram) (storage.SeriesRef, error) {
	return 0, ErrNativeHistogram
}

func (a *appender) AppendHistogramSTZeroSample(storage.SeriesRef, labels.Labels, int64, int64, *histogram.Histogram, *histogram.FloatHistogram) (storage.SeriesRef, error) {
	return 0, ErrNativeHistogram
}

// UpdateMetadata records metric metadata (type, help, unit) per metric
// name for /api/v1/metadata.
func (a *appender) UpdateMetadata(ref storage.SeriesRef, l labels.Labels, m metadata.Metadata) (storage.SeriesRef, error) {
	a.db.meta.set(l.Get(labels.MetricName), m)
	return ref, nil
}

// AppendSTZeroSample ignores start timestamps (created-timestamp zero
// injection is off in Aerie).
func (a *appender) AppendSTZeroSample(ref storage.SeriesRef, _ labels.Labels, _, _ int64) (storage.SeriesRef, error) {
	return ref, nil
}

// metadataStore keeps the latest metadata per metric name.
type metadataStore struct {
	mu sync.RWMutex // guards m
	m  map[string]metadata.Metadata
}

func (s *metadataStore) set(name string, md metadata.Metadata) {
	if name == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]metadata.Metadata{}
	}
	s.m[name] = md
}

// Metadata returns the metadata recorded for metric name.
func (db *DB) Metadata(name string) (metadata.Metadata, bool) {
	db.meta.mu.RLock()
	defer db.meta.mu.RUnlock()
	m, ok := db.meta.m[name]
	return m, ok
}

// AllMetadata returns a copy of every metric's metadata.
func (db *DB) AllMetadata() map[string]metadata.Metadata {
	db.meta.mu.RLock()
	defer db.meta.mu.RUnlock()
	out := make(map[string]metadata.Metadata, len(db.meta.m))
	for k, v := range db.meta.m {
		out[k] = v
	}
	return out
}

// CommitRejections counts samples rejected at commit, by reason.
func (db *DB) CommitRejections() map[string]int64 {
	db.rejMu.Lock()
	defer db.rejMu.Unlock()
	out := make(map[string]int64, len(db.rejected))
	for k, v := range db.rejected {
		out[k] = v
	}
	return out
}

func (db *DB) countCommitRejections(ae *head.AppendError) {
	db.rejMu.Lock()
	defer db.rejMu.Unlock()
	if db.rejected == nil {
		db.rejected = map[string]int64{}
	}
	for reason, n := range ae.ByReason {
		db.rejected[reason] += int64(n)
	}
	db.log.Debug("samples rejected at commit", "err", ae)
}

var _ storage.Appendable = (*DB)(nil)
