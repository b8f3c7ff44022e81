package bucket

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestInspectVerify: a clean bucket verifies with no problem and every
// object and extent counted; flipping a byte of one data object is found,
// naming it, and so is a damaged metrics object; Inspect counts every
// group extent once.
func TestInspectVerify(t *testing.T) {
	st, dirs, _, _ := uploadedBlocks(t)
	ctx := context.Background()
	extents := 0
	blocks, err := Inspect(ctx, st)
	require.NoError(t, err)
	require.Len(t, blocks, len(dirs))
	objects := 0
	for _, b := range blocks {
		n := 0
		for _, o := range b.Objects {
			n += o.Groups
			require.Positive(t, o.Bytes)
		}
		require.Equal(t, b.Groups, n)
		extents += n
		objects += len(b.Objects)
		require.Positive(t, b.Samples)
	}
	rep, err := Verify(ctx, st)
	require.NoError(t, err)
	require.Empty(t, rep.Problems)
	require.Equal(t, len(dirs), rep.Blocks)
	require.Equal(t, objects, rep.Objects)
	require.Equal(t, len(dirs), rep.MetricsObjects)
	require.Equal(t, extents, rep.Extents)
	require.Equal(t, 1, rep.Segments)

	st.corrupt = func(name string) bool { return strings.HasSuffix(name, "data-000000") }
	rep, err = Verify(ctx, st)
	require.NoError(t, err)
	require.NotEmpty(t, rep.Problems)
	var ce *CorruptionError
	require.True(t, errors.As(rep.Problems[0], &ce), "%v", rep.Problems[0])
	require.Contains(t, ce.Object, "data-000000")

	// A damaged metrics object is found too, naming it.
	st.corrupt = func(name string) bool { return strings.HasSuffix(name, "/"+metricsName) }
	rep, err = Verify(ctx, st)
	require.NoError(t, err)
	require.Len(t, rep.Problems, len(dirs))
	require.True(t, errors.As(rep.Problems[0], &ce), "%v", rep.Problems[0])
	require.True(t, strings.HasSuffix(ce.Object, "/"+metricsName), ce.Object)
}
