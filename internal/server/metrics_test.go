package server

import (
	"fmt"
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aerie-db/aerie/internal/head"
	"github.com/aerie-db/aerie/internal/tsdb"
)

// TestReason: the engine limits reason adds to ingest.AppendReason's.
func TestReason(t *testing.T) {
	for err, want := range map[error]string{
		head.ErrGroupTooWide:                        "group_too_wide",
		head.ErrPartitionLimit:                      "partition_limit",
		tsdb.ErrNativeHistogram:                     "native_histogram",
		fmt.Errorf("x: %w", head.ErrPartitionLimit): "partition_limit",
		tsdb.ErrTooOldForRetention:                  "too_old_for_retention", // ingest's
		io.EOF:                                      "other",
	} {
		require.Equal(t, want, reason(err), err.Error())
	}
}
