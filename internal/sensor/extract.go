package sensor

import (
	"context"
	"fmt"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/aerie-db/aerie/internal/block"
	"github.com/aerie-db/aerie/internal/sensor/extract"
	"github.com/aerie-db/aerie/internal/tsdb"
)

// ExtractStats says how an extraction was answered: points read from the
// engine, and metric intervals taken from block metrics instead.
type ExtractStats struct {
	Points         int64
	IndexIntervals int64
}

// extractSeries runs one series' extraction p into out. An aggregation
// takes every metric interval that lies whole inside one of its windows
// from the block metrics, and reads data only for the rest of [From, To]
// (the edges of a range that metric intervals do not cover, or all of it
// when windows and metric intervals do not align); every other mode
// streams the points.
func (s *Service) extractSeries(ctx context.Context, q *tsdb.Querier, lset labels.Labels, p extract.Params, out extract.Emitter, st *ExtractStats) error {
	op, err := extract.New(p, out)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrBadRequest, err)
	}
	agg, ok := op.(*extract.Aggregator)
	if !ok || p.Func.NeedsSketch() {
		if err := s.pushData(ctx, q, lset, p.From, p.To, op, st); err != nil {
			return err
		}
		return op.Close()
	}
	iv := s.db.MetricInterval()
	sms, _, err := q.SeriesMetrics(ctx, p.From, p.To, exact(lset)...)
	if err != nil {
		return err
	}
	var ms []block.IntervalMetrics
	for _, sm := range sms {
		if labels.Equal(sm.Labels, lset) {
			ms = sm.Intervals
		}
	}
	// Walk [From, To] in time order: whole metric intervals inside one
	// window from the metrics, the gaps between them from data.
	next := p.From // first time not yet pushed
	for _, m := range ms {
		start, end := m.Interval*iv, m.Interval*iv+iv
		if start < p.From || !p.WindowContains(start, end) {
			continue
		}
		if start > next {
			if err := s.pushData(ctx, q, lset, next, start-1, op, st); err != nil {
				return err
			}
		}
		a := extract.Agg{Count: m.Count, Min: m.Min, Max: m.Max, Sum: m.Sum, SumSq: m.SumSq, First: m.First, Last: m.Last}
		if err := agg.PushAgg(start, end, a); err != nil {
			return err
		}
		st.IndexIntervals++
		next = end
	}
	if next <= p.To {
		if err := s.pushData(ctx, q, lset, next, p.To, op, st); err != nil {
			return err
		}
	}
	return op.Close()
}

// pushData pushes the points of lset in [mint, maxt] into op.
func (s *Service) pushData(ctx context.Context, q storage.Querier, lset labels.Labels, mint, maxt int64, op extract.Op, st *ExtractStats) error {
	ss := q.Select(ctx, false, &storage.SelectHints{Start: mint, End: maxt}, exact(lset)...)
	var it chunkenc.Iterator
	for ss.Next() {
		if !labels.Equal(ss.At().Labels(), lset) {
			continue
		}
		it = ss.At().Iterator(it)
		n := 0
		for vt := it.Seek(mint); vt != chunkenc.ValNone; vt = it.Next() {
			if vt != chunkenc.ValFloat {
				continue
			}
			t, v := it.At()
			if t > maxt {
				break
			}
			if err := op.Push(t, v); err != nil {
				return err
			}
			n++
			if n%8192 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
		}
		st.Points += int64(n)
		if err := it.Err(); err != nil {
			return err
		}
	}
	return ss.Err()
}
