package ingest

import (
	"context"
	"fmt"
	"math"
	"sync"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/metadata"
	"github.com/prometheus/prometheus/storage"
)

// batch feeds samples to a storage.Appendable and commits every limit
// samples, at line boundaries (the caller calls lineDone). It keeps the
// counts of the report: a sample is stored once its Commit succeeded.
type batch struct {
	app   storage.Appendable
	ctx   context.Context
	limit int
	rep   *report

	cur     storage.Appender // nil between commits
	pending int              // samples in cur, stored if cur commits
	seen    *seenSet

	// waits are the fsyncs of the batch's commits that did not wait for
	// them (commitNoWait); unsynced counts their samples. sync waits for
	// them before the request is answered.
	waits    []func() error
	unsynced int
}

// noWaitCommitter is an appender that can commit without waiting for its
// records' fsync (tsdb's): wait returns once they are durable.
type noWaitCommitter interface {
	CommitNoWait() (wait func() error, err error)
}

// sampleKey is one series (the hash of its labels) at one timestamp
// within a batch.
type sampleKey struct {
	hash uint64
	t    int64
}

// seenSet holds the value of each sample of a batch by its sampleKey. Its
// map is keyed by one word mixed from the key (a map of 16-byte keys cost
// a sixth of a line-protocol load's CPU in hashing them); an entry keeps
// its whole key, and a key whose word is taken by another goes to over.
type seenSet struct {
	m    map[uint64]seenEntry
	over map[sampleKey]uint64
}

type seenEntry struct {
	k sampleKey
	v uint64 // math.Float64bits of the value
}

func (k sampleKey) word() uint64 { return k.hash ^ uint64(k.t)*0x9e3779b97f4a7c15 }

func (s *seenSet) get(k sampleKey) (uint64, bool) {
	e, ok := s.m[k.word()]
	if !ok {
		return 0, false
	}
	if e.k == k {
		return e.v, true
	}
	v, ok := s.over[k]
	return v, ok
}

func (s *seenSet) put(k sampleKey, v uint64) {
	w := k.word()
	if e, ok := s.m[w]; ok && e.k != k {
		if s.over == nil {
			s.over = map[sampleKey]uint64{}
		}
		s.over[k] = v
		return
	}
	s.m[w] = seenEntry{k, v}
}

func (s *seenSet) reset() {
	clear(s.m)
	s.over = nil
}

func newBatch(ctx context.Context, app storage.Appendable, limit int, rep *report) *batch {
	seen, _ := seenPool.Get().(*seenSet)
	if seen == nil {
		seen = &seenSet{m: map[uint64]seenEntry{}}
	}
	return &batch{app: app, ctx: ctx, limit: limit, rep: rep, seen: seen}
}

// seenPool keeps batches' sets, which grow to a batch's samples: a map
// grown once is reused by the next request instead of growing again.
var seenPool sync.Pool

// release gives the batch's memory back; the batch is not used after.
// Every handler syncs before it answers; a batch left unsynced is synced
// here all the same.
func (b *batch) release() {
	_ = b.sync()
	if len(b.seen.m) <= 1<<20 {
		b.seen.reset()
		seenPool.Put(b.seen)
	}
	b.seen = nil
}

func (b *batch) appender() storage.Appender {
	if b.cur == nil {
		b.cur = b.app.Appender(b.ctx)
	}
	return b.cur
}

// add appends one sample of the series l; line is where it came from, for
// the report.
func (b *batch) add(l labels.Labels, t int64, v float64, line int64) {
	b.addRef(0, l, l.Hash(), t, v, line, nil, 0)
}

// describer names series that are appended by ref, without their labels,
// in messages: describe(i) names the i-th of the current line.
type describer interface{ describe(i int) string }

// addRef appends one sample of the series whose labels hash to lhash: by
// ref if ref is not 0 (from an earlier addRef; l may then be empty, and
// d.describe(i) names the series in messages), else by l. It returns the
// series' ref, 0 if the storage gave none or the sample was rejected.
func (b *batch) addRef(ref storage.SeriesRef, l labels.Labels, lhash uint64, t int64, v float64, line int64, d describer, i int) storage.SeriesRef {
	k := sampleKey{lhash, t}
	if prev, ok := b.seen.get(k); ok {
		if prev == math.Float64bits(v) {
			b.pending++ // identical duplicate: a no-op, as in Prometheus
			return ref
		}
		b.rep.reject(ReasonDuplicate, 1, line, func() string {
			return fmt.Sprintf("%s: %s @%d: %v (earlier in this body)", where(line, 0, 0), seriesName(l, d, i), t, storage.ErrDuplicateSampleForTimestamp)
		})
		return ref
	}
	r, err := b.appender().Append(ref, l, t, v)
	if err != nil {
		b.rep.reject(appendReason(err), 1, line, func() string {
			return fmt.Sprintf("%s: %s @%d: %v", where(line, 0, 0), seriesName(l, d, i), t, err)
		})
		return 0
	}
	b.seen.put(k, math.Float64bits(v))
	b.pending++
	return r
}

func seriesName(l labels.Labels, d describer, i int) string {
	if l.IsEmpty() && d != nil {
		return d.describe(i)
	}
	return l.String()
}

// metadata records metric metadata through the current appender.
func (b *batch) metadata(name string, m metadata.Metadata) {
	_, _ = b.appender().UpdateMetadata(0, labels.FromStrings(labels.MetricName, name), m)
}

// lineDone commits if the batch is full, without waiting for the
// commit's fsync where the appender can (sync waits for it).
func (b *batch) lineDone() error {
	if b.pending < b.limit {
		return nil
	}
	c, ok := b.cur.(noWaitCommitter)
	if !ok {
		return b.commit()
	}
	n := b.pending
	b.cur, b.pending = nil, 0
	b.seen.reset()
	wait, err := c.CommitNoWait()
	b.waits = append(b.waits, wait)
	if err != nil {
		b.rep.reject(ReasonStorage, n, 0, func() string {
			return fmt.Sprintf("commit of %d samples failed: %v", n, err)
		})
		return err
	}
	b.unsynced += n
	return nil
}

// commit makes the pending samples durable, and syncs the batch's earlier
// commits. On failure they are counted as rejected (storage_error) and the
// error is returned.
func (b *batch) commit() error {
	if b.cur == nil {
		return b.sync()
	}
	app, n := b.cur, b.pending
	b.cur, b.pending = nil, 0
	b.seen.reset()
	err := app.Commit()
	if err != nil {
		b.rep.reject(ReasonStorage, n, 0, func() string {
			return fmt.Sprintf("commit of %d samples failed: %v", n, err)
		})
	} else {
		b.rep.stored += n
	}
	if serr := b.sync(); err == nil {
		err = serr
	}
	return err
}

// sync waits for the fsyncs of the commits lineDone did not wait for. Their
// samples are then stored, or, if one failed, counted as rejected
// (storage_error) with the error returned.
func (b *batch) sync() error {
	var err error
	for _, wait := range b.waits {
		if werr := wait(); err == nil {
			err = werr
		}
	}
	clear(b.waits)
	b.waits = b.waits[:0]
	n := b.unsynced
	b.unsynced = 0
	if n == 0 {
		return err
	}
	if err != nil {
		b.rep.reject(ReasonStorage, n, 0, func() string {
			return fmt.Sprintf("%d committed samples not made durable: %v", n, err)
		})
		return err
	}
	b.rep.stored += n
	return nil
}

// rollback drops the pending samples, counting them as rejected for
// reason.
func (b *batch) rollback(reason string) {
	if b.cur == nil {
		return
	}
	app, n := b.cur, b.pending
	b.cur, b.pending = nil, 0
	b.seen.reset()
	_ = app.Rollback()
	if n > 0 {
		b.rep.reject(reason, n, 0, func() string {
			return fmt.Sprintf("%d parsed samples not stored", n)
		})
	}
}
