package tsdb

import (
	"context"
	"slices"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
)

type lateRecorder struct {
	horizon int64
	written []int64 // mint of each report
	deleted int
}

func (r *lateRecorder) Horizon() int64 { return r.horizon }
func (r *lateRecorder) Written(ws []LateWrite) {
	for _, w := range ws {
		r.written = append(r.written, w.MinT)
	}
}
func (r *lateRecorder) Deleted(int64, int64, []*labels.Matcher) { r.deleted++ }

// TestLateObservers: two observers over one engine both hear of a sample
// older than both horizons, and of a deletion; a commit whose samples are
// all between the horizons reaches only the observer of the later one.
func TestLateObservers(t *testing.T) {
	db, err := Open(t.TempDir(), &Options{FlushCheckInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	a, b := &lateRecorder{horizon: 1_000_000}, &lateRecorder{horizon: 2_000_000}
	db.SetLateObserver(LateObservers{a, b})
	ctx := context.Background()
	app := db.Appender(ctx)
	s := labels.FromStrings("__name__", "x")
	for _, ts := range []int64{3_000_000, 1_500_000, 500_000} {
		if _, err := app.Append(0, s, ts, 1); err != nil {
			t.Fatal(err)
		}
	}
	if err := app.Commit(); err != nil {
		t.Fatal(err)
	}
	app = db.Appender(ctx)
	if _, err := app.Append(0, labels.FromStrings("__name__", "y"), 1_200_000, 1); err != nil {
		t.Fatal(err)
	}
	if err := app.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := db.Delete(ctx, 0, 4_000_000, labels.MustNewMatcher(labels.MatchEqual, "__name__", "x")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		r    *lateRecorder
		want []int64
	}{{a, []int64{500_000}}, {b, []int64{500_000, 1_200_000}}} {
		if !slices.Equal(tc.r.written, tc.want) || tc.r.deleted != 1 {
			t.Errorf("observer of horizon %d: written %v, deleted %d; want %v and 1", tc.r.horizon, tc.r.written, tc.r.deleted, tc.want)
		}
	}
}

type batchRecorder struct{ batches [][]LateWrite }

func (r *batchRecorder) Horizon() int64 { return 10_000_000 }
func (r *batchRecorder) Written(ws []LateWrite) {
	r.batches = append(r.batches, slices.Clone(ws))
}
func (r *batchRecorder) Deleted(int64, int64, []*labels.Matcher) {}

// TestLateWriteBatch: one commit is one report, a run of one series'
// samples in it one LateWrite with the run's range and the hash of the
// series' labels, whether appended by labels, by ref without labels, or
// sent to the backfill.
func TestLateWriteBatch(t *testing.T) {
	db, err := Open(t.TempDir(), &Options{FlushCheckInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	r := &batchRecorder{}
	db.SetLateObserver(r)
	ctx := context.Background()
	x, y := labels.FromStrings("__name__", "x", "i", "1"), labels.FromStrings("__name__", "y")
	app := db.Appender(ctx)
	ref, err := app.Append(0, x, 8_000_000, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, ts := range []int64{8_100_000, 8_200_000} {
		if _, err := app.Append(ref, labels.EmptyLabels(), ts, 2); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := app.Append(0, y, 9_000_000, 1); err != nil {
		t.Fatal(err)
	}
	if err := app.Commit(); err != nil {
		t.Fatal(err)
	}
	// Far below the head: the backfill takes these, x by ref.
	app = db.Appender(ctx)
	for _, ts := range []int64{1_000, 2_000} {
		if _, err := app.Append(ref, labels.EmptyLabels(), ts, 3); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := app.Append(0, y, 1_500, 3); err != nil {
		t.Fatal(err)
	}
	if err := app.Commit(); err != nil {
		t.Fatal(err)
	}
	want := [][]LateWrite{
		{NewLateWrite(x, 8_000_000, 8_200_000), NewLateWrite(y, 9_000_000, 9_000_000)},
		{NewLateWrite(x, 1_000, 2_000), NewLateWrite(y, 1_500, 1_500)},
	}
	if len(r.batches) != len(want) {
		t.Fatalf("%d reports, want %d: %v", len(r.batches), len(want), r.batches)
	}
	for i, b := range r.batches {
		if !slices.EqualFunc(b, want[i], func(a, b LateWrite) bool {
			return labels.Equal(a.Labels(), b.Labels()) && a.Hash == b.Hash && a.MinT == b.MinT && a.MaxT == b.MaxT
		}) {
			t.Errorf("report %d: %v, want %v", i, b, want[i])
		}
	}
}
