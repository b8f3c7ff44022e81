package difftest

import (
	"context"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"
)

// Appender is the minimal append surface both engines share.
type Appender interface {
	Append(l labels.Labels, t int64, v float64) error
	Commit() error
	Rollback() error
}

// Engine is a storage engine under test.
type Engine interface {
	storage.Queryable
	NewAppender() Appender
	Close() error
}

// SampleRejections may be implemented by an error returned from
// Appender.Commit (it is looked up with errors.As) to report which samples of
// the batch were rejected, as indexes in append order. Samples of a batch
// whose Commit error does not implement it are recorded as OutcomeUnknown.
type SampleRejections interface {
	RejectedSamples() []int
}

// PromEngine wraps the Prometheus TSDB library as an Engine.
type PromEngine struct {
	DB *tsdb.DB
}

// OpenProm opens a Prometheus TSDB in dir with the WAL on, default block
// ranges and OutOfOrderTimeWindow = oooWindow (ms). The result is a
// *PromEngine.
func OpenProm(dir string, oooWindow int64) (Engine, error) {
	opts := tsdb.DefaultOptions()
	opts.OutOfOrderTimeWindow = oooWindow
	db, err := tsdb.Open(dir, nil, nil, opts, nil)
	if err != nil {
		return nil, err
	}
	return &PromEngine{DB: db}, nil
}

// Querier implements storage.Queryable.
func (p *PromEngine) Querier(mint, maxt int64) (storage.Querier, error) {
	return p.DB.Querier(mint, maxt)
}

// NewAppender returns an appender for one batch.
func (p *PromEngine) NewAppender() Appender {
	return StorageAppender(p.DB.Appender(context.Background()))
}

// Close closes the database.
func (p *PromEngine) Close() error { return p.DB.Close() }

// StorageAppender is a storage.Appender as an Appender of the harness.
func StorageAppender(a storage.Appender) Appender { return storageAppender{a} }

type storageAppender struct{ a storage.Appender }

func (a storageAppender) Append(l labels.Labels, t int64, v float64) error {
	_, err := a.a.Append(0, l, t, v)
	return err
}
func (a storageAppender) Commit() error   { return a.a.Commit() }
func (a storageAppender) Rollback() error { return a.a.Rollback() }

// sortedQueryable forces sorted Selects, so that PromQL sees the series of
// both engines in the same order (float sums depend on the order).
type sortedQueryable struct{ q storage.Queryable }

func (s sortedQueryable) Querier(mint, maxt int64) (storage.Querier, error) {
	q, err := s.q.Querier(mint, maxt)
	if err != nil {
		return nil, err
	}
	return sortedQuerier{q}, nil
}

type sortedQuerier struct{ storage.Querier }

func (s sortedQuerier) Select(ctx context.Context, _ bool, h *storage.SelectHints, ms ...*labels.Matcher) storage.SeriesSet {
	return s.Querier.Select(ctx, true, h, ms...)
}
