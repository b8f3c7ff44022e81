package difftest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
)

// Outcome is what an engine said about one sample.
type Outcome uint8

// Outcomes.
const (
	OutcomeAccepted       Outcome = iota // Append and Commit succeeded
	OutcomeRejectedAppend                // Append returned an error
	OutcomeRejectedCommit                // listed by a Commit error's SampleRejections
	OutcomeUnknown                       // in a batch whose Commit failed without details
	OutcomeRolledBack                    // in a batch that was rolled back
)

// Stats summarises one Write. Outcome has one entry per workload sample, in
// workload order (Batch.Off + position in the batch).
type Stats struct {
	Batches, Samples int
	Accepted         int
	RejectedAppend   int
	RejectedCommit   int
	Unknown          int // samples of failed commits without per-sample detail
	RolledBack       int
	CommitErrors     int // batches whose Commit returned an error
	RollbackErrors   int
	TooOldSamples    int
	TooOldRejected   int // too-old samples not OutcomeAccepted
	// Unexpected counts samples that are not too-old but were reported
	// rejected (by Append or by SampleRejections). Diagnostic only: the
	// data comparisons decide.
	Unexpected int
	Errors     []string // the first few distinct error messages
	Outcome    []Outcome
}

func (s Stats) String() string {
	return fmt.Sprintf("batches=%d samples=%d accepted=%d rejected(append)=%d rejected(commit)=%d unknown=%d rolledBack=%d commitErrors=%d tooOld=%d/%d rejected unexpected=%d",
		s.Batches, s.Samples, s.Accepted, s.RejectedAppend, s.RejectedCommit, s.Unknown, s.RolledBack, s.CommitErrors, s.TooOldRejected, s.TooOldSamples, s.Unexpected)
}

// Write writes every batch of the workload to e, in delivery order: one
// appender and one Commit per batch (Rollback for rollback batches). It
// records the outcome of every sample. Errors of normal batches are only
// recorded (compare data, not errors); a too-old sample that is accepted (no
// error from Append, and a Commit that succeeded or did not list it) is
// reported with t.Errorf.
func (w *Workload) Write(t testing.TB, e Engine) Stats {
	t.Helper()
	st := Stats{Batches: len(w.Batches), Samples: w.NumSamples, Outcome: make([]Outcome, w.NumSamples)}
	seen := map[string]bool{}
	note := func(err error) {
		if msg := err.Error(); len(st.Errors) < 8 && !seen[msg] {
			seen[msg] = true
			st.Errors = append(st.Errors, msg)
		}
	}
	var tooOldAccepted []string
	for bi := range w.Batches {
		b := &w.Batches[bi]
		out := st.Outcome[b.Off : b.Off+len(b.Refs)]
		app := e.NewAppender()
		for i, ref := range b.Refs {
			if err := app.Append(w.Series[ref], b.T, b.Values[i]); err != nil {
				out[i] = OutcomeRejectedAppend
				if !b.TooOld {
					note(err)
				}
			}
		}
		if b.Rollback {
			if err := app.Rollback(); err != nil {
				st.RollbackErrors++
				note(err)
			}
			for i := range out {
				out[i] = OutcomeRolledBack
			}
			continue
		}
		if err := app.Commit(); err != nil {
			st.CommitErrors++
			if !b.TooOld {
				note(err)
			}
			var rj SampleRejections
			if errors.As(err, &rj) {
				for _, i := range rj.RejectedSamples() {
					if i >= 0 && i < len(out) {
						out[i] = OutcomeRejectedCommit
					}
				}
			} else {
				for i := range out {
					if out[i] == OutcomeAccepted {
						out[i] = OutcomeUnknown
					}
				}
			}
		}
		if b.TooOld {
			for i, o := range out {
				if o == OutcomeAccepted && len(tooOldAccepted) < 5 {
					tooOldAccepted = append(tooOldAccepted, fmt.Sprintf("%s@%d", w.Series[b.Refs[i]], b.T))
				}
			}
		}
	}
	for bi := range w.Batches {
		b := &w.Batches[bi]
		for i := range b.Refs {
			o := st.Outcome[b.Off+i]
			switch o {
			case OutcomeAccepted:
				st.Accepted++
			case OutcomeRejectedAppend:
				st.RejectedAppend++
			case OutcomeRejectedCommit:
				st.RejectedCommit++
			case OutcomeUnknown:
				st.Unknown++
			case OutcomeRolledBack:
				st.RolledBack++
			}
			if b.TooOld {
				st.TooOldSamples++
				if o != OutcomeAccepted {
					st.TooOldRejected++
				}
			} else if o == OutcomeRejectedAppend || o == OutcomeRejectedCommit {
				st.Unexpected++
			}
		}
	}
	if st.TooOldRejected != st.TooOldSamples {
		t.Errorf("difftest: %d of %d too-old samples were accepted without any error, e.g. %v", st.TooOldSamples-st.TooOldRejected, st.TooOldSamples, tooOldAccepted)
	}
	t.Logf("difftest: write: %s; errors: %q", st, st.Errors)
	return st
}

type sample struct {
	t int64
	v uint64 // math.Float64bits
}

func fmtSample(s sample) string {
	return fmt.Sprintf("%d:%g(%#x)", s.t, math.Float64frombits(s.v), s.v)
}

// Expected returns the samples the workload expects stored for each series
// (indexed like Series), sorted by time: everything except too-old samples and
// rolled-back batches.
func (w *Workload) Expected() [][]sample {
	n := make([]int, len(w.Series))
	for _, b := range w.Batches {
		if b.TooOld || b.Rollback || b.Dup {
			continue
		}
		for _, r := range b.Refs {
			n[r]++
		}
	}
	out := make([][]sample, len(w.Series))
	for i := range out {
		out[i] = make([]sample, 0, n[i])
	}
	for _, b := range w.Batches {
		if b.TooOld || b.Rollback || b.Dup {
			continue
		}
		for i, r := range b.Refs {
			out[r] = append(out[r], sample{b.T, math.Float64bits(b.Values[i])})
		}
	}
	for _, s := range out {
		slices.SortFunc(s, func(a, b sample) int { return cmp.Compare(a.t, b.t) })
	}
	return out
}

// Verify checks that q holds exactly the workload's expected data: every
// series and every sample (bit for bit), nothing else, nothing from too-old
// or rolled-back batches. It reads everything with one Select per group.
func (w *Workload) Verify(t testing.TB, q storage.Queryable) {
	t.Helper()
	exp := w.Expected()
	byLabels := make(map[string]int, len(w.Series))
	for i, l := range w.Series {
		byLabels[string(l.Bytes(nil))] = i
	}
	mint, maxt := w.MinT-int64(3600_000), w.MaxT+int64(3600_000)
	querier, err := q.Querier(mint, maxt)
	if err != nil {
		t.Errorf("difftest: Verify: Querier: %v", err)
		return
	}
	defer querier.Close()
	found := make([]bool, len(w.Series))
	var problems []string
	fail := 0
	report := func(format string, args ...any) {
		fail++
		if len(problems) < 10 {
			problems = append(problems, fmt.Sprintf(format, args...))
		}
	}
	hints := &storage.SelectHints{Start: mint, End: maxt}
	for _, g := range w.Groups {
		ms := []*labels.Matcher{
			labels.MustNewMatcher(labels.MatchEqual, "job", g.Get("job")),
			labels.MustNewMatcher(labels.MatchEqual, "instance", g.Get("instance")),
		}
		ss := querier.Select(context.Background(), false, hints, ms...)
		var it chunkenc.Iterator
		for ss.Next() {
			s := ss.At()
			idx, ok := byLabels[string(s.Labels().Bytes(nil))]
			if !ok {
				report("unexpected series %s", s.Labels())
				continue
			}
			if found[idx] {
				report("series %s returned twice", s.Labels())
			}
			found[idx] = true
			it = s.Iterator(it)
			want := exp[idx]
			j, broken := 0, false
			for vt := it.Next(); vt != chunkenc.ValNone; vt = it.Next() {
				if vt != chunkenc.ValFloat {
					report("%s: non-float sample type %v", s.Labels(), vt)
					broken = true
					break
				}
				ts, v := it.At()
				got := sample{ts, math.Float64bits(v)}
				if j >= len(want) {
					report("%s: extra sample %s", s.Labels(), fmtSample(got))
					broken = true
					break
				}
				if got != want[j] {
					report("%s: sample %d: want %s got %s", s.Labels(), j, fmtSample(want[j]), fmtSample(got))
					broken = true
					break
				}
				j++
			}
			switch err := it.Err(); {
			case err != nil:
				report("%s: iterator: %v", s.Labels(), err)
			case !broken && j < len(want):
				report("%s: %d samples, want %d; first missing %s", s.Labels(), j, len(want), fmtSample(want[j]))
			}
		}
		if err := ss.Err(); err != nil {
			report("Select %v: %v", ms, err)
		}
	}
	for i, f := range found {
		if !f && len(exp[i]) > 0 {
			report("missing series %s (%d samples)", w.Series[i], len(exp[i]))
		}
	}
	if fail > 0 {
		t.Errorf("difftest: Verify: %d problems:\n  %s", fail, joinLines(problems))
	}
}

func joinLines(s []string) string {
	out := ""
	for i, l := range s {
		if i > 0 {
			out += "\n  "
		}
		out += l
	}
	return out
}
