package tsdb

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/stretchr/testify/require"
)

func TestDeleteHonouredEverywhere(t *testing.T) {
	opts := &Options{FlushCheckInterval: -1, PartitionRange: 3600_000}
	db, dir := openDir(t, opts)
	fillDB(t, db, 0, 480) // 2 h of 5 series
	require.NoError(t, db.Delete(context.Background(), 600_000, 1_200_000, labels.MustNewMatcher(labels.MatchEqual, "s", "a")))
	require.NoError(t, db.Delete(context.Background(), math.MinInt64, math.MaxInt64, labels.MustNewMatcher(labels.MatchEqual, "s", "b")))
	check := func(stage string) {
		got := query(t, db, math.MinInt64, math.MaxInt64, labels.MustNewMatcher(labels.MatchEqual, "__name__", "m"))
		require.Len(t, got, 4, "%s: series b is wholly deleted", stage)
		a := got[labels.FromStrings("__name__", "m", "job", "j", "s", "a").String()]
		require.Len(t, a, 480-41, stage)
		for _, s := range a {
			require.False(t, s.t >= 600_000 && s.t <= 1_200_000, "%s: deleted sample at %d", stage, s.t)
		}
		require.Len(t, got[labels.FromStrings("__name__", "m", "job", "j", "s", "c").String()], 480, stage)
	}
	check("head")
	reopen(t, &db, dir, opts)
	check("reopened")
	require.NoError(t, db.FlushHead())
	check("blocks")
	require.NoError(t, db.Close())

	// A torn last record (an interrupted Delete) is dropped, not fatal.
	path := filepath.Join(dir, tombstonesFilename)
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.Write([]byte{40, 1, 2})
	require.NoError(t, err)
	require.NoError(t, f.Close())
	db, err = Open(dir, opts)
	require.NoError(t, err)
	defer db.Close()
	check("torn tail")
}

func FuzzTombstoneRecord(f *testing.F) {
	f.Add(appendTombstone(nil, labels.FromStrings("__name__", "m", "a", "b"), []Interval{{1, 2}, {-5, 9}}))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		lset, ivs, err := decodeTombstone(b)
		if err != nil {
			return
		}
		again, ivs2, err := decodeTombstone(appendTombstone(nil, lset, ivs))
		require.NoError(t, err)
		require.True(t, labels.Equal(lset, again))
		require.Equal(t, ivs, ivs2)
	})
}
