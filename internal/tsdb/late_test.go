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

func (r *lateRecorder) Horizon() int64                          { return r.horizon }
func (r *lateRecorder) Written(_ labels.Labels, mint, _ int64)  { r.written = append(r.written, mint) }
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
