package ingest

import (
	"context"
	"fmt"
	"math"

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
	seen    map[sampleKey]uint64
}

// sampleKey is one series at one timestamp within a batch.
type sampleKey struct {
	hash uint64
	t    int64
}

func newBatch(ctx context.Context, app storage.Appendable, limit int, rep *report) *batch {
	return &batch{app: app, ctx: ctx, limit: limit, rep: rep, seen: map[sampleKey]uint64{}}
}

func (b *batch) appender() storage.Appender {
	if b.cur == nil {
		b.cur = b.app.Appender(b.ctx)
	}
	return b.cur
}

// add appends one sample; line is where it came from, for the report.
func (b *batch) add(l labels.Labels, t int64, v float64, line int64) {
	k := sampleKey{l.Hash(), t}
	if prev, ok := b.seen[k]; ok {
		if prev == math.Float64bits(v) {
			b.pending++ // identical duplicate: a no-op, as in Prometheus
			return
		}
		b.rep.reject(ReasonDuplicate, 1, line, func() string {
			return fmt.Sprintf("%s: %s @%d: %v (earlier in this body)", where(line, 0, 0), l, t, storage.ErrDuplicateSampleForTimestamp)
		})
		return
	}
	if _, err := b.appender().Append(0, l, t, v); err != nil {
		b.rep.reject(appendReason(err), 1, line, func() string {
			return fmt.Sprintf("%s: %s @%d: %v", where(line, 0, 0), l, t, err)
		})
		return
	}
	b.seen[k] = math.Float64bits(v)
	b.pending++
}

// metadata records metric metadata through the current appender.
func (b *batch) metadata(name string, m metadata.Metadata) {
	_, _ = b.appender().UpdateMetadata(0, labels.FromStrings(labels.MetricName, name), m)
}

// lineDone commits if the batch is full.
func (b *batch) lineDone() error {
	if b.pending < b.limit {
		return nil
	}
	return b.commit()
}

// commit makes the pending samples durable. On failure they are counted
// as rejected (storage_error) and the error is returned.
func (b *batch) commit() error {
	if b.cur == nil {
		return nil
	}
	app, n := b.cur, b.pending
	b.cur, b.pending = nil, 0
	clear(b.seen)
	if err := app.Commit(); err != nil {
		b.rep.reject(ReasonStorage, n, 0, func() string {
			return fmt.Sprintf("commit of %d samples failed: %v", n, err)
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
	clear(b.seen)
	_ = app.Rollback()
	if n > 0 {
		b.rep.reject(reason, n, 0, func() string {
			return fmt.Sprintf("%d parsed samples not stored", n)
		})
	}
}
