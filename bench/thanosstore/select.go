package thanosstore

import (
	"context"
	"fmt"

	"github.com/prometheus/prometheus/model/labels"
)

// Series is one series Select found, with its samples in the query's range
// in time order.
type Series struct {
	Labels labels.Labels
	T      []int64
	V      []float64
}

// Select returns the series matching ms that have samples in [mint, maxt]
// (both inclusive), sorted by labels, with those samples. It fetches the way
// the store gateway does, in phases that each wait for the one before: the
// postings lists the matchers need, the series entries the postings select,
// and the chunks of those series that overlap [mint, maxt]; the last two
// once per batch of 10000 series. Within a phase the byte ranges are merged
// into parts by the gap partitioner and the parts are fetched in parallel.
// The package documentation says what is counted in Stats.
//
// A query that cannot match (a label value the block does not have, a time
// range outside the block) returns no series without any GET.
func (b *Block) Select(ctx context.Context, mint, maxt int64, ms ...*labels.Matcher) ([]Series, error) {
	if mint > maxt || maxt < b.meta.MinTime || mint >= b.meta.MaxTime {
		return nil, nil
	}
	groups, ok := b.hdr.postingGroups(ms)
	if !ok {
		return nil, nil
	}
	offs, err := b.expandedPostings(ctx, groups)
	if err != nil {
		return nil, fmt.Errorf("select from block %s: postings: %w", b.id, err)
	}
	if len(offs) == 0 {
		return nil, nil
	}

	// Series entries are in label order in the index, and postings in
	// entry order, so the result comes out sorted.
	var out []Series
	for lo := 0; lo < len(offs); lo += b.batchSize {
		batch := offs[lo:min(lo+b.batchSize, len(offs))]
		if out, err = b.selectBatch(ctx, out, batch, mint, maxt); err != nil {
			return nil, fmt.Errorf("select from block %s: %w", b.id, err)
		}
	}
	return out, nil
}

// selectBatch runs the series and chunks phases for the series entries at
// offs and appends those with samples in [mint, maxt] to out.
func (b *Block) selectBatch(ctx context.Context, out []Series, offs []int64, mint, maxt int64) ([]Series, error) {
	entries, err := b.loadSeries(ctx, offs, mint, maxt)
	if err != nil {
		return nil, fmt.Errorf("series: %w", err)
	}
	kept := entries[:0]
	for _, e := range entries {
		if len(e.chks) > 0 {
			kept = append(kept, e)
		}
	}
	if len(kept) == 0 {
		return out, nil
	}
	smpls, err := b.loadChunks(ctx, kept, mint, maxt)
	if err != nil {
		return nil, fmt.Errorf("chunks: %w", err)
	}
	for i, e := range kept {
		s := Series{Labels: e.lset}
		for _, c := range smpls[i] {
			s.T = append(s.T, c.t...)
			s.V = append(s.V, c.v...)
		}
		if len(s.T) > 0 {
			out = append(out, s)
		}
	}
	return out, nil
}
