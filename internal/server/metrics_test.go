package server

import (
	"fmt"
	"io"
	"testing"

	"github.com/prometheus/prometheus/storage"
	"github.com/stretchr/testify/require"

	"github.com/aerie-db/aerie/internal/head"
	"github.com/aerie-db/aerie/internal/tsdb"
)

func TestReason(t *testing.T) {
	for err, want := range map[error]string{
		tsdb.ErrTooOldForRetention:                  "too_old_for_retention",
		tsdb.ErrTooFarInFuture:                      "too_far_in_future",
		storage.ErrOutOfBounds:                      "out_of_bounds",
		storage.ErrTooOldSample:                     "too_old",
		storage.ErrOutOfOrderSample:                 "out_of_order",
		storage.ErrDuplicateSampleForTimestamp:      "duplicate",
		head.ErrInvalidLabels:                       "invalid_labels",
		head.ErrSeriesLimit:                         "series_limit",
		head.ErrGroupTooWide:                        "group_too_wide",
		head.ErrPartitionLimit:                      "partition_limit",
		tsdb.ErrNativeHistogram:                     "native_histogram",
		fmt.Errorf("x: %w", head.ErrPartitionLimit): "partition_limit",
		io.EOF: "other",
	} {
		require.Equal(t, want, reason(err), err.Error())
	}
}
