package bucket

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/stretchr/testify/require"
	"github.com/thanos-io/objstore"

	"github.com/aerie-db/aerie/internal/block"
	"github.com/aerie-db/aerie/internal/checksum"
	"github.com/aerie-db/aerie/internal/index"
	"github.com/aerie-db/aerie/internal/tsdb"
)

// memStore is a Store over objstore's in-memory bucket. failAfter, if
// positive, fails every upload after that many (a crash mid-upload);
// corrupt, if set, flips a byte of the objects it names as they are read.
type memStore struct {
	b         *objstore.InMemBucket
	uploads   int
	failAfter int
	corrupt   func(name string) bool
}

func newMemStore() *memStore { return &memStore{b: objstore.NewInMemBucket()} }

var errCrash = errors.New("crashed")

func (m *memStore) Upload(ctx context.Context, name string, data []byte) error {
	if m.failAfter > 0 && m.uploads >= m.failAfter {
		return errCrash
	}
	m.uploads++
	return m.b.Upload(ctx, name, bytes.NewReader(data))
}

func (m *memStore) Get(ctx context.Context, name string) ([]byte, error) {
	rc, err := m.b.Get(ctx, name)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err == nil && m.corrupt != nil && m.corrupt(name) && len(b) > 10 {
		b = bytes.Clone(b)
		b[len(b)/2] ^= 0x40
	}
	return b, err
}

func (m *memStore) Delete(ctx context.Context, name string) error {
	return m.b.Delete(ctx, name)
}

func (m *memStore) Exists(ctx context.Context, name string) (bool, error) {
	return m.b.Exists(ctx, name)
}

func (m *memStore) Iter(ctx context.Context, dir string, f func(string) error, recursive bool) error {
	var opts []objstore.IterOption
	if recursive {
		opts = append(opts, objstore.WithRecursiveIter())
	}
	return m.b.Iter(ctx, dir, f, opts...)
}

func (m *memStore) names() []string {
	var out []string
	for name := range m.b.Objects() {
		out = append(out, name)
	}
	return out
}

// localBlocks writes two jobs' targets over 3 h into a DB with 1 h
// partitions, flushes it, and returns its block directories and its
// TagDict.
func localBlocks(t *testing.T) ([]string, *index.TagDict) {
	t.Helper()
	dir := t.TempDir()
	db, err := tsdb.Open(dir, &tsdb.Options{FlushCheckInterval: -1, PartitionRange: 3600_000})
	require.NoError(t, err)
	for i := int64(0); i < 3*360; i++ {
		app := db.RowAppender()
		for _, job := range []string{"node", "app"} {
			for host := range 4 {
				for m := range 5 {
					l := labels.FromStrings("__name__", fmt.Sprintf("metric_%d", m), "job", job, "instance", fmt.Sprintf("host-%d", host))
					// Sevenths are not decimals: the block codec stores them
					// as XOR (~7 B a sample), so a block's data spans several
					// 4 KiB objects whatever the decimal codec achieves.
					v := float64(i*int64(m+host)+int64((i*7919+int64(m*31+host))%997)) / 7
					require.NoError(t, app.Append(l, i*10_000, v))
				}
			}
		}
		require.NoError(t, app.Commit())
	}
	dirs, dict := flushBlocks(t, db, dir)
	require.NotEmpty(t, dirs)
	return dirs, dict
}

// uploadedBlocks uploads the blocks of localBlocks to a new memStore in
// objects of 4 KiB; it returns the store, the block directories, their
// TagDict and the blocks' ULIDs in the order of the directories.
func uploadedBlocks(t *testing.T) (st *memStore, dirs []string, dict *index.TagDict, ulids []string) {
	t.Helper()
	dirs, dict = localBlocks(t)
	st = newMemStore()
	u := NewUploader(st, dict, 4096)
	for _, dir := range dirs {
		res, err := u.UploadBlock(context.Background(), dir)
		require.NoError(t, err)
		ulids = append(ulids, res.ULID)
	}
	return st, dirs, dict, ulids
}

// flushBlocks flushes db's head, closes db, and returns its block
// directories and its TagDict (closed in t's cleanup); dir is db's data
// directory.
func flushBlocks(t *testing.T, db *tsdb.DB, dir string) ([]string, *index.TagDict) {
	t.Helper()
	require.NoError(t, db.FlushHead())
	require.NoError(t, db.Close())
	entries, err := os.ReadDir(filepath.Join(dir, "blocks"))
	require.NoError(t, err)
	var dirs []string
	for _, e := range entries {
		if e.IsDir() && !strings.HasSuffix(e.Name(), ".tmp") {
			dirs = append(dirs, filepath.Join(dir, "blocks", e.Name()))
		}
	}
	dict, err := index.OpenTagDict(filepath.Join(dir, "tagdict"))
	require.NoError(t, err)
	t.Cleanup(func() { dict.Close() })
	return dirs, dict
}

// TestUploadBlock: every block uploads as data objects, TagDict segments
// and a metadata object that describe it exactly: each group extent is
// found, byte for byte, where the metadata says; a second upload writes
// nothing; the TagDict rebuilt from the bucket names every label.
func TestUploadBlock(t *testing.T) {
	dirs, dict := localBlocks(t)
	ctx := context.Background()
	st := newMemStore()
	u := NewUploader(st, dict, 4096) // small objects: several per block
	for _, dir := range dirs {
		res, err := u.UploadBlock(ctx, dir)
		require.NoError(t, err)
		require.False(t, res.Already)
		require.Greater(t, res.Objects, 1)

		r, err := block.Open(dir, dict, block.ReaderOptions{})
		require.NoError(t, err)
		mb, err := st.Get(ctx, MetaObjectName(res.ULID))
		require.NoError(t, err)
		m, err := ParseBlockMeta(MetaObjectName(res.ULID), mb)
		require.NoError(t, err)
		local, err := os.ReadFile(filepath.Join(dir, block.IndexFilename))
		require.NoError(t, err)
		// The index without its metrics section, which is the metrics
		// object's.
		head, sec, err := block.SplitIndex(local)
		require.NoError(t, err)
		require.Equal(t, head, m.Index)
		mo, err := st.Get(ctx, MetricsObjectName(res.ULID))
		require.NoError(t, err)
		got, _, err := ParseMetricsObject(MetricsObjectName(res.ULID), mo, m.Metrics, int64(len(sec)), nil)
		require.NoError(t, err)
		require.Equal(t, sec, got)
		data, err := os.ReadFile(filepath.Join(dir, block.DataFilename))
		require.NoError(t, err)
		objs := map[int][]byte{}
		for n, info := range m.Objects {
			b, err := st.Get(ctx, DataObjectName(res.ULID, n))
			require.NoError(t, err)
			require.NoError(t, CheckDataObject(DataObjectName(res.ULID, n), b, info))
			objs[n] = b
		}
		exts := r.Extents()
		require.Len(t, m.Groups, len(exts))
		for i, e := range exts {
			g := m.Groups[i]
			require.Equal(t, data[e.Off:e.Off+e.Len], objs[g.Object][g.Off:g.Off+g.Len], "group %d", i)
			require.Equal(t, e.CRC, g.CRC)
			// Each part, the timestamp column first, has a CRC per
			// window; the metadata holds no timestamps (version 4).
			require.Nil(t, g.Timestamps)
			require.Len(t, g.Windows, len(e.Series)+1)
			at := g.Off
			for j, n := range e.Parts {
				col := objs[g.Object][at : at+n]
				require.Len(t, g.Windows[j], (len(col)+m.WindowSize-1)/m.WindowSize)
				for w, crc := range g.Windows[j] {
					require.Equal(t, checksum.CRC32C(col[w*m.WindowSize:min((w+1)*m.WindowSize, len(col))]), crc, "group %d part %d window %d", i, j, w)
				}
				at += n
			}
			require.Equal(t, g.Off+g.Len, at)
		}
		// Related groups share objects: one job's extents are contiguous
		// in object order.
		jobOf := func(i int) string { return r.SeriesLabels(exts[i].Series[0]).Get("job") }
		var order []string
		for n := range m.Objects {
			for i, g := range m.Groups {
				if g.Object == n && (len(order) == 0 || order[len(order)-1] != jobOf(i)) {
					order = append(order, jobOf(i))
				}
			}
		}
		require.LessOrEqual(t, len(order), 2+len(m.Objects), "jobs interleaved across objects: %v", order)
		require.NoError(t, r.Close())

		again, err := u.UploadBlock(ctx, dir)
		require.NoError(t, err)
		require.True(t, again.Already)
	}
	rebuilt, err := LoadTagDict(ctx, st)
	require.NoError(t, err)
	require.Equal(t, dict.Synced(), rebuilt.Len())
	for code := range dict.Synced() {
		n1, v1, _ := dict.Pair(uint32(code))
		n2, v2, _ := rebuilt.Pair(uint32(code))
		require.Equal(t, [2]string{n1, v1}, [2]string{n2, v2})
	}
}

// TestUploadCutShort: an upload that stops after any number of objects
// leaves no metadata object (the block is not visible), and the next
// upload completes it; a read-back that differs fails the upload naming
// the object.
func TestUploadCutShort(t *testing.T) {
	dirs, dict := localBlocks(t)
	ctx := context.Background()
	for cut := 1; cut < 12; cut++ {
		st := newMemStore()
		st.failAfter = cut
		u := NewUploader(st, dict, 4096)
		res, err := u.UploadBlock(ctx, dirs[0])
		if err == nil {
			require.LessOrEqual(t, st.uploads, cut, "cut %d", cut)
			continue
		}
		require.ErrorIs(t, err, errCrash)
		for _, name := range st.names() {
			require.False(t, strings.HasSuffix(name, "/"+metaName), "cut %d: %s visible", cut, name)
		}
		st.failAfter = 0
		res, err = NewUploader(st, dict, 4096).UploadBlock(ctx, dirs[0])
		require.NoError(t, err, "cut %d", cut)
		require.False(t, res.Already)
		ok, err := st.Exists(ctx, MetaObjectName(res.ULID))
		require.NoError(t, err)
		require.True(t, ok)
	}

	st := newMemStore()
	st.corrupt = func(name string) bool { return strings.Contains(name, "data-000001") }
	_, err := NewUploader(st, dict, 4096).UploadBlock(ctx, dirs[0])
	var ce *CorruptionError
	require.True(t, errors.As(err, &ce), "%v", err)
	require.Contains(t, ce.Object, "data-000001")
	for _, name := range st.names() {
		require.False(t, strings.HasSuffix(name, "/"+metaName), "%s visible after a bad read-back", name)
	}
}

// TestBlockMetaFormat: the metadata object round-trips in every version
// read, and any damage is a CorruptionError naming the object.
func TestBlockMetaFormat(t *testing.T) {
	for _, v := range []uint8{2, 3, 4} {
		m := &BlockMeta{
			Version: v, Meta: []byte(`{"ulid":"x"}`), Index: []byte("index bytes"), TagDictLen: 42, WindowSize: 512,
			Objects: []ObjectInfo{{Size: 100, CRC: 7}, {Size: 50, CRC: 9}},
			Groups: []Placement{
				{Object: 0, Off: 8, Len: 92, CRC: 1, Timestamps: []byte("ts"), Windows: [][]uint32{{3, 4}, {6}}},
				{Object: 1, Off: 8, Len: 42, CRC: 2, Timestamps: []byte("t"), Windows: [][]uint32{{5}}},
			},
		}
		if v >= 3 {
			m.Metrics = ObjectInfo{Size: 300, CRC: 11}
		}
		if v >= 4 { // no timestamps; windows of the timestamp column first
			m.Groups[0].Timestamps, m.Groups[0].Windows = nil, [][]uint32{{1}, {3, 4}, {6}}
			m.Groups[1].Timestamps, m.Groups[1].Windows = nil, [][]uint32{{2}, {5}}
		}
		b := AppendBlockMeta(nil, m)
		require.Equal(t, v, b[4])
		got, err := ParseBlockMeta("meta", b)
		require.NoError(t, err)
		require.Equal(t, m, got)
		for i := range b {
			bad := bytes.Clone(b)
			bad[i] ^= 0x10
			_, err := ParseBlockMeta("meta", bad)
			var ce *CorruptionError
			require.True(t, errors.As(err, &ce), "version %d byte %d: %v", v, i, err)
			require.Equal(t, "meta", ce.Object)
		}
		for n := range len(b) {
			_, err := ParseBlockMeta("meta", b[:n])
			require.Error(t, err, "cut at %d", n)
		}
		// A placement outside its object is refused even with a good checksum.
		m.Groups[1].Len = 43
		_, err = ParseBlockMeta("meta", AppendBlockMeta(nil, m))
		require.ErrorContains(t, err, "outside object 1")
	}
	// A metrics object too short to be one, and an unknown version.
	m := &BlockMeta{Version: 3, Meta: []byte("{}"), Index: []byte("i"), WindowSize: 512, Metrics: ObjectInfo{Size: 11}}
	_, err := ParseBlockMeta("meta", AppendBlockMeta(nil, m))
	require.ErrorContains(t, err, "metrics object size 11")
	m.Version = 5
	_, err = ParseBlockMeta("meta", AppendBlockMeta(nil, m))
	require.ErrorContains(t, err, "unsupported version 5")
}

// TestMetricsObjectFormat: a metrics object round-trips, compressed when
// that is smaller, stored otherwise; any damage, a truncation, or a size
// or CRC that its metadata object does not give is a CorruptionError
// naming the object.
func TestMetricsObjectFormat(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	noise := make([]byte, 300)
	for i := range noise {
		noise[i] = byte(rng.Uint32())
	}
	for name, tc := range map[string]struct {
		sec   []byte
		codec byte
	}{
		"compressible": {bytes.Repeat([]byte("count min max sum "), 40), metricsZstd},
		"noise":        {noise, metricsStored},
	} {
		b := AppendMetricsObject(nil, tc.sec)
		require.Equal(t, tc.codec, b[5], name)
		info := ObjectInfo{Size: int64(len(b)), CRC: checksum.CRC32C(b[:len(b)-4])}
		got, _, err := ParseMetricsObject("metrics", b, info, int64(len(tc.sec)), nil)
		require.NoError(t, err, name)
		require.Equal(t, tc.sec, got, name)
		var ce *CorruptionError
		for i := range b {
			bad := bytes.Clone(b)
			bad[i] ^= 0x04
			_, _, err := ParseMetricsObject("metrics", bad, info, int64(len(tc.sec)), nil)
			require.True(t, errors.As(err, &ce), "%s byte %d: %v", name, i, err)
			require.Equal(t, "metrics", ce.Object)
		}
		for n := range len(b) {
			_, _, err := ParseMetricsObject("metrics", b[:n], info, int64(len(tc.sec)), nil)
			require.ErrorAs(t, err, &ce, "%s cut at %d", name, n)
		}
		_, _, err = ParseMetricsObject("metrics", b, ObjectInfo{Size: info.Size, CRC: info.CRC + 1}, int64(len(tc.sec)), nil)
		require.ErrorContains(t, err, "checksum mismatch", name)
		_, _, err = ParseMetricsObject("metrics", b, info, int64(len(tc.sec))+1, nil)
		require.ErrorContains(t, err, "index footer says", name)
	}
}

// FuzzParseBlockMeta: no input panics, and what parses re-encodes to the
// same bytes.
func FuzzParseBlockMeta(f *testing.F) {
	f.Add(AppendBlockMeta(nil, &BlockMeta{Meta: []byte("{}"), Index: []byte("i"), TagDictLen: 3, WindowSize: 512, Metrics: ObjectInfo{Size: 20, CRC: 4},
		Objects: []ObjectInfo{{Size: 20, CRC: 1}}, Groups: []Placement{{Object: 0, Off: 8, Len: 12, CRC: 5, Windows: [][]uint32{{6}, {7}}}}}))
	f.Add(AppendBlockMeta(nil, &BlockMeta{Version: 3, Meta: []byte("{}"), Index: []byte("i"), TagDictLen: 3, WindowSize: 512, Metrics: ObjectInfo{Size: 20, CRC: 4},
		Objects: []ObjectInfo{{Size: 20, CRC: 1}}, Groups: []Placement{{Object: 0, Off: 8, Len: 12, CRC: 5, Timestamps: []byte{1, 2}, Windows: [][]uint32{{7}}}}}))
	f.Add(AppendBlockMeta(nil, &BlockMeta{Version: 2, Meta: []byte("{}"), Index: []byte("i"), TagDictLen: 3, WindowSize: 512,
		Objects: []ObjectInfo{{Size: 20, CRC: 1}}, Groups: []Placement{{Object: 0, Off: 8, Len: 12, CRC: 5, Timestamps: []byte{1, 2}, Windows: [][]uint32{{7}}}}}))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseBlockMeta("fuzz", b)
		if err != nil {
			return
		}
		if !bytes.Equal(AppendBlockMeta(nil, m), b) {
			t.Fatalf("re-encoding differs")
		}
	})
}

func TestPackObjects(t *testing.T) {
	for _, tc := range []struct {
		lens []int64
		keys []string
		max  int64
		want [][]int
	}{
		{[]int64{10, 10, 10}, []string{"b", "a", "b"}, 30, [][]int{{1, 0}, {2}}},
		{[]int64{100, 5}, []string{"a", "b"}, 50, [][]int{{0}, {1}}},
		{[]int64{5, 5, 5, 5}, []string{"x", "x", "x", "x"}, 1 << 20, [][]int{{0, 1, 2, 3}}},
		{nil, nil, 10, nil},
	} {
		require.Equal(t, tc.want, packObjects(tc.lens, tc.keys, tc.max), "%v", tc)
	}
}

func (m *memStore) GetRange(ctx context.Context, name string, off, length int64) ([]byte, error) {
	b, err := m.Get(ctx, name)
	if err != nil {
		return nil, err
	}
	if off+length > int64(len(b)) {
		return nil, fmt.Errorf("range past the end")
	}
	return b[off : off+length], nil
}

// readAll returns every sample of every series of a block selection.
func readAll(t *testing.T, r *block.Reader, mint, maxt int64) (map[string][][2]float64, error) {
	t.Helper()
	return selectSamples(r, mint, maxt, labels.MustNewMatcher(labels.MatchRegexp, "__name__", ".+"))
}

// TestRemoteBlocks: a node with nothing but the bucket (its TagDict
// rebuilt from the segments) reads every uploaded block exactly as the
// local copy answers, whole and over a sub-range, with two GETs per group
// extent touched at most (timestamps, then values) and one round trip when
// the range holds whole groups; a damaged data object fails the read
// naming it.
func TestRemoteBlocks(t *testing.T) {
	st, dirs, dict, _ := uploadedBlocks(t)
	ctx := context.Background()
	fresh, err := LoadTagDict(ctx, st)
	require.NoError(t, err)
	ulids, err := ListBlocks(ctx, st)
	require.NoError(t, err)
	require.Len(t, ulids, len(dirs))
	cache := NewExtentCache(1 << 20)
	var stats ReadStats
	for _, dir := range dirs {
		local, err := block.Open(dir, dict, block.ReaderOptions{})
		require.NoError(t, err)
		remote, err := OpenBlock(ctx, st, local.Meta().ULID, fresh, cache, &stats)
		require.NoError(t, err)
		for _, rng := range [][2]int64{{math.MinInt64, math.MaxInt64}, {local.Meta().MinTime + 600_000, local.Meta().MinTime + 1200_000}} {
			want, err := readAll(t, local, rng[0], rng[1])
			require.NoError(t, err)
			rounds := stats.Rounds.Load()
			got, err := readAll(t, remote, rng[0], rng[1])
			require.NoError(t, err)
			require.Equal(t, want, got)
			if rng[0] == math.MinInt64 {
				// Every group whole: values beside timestamps, one round.
				require.Equal(t, int64(1), stats.Rounds.Load()-rounds, "%d groups", len(local.Extents()))
			} else {
				require.LessOrEqual(t, stats.Rounds.Load()-rounds, int64(2), "timestamps of all %d groups in one round, then values", len(local.Extents()))
			}
		}
		// Two rounds a selection at most: the timestamp columns of its
		// groups, then the value columns' ranges; a GET for each at
		// most per group extent touched.
		require.LessOrEqual(t, stats.Gets.Load(), int64(2*len(local.Extents())*len(dirs)))
		require.NoError(t, local.Close())
		require.NoError(t, remote.Close())
	}
	require.Positive(t, stats.CacheHits.Load())
	require.GreaterOrEqual(t, stats.BytesFetched.Load(), stats.BytesNeeded.Load()/int64(len(dirs)*2))

	st.corrupt = func(name string) bool { return strings.Contains(name, "data-") }
	remote, err := OpenBlock(ctx, st, ulids[0], fresh, NewExtentCache(0), nil)
	require.NoError(t, err)
	defer remote.Close()
	_, err = readAll(t, remote, math.MinInt64, math.MaxInt64)
	var ce *CorruptionError
	require.True(t, errors.As(err, &ce), "%v", err)
	require.Contains(t, ce.Object, "/data-")
}
