package rollupbench

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"

	"github.com/aerie-db/aerie/bench/harness"
	"github.com/aerie-db/aerie/bench/workload"
	"github.com/aerie-db/aerie/internal/rollup"
	"github.com/aerie-db/aerie/internal/tsdb"
	"github.com/aerie-db/aerie/internal/wal"
)

// Kind marks the JSON of a rollup report.
const Kind = "aerie-bench-rollup"

// Schema is the storage schema measured: Graphite's usual shape.
const Schema = "10s:1d,1m:30d,1h:1y"

// Config sizes a run. Zero values take the scale's.
type Config struct {
	Scale  string        // small (14 days, every 50th series) or medium (a year, every 10th)
	Span   time.Duration // data span
	Stride int           // keep every Stride-th node series
	Dir    string        // work directory ["": a temporary one, removed]
	Seed   int64
	Log    *slog.Logger
	Now    time.Time // the data end here [time.Now]
}

var scales = map[string]Config{
	"small":  {Span: 14 * 24 * time.Hour, Stride: 50},
	"medium": {Span: 365 * 24 * time.Hour, Stride: 10},
}

// Report is the result of a run.
type Report struct {
	harness.Header
	Schema   string `json:"schema"`
	Series   int    `json:"series"`
	Span     string `json:"span"`
	Samples  int64  `json:"samples"`
	RawBytes int64  `json:"raw_only_bytes"` // the engine without rollups, compacted
	// With rollups: the raw engine (one day kept) and each level.
	KeptRawBytes int64            `json:"rollup_raw_bytes"`
	LevelBytes   map[string]int64 `json:"level_bytes"`
	LevelPoints  map[string]int64 `json:"level_points"`
	TotalBytes   int64            `json:"rollup_total_bytes"`
	WhisperBytes int64            `json:"whisper_bytes"` // what carbon's whisper files of the schema take
	Saved        float64          `json:"saved"`         // 1 - TotalBytes/RawBytes
}

// Run runs the benchmark.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	sc, ok := scales[cfg.Scale]
	if !ok {
		return nil, fmt.Errorf("rollup bench: scale %q: want small or medium", cfg.Scale)
	}
	cfg.Span, cfg.Stride, cfg.Now = cmp.Or(cfg.Span, sc.Span), cmp.Or(cfg.Stride, sc.Stride), cmp.Or(cfg.Now, time.Now())
	cfg.Log = cmp.Or(cfg.Log, slog.New(slog.DiscardHandler))
	if cfg.Dir == "" {
		d, err := os.MkdirTemp("", "aerie-rollupbench-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(d)
		cfg.Dir = d
	}
	end := cfg.Now.Truncate(time.Hour)
	w, err := workload.New("node", workload.Spec{Targets: 1, Interval: 10 * time.Second, Duration: cfg.Span,
		Start: end.Add(-cfg.Span).UnixMilli(), Jitter: -1, Seed: cfg.Seed})
	if err != nil {
		return nil, err
	}
	all := w.Series(0)
	var keep []int
	for i := 0; i < len(all); i += cfg.Stride {
		keep = append(keep, i)
	}
	rep := &Report{Header: harness.NewHeader(Kind, cfg.Scale), Schema: Schema, Series: len(keep), Span: cfg.Span.String(),
		LevelBytes: map[string]int64{}, LevelPoints: map[string]int64{}}

	schema, err := rollup.NewSchema("node", ".*", Schema, 0)
	if err != nil {
		return nil, err
	}
	agg, err := rollup.NewAggregation("avg", ".*", 0.5, "average")
	if err != nil {
		return nil, err
	}
	rules := &rollup.Rules{Schemas: []rollup.Schema{schema}, Aggregations: []rollup.Aggregation{agg}}
	clock := func() time.Time { return cfg.Now }
	ret := rollup.NewRetainer(rules, clock)
	// The WAL syncs on an interval: durability is not what is measured,
	// and a sync per commit would make the run wait on the disk.
	eo := tsdb.Options{FlushCheckInterval: -1, Logger: cfg.Log, WALSync: wal.SyncInterval}
	plain, err := tsdb.Open(filepath.Join(cfg.Dir, "raw-only"), &eo)
	if err != nil {
		return nil, err
	}
	defer plain.Close()
	ro := eo
	ro.SeriesRetention = ret.Cutoff
	raw, err := tsdb.Open(filepath.Join(cfg.Dir, "rollup", "raw"), &ro)
	if err != nil {
		return nil, err
	}
	defer raw.Close()
	m, err := rollup.Open(filepath.Join(cfg.Dir, "rollup", "levels"), raw, rules, ret, rollup.Options{Interval: -1, Now: clock, Engine: eo})
	if err != nil {
		return nil, err
	}
	defer m.Close()

	// Write in time order, a day at a time: both engines flush as the
	// head moves on; the rollup manager follows each day, and its newest
	// 1m buckets are checked against the raw-only engine's data.
	sc0 := w.Scraper(0)
	var row workload.Row
	refs := [2][]storage.SeriesRef{make([]storage.SeriesRef, len(keep)), make([]storage.SeriesRef, len(keep))}
	dbs := [2]*tsdb.DB{plain, raw}
	apps := [2]storage.Appender{plain.Appender(ctx), raw.Appender(ctx)}
	// commit commits both appenders, runs then (if set) on both engines
	// and opens new appenders.
	commit := func(then func(*tsdb.DB) error) error {
		for i := range apps {
			if err := apps[i].Commit(); err != nil {
				return err
			}
			if then != nil {
				if err := then(dbs[i]); err != nil {
					return err
				}
			}
			apps[i] = dbs[i].Appender(ctx)
		}
		return nil
	}
	n, dayEnd := 0, int64(math.MinInt64)
	for sc0.Next(&row) {
		if dayEnd == math.MinInt64 {
			dayEnd = row.T - row.T%(24*3600_000) + 24*3600_000
		}
		if row.T >= dayEnd {
			if err := commit((*tsdb.DB).Compact); err != nil {
				return nil, err
			}
			if err := m.RunOnce(ctx); err != nil {
				return nil, err
			}
			if err := check(ctx, m, plain, "1m", cfg.Now); err != nil {
				return nil, err
			}
			if _, err := raw.ApplySeriesRetention(); err != nil {
				return nil, err
			}
			dayEnd += 24 * 3600_000
			cfg.Log.Info("rollup bench", "day", time.UnixMilli(dayEnd).UTC().Format(time.DateOnly), "samples", rep.Samples)
		}
		for j, i := range keep {
			if row.Present != nil && !row.Present[i] {
				continue
			}
			for k, app := range apps {
				ref, err := app.Append(refs[k][j], all[i], row.T, row.Values[i])
				if err != nil {
					return nil, fmt.Errorf("append %s at %d: %w", all[i], row.T, err)
				}
				refs[k][j] = ref
			}
			rep.Samples++
			n++
		}
		if n >= 50_000 {
			if err := commit(nil); err != nil {
				return nil, err
			}
			n = 0
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
	if err := commit((*tsdb.DB).FlushHead); err != nil {
		return nil, err
	}
	if err := m.RunOnce(ctx); err != nil {
		return nil, err
	}
	for _, l := range m.Levels() {
		if err := check(ctx, m, plain, l.Name, cfg.Now); err != nil {
			return nil, err
		}
	}
	if _, err := raw.ApplySeriesRetention(); err != nil {
		return nil, err
	}
	if rep.RawBytes, err = compactedBytes(plain); err != nil {
		return nil, err
	}
	if rep.KeptRawBytes, err = compactedBytes(raw); err != nil {
		return nil, err
	}
	rep.TotalBytes = rep.KeptRawBytes
	for _, l := range m.Levels() {
		b, err := compactedBytes(l.DB)
		if err != nil {
			return nil, err
		}
		rep.LevelBytes[l.Name] = b
		rep.TotalBytes += b
		if rep.LevelPoints[l.Name], err = countPoints(ctx, l.DB); err != nil {
			return nil, err
		}
	}
	// whisper: a 16-byte header, 12 bytes per archive header, 12 bytes
	// per point of every archive, per series.
	var perSeries int64 = 16
	for _, rt := range schema.Retentions {
		perSeries += 12 + 12*int64(rt.Duration/rt.Step)
	}
	rep.WhisperBytes = perSeries * int64(len(keep))
	rep.Saved = 1 - float64(rep.TotalBytes)/float64(rep.RawBytes)
	rep.Done()
	return rep, nil
}

// check compares the newest hour of a level with buckets computed from
// the raw-only engine's data (the rollup engine's raw data are past their
// retention by then: the bench's data are up to a year old), once that
// hour is inside the level's own retention.
func check(ctx context.Context, m *rollup.Manager, raw *tsdb.DB, name string, now time.Time) error {
	l := m.Level(name)
	done := m.Done(name)
	from := done - 3600_000
	if done == math.MinInt64 || from < now.Add(-l.Retention).UnixMilli() {
		return nil // the level keeps only its retention, counted from now
	}
	q, err := raw.Querier(from, done-1)
	if err != nil {
		return err
	}
	defer q.Close()
	ss := q.Select(ctx, true, &storage.SelectHints{Start: from, End: done - 1}, labels.MustNewMatcher(labels.MatchRegexp, labels.MetricName, ".+"))
	step := l.Step.Milliseconds()
	nb := int((done - from) / step)
	for ss.Next() {
		s := ss.At()
		var ts []int64
		var vs []float64
		it := s.Iterator(nil)
		for it.Next() != 0 {
			t, v := it.At()
			ts, vs = append(ts, t), append(vs, v)
		}
		slots := rollup.AppendSlots(nil, ts, vs, from, 10_000, nb*int(step/10_000), rollup.Average, 10_000)
		// Buckets older than the raw archive's day when rolled up take
		// any known slot (as whisper writes late history), the others
		// need half of them.
		k := int(step / 10_000)
		late := 0
		if cut := now.Add(-24 * time.Hour).UnixMilli(); cut > from {
			late = min(int((cut-from+step-1)/step), nb)
		}
		want := rollup.AppendBuckets(nil, slots[:late*k], k, rollup.Average, 0)
		want = rollup.AppendBuckets(want, slots[late*k:], k, rollup.Average, 0.5)
		got := make([]float64, nb)
		for i := range got {
			got[i] = math.NaN()
		}
		lq, err := l.DB.Querier(from, done-1)
		if err != nil {
			return err
		}
		ls := lq.Select(ctx, false, nil, matchersOf(s.Labels())...)
		for ls.Next() {
			if !labels.Equal(ls.At().Labels(), s.Labels()) {
				continue
			}
			it := ls.At().Iterator(nil)
			for it.Next() != 0 {
				t, v := it.At()
				got[(t-from)/step] = v
			}
		}
		lq.Close()
		for i := range want {
			if math.Float64bits(want[i]) != math.Float64bits(got[i]) && !(math.IsNaN(want[i]) && math.IsNaN(got[i])) {
				return fmt.Errorf("level %s, %s at %d: %v, the raw data give %v", name, s.Labels(), from+int64(i)*step, got[i], want[i])
			}
		}
	}
	return ss.Err()
}

// compactedBytes writes everything an engine holds into blocks (the head, the
// backfill generations) and compacts them, so that its blocks are all its
// data, and returns the size of its blocks directory.
func compactedBytes(db *tsdb.DB) (int64, error) {
	if err := db.FlushHead(); err != nil {
		return 0, err
	}
	if err := db.FlushBackfill(); err != nil {
		return 0, err
	}
	if _, err := db.ApplySeriesRetention(); err != nil {
		return 0, err
	}
	if err := db.CompactBlocks(); err != nil {
		return 0, err
	}
	n, _, err := harness.DiskUsage(filepath.Join(db.Dir(), "blocks"))
	return n, err
}

// countPoints counts every sample of an engine.
func countPoints(ctx context.Context, db *tsdb.DB) (int64, error) {
	q, err := db.Querier(math.MinInt64, math.MaxInt64)
	if err != nil {
		return 0, err
	}
	defer q.Close()
	ss := q.Select(ctx, false, nil, labels.MustNewMatcher(labels.MatchRegexp, labels.MetricName, ".+"))
	var n int64
	for ss.Next() {
		it := ss.At().Iterator(nil)
		for it.Next() != 0 {
			n++
		}
	}
	return n, ss.Err()
}

func matchersOf(lset labels.Labels) []*labels.Matcher {
	var ms []*labels.Matcher
	lset.Range(func(l labels.Label) { ms = append(ms, labels.MustNewMatcher(labels.MatchEqual, l.Name, l.Value)) })
	return ms
}

// WriteJSON writes the report.
func (r *Report) WriteJSON(w io.Writer) error { return harness.WriteJSON(w, r) }

// WriteMarkdown writes the report's section of docs/BENCHMARKS.md.
func (r *Report) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "## Rollups: space saved (`aerie bench rollup`, %s, commit %s)\n\n", r.Scale, r.Commit)
	fmt.Fprintf(&b, "%d node-like series (bench/workload's node target) scraped every 10 s for %s, ending now: %d samples, written in time order into an engine keeping everything raw and one with the storage schema `%s` (average, xFilesFactor 0.5), rollups and raw retention running as in `aerie serve`; both compacted. Every day inside the 1m level's 30 days its newest hour, and at the end the newest hour of each level, were checked against the raw data.\n\n",
		r.Series, r.Span, r.Samples, r.Schema)
	b.WriteString("| store | bytes | bytes/series | share of raw-only |\n| --- | ---: | ---: | ---: |\n")
	row := func(name string, n int64) {
		fmt.Fprintf(&b, "| %s | %d | %d | %.3f |\n", name, n, n/int64(max(r.Series, 1)), float64(n)/float64(max(r.RawBytes, 1)))
	}
	row("raw only (no rollups)", r.RawBytes)
	row("with rollups: raw (1 day kept)", r.KeptRawBytes)
	for _, name := range []string{"1m", "1h"} {
		if n, ok := r.LevelBytes[name]; ok {
			row(fmt.Sprintf("with rollups: level %s (%d points)", name, r.LevelPoints[name]), n)
		}
	}
	row("with rollups: total", r.TotalBytes)
	row("carbon's whisper files of the same schema", r.WhisperBytes)
	fmt.Fprintf(&b, "\nRollups save **%.1f %%** of the raw-only bytes; Aerie's total is %.2f× whisper's. Run took %.0f s.\n\n", 100*r.Saved, float64(r.TotalBytes)/float64(max(r.WhisperBytes, 1)), r.Seconds)
	_, err := io.WriteString(w, b.String())
	return err
}
