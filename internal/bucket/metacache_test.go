package bucket

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aerie-db/aerie/internal/block"
)

// TestMetaCache: a tier with a metadata cache writes each metadata object
// it opens to disk; a second tier on the same directory (a restart) opens
// the blocks without reading them from the bucket and answers the same;
// metrics objects read through it are kept too; a damaged file is
// refetched and rewritten; the directory stays within its budget;
// deleting a block drops its files.
func TestMetaCache(t *testing.T) {
	st, dirs, dict, ulids := uploadedBlocks(t)
	ctx := context.Background()
	fresh, err := LoadTagDict(ctx, st)
	require.NoError(t, err)
	cdir := t.TempDir()
	open := func(tr *Tier, i int) *block.Reader {
		t.Helper()
		r, err := tr.Open(ctx, ulids[i], fresh)
		require.NoError(t, err)
		t.Cleanup(func() { r.Close() })
		return r
	}

	mc, err := NewMetaCache(cdir, 1<<30)
	require.NoError(t, err)
	t1 := NewTier(st, 4096, 1<<20)
	t1.SetMetaCache(mc)
	for i := range ulids {
		open(t1, i)
	}
	require.Zero(t, t1.Stats.MetaCacheHits.Load())
	require.Positive(t, mc.Size())

	// A restart: every metadata object from disk, the same answers.
	mc2, err := NewMetaCache(cdir, 1<<30)
	require.NoError(t, err)
	t2 := NewTier(st, 4096, 1<<20)
	t2.SetMetaCache(mc2)
	for i, dir := range dirs {
		r := open(t2, i)
		local, err := block.Open(dir, dict, block.ReaderOptions{})
		require.NoError(t, err)
		want, err := readAll(t, local, math.MinInt64, math.MaxInt64)
		require.NoError(t, err)
		got, err := readAll(t, r, math.MinInt64, math.MaxInt64)
		require.NoError(t, err)
		require.Equal(t, want, got)
		require.NoError(t, local.Close())
	}
	require.EqualValues(t, len(ulids), t2.Stats.MetaCacheHits.Load())

	// Metrics read through the cache are kept on disk too: a restart
	// answers them with the bucket's metrics objects gone; a file that
	// passes its own checks but is not this block's is dropped and the
	// object read from the bucket.
	r := open(t2, 1)
	want, err := r.Metrics(ctx, 0)
	require.NoError(t, err)
	mp := filepath.Join(cdir, ulids[1]+metricsSuffix)
	require.FileExists(t, mp)
	saved, err := st.Get(ctx, MetricsObjectName(ulids[1]))
	require.NoError(t, err)
	require.NoError(t, st.Delete(ctx, MetricsObjectName(ulids[1])))
	tr := NewTier(st, 4096, 1<<20)
	tr.SetMetaCache(mc2)
	got, err := open(tr, 1).Metrics(ctx, 0)
	require.NoError(t, err)
	require.Equal(t, want, got)
	require.NoError(t, st.Upload(ctx, MetricsObjectName(ulids[1]), saved))
	require.NoError(t, os.WriteFile(mp, AppendMetricsObject(nil, []byte("not this block's metrics")), 0o644))
	tr = NewTier(st, 4096, 1<<20)
	tr.SetMetaCache(mc2)
	got, err = open(tr, 1).Metrics(ctx, 0)
	require.NoError(t, err)
	require.Equal(t, want, got)
	fb, err := os.ReadFile(mp)
	require.NoError(t, err)
	require.Equal(t, saved, fb, "the bucket's object cached in its place")

	// A damaged file: refetched from the bucket and rewritten intact.
	p := filepath.Join(cdir, ulids[0]+".meta")
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	b[len(b)/2] ^= 0xff
	require.NoError(t, os.WriteFile(p, b, 0o644))
	t3 := NewTier(st, 4096, 1<<20)
	t3.SetMetaCache(mc2)
	open(t3, 0)
	require.Zero(t, t3.Stats.MetaCacheHits.Load())
	b2, err := os.ReadFile(p)
	require.NoError(t, err)
	_, err = ParseBlockMeta(p, b2)
	require.NoError(t, err)

	// Deleting a block drops its file.
	require.NoError(t, t3.Delete(ctx, ulids[0]))
	require.NoFileExists(t, p)

	// A budget of one file keeps one.
	small, err := NewMetaCache(t.TempDir(), int64(len(b2)))
	require.NoError(t, err)
	t4 := NewTier(st, 4096, 1<<20)
	t4.SetMetaCache(small)
	for i := 1; i < len(ulids); i++ {
		open(t4, i)
	}
	require.LessOrEqual(t, small.Size(), int64(len(b2)))
}
