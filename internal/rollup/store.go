package rollup

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/aerie-db/aerie/internal/graphite/archive"
	"github.com/aerie-db/aerie/internal/mathx"
)

var (
	_ archive.Store     = (*Manager)(nil)
	_ archive.GridStore = (*Manager)(nil)
)

// Series implements archive.Store: the series of the raw engine and of
// every level, by labels, sorted and without repeats.
func (m *Manager) Series(ctx context.Context, from, until int64, ms ...*labels.Matcher) ([]labels.Labels, error) {
	out, err := m.raw.SeriesSets(ctx, from, until, ms...)
	if err != nil {
		return nil, err
	}
	for _, l := range m.levels {
		ls, err := l.DB.SeriesSets(ctx, from, until, ms...)
		if err != nil {
			return nil, err
		}
		out = append(out, ls...)
	}
	slices.SortFunc(out, labels.Compare)
	return slices.CompactFunc(out, labels.Equal), nil
}

// Archive returns the archive graphite-web reads for a series over a range
// starting at from (Unix seconds), now being now: the finest whose
// retention covers from, else the coarsest; and its index in the schema.
func (m *Manager) Archive(name string, from, now int64) (Retention, int) {
	s, _ := m.rules.Match(name)
	diff := time.Duration(now-from) * time.Second
	for i, rt := range s.Retentions {
		if rt.Duration == 0 || rt.Duration >= diff {
			return rt, i
		}
	}
	return s.Retentions[len(s.Retentions)-1], len(s.Retentions) - 1
}

// Points implements archive.Store with whisper's fetch: the archive as
// Archive picks it, from clamped to the oldest time the schema keeps and
// until to now, the range widened to the archive's grid as whisper does
// (both ends to the step after them), raw data consolidated on the
// finest grid as a rollup would (AppendSlots), levels read as stored.
// It is Grid and then ReadGrid over the whole grid (archive.GridStore).
func (m *Manager) Points(ctx context.Context, lset labels.Labels, from, until, now int64) (archive.Points, error) {
	g := m.Grid(lset, from, until, now)
	p := g.Points
	if g.N == 0 {
		return p, nil
	}
	vals, err := m.ReadGrid(ctx, lset, g, g.Start, g.Start+int64(g.N)*g.Step)
	p.Values = vals
	return p, err
}

// Grid implements archive.GridStore: the archive and grid Points reads.
// The raw archive's buckets are stable (Stable = math.MaxInt64) and reach
// back the schema's heartbeat; a level's are stable before its done time,
// and its Version is the count of passes that computed levels again over
// backfilled ranges (redone). Oldest is now minus the archive's duration:
// the raw engine's per-series retention (Retainer.Cutoff) and a level's
// (levelCutoff) delete nothing after it.
func (m *Manager) Grid(lset labels.Labels, from, until, now int64) archive.Grid {
	name := lset.Get(labels.MetricName)
	s, agg := m.rules.Match(name)
	g := archive.Grid{Points: archive.Points{Method: string(agg.Method), XFilesFactor: agg.XFilesFactor}}
	if oldest := s.Retentions[len(s.Retentions)-1].Duration; oldest > 0 {
		from = max(from, now-int64(oldest/time.Second))
	}
	until = min(until, now)
	if from > until {
		return g
	}
	rt, idx := m.Archive(name, from, now)
	step := int64(rt.Step / time.Second)
	start := from - mathx.FloorMod(from, step) + step
	end := until - mathx.FloorMod(until, step) + step
	if start == end {
		end += step
	}
	g.Start, g.Step, g.N, g.Index = start, step, int((end-start)/step), idx
	g.Oldest = math.MinInt64
	if rt.Duration > 0 {
		g.Oldest = m.opts.Now().Unix() - int64(rt.Duration/time.Second)
	}
	if idx == 0 {
		g.Stable = math.MaxInt64
		g.Reach = (s.Heartbeat.Milliseconds() + 999) / 1000
		return g
	}
	// The version before the done time: a pass computing a range again
	// bumps it after writing, and done only grows.
	g.Version = m.redone.Load()
	g.Stable = math.MinInt64
	if l := m.levelOf(rt.Step); l != nil {
		if done := m.Done(l.Name); done != math.MinInt64 {
			g.Stable = mathx.FloorDiv(done, step*1000) * step
		}
	}
	return g
}

func (m *Manager) levelOf(step time.Duration) *Level {
	for _, l := range m.levels {
		if l.Step == step {
			return l
		}
	}
	return nil
}

// ReadGrid implements archive.GridStore: the values of g's buckets
// [start, end), as Points reads them.
func (m *Manager) ReadGrid(ctx context.Context, lset labels.Labels, g archive.Grid, start, end int64) ([]float64, error) {
	s, agg := m.rules.Match(lset.Get(labels.MetricName))
	step := g.Step
	if step <= 0 || start > end || mathx.FloorMod(start-g.Start, step) != 0 || mathx.FloorMod(end-g.Start, step) != 0 {
		return nil, fmt.Errorf("read grid [%d, %d) of step %d from %d: not on the grid", start, end, step, g.Start)
	}
	n := int((end - start) / step)
	if g.Index == 0 {
		hb := s.Heartbeat.Milliseconds()
		ts, vs, err := m.read(ctx, m.raw, lset, start*1000-hb, end*1000-1)
		if err != nil {
			return nil, err
		}
		return AppendSlots(make([]float64, 0, n), ts, vs, start*1000, step*1000, n, agg.Method, hb), nil
	}
	vals := make([]float64, n)
	for i := range vals {
		vals[i] = math.NaN()
	}
	l := m.levelOf(time.Duration(step) * time.Second)
	if l == nil {
		return vals, nil
	}
	ts, vs, err := m.read(ctx, l.DB, lset, start*1000, end*1000-1)
	if err != nil {
		return nil, err
	}
	for i, t := range ts {
		if j := (t/1000 - start) / step; j >= 0 && j < int64(n) && t%(step*1000) == 0 {
			vals[j] = vs[i]
		}
	}
	// The buckets the level has not reached yet (the newest ones, which
	// the raw head may still change) are computed from the raw data as the
	// level will compute them: whisper updates its coarser archives on
	// every write, and so a render never misses the recent end.
	done := m.Done(l.Name)
	if done == math.MinInt64 || done/1000 >= end {
		return vals, nil
	}
	tail := max(start, done/1000)
	tail = start + (tail-start+step-1)/step*step
	if tail >= end {
		return vals, nil
	}
	step0 := s.Retentions[0].Step.Milliseconds()
	hb := s.Heartbeat.Milliseconds()
	rts, rvs, err := m.read(ctx, m.raw, lset, tail*1000-hb, end*1000-1)
	if err != nil {
		return nil, err
	}
	k := int(step * 1000 / step0)
	nb := int((end - tail) / step)
	slots := AppendSlots(make([]float64, 0, nb*k), rts, rvs, tail*1000, step0, nb*k, agg.Method, hb)
	copy(vals[(tail-start)/step:], AppendBuckets(make([]float64, 0, nb), slots, k, agg.Method, agg.XFilesFactor))
	return vals, nil
}

// read returns the samples of exactly the series lset in [mint, maxt].
func (m *Manager) read(ctx context.Context, q storage.Queryable, lset labels.Labels, mint, maxt int64) ([]int64, []float64, error) {
	qr, err := q.Querier(mint, maxt)
	if err != nil {
		return nil, nil, err
	}
	defer qr.Close()
	ms := make([]*labels.Matcher, 0, lset.Len())
	lset.Range(func(l labels.Label) {
		ms = append(ms, labels.MustNewMatcher(labels.MatchEqual, l.Name, l.Value))
	})
	ss := qr.Select(ctx, false, &storage.SelectHints{Start: mint, End: maxt}, ms...)
	var (
		ts []int64
		vs []float64
	)
	for ss.Next() {
		s := ss.At()
		if !labels.Equal(s.Labels(), lset) {
			continue
		}
		it := s.Iterator(nil)
		for it.Next() == chunkenc.ValFloat {
			t, v := it.At()
			ts, vs = append(ts, t), append(vs, v)
		}
		if err := it.Err(); err != nil {
			return nil, nil, err
		}
	}
	return ts, vs, ss.Err()
}

// LabelNames returns the label names of the series matching ms in the raw
// engine and every level, sorted (the Graphite API's tag index: /tags,
// autocompletion and find read it instead of listing series).
func (m *Manager) LabelNames(ctx context.Context, ms ...*labels.Matcher) ([]string, error) {
	return m.union(func(q storage.Querier) ([]string, error) {
		names, _, err := q.LabelNames(ctx, nil, ms...)
		return names, err
	})
}

// LabelValues returns the values of label name over the series matching
// ms in the raw engine and every level, sorted.
func (m *Manager) LabelValues(ctx context.Context, name string, ms ...*labels.Matcher) ([]string, error) {
	return m.union(func(q storage.Querier) ([]string, error) {
		vals, _, err := q.LabelValues(ctx, name, nil, ms...)
		return vals, err
	})
}

func (m *Manager) union(fn func(storage.Querier) ([]string, error)) ([]string, error) {
	var out []string
	dbs := []storage.Queryable{m.raw}
	for _, l := range m.levels {
		dbs = append(dbs, l.DB)
	}
	for _, db := range dbs {
		q, err := db.Querier(math.MinInt64, math.MaxInt64)
		if err != nil {
			return nil, err
		}
		vs, err := fn(q)
		q.Close()
		if err != nil {
			return nil, err
		}
		out = append(out, vs...)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}
