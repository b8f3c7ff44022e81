package bucket

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/stretchr/testify/require"

	"github.com/aerie-db/aerie/internal/block"
	"github.com/aerie-db/aerie/internal/index"
	"github.com/aerie-db/aerie/internal/tsdb"
)

// noisyBlock writes one 6-hour block of 40 series of one job (one group),
// with values that compress poorly, so that each column spans many
// windows.
func noisyBlock(t *testing.T) (string, *index.TagDict) {
	t.Helper()
	dir := t.TempDir()
	db, err := tsdb.Open(dir, &tsdb.Options{FlushCheckInterval: -1, PartitionRange: 6 * 3600_000})
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := int64(0); i < 6*360; i++ {
		app := db.RowAppender()
		for s := range 40 {
			l := labels.FromStrings("__name__", fmt.Sprintf("m_%02d", s), "job", "node", "instance", "host-0")
			require.NoError(t, app.Append(l, i*10_000, rng.Float64()*1000))
		}
		require.NoError(t, app.Commit())
	}
	dirs, dict := flushBlocks(t, db, dir)
	require.Len(t, dirs, 1)
	return dirs[0], dict
}

// uploadedNoisyBlock uploads noisyBlock's block to a memory store and
// opens the local copy (closed in t's cleanup).
func uploadedNoisyBlock(t *testing.T) (*memStore, string, *index.TagDict, *block.Reader) {
	t.Helper()
	dir, dict := noisyBlock(t)
	st := newMemStore()
	_, err := NewUploader(st, dict, 0).UploadBlock(context.Background(), dir)
	require.NoError(t, err)
	local, err := block.Open(dir, dict, block.ReaderOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { local.Close() })
	return st, dir, dict, local
}

func selectSamples(r *block.Reader, mint, maxt int64, ms ...*labels.Matcher) (map[string][][2]float64, error) {
	sel, err := r.Select(mint, maxt, ms...)
	if err != nil {
		return nil, err
	}
	out := map[string][][2]float64{}
	for i := range sel.Series {
		s := &sel.Series[i]
		it := s.Iterator(nil)
		for it.Next() != chunkenc.ValNone {
			ts, v := it.At()
			out[s.Labels.String()] = append(out[s.Labels.String()], [2]float64{float64(ts), v})
		}
		if err := it.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// TestRemoteReadPlan: a selection fetches only the windows of the column
// ranges it reads, in one round of GETs (one per non-adjacent range),
// with at most a window's slack at each end, after a round for the
// timestamp columns it has not cached; a repeated query is served from
// the cache; a damaged window fails the query naming the object and the
// window's offset.
func TestRemoteReadPlan(t *testing.T) {
	st, _, _, local := uploadedNoisyBlock(t)
	ctx := context.Background()
	ulid := local.Meta().ULID
	fresh, err := LoadTagDict(ctx, st)
	require.NoError(t, err)
	cache := NewExtentCache(64 << 20)
	var stats ReadStats
	remote, err := OpenBlock(ctx, st, ulid, fresh, cache, &stats)
	require.NoError(t, err)
	defer remote.Close()
	require.EqualValues(t, 1, stats.MetaGets.Load())
	require.Len(t, remote.Extents(), 1)
	ext := remote.Extents()[0]
	require.Greater(t, ext.Parts[1], int64(8*DefaultWindowSize), "columns span many windows")

	t0 := local.Meta().MinTime
	for _, tc := range []struct {
		name       string
		mint, maxt int64
		ms         []*labels.Matcher
		gets       int64 // expected GETs on a cold cache
		rounds     int64
	}{
		// The group's timestamp column first, in a round of its own.
		{"one series, 30 min", t0 + 3600_000, t0 + 5400_000, []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "__name__", "m_07")}, 2, 2},
		{"two series, 1 h", t0 + 7200_000, t0 + 10800_000, []*labels.Matcher{labels.MustNewMatcher(labels.MatchRegexp, "__name__", "m_0[39]")}, 2, 1},
		// Whole columns of neighbours are adjacent: one coalesced GET.
		{"three neighbours, all", math.MinInt64, math.MaxInt64, []*labels.Matcher{labels.MustNewMatcher(labels.MatchRegexp, "__name__", "m_1[234]")}, 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gets, rounds, fetched, needed := stats.Gets.Load(), stats.Rounds.Load(), stats.BytesFetched.Load(), stats.BytesNeeded.Load()
			want, err := selectSamples(local, tc.mint, tc.maxt, tc.ms...)
			require.NoError(t, err)
			require.NotEmpty(t, want)
			got, err := selectSamples(remote, tc.mint, tc.maxt, tc.ms...)
			require.NoError(t, err)
			require.Equal(t, want, got)
			require.Equal(t, tc.gets, stats.Gets.Load()-gets)
			require.Equal(t, tc.rounds, stats.Rounds.Load()-rounds, "round trips")
			f, n := stats.BytesFetched.Load()-fetched, stats.BytesNeeded.Load()-needed
			require.Positive(t, n)
			require.LessOrEqual(t, f, n+int64(2*DefaultWindowSize*len(want)), "at most a window of slack at each end of each range")
			require.GreaterOrEqual(t, f, n)

			// Again: everything from the cache.
			gets, hits := stats.Gets.Load(), stats.CacheHits.Load()
			got, err = selectSamples(remote, tc.mint, tc.maxt, tc.ms...)
			require.NoError(t, err)
			require.Equal(t, want, got)
			require.Equal(t, gets, stats.Gets.Load())
			require.Greater(t, stats.CacheHits.Load(), hits)
		})
	}

	// A flipped byte in a value column fails the read of its window.
	st.corrupt = func(name string) bool { return strings.Contains(name, "data-") }
	remote2, err := OpenBlock(ctx, st, ulid, fresh, NewExtentCache(0), nil)
	require.NoError(t, err)
	defer remote2.Close()
	_, err = selectSamples(remote2, math.MinInt64, math.MaxInt64, labels.MustNewMatcher(labels.MatchRegexp, "__name__", ".+"))
	var ce *CorruptionError
	require.True(t, errors.As(err, &ce), "%v", err)
	require.Equal(t, DataObjectName(ulid, 0), ce.Object)
	require.Contains(t, ce.Error(), "window")
	size, err := st.b.Attributes(ctx, ce.Object)
	require.NoError(t, err)
	flipped := size.Size / 2
	require.True(t, ce.Offset <= flipped && flipped < ce.Offset+DefaultWindowSize, "window at %d holds the flipped byte %d", ce.Offset, flipped)
}

// TestCoalesce: runs of one object join a GET over small gaps, or over
// larger ones while all its gaps stay within 1/CoalesceWaste of its
// runs; other objects never join.
func TestCoalesce(t *testing.T) {
	groups := []Placement{{Object: 0}, {Object: 1}}
	run := func(g int, off, n int64) winRun { return winRun{g: g, off: off, len: n} }
	for _, tc := range []struct {
		name string
		runs []winRun
		want [][2]int64 // off, len of each GET
	}{
		{"adjacent", []winRun{run(0, 100, 50), run(0, 150, 50)}, [][2]int64{{100, 100}}},
		{"small gap", []winRun{run(0, 100, 10), run(0, 110+CoalesceGap, 10)}, [][2]int64{{100, CoalesceGap + 20}}},
		{"large gap, little data", []winRun{run(0, 0, 10), run(0, 10+CoalesceGap+1, 10)}, [][2]int64{{0, 10}, {10 + CoalesceGap + 1, 10}}},
		// 40 KiB of runs around a 10 KiB gap: 10 ≤ 40/4.
		{"large gap, much data", []winRun{run(0, 0, 20<<10), run(0, 30<<10, 20<<10)}, [][2]int64{{0, 50 << 10}}},
		// A second 10 KiB gap would make 20 KiB of gaps for 41 KiB of runs.
		{"gaps add up", []winRun{run(0, 0, 20<<10), run(0, 30<<10, 20<<10), run(0, 60<<10, 1<<10)}, [][2]int64{{0, 50 << 10}, {60 << 10, 1 << 10}}},
		{"other object", []winRun{run(0, 100, 50), run(1, 150, 50)}, [][2]int64{{100, 50}, {150, 50}}},
		{"unsorted", []winRun{run(0, 150, 50), run(0, 100, 50)}, [][2]int64{{100, 100}}},
	} {
		var got [][2]int64
		for _, g := range coalesce(tc.runs, groups) {
			got = append(got, [2]int64{g.off, g.len})
		}
		require.Equal(t, tc.want, got, tc.name)
	}
}

// TestMetaVersion3: a block whose metadata object is version 3 (each
// timestamp column copied inside) still reads exactly as the local copy,
// its timestamps from the metadata: a cold selection takes one round of
// GETs, for its values only; Verify finds nothing wrong.
func TestMetaVersion3(t *testing.T) {
	st, _, _, local := uploadedNoisyBlock(t)
	ctx := context.Background()
	ulid := local.Meta().ULID
	mb, err := st.Get(ctx, MetaObjectName(ulid))
	require.NoError(t, err)
	m, err := ParseBlockMeta(MetaObjectName(ulid), mb)
	require.NoError(t, err)
	olderMeta(t, st, ulid, m, local.Extents(), 3)
	require.NoError(t, st.Upload(ctx, MetaObjectName(ulid), AppendBlockMeta(nil, m)))
	fresh, err := LoadTagDict(ctx, st)
	require.NoError(t, err)
	var stats ReadStats
	remote, err := OpenBlock(ctx, st, ulid, fresh, NewExtentCache(64<<20), &stats)
	require.NoError(t, err)
	defer remote.Close()
	t0 := local.Meta().MinTime
	for _, rng := range [][2]int64{{t0 + 3600_000, t0 + 5400_000}, {math.MinInt64, math.MaxInt64}} {
		rounds := stats.Rounds.Load()
		ms := labels.MustNewMatcher(labels.MatchRegexp, "__name__", "m_0[37]")
		want, err := selectSamples(local, rng[0], rng[1], ms)
		require.NoError(t, err)
		got, err := selectSamples(remote, rng[0], rng[1], ms)
		require.NoError(t, err)
		require.Equal(t, want, got)
		require.EqualValues(t, 1, stats.Rounds.Load()-rounds)
	}
	rep, err := Verify(ctx, st)
	require.NoError(t, err)
	require.Empty(t, rep.Problems)
}
