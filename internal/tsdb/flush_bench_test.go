package tsdb

import (
	"context"
	"fmt"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
)

// BenchmarkFlushPartition flushes one 2 h partition of 2,000 series (20
// targets of 100) at 15 s, and reports the flush's allocations per sample.
func BenchmarkFlushPartition(b *testing.B) {
	for b.Loop() {
		b.StopTimer()
		db, err := Open(b.TempDir(), &Options{FlushCheckInterval: -1, HotPartitions: -1})
		if err != nil {
			b.Fatal(err)
		}
		loadTargets(b, db)
		b.StartTimer()
		if err := db.FlushHead(); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		db.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(benchTargets*benchPerTarget*benchRows), "samples/op")
}

// The benchmarks' partition: 20 targets of 100 series, 2 h at 15 s.
const benchTargets, benchPerTarget, benchRows = 20, 100, 480

// loadTargets writes the benchmarks' partition into db and returns the
// series.
func loadTargets(b *testing.B, db *DB) []labels.Labels {
	ls := make([]labels.Labels, benchTargets*benchPerTarget)
	for i := range ls {
		ls[i] = labels.FromStrings("__name__", fmt.Sprint("m", i%benchPerTarget), "job", "node", "instance", fmt.Sprint("h", i/benchPerTarget))
	}
	for r := range int64(benchRows) {
		app := db.RowAppender()
		for i, l := range ls {
			if err := app.Append(l, r*15_000+int64(i/benchPerTarget), float64((r*int64(i+1))%1000)); err != nil {
				b.Fatal(err)
			}
		}
		if err := app.Commit(); err != nil {
			b.Fatal(err)
		}
	}
	return ls
}

// BenchmarkSelectLastWindow queries the last 15 minutes of one series
// (Heracles §4.5's query) from the head, and reports allocations: the
// garbage of this loop is what the GC collects while a flush runs.
func BenchmarkSelectLastWindow(b *testing.B) {
	db, err := Open(b.TempDir(), &Options{FlushCheckInterval: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	ls := loadTargets(b, db)
	maxt := int64(benchRows * 15_000)
	var it chunkenc.Iterator
	i := 0
	for b.Loop() {
		l := ls[i%len(ls)]
		i += 7
		ms := make([]*labels.Matcher, 0, l.Len())
		l.Range(func(l labels.Label) { ms = append(ms, labels.MustNewMatcher(labels.MatchEqual, l.Name, l.Value)) })
		q, err := db.Querier(maxt-15*60_000, maxt)
		if err != nil {
			b.Fatal(err)
		}
		ss := q.Select(context.Background(), false, nil, ms...)
		for ss.Next() {
			it = ss.At().Iterator(it)
			for it.Next() != chunkenc.ValNone {
			}
		}
		q.Close()
	}
}
