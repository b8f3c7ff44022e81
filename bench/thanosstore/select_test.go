package thanosstore

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/tsdbutil"
)

func eq(n, v string) *labels.Matcher  { return labels.MustNewMatcher(labels.MatchEqual, n, v) }
func neq(n, v string) *labels.Matcher { return labels.MustNewMatcher(labels.MatchNotEqual, n, v) }
func re(n, v string) *labels.Matcher  { return labels.MustNewMatcher(labels.MatchRegexp, n, v) }
func nre(n, v string) *labels.Matcher { return labels.MustNewMatcher(labels.MatchNotRegexp, n, v) }

func TestSelectMatchesTSDBQuerier(t *testing.T) {
	f := floatBlock(t)
	b, _, _ := open(t, f)
	const minute = 60 * 1000
	matchers := []struct {
		name string
		ms   []*labels.Matcher
	}{
		{"metric", []*labels.Matcher{eq("__name__", "cpu_usage")}},
		{"two equalities", []*labels.Matcher{eq("job", "db"), eq("instance", "host-4")}},
		{"regexp set", []*labels.Matcher{re("job", "api|cache")}},
		{"regexp", []*labels.Matcher{re("instance", "host-1[0-9]")}},
		{"only negative", []*labels.Matcher{neq("job", "api")}},
		{"negative regexp", []*labels.Matcher{eq("__name__", "cpu_usage"), nre("cpu", "[01]")}},
		{"three kinds", []*labels.Matcher{re("__name__", "cpu.*|mem.*"), eq("job", "api"), neq("instance", "host-3")}},
		{"label absent", []*labels.Matcher{eq("cpu", "")}},
		{"label present", []*labels.Matcher{neq("code", "")}},
		{"match-all regexp", []*labels.Matcher{re("cpu", ".*"), eq("__name__", "http_requests_total")}},
		{"two on one name", []*labels.Matcher{re("instance", "host-[0-9]"), nre("instance", "host-[2-5]")}},
		{"contradiction", []*labels.Matcher{eq("__name__", "cpu_usage"), nre("__name__", "cpu_usage")}},
		{"unknown value", []*labels.Matcher{eq("job", "nope")}},
		{"empty intersection", []*labels.Matcher{eq("job", "api"), eq("instance", "host-1")}},
		{"alternation and code", []*labels.Matcher{re("instance", "host-(3|10|17)"), eq("code", "500")}},
	}
	ranges := []struct {
		name       string
		mint, maxt int64
	}{
		{"all time", math.MinInt64, math.MaxInt64},
		{"block", b.MinTime(), b.MaxTime() - 1},
		{"inside chunks", fixtureStart + 50*minute, fixtureStart + 70*minute},
		{"across the gap", fixtureStart + 55*minute, fixtureStart + 95*minute},
		{"last hour", fixtureStart + 120*minute, fixtureStart + 180*minute},
		{"between samples", fixtureStart + 1, fixtureStart + fixtureStep - 1},
		{"one sample", fixtureStart + fixtureStep, fixtureStart + fixtureStep},
		{"before the block", fixtureStart - 600*minute, fixtureStart - 1},
	}
	for _, m := range matchers {
		for _, r := range ranges {
			t.Run(m.name+"/"+r.name, func(t *testing.T) {
				got, err := b.Select(context.Background(), r.mint, r.maxt, m.ms...)
				if err != nil {
					t.Fatal(err)
				}
				want := querierSelect(t, f.dir, r.mint, r.maxt, m.ms...)
				if d := diffSeries(got, want); d != "" {
					t.Error(d)
				}
			})
		}
	}
}

func TestSelectStats(t *testing.T) {
	f := floatBlock(t)
	dataSize := fileSize(t, filepath.Join(f.dir, "index")) + fileSize(t, filepath.Join(f.dir, "chunks", "000001"))
	tests := []struct {
		name       string
		ms         []*labels.Matcher
		series     int
		roundTrips int64
		gets       int64
	}{
		// One part per phase: postings of three keys, one series entry, its chunks.
		{"one series", []*labels.Matcher{eq("__name__", "cpu_usage"), eq("instance", "host-5"), eq("cpu", "2")}, 1, 3, 3},
		// 40 series entries within 512 KiB of each other, chunks in one segment.
		{"one metric of all instances", []*labels.Matcher{eq("__name__", "mem_bytes")}, 40, 3, 3},
		// The header alone shows nothing can match.
		{"unknown value", []*labels.Matcher{eq("job", "nope")}, 0, 0, 0},
		// The postings intersect to nothing: one phase.
		{"empty intersection", []*labels.Matcher{eq("job", "api"), eq("instance", "host-1")}, 0, 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, bkt, stats := open(t, f)
			if got, want := stats.MetaGets.Load(), bkt.requests.Load(); got != want || got != 7 {
				t.Errorf("MetaGets %d, bucket saw %d requests; want 7 (meta.json, chunks/ list, index HEAD, header, TOC, symbols, postings offset table)", got, want)
			}
			if got, want := stats.MetaBytes.Load(), bkt.bytes.Load(); got != want {
				t.Errorf("MetaBytes %d, bucket returned %d", got, want)
			}
			bkt.reset()

			ss, err := b.Select(context.Background(), math.MinInt64, math.MaxInt64, tt.ms...)
			if err != nil {
				t.Fatal(err)
			}
			if len(ss) != tt.series {
				t.Errorf("%d series, want %d", len(ss), tt.series)
			}
			if got := stats.RoundTrips.Load(); got != tt.roundTrips {
				t.Errorf("RoundTrips %d, want %d", got, tt.roundTrips)
			}
			if got := stats.Gets.Load(); got != tt.gets || got != bkt.rangeGets.Load() || bkt.requests.Load() != got {
				t.Errorf("Gets %d, want %d; bucket saw %d range GETs of %d requests", got, tt.gets, bkt.rangeGets.Load(), bkt.requests.Load())
			}
			if got, want := stats.BytesFetched.Load(), bkt.bytes.Load(); got != want {
				t.Errorf("BytesFetched %d, bucket returned %d", got, want)
			}
			if got := stats.BytesFetched.Load(); got >= dataSize {
				t.Errorf("BytesFetched %d, not below index+chunks size %d", got, dataSize)
			}
		})
	}
}

func fileSize(t *testing.T, name string) int64 {
	t.Helper()
	fi, err := os.Stat(name)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// With estimates too small for any entry or chunk, every record is fetched
// again, one after another within its part; the answer must not change.
func TestSelectRefetchesShortEstimates(t *testing.T) {
	f := floatBlock(t)
	tests := []struct {
		name                string
		seriesEst, chunkEst int64
	}{
		{"series", 8, estimatedMaxChunkSize},
		{"chunks", estimatedMaxSeriesSize, 8},
		{"length cut off", 1, 1},
	}
	ms := []*labels.Matcher{eq("job", "db"), re("instance", "host-(1|4|7)")}
	want := querierSelect(t, f.dir, math.MinInt64, math.MaxInt64, ms...)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, _, stats := open(t, f)
			b.seriesEst, b.chunkEst = tt.seriesEst, tt.chunkEst
			got, err := b.Select(context.Background(), math.MinInt64, math.MaxInt64, ms...)
			if err != nil {
				t.Fatal(err)
			}
			if d := diffSeries(got, want); d != "" {
				t.Error(d)
			}
			// Each phase has one part, so every re-fetch waits for the one before.
			gets, trips := stats.Gets.Load(), stats.RoundTrips.Load()
			if gets <= 3 || trips != gets {
				t.Errorf("Gets %d, RoundTrips %d; want more than 3 GETs, each its own round trip", gets, trips)
			}
		})
	}
}

func TestSelectBoundsParallelGets(t *testing.T) {
	f := floatBlock(t)
	b, bkt, stats := open(t, f)
	// Every chunk its own part: hundreds of GETs in the chunks phase.
	b.maxGap, b.chunkEst = 0, 8
	bkt.delay = time.Millisecond
	bkt.reset()
	ms := []*labels.Matcher{eq("__name__", "cpu_usage")}
	got, err := b.Select(context.Background(), math.MinInt64, math.MaxInt64, ms...)
	if err != nil {
		t.Fatal(err)
	}
	if d := diffSeries(got, querierSelect(t, f.dir, math.MinInt64, math.MaxInt64, ms...)); d != "" {
		t.Error(d)
	}
	if m := bkt.maxInFlight.Load(); m > maxConcurrentGets || m < 2 {
		t.Errorf("%d range GETs in flight at most, want 2…%d", m, maxConcurrentGets)
	}
	// The chunk phase alone needs at least one wave per 16 parts.
	if trips, gets := stats.RoundTrips.Load(), stats.Gets.Load(); trips < gets/2/maxConcurrentGets {
		t.Errorf("RoundTrips %d for %d GETs", trips, gets)
	}
}

func TestSelectRejectsHistogramChunks(t *testing.T) {
	floatBlock(t) // creates fixtureRoot
	f, err := writeBlock(filepath.Join(fixtureRoot, "histogram"), func(app storage.Appender) error {
		for i := range int64(200) {
			ts := fixtureStart + i*fixtureStep
			if _, err := app.Append(0, labels.FromStrings("__name__", "up"), ts, 1); err != nil {
				return err
			}
			if _, err := app.AppendHistogram(0, labels.FromStrings("__name__", "latency"), ts, tsdbutil.GenerateTestHistogram(i), nil); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	b, _, _ := open(t, f)
	ctx := context.Background()

	got, err := b.Select(ctx, math.MinInt64, math.MaxInt64, eq("__name__", "up"))
	if err != nil {
		t.Fatal(err)
	}
	if d := diffSeries(got, querierSelect(t, f.dir, math.MinInt64, math.MaxInt64, eq("__name__", "up"))); d != "" {
		t.Error(d)
	}

	_, err = b.Select(ctx, math.MinInt64, math.MaxInt64, eq("__name__", "latency"))
	var ce *CorruptionError
	if err == nil || !strings.Contains(err.Error(), "histogram") || !strings.Contains(err.Error(), "chunks/000001") || errors.As(err, &ce) {
		t.Errorf("error %v, want one naming the histogram encoding and chunks/000001, not a corruption", err)
	}
}

// Series and chunks are fetched per batch of postings: two more round trips
// per batch, the same answer.
func TestSelectSeriesBatches(t *testing.T) {
	f := floatBlock(t)
	ms := []*labels.Matcher{eq("job", "db")}
	want := querierSelect(t, f.dir, math.MinInt64, math.MaxInt64, ms...)
	tests := []struct {
		name      string
		batchSize int
	}{
		{"one batch", seriesBatchSize},
		{"batches of 7", 7},
		{"batches of 1", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, _, stats := open(t, f)
			b.batchSize = tt.batchSize
			got, err := b.Select(context.Background(), math.MinInt64, math.MaxInt64, ms...)
			if err != nil {
				t.Fatal(err)
			}
			if d := diffSeries(got, want); d != "" {
				t.Error(d)
			}
			batches := (len(want) + tt.batchSize - 1) / tt.batchSize
			if got, want := stats.RoundTrips.Load(), int64(1+2*batches); got != want {
				t.Errorf("RoundTrips %d, want %d for %d batches", got, want, batches)
			}
		})
	}
}
