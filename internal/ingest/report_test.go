package ingest

import (
	"fmt"
	"io"
	"testing"

	"github.com/prometheus/prometheus/storage"
	"github.com/stretchr/testify/require"

	"github.com/aerie-db/aerie/internal/head"
	"github.com/aerie-db/aerie/internal/tsdb"
)

// ParseMessage reads back what a report says: the counts, the reasons in
// order, and every example with its line and the timestamp it names.
func TestParseMessage(t *testing.T) {
	rep := newReport(3)
	rep.stored = 7
	rep.reject(ReasonParse, 1, 4, func() string { return fmt.Sprintf("%s: values[0]: invalid value", where(4, 12, 300)) })
	rep.reject(ReasonDuplicate, 1, 2, func() string {
		return fmt.Sprintf("%s: %s @%d: %v (earlier in this body)", where(2, 0, 0), `{__name__="m"}`, -5, storage.ErrDuplicateSampleForTimestamp)
	})
	rep.reject(ReasonParse, 2, 9, func() string { return where(9, 0, 0) + ": bad; worse" })
	rep.reject(ReasonTooOld, 1, 11, func() string { return "not shown" })
	msg := rep.message()
	got, ok := ParseMessage(msg)
	require.True(t, ok, msg)
	require.Equal(t, Message{
		Stored:   7,
		Rejected: 5,
		Reasons:  []ReasonCount{{ReasonParse, 3}, {ReasonDuplicate, 1}, {ReasonTooOld, 1}},
		Examples: []Example{
			{Line: 2, Text: `{__name__="m"} @-5: duplicate sample for timestamp (earlier in this body)`, T: -5, HasT: true},
			{Line: 4, Text: "values[0]: invalid value"},
			{Line: 9, Text: "bad; worse"},
		},
	}, got, msg)

	_, ok = ParseMessage("storage unavailable: disk full; " + msg)
	require.False(t, ok)
	got, ok = ParseMessage("stored 3 samples, rejected 0")
	require.True(t, ok)
	require.Equal(t, Message{Stored: 3}, got)
}

func TestAppendReason(t *testing.T) {
	for err, want := range map[error]string{
		tsdb.ErrTooOldForRetention:                  ReasonRetention,
		tsdb.ErrTooFarInFuture:                      ReasonFuture,
		storage.ErrOutOfBounds:                      ReasonOutOfBounds,
		storage.ErrTooOldSample:                     ReasonTooOld,
		storage.ErrOutOfOrderSample:                 ReasonOutOfOrder,
		storage.ErrDuplicateSampleForTimestamp:      ReasonDuplicate,
		head.ErrInvalidLabels:                       ReasonInvalidLabels,
		head.ErrSeriesLimit:                         ReasonSeriesLimit,
		fmt.Errorf("x: %w", storage.ErrOutOfBounds): ReasonOutOfBounds,
		head.ErrGroupTooWide:                        ReasonOther,
		io.EOF:                                      ReasonOther,
	} {
		require.Equal(t, want, AppendReason(err), err.Error())
	}
}

func TestExampleReason(t *testing.T) {
	for _, tc := range []struct {
		text    string
		reasons []string
		want    string
	}{
		{"anything", []string{"too_old"}, "too_old"},
		{`{a="1"} @5: out of bounds`, []string{"too_old", "out_of_bounds"}, "out_of_bounds"},
		{`{a="1"} @5: too old sample`, []string{"out_of_bounds", "too_old"}, "too_old"},
		{"other", []string{"duplicate", "too_old"}, "duplicate"},
		{"other", nil, "other"},
		// The retention errors wrap out of bounds: the closer reason wins.
		{"x @5: " + tsdb.ErrTooOldForRetention.Error(), []string{"out_of_bounds", "too_old_for_retention"}, "too_old_for_retention"},
	} {
		require.Equal(t, tc.want, ExampleReason(tc.text, tc.reasons), tc.text)
	}
}
