package head

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestStatusViews: Groups, SeriesGroups and NumGroupPartitions over two
// groups (job and instance), one with two series, across two partitions.
func TestStatusViews(t *testing.T) {
	h := mustNew(t, Options{PartitionRange: 1000})
	app := h.Appender()
	for _, ts := range []int64{100, 200, 1100} {
		require.NoError(t, app.Append(lbl("__name__", "up", "job", "a", "instance", "x"), ts, 1))
		require.NoError(t, app.Append(lbl("__name__", "temp", "job", "a", "instance", "x"), ts, 2))
		require.NoError(t, app.Append(lbl("__name__", "up", "job", "b", "instance", "y"), ts, 3))
	}
	require.NoError(t, app.Commit())

	gs, total := h.Groups(10)
	require.Equal(t, 2, total)
	require.Len(t, gs, 2)
	require.Equal(t, GroupInfo{ID: gs[0].ID, Key: gs[0].Key, Series: 2, Partitions: 2, Rows: 3}, gs[0])
	require.Equal(t, 1, gs[1].Series)
	gs, total = h.Groups(1)
	require.Len(t, gs, 1)
	require.Equal(t, 2, total)
	require.Equal(t, 4, h.NumGroupPartitions(), "two groups, two partitions each")

	sg := h.SeriesGroups(lbl("__name__", "temp", "job", "a", "instance", "x"), 10)
	require.Len(t, sg, 1)
	require.Equal(t, 2, sg[0].Series)
	require.Equal(t, []string{"up", "temp"}, []string{sg[0].Members[0].Get("__name__"), sg[0].Members[1].Get("__name__")}, "slot order")
	sg = h.SeriesGroups(lbl("__name__", "temp", "job", "a", "instance", "x"), 1)
	require.Len(t, sg[0].Members, 1, "members cut at the limit")
	require.Equal(t, 2, sg[0].Series)
	require.Empty(t, h.SeriesGroups(lbl("__name__", "nothing"), 10))
}
