package head

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/prometheus/common/model"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
)

// Errors about label sets. They wrap ErrInvalidLabels so callers can map
// them to one HTTP status.
var (
	ErrInvalidLabels = errors.New("invalid labels")
	ErrEmptyLabels   = fmt.Errorf("%w: empty label set", ErrInvalidLabels)
	ErrSeriesLimit   = errors.New("series limit exceeded")
	ErrGroupTooWide  = errors.New("group wider than the configured maximum")
	ErrTooManyRows   = errors.New("row wider than its group")
	// ErrPartitionLimit rejects rows of a new time partition while too many
	// older ones are still unflushed (see memory.ErrVersionCollision):
	// flushes are failing.
	ErrPartitionLimit = errors.New("too many unflushed partitions")
	// ErrUnknownRef: a series ref this head did not hand out.
	ErrUnknownRef     = errors.New("unknown series ref")
	ErrOutOfOrder     = storage.ErrOutOfOrderSample
	ErrOutOfBounds    = storage.ErrOutOfBounds
	ErrTooOld         = storage.ErrTooOldSample
	ErrDuplicateValue = storage.ErrDuplicateSampleForTimestamp
)

// LabelError names the label that made a label set invalid.
type LabelError struct {
	Labels labels.Labels
	Name   string // the offending label name, if any
	Reason string
}

func (e *LabelError) Error() string {
	if e.Name != "" {
		return fmt.Sprintf("invalid labels %s: label %q: %s", e.Labels, e.Name, e.Reason)
	}
	return fmt.Sprintf("invalid labels %s: %s", e.Labels, e.Reason)
}

func (e *LabelError) Unwrap() error { return ErrInvalidLabels }

// ValidateLabels checks a label set with Prometheus' rules: not empty,
// names valid (Prometheus 3 accepts any non-empty UTF-8 name) and unique,
// values valid UTF-8, no empty values (an empty value means the label is
// absent).
func ValidateLabels(lset labels.Labels) error {
	if lset.IsEmpty() {
		return ErrEmptyLabels
	}
	var err error
	prev := ""
	first := true
	lset.Range(func(l labels.Label) {
		if err != nil {
			return
		}
		switch {
		case !first && l.Name == prev:
			err = &LabelError{Labels: lset, Name: l.Name, Reason: "duplicate label name"}
		case !first && l.Name < prev:
			err = &LabelError{Labels: lset, Name: l.Name, Reason: "labels not sorted"}
		case !model.UTF8Validation.IsValidLabelName(l.Name):
			err = &LabelError{Labels: lset, Name: l.Name, Reason: "invalid label name"}
		case l.Value == "":
			err = &LabelError{Labels: lset, Name: l.Name, Reason: "empty label value"}
		case !utf8.ValidString(l.Value):
			err = &LabelError{Labels: lset, Name: l.Name, Reason: "label value is not valid UTF-8"}
		}
		prev, first = l.Name, false
	})
	return err
}

// Rejection is one sample the head did not store, and why.
type Rejection struct {
	Labels labels.Labels
	T      int64
	Err    error
}

// AppendError reports the samples of a commit that were rejected. Every
// other sample of the commit was stored.
type AppendError struct {
	Accepted int
	Rejected int
	ByReason map[string]int
	Examples []Rejection // at most maxExamples
	// Indexes are the positions of the rejected samples among the
	// Appender's Append calls since the last Commit or Rollback.
	Indexes []int
}

// RejectedSamples returns the append-order positions of the rejected
// samples.
func (e *AppendError) RejectedSamples() []int { return e.Indexes }

const maxExamples = 10

func (e *AppendError) add(idx int, l labels.Labels, t int64, err error) {
	e.Rejected++
	e.Indexes = append(e.Indexes, idx)
	if e.ByReason == nil {
		e.ByReason = map[string]int{}
	}
	e.ByReason[err.Error()]++
	if len(e.Examples) < maxExamples {
		e.Examples = append(e.Examples, Rejection{Labels: l, T: t, Err: err})
	}
}

func (e *AppendError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d samples stored, %d rejected", e.Accepted, e.Rejected)
	for _, r := range e.Examples {
		fmt.Fprintf(&b, "; %s @%d: %v", r.Labels, r.T, r.Err)
	}
	return b.String()
}

// Is lets errors.Is match the reason of the first rejection, so a caller
// can tell e.g. an out-of-bounds commit from a duplicate.
func (e *AppendError) Is(target error) bool {
	for _, r := range e.Examples {
		if errors.Is(r.Err, target) {
			return true
		}
	}
	return false
}
