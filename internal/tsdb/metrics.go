package tsdb

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/aerie-db/aerie/internal/block"
	"github.com/aerie-db/aerie/internal/mathx"
	"github.com/aerie-db/aerie/internal/seriesiter"
)

// SeriesMetrics are one series' block metrics (Peregreen's index blocks)
// over a range: one entry per metric interval holding samples, ascending.
type SeriesMetrics struct {
	Labels    labels.Labels
	Intervals []block.IntervalMetrics
}

// MetricsStats says where the intervals of a SeriesMetrics answer came
// from. Index intervals were read from block indexes (local or in the
// bucket) without touching data; Head intervals were computed from the
// in-memory head; Data intervals were recomputed from samples because
// their block metrics could not answer alone: the interval holds samples
// of more than one block or generation, a deletion covers part of it, or
// its block was written with another metric interval.
type MetricsStats struct {
	Index, Head, Data int64
}

// MetricInterval returns the metric interval (ms) blocks are written with.
func (db *DB) MetricInterval() int64 { return db.opts.MetricInterval }

// SeriesMetrics is Querier.SeriesMetrics through a querier over the metric
// intervals that intersect [mint, maxt].
func (db *DB) SeriesMetrics(ctx context.Context, mint, maxt int64, ms ...*labels.Matcher) ([]SeriesMetrics, MetricsStats, error) {
	if maxt < mint {
		return nil, MetricsStats{}, nil
	}
	q := db.OpenQuerier(metricSpan(mint, maxt, db.opts.MetricInterval))
	defer q.Close()
	return q.SeriesMetrics(ctx, mint, maxt, ms...)
}

// metricSpan returns the first and the last time of the metric intervals
// of iv ms that intersect [mint, maxt].
func metricSpan(mint, maxt, iv int64) (amin, amax int64) {
	return mathx.FloorDiv(mint, iv) * iv, satAdd(mathx.FloorDiv(maxt, iv)*iv, iv-1)
}

// SeriesMetrics returns the block metrics of the series matching ms over
// every metric interval that intersects [mint, maxt]: an interval is
// answered whole, including its samples outside the range (the answer's
// resolution is the metric interval, as Peregreen's search is at its block
// interval), so the querier's range must hold those intervals. Series
// without samples in those intervals are left out; the answer is sorted by
// labels.
//
// Blocks answer from their index alone. The head's partitions, which
// have no index yet, are summed from memory. An interval that no single
// source can answer exactly is recomputed from data (see MetricsStats),
// so the answer always equals the metrics of the samples a query returns.
func (q *Querier) SeriesMetrics(ctx context.Context, mint, maxt int64, ms ...*labels.Matcher) ([]SeriesMetrics, MetricsStats, error) {
	var st MetricsStats
	db := q.db
	iv := db.opts.MetricInterval
	if maxt < mint {
		return nil, st, nil
	}
	lo, hi := mathx.FloorDiv(mint, iv), mathx.FloorDiv(maxt, iv)
	amin, amax := metricSpan(mint, maxt, iv)
	if amin < q.mint || amax > q.maxt {
		return nil, st, fmt.Errorf("series metrics over [%d, %d]: its metric intervals [%d, %d] reach outside the querier's range [%d, %d]", mint, maxt, amin, amax, q.mint, q.maxt)
	}

	type part struct {
		head bool // summed from memory
		ms   []block.IntervalMetrics
	}
	type entry struct {
		lset    labels.Labels
		parts   []part
		dirty   []int64 // intervals whose sources must be merged from data
		covered []int64 // head partitions read from memory
	}
	var entries seriesTable[entry]
	newEntry := func(lset labels.Labels) *entry { return &entry{lset: lset} }

	snap, err := q.snapshot(ctx, amin, amax, ms...)
	if err != nil {
		return nil, st, err
	}
	// The head and the backfill generations: summed from memory.
	for _, hs := range snap.heads {
		for i := range hs.series {
			if err := ctx.Err(); err != nil {
				return nil, st, err
			}
			s := &hs.series[i]
			e := entries.get(s.Labels, newEntry)
			if hs.seq == 0 {
				e.covered = s.Covered
			}
			its := make([]chunkenc.Iterator, 0, len(s.Columns))
			for _, c := range s.Columns {
				its = append(its, seriesiter.NewIterator(nil, c, c.Extra, amin, amax))
			}
			var it chunkenc.Iterator
			if len(its) == 1 {
				it = its[0]
			} else {
				it = seriesiter.Merge(its...)
			}
			m, err := metricsOf(it, iv, lo)
			if err != nil {
				return nil, st, fmt.Errorf("series %s: %w", s.Labels, err)
			}
			if len(m) > 0 {
				e.parts = append(e.parts, part{head: true, ms: m})
			}
		}
	}

	// Blocks: from their index.
	for _, bs := range snap.blocks {
		b := bs.b
		bm := b.Meta()
		pid := db.head.PartitionOf(bm.MinTime)
		flushedFrom := db.headFlushOf(pid) == bm.ULID
		var sec *block.MetricsSection // fetched once per block, at its first series (a bucket block's may be remote)
		for i := range bs.sel.Series {
			s := &bs.sel.Series[i]
			e := entries.get(s.Labels, newEntry)
			if flushedFrom && slices.Contains(e.covered, pid) {
				continue // summed from the head's memory
			}
			if bm.MetricInterval != iv {
				for k := max(lo, mathx.FloorDiv(bm.MinTime, iv)); k <= min(hi, mathx.FloorDiv(bm.MaxTime, iv)); k++ {
					e.dirty = append(e.dirty, k)
				}
				continue
			}
			if sec == nil {
				var err error
				if sec, err = b.MetricsSection(ctx); err != nil {
					return nil, st, fmt.Errorf("block %s: metrics: %w", bm.ULID, err)
				}
			}
			m, err := sec.Append(nil, s.ID)
			if err != nil {
				return nil, st, fmt.Errorf("block %s: metrics of series %s: %w", bm.ULID, s.Labels, err)
			}
			i0, _ := slices.BinarySearchFunc(m, lo, func(x block.IntervalMetrics, k int64) int { return cmp.Compare(x.Interval, k) })
			i1, _ := slices.BinarySearchFunc(m, hi+1, func(x block.IntervalMetrics, k int64) int { return cmp.Compare(x.Interval, k) })
			if i1 > i0 {
				e.parts = append(e.parts, part{ms: m[i0:i1]})
			}
		}
	}

	out := make([]SeriesMetrics, 0, len(entries.all))
	for _, e := range entries.all {
		if err := ctx.Err(); err != nil {
			return nil, st, err
		}
		// Count the sources of every interval; tombstones dirty theirs.
		n := map[int64]int{}
		for _, p := range e.parts {
			for _, m := range p.ms {
				n[m.Interval]++
			}
		}
		dirty := map[int64]bool{}
		for _, k := range e.dirty {
			dirty[k] = true
		}
		for k, c := range n {
			if c > 1 {
				dirty[k] = true
			}
		}
		for _, d := range db.deletedIntervals(e.lset) {
			if d.Maxt < amin || d.Mint > amax {
				continue
			}
			for k := max(lo, mathx.FloorDiv(d.Mint, iv)); k <= min(hi, mathx.FloorDiv(d.Maxt, iv)); k++ {
				if n[k] > 0 {
					dirty[k] = true
				}
			}
		}
		var res []block.IntervalMetrics
		for _, p := range e.parts {
			for _, m := range p.ms {
				if dirty[m.Interval] {
					continue
				}
				res = append(res, m)
				if p.head {
					st.Head++
				} else {
					st.Index++
				}
			}
		}
		if len(dirty) > 0 {
			ks := make([]int64, 0, len(dirty))
			for k := range dirty {
				ks = append(ks, k)
			}
			slices.Sort(ks)
			fromData, err := q.metricsFromData(ctx, e.lset, ks, iv)
			if err != nil {
				return nil, st, err
			}
			st.Data += int64(len(ks))
			res = append(res, fromData...)
		}
		if len(res) == 0 {
			continue
		}
		slices.SortFunc(res, func(a, b block.IntervalMetrics) int { return cmp.Compare(a.Interval, b.Interval) })
		out = append(out, SeriesMetrics{Labels: e.lset, Intervals: res})
	}
	sort.Slice(out, func(i, j int) bool { return labelsLess(out[i].Labels, out[j].Labels) })
	return out, st, nil
}

// metricsFromData recomputes the metrics of intervals ks (ascending) of
// series lset from its samples, through the querier's Select (which merges
// every source and applies deletions).
func (q *Querier) metricsFromData(ctx context.Context, lset labels.Labels, ks []int64, iv int64) ([]block.IntervalMetrics, error) {
	ms := make([]*labels.Matcher, 0, lset.Len())
	lset.Range(func(l labels.Label) {
		ms = append(ms, labels.MustNewMatcher(labels.MatchEqual, l.Name, l.Value))
	})
	var out []block.IntervalMetrics
	for i := 0; i < len(ks); {
		j := i + 1
		for j < len(ks) && ks[j] == ks[j-1]+1 {
			j++
		}
		start, end := ks[i]*iv, satAdd(ks[j-1]*iv, iv-1)
		ss := q.Select(ctx, false, &storage.SelectHints{Start: start, End: end}, ms...)
		for ss.Next() {
			s := ss.At()
			if !labels.Equal(s.Labels(), lset) {
				continue // a superset of lset's labels
			}
			m, err := metricsOf(s.Iterator(nil), iv, ks[i])
			if err != nil {
				return nil, err
			}
			for _, x := range m {
				if x.Interval >= ks[i] && x.Interval <= ks[j-1] {
					out = append(out, x)
				}
			}
		}
		if err := ss.Err(); err != nil {
			return nil, err
		}
		i = j
	}
	return out, nil
}

// metricsOf sums the float samples of it by metric interval, ignoring
// those before interval lo. It returns the intervals that hold samples
// (NaN ones included, with a zero count, as the block writer keeps them).
func metricsOf(it chunkenc.Iterator, iv, lo int64) ([]block.IntervalMetrics, error) {
	var out []block.IntervalMetrics
	cur := int64(math.MinInt64)
	for vt := it.Next(); vt != chunkenc.ValNone; vt = it.Next() {
		if vt != chunkenc.ValFloat {
			continue // histograms carry no block metrics
		}
		t, v := it.At()
		k := mathx.FloorDiv(t, iv)
		if k < lo {
			continue
		}
		if k != cur {
			out = append(out, block.IntervalMetrics{Interval: k})
			cur = k
		}
		out[len(out)-1].Add(t, v)
	}
	return out, it.Err()
}

func satAdd(a, b int64) int64 {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// SeriesBytes is Querier.SeriesBytes through a querier over all time.
func (db *DB) SeriesBytes(ctx context.Context, ms ...*labels.Matcher) (index, data int64, err error) {
	q := db.OpenQuerier(math.MinInt64, math.MaxInt64)
	defer q.Close()
	return q.SeriesBytes(ctx, ms...)
}

// SeriesBytes returns the bytes the series matching ms take in the blocks
// the querier acquired when it was opened (local and in the bucket): in
// the indexes (their block metrics) and in the data
// (block.Reader.SeriesBytes; a bucket block's metrics are fetched if they
// are not in memory). The head is not counted.
func (q *Querier) SeriesBytes(ctx context.Context, ms ...*labels.Matcher) (index, data int64, err error) {
	bs, err := q.acquired(ctx)
	if err != nil {
		return 0, 0, err
	}
	for _, b := range bs {
		sel, err := b.Select(math.MinInt64, math.MaxInt64, ms...)
		if err != nil {
			return 0, 0, err
		}
		if len(sel.Series) == 0 {
			continue
		}
		sec, err := b.MetricsSection(ctx) // once a block: a bucket block's may be fetched
		if err != nil {
			return 0, 0, fmt.Errorf("block %s: metrics: %w", b.Meta().ULID, err)
		}
		for _, s := range sel.Series {
			index += sec.RecordLen(s.ID)
			data += b.SeriesDataBytes(s.ID)
		}
	}
	return index, data, nil
}

// BlockDataReads returns how many reads of block data (local files or
// bucket objects) the open blocks' selections have made: value search
// and other index-only operations leave it unchanged.
func (db *DB) BlockDataReads() int64 {
	db.mu.RLock()
	defer db.mu.RUnlock()
	var n int64
	for _, b := range db.blocks {
		n += b.DataReads()
	}
	return n
}

// SeriesSets is Querier.SeriesSets through a querier over [mint, maxt].
func (db *DB) SeriesSets(ctx context.Context, mint, maxt int64, ms ...*labels.Matcher) ([]labels.Labels, error) {
	q := db.OpenQuerier(mint, maxt)
	defer q.Close()
	return q.SeriesSets(ctx, mint, maxt, ms...)
}

// SeriesSets returns the label sets of the series matching ms whose head
// partitions or block groups overlap [mint, maxt] (clipped to the
// querier's range, as a Select's hints are), from the indexes alone:
// unlike a Select it reads no block data, so a series whose samples in
// the range were all deleted may be listed. Sorted.
func (q *Querier) SeriesSets(ctx context.Context, mint, maxt int64, ms ...*labels.Matcher) ([]labels.Labels, error) {
	mint, maxt = max(mint, q.mint), min(maxt, q.maxt)
	var seen labelsIndex
	snap, err := q.snapshot(ctx, mint, maxt, ms...)
	if err != nil {
		return nil, err
	}
	for _, hs := range snap.heads {
		for i := range hs.series {
			seen.add(hs.series[i].Labels)
		}
	}
	for _, bs := range snap.blocks {
		for i := range bs.sel.Series {
			seen.add(bs.sel.Series[i].Labels)
		}
	}
	out := seen.lsets
	sort.Slice(out, func(i, j int) bool { return labelsLess(out[i], out[j]) })
	return out, nil
}
