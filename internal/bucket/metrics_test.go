package bucket

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aerie-db/aerie/internal/block"
)

// TestRemoteMetrics: a bucket block opens without its metrics object,
// fetches it once when metrics are first read and then answers from the
// MetricsCache, with the metrics of the local block; with no cache every
// read fetches; a cancelled context and a damaged object fail the read,
// naming the object; Tier.Delete drops the cached section. A version 2
// metadata object (the whole index inside) still opens, and its metrics
// are read without any metrics object.
func TestRemoteMetrics(t *testing.T) {
	st, dir, dict, local := uploadedNoisyBlock(t)
	ctx := context.Background()
	ulid := local.Meta().ULID
	ns := uint32(local.Index().NumSeries())
	want := make([][]block.IntervalMetrics, ns)
	var err error
	for id := range ns {
		want[id], err = local.Metrics(ctx, id)
		require.NoError(t, err)
		require.NotEmpty(t, want[id])
	}
	fresh, err := LoadTagDict(ctx, st)
	require.NoError(t, err)

	tier := NewTier(st, 0, 1<<20)
	r, err := tier.Open(ctx, ulid, fresh)
	require.NoError(t, err)
	require.Zero(t, tier.Stats.MetricsGets.Load(), "opening fetches no metrics")
	for id := range ns {
		got, err := r.Metrics(ctx, id)
		require.NoError(t, err)
		require.Equal(t, want[id], got)
	}
	require.EqualValues(t, 1, tier.Stats.MetricsGets.Load())
	require.EqualValues(t, ns-1, tier.Stats.MetricsCacheHits.Load())
	require.Positive(t, tier.MetricsCache().Size())
	mo, err := st.Get(ctx, MetricsObjectName(ulid))
	require.NoError(t, err)
	require.EqualValues(t, len(mo), tier.Stats.MetricsBytes.Load())
	require.NoError(t, tier.Delete(ctx, ulid))
	require.Zero(t, tier.MetricsCache().Size())
	r.Close()

	// Uploaded again; a tier whose cache keeps nothing fetches every time.
	_, err = NewUploader(st, dict, 0).UploadBlock(ctx, dir)
	require.NoError(t, err)
	tier = NewTier(st, 0, 1<<20)
	tier.SetMetricsCache(NewMetricsCache(0))
	r, err = tier.Open(ctx, ulid, fresh)
	require.NoError(t, err)
	defer r.Close()
	for range 3 {
		got, err := r.Metrics(ctx, 0)
		require.NoError(t, err)
		require.Equal(t, want[0], got)
	}
	require.EqualValues(t, 3, tier.Stats.MetricsGets.Load())

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = r.Metrics(cctx, 0)
	require.ErrorIs(t, err, context.Canceled)

	st.corrupt = func(name string) bool { return name == MetricsObjectName(ulid) }
	_, err = r.Metrics(ctx, 0)
	var ce *CorruptionError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, MetricsObjectName(ulid), ce.Object)
	st.corrupt = nil

	// Version 2: the whole index in the metadata object, no metrics object.
	mb, err := st.Get(ctx, MetaObjectName(ulid))
	require.NoError(t, err)
	m, err := ParseBlockMeta(MetaObjectName(ulid), mb)
	require.NoError(t, err)
	olderMeta(t, st, ulid, m, local.Extents(), 2)
	m.Metrics = ObjectInfo{}
	m.Index, err = os.ReadFile(filepath.Join(dir, block.IndexFilename))
	require.NoError(t, err)
	require.NoError(t, st.Upload(ctx, MetaObjectName(ulid), AppendBlockMeta(nil, m)))
	require.NoError(t, st.Delete(ctx, MetricsObjectName(ulid)))
	tier = NewTier(st, 0, 1<<20)
	r2, err := tier.Open(ctx, ulid, fresh)
	require.NoError(t, err)
	defer r2.Close()
	for id := range ns {
		got, err := r2.Metrics(ctx, id)
		require.NoError(t, err)
		require.Equal(t, want[id], got)
	}
	require.Zero(t, tier.Stats.MetricsGets.Load())
	rep, err := Verify(ctx, st)
	require.NoError(t, err)
	require.Empty(t, rep.Problems)
	require.Zero(t, rep.MetricsObjects)
	// And an upload finds the version 2 object intact: nothing is written.
	res, err := NewUploader(st, dict, 0).UploadBlock(ctx, dir)
	require.NoError(t, err)
	require.True(t, res.Already)
}

// olderMeta rewrites m, block ulid's metadata object as this code writes
// it, as version v (2 or 3) had it: each group's timestamp column copied
// from its data object, window CRCs of its value columns only.
func olderMeta(t *testing.T, st RangeStore, ulid string, m *BlockMeta, exts []block.Extent, v uint8) {
	t.Helper()
	require.Equal(t, MetaObjectVersion, m.Version)
	m.Version = v
	for i := range m.Groups {
		g := &m.Groups[i]
		b, err := st.GetRange(context.Background(), DataObjectName(ulid, g.Object), g.Off, exts[i].Parts[0])
		require.NoError(t, err)
		g.Timestamps, g.Windows = b, g.Windows[1:]
	}
}

// FuzzParseMetricsObject: no input panics, and what parses is the section
// of the declared length.
func FuzzParseMetricsObject(f *testing.F) {
	f.Add(AppendMetricsObject(nil, []byte("metrics metrics metrics metrics")), int64(31))
	f.Add(AppendMetricsObject(nil, []byte{1, 2, 3}), int64(3))
	f.Fuzz(func(t *testing.T, b []byte, size int64) {
		info := ObjectInfo{Size: int64(len(b))}
		if len(b) >= 4 {
			info.CRC = uint32(b[len(b)-4])<<24 | uint32(b[len(b)-3])<<16 | uint32(b[len(b)-2])<<8 | uint32(b[len(b)-1])
		}
		sec, _, err := ParseMetricsObject("fuzz", b, info, size, nil)
		if err == nil && int64(len(sec)) != size {
			t.Fatalf("%d bytes for a section of %d", len(sec), size)
		}
	})
}
