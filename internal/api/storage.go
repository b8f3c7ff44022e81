package api

import (
	"context"

	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"

	"github.com/aerie-db/aerie/internal/tsdb"
)

// Storage adapts an Aerie DB to the storage interfaces Prometheus' API
// needs: samples and chunks (storage.SampleAndChunkQueryable), appends in
// both appender generations, and exemplars (none: Aerie drops them).
type Storage struct {
	DB *tsdb.DB
	// App, if set, takes the writes (remote write, OTLP) instead of DB:
	// the server passes a wrapper that counts samples per protocol.
	App storage.Appendable
	// Rollups resolves the rollup level a request asked for (see
	// Options.Rollups); nil: raw data only.
	Rollups func(level string) (storage.Queryable, bool)
}

var (
	_ storage.SampleAndChunkQueryable = (*Storage)(nil)
	_ storage.Appendable              = (*Storage)(nil)
	_ storage.AppendableV2            = (*Storage)(nil)
	_ storage.ExemplarQueryable       = (*Storage)(nil)
)

// Querier returns the DB's querier.
func (s *Storage) Querier(mint, maxt int64) (storage.Querier, error) {
	if s.Rollups != nil {
		return &levelQuerier{s: s, mint: mint, maxt: maxt}, nil
	}
	return s.DB.Querier(mint, maxt)
}

// ChunkQuerier returns a querier whose series are re-encoded into
// Prometheus chunks (XOR, at most 120 samples each), for streamed remote
// read.
func (s *Storage) ChunkQuerier(mint, maxt int64) (storage.ChunkQuerier, error) {
	q, err := s.DB.Querier(mint, maxt)
	if err != nil {
		return nil, err
	}
	return chunkQuerier{q}, nil
}

type chunkQuerier struct {
	storage.Querier
}

func (q chunkQuerier) Select(ctx context.Context, sortSeries bool, hints *storage.SelectHints, ms ...*labels.Matcher) storage.ChunkSeriesSet {
	return storage.NewSeriesSetToChunkSet(q.Querier.Select(ctx, sortSeries, hints, ms...))
}

// Appender returns the appender of App, or of the DB.
func (s *Storage) Appender(ctx context.Context) storage.Appender {
	if s.App != nil {
		return s.App.Appender(ctx)
	}
	return s.DB.Appender(ctx)
}

// AppenderV2 returns the DB's AppenderV2 if it has one, else an adapter
// over its Appender.
func (s *Storage) AppenderV2(ctx context.Context) storage.AppenderV2 {
	if v2, ok := any(s.DB).(storage.AppendableV2); ok && s.App == nil {
		return v2.AppenderV2(ctx)
	}
	return &appenderV2{app: s.Appender(ctx)}
}

// appenderV2 implements storage.AppenderV2 over a storage.Appender.
type appenderV2 struct {
	app    storage.Appender
	reject bool // the option last set on app
}

func (a *appenderV2) Append(ref storage.SeriesRef, ls labels.Labels, _, t int64, v float64, h *histogram.Histogram, fh *histogram.FloatHistogram, opts storage.AppendV2Options) (storage.SeriesRef, error) {
	if opts.RejectOutOfOrder != a.reject {
		a.app.SetOptions(&storage.AppendOptions{DiscardOutOfOrder: opts.RejectOutOfOrder})
		a.reject = opts.RejectOutOfOrder
	}
	var err error
	if h != nil || fh != nil {
		ref, err = a.app.AppendHistogram(ref, ls, t, h, fh)
	} else {
		ref, err = a.app.Append(ref, ls, t, v)
	}
	if err != nil {
		return ref, err
	}
	if !opts.Metadata.IsEmpty() {
		if _, err := a.app.UpdateMetadata(ref, ls, opts.Metadata); err != nil {
			return ref, err
		}
	}
	var perr *storage.AppendPartialError
	for _, e := range opts.Exemplars {
		if _, err := a.app.AppendExemplar(ref, ls, e); err != nil {
			perr, _ = perr.Handle(&storage.AppendPartialError{ExemplarErrors: []error{err}})
		}
	}
	return ref, perr.ToError()
}

func (a *appenderV2) Commit() error   { return a.app.Commit() }
func (a *appenderV2) Rollback() error { return a.app.Rollback() }

// ExemplarQuerier returns a querier that finds no exemplars: Aerie does
// not store them.
func (s *Storage) ExemplarQuerier(context.Context) (storage.ExemplarQuerier, error) {
	return noExemplars{}, nil
}

type noExemplars struct{}

// Select returns an empty, non-nil list, so the API answers "data":[] as
// Prometheus' exemplar storage does.
func (noExemplars) Select(int64, int64, ...[]*labels.Matcher) ([]exemplar.QueryResult, error) {
	return []exemplar.QueryResult{}, nil
}
