package ingest

import (
	"context"
	"errors"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
)

// TestSeenSet: keys whose words collide are told apart, before and after
// a reset.
func TestSeenSet(t *testing.T) {
	a := sampleKey{hash: 0x1234_5678_9abc_def0, t: 1000}
	b := sampleKey{t: 2000}
	b.hash = a.word() ^ uint64(b.t)*0x9e3779b97f4a7c15 // b.word() == a.word()
	if a.word() != b.word() {
		t.Fatal("the test's keys do not collide")
	}
	c := sampleKey{hash: a.hash, t: 3000}
	s := &seenSet{m: map[uint64]seenEntry{}}
	for round := 0; round < 2; round++ {
		for _, k := range []sampleKey{a, b, c} {
			if _, ok := s.get(k); ok {
				t.Fatalf("round %d: %v seen before it was put", round, k)
			}
		}
		s.put(a, 1)
		if _, ok := s.get(b); ok {
			t.Fatalf("round %d: b seen as a", round)
		}
		s.put(b, 2)
		s.put(c, 3)
		for k, want := range map[sampleKey]uint64{a: 1, b: 2, c: 3} {
			if v, ok := s.get(k); !ok || v != want {
				t.Errorf("round %d: get(%v) = %d, %v; want %d", round, k, v, ok, want)
			}
		}
		s.reset()
	}
}

// noWaitApp is an Appendable whose appenders commit without waiting: each
// CommitNoWait's wait is recorded, and fails with failWait.
type noWaitApp struct {
	commits, waited int
	failWait        error
}

func (a *noWaitApp) Appender(context.Context) storage.Appender { return &noWaitAppender{a: a} }

type noWaitAppender struct {
	storage.Appender // nil: only Append and the commits are called
	a                *noWaitApp
}

func (w *noWaitAppender) Append(storage.SeriesRef, labels.Labels, int64, float64) (storage.SeriesRef, error) {
	return 1, nil
}

func (w *noWaitAppender) Commit() error {
	wait, err := w.CommitNoWait()
	if werr := wait(); err == nil {
		err = werr
	}
	return err
}

func (w *noWaitAppender) CommitNoWait() (func() error, error) {
	w.a.commits++
	return func() error { w.a.waited++; return w.a.failWait }, nil
}

// TestBatchCommitNoWait: a full batch commits without waiting for the
// fsync; the samples count as stored only once sync (or the last commit)
// has waited for every such commit, and as rejected if one failed.
func TestBatchCommitNoWait(t *testing.T) {
	for _, tc := range []struct {
		name     string
		failWait error
	}{{"durable", nil}, {"fsync fails", errors.New("disk gone")}} {
		t.Run(tc.name, func(t *testing.T) {
			app := &noWaitApp{failWait: tc.failWait}
			rep := newReport(10)
			b := newBatch(context.Background(), app, 2, rep)
			defer b.release()
			l := labels.FromStrings("__name__", "x")
			for i := range 5 {
				b.add(l, int64(i), 1, int64(i+1))
				if err := b.lineDone(); err != nil {
					t.Fatal(err)
				}
			}
			if app.commits != 2 || app.waited != 0 || rep.stored != 0 {
				t.Fatalf("after 5 lines: %d commits, %d waited, %d stored; want 2, 0, 0", app.commits, app.waited, rep.stored)
			}
			err := b.commit() // the fifth sample, then the two earlier commits' fsyncs
			if app.commits != 3 || app.waited != 3 {
				t.Fatalf("after commit: %d commits, %d waited; want 3, 3", app.commits, app.waited)
			}
			if tc.failWait == nil {
				if err != nil || rep.stored != 5 || rep.rejected != 0 {
					t.Fatalf("commit: %v, %d stored, %d rejected; want nil, 5, 0", err, rep.stored, rep.rejected)
				}
				return
			}
			if !errors.Is(err, tc.failWait) || rep.stored != 0 || rep.rejected != 5 || rep.byReason[ReasonStorage] != 5 {
				t.Fatalf("commit: %v, %d stored, %d rejected (%v); want the fsync's error, 0, 5 storage errors", err, rep.stored, rep.rejected, rep.byReason)
			}
		})
	}
}
