package tsdb

import (
	"context"
	"math"
	"testing"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/metadata"
	"github.com/prometheus/prometheus/storage"
	"github.com/stretchr/testify/require"
)

func TestStorageAppender(t *testing.T) {
	db, err := Open(t.TempDir(), &Options{FlushCheckInterval: -1, OOOWindow: 60_000, NoBackfill: true})
	require.NoError(t, err)
	defer db.Close()
	l := labels.FromStrings("__name__", "up", "job", "j", "instance", "i")
	app := db.Appender(context.Background())
	for i := int64(0); i < 10; i++ {
		_, err := app.Append(0, l, i*120_000, 1)
		require.NoError(t, err)
	}
	_, err = app.UpdateMetadata(0, l, metadata.Metadata{Type: "gauge", Help: "up"})
	require.NoError(t, err)
	require.NoError(t, app.Commit())

	app = db.Appender(context.Background())
	_, err = app.Append(0, l, 9*120_000, 2)
	require.ErrorIs(t, err, storage.ErrDuplicateSampleForTimestamp, "reported at Append, like Prometheus")
	_, err = app.Append(0, l, 0, 1)
	require.ErrorIs(t, err, storage.ErrTooOldSample, "as Prometheus with an out-of-order window")
	_, err = app.Append(0, l, 9*120_000-30_000, 1)
	require.NoError(t, err, "inside the out-of-order window")
	_, err = app.AppendHistogram(0, l, 2_000_000, &histogram.Histogram{}, nil)
	require.ErrorIs(t, err, ErrNativeHistogram)
	require.NoError(t, app.Commit())

	app = db.Appender(context.Background())
	app.SetOptions(&storage.AppendOptions{DiscardOutOfOrder: true})
	_, err = app.Append(0, l, 9*120_000-20_000, 1)
	require.ErrorIs(t, err, storage.ErrOutOfOrderSample, "the scrape loop discards out-of-order samples")
	require.NoError(t, app.Rollback())

	got := query(t, db, math.MinInt64, math.MaxInt64, labels.MustNewMatcher(labels.MatchEqual, "__name__", "up"))
	require.Len(t, got[l.String()], 11)
	md, ok := db.Metadata("up")
	require.True(t, ok)
	require.Equal(t, "up", md.Help)
}
