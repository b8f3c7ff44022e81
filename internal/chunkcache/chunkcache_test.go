package chunkcache

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/aerie-db/aerie/internal/bucket"
	"github.com/aerie-db/aerie/internal/cache"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// memStore is an object store in memory that counts range GETs.
type memStore struct {
	mu      sync.Mutex
	objects map[string][]byte
	gets    int
	bytes   int64
}

func (m *memStore) Upload(_ context.Context, name string, data []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.objects[name] = bytes.Clone(data)
	return nil
}

func (m *memStore) Get(_ context.Context, name string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.objects[name]
	if !ok {
		return nil, fmt.Errorf("%s: not found", name)
	}
	return bytes.Clone(b), nil
}

func (m *memStore) Exists(_ context.Context, name string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.objects[name]
	return ok, nil
}

func (m *memStore) Iter(context.Context, string, func(string) error, bool) error { return nil }

func (m *memStore) GetRange(_ context.Context, name string, off, length int64) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.objects[name]
	if !ok || off+length > int64(len(b)) {
		return nil, fmt.Errorf("%s [%d, +%d): out of range", name, off, length)
	}
	m.gets++
	m.bytes += length
	return bytes.Clone(b[off : off+length]), nil
}

func (m *memStore) Delete(_ context.Context, name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.objects, name)
	return nil
}

var _ bucket.RangeStore = (*Store)(nil)

func openCache(t *testing.T, path string, size int64) *cache.Cache {
	t.Helper()
	c, err := cache.Open(cache.Options{Path: path, Size: size, NoDirectIO: true, KeepCoveredPoints: true})
	require.NoError(t, err)
	return c
}

// TestRandomRanges: random GETs of random objects through the cache
// return the objects' bytes; repeated ones stop reaching the store.
func TestRandomRanges(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	st := &memStore{objects: map[string][]byte{}}
	for i := range 8 {
		b := make([]byte, 100_000+rng.IntN(400_000))
		for j := range b {
			b[j] = byte(rng.IntN(256))
		}
		st.objects[fmt.Sprintf("blocks/%d/data/%06d", i, i)] = b
	}
	names := make([]string, 0, len(st.objects))
	for n := range st.objects {
		names = append(names, n)
	}
	path := filepath.Join(t.TempDir(), "chunks")
	c := openCache(t, path, 16<<20)
	s := New(st, c)
	ctx := context.Background()
	check := func(rounds int) {
		for range rounds {
			name := names[rng.IntN(len(names))]
			obj := st.objects[name]
			off := rng.Int64N(int64(len(obj)))
			n := 1 + rng.Int64N(min(int64(len(obj))-off, 200_000))
			got, err := s.GetRange(ctx, name, off, n)
			require.NoError(t, err)
			require.True(t, bytes.Equal(obj[off:off+n], got), "%s [%d, +%d)", name, off, n)
		}
	}
	check(2000)
	gets := st.gets
	check(500)
	require.Less(t, st.gets-gets, 250, "most GETs of a warm cache are hits")

	// a clean restart keeps the pages
	require.NoError(t, c.Close())
	c = openCache(t, path, 16<<20)
	defer c.Close()
	s = New(st, c)
	gets = st.gets
	check(500)
	require.Less(t, st.gets-gets, 250)

	// Delete drops the object's pages first
	require.NoError(t, s.Delete(ctx, names[0]))
	_, err := s.GetRange(ctx, names[0], 0, 10)
	require.Error(t, err)
	require.NoError(t, st.Upload(ctx, names[0], []byte("a new object under the old name")))
	got, err := s.GetRange(ctx, names[0], 2, 3)
	require.NoError(t, err)
	require.Equal(t, "new", string(got))
}

// TestPartialFetchesTheRest: a GET reaching past a cached range fetches
// only what is not cached.
func TestPartialFetchesTheRest(t *testing.T) {
	st := &memStore{objects: map[string][]byte{"o": bytes.Repeat([]byte("0123456789abcdef"), 1<<16)}} // 1 MiB
	c := cache.Options{Path: filepath.Join(t.TempDir(), "c"), Size: 16 << 20, NoDirectIO: true, PartialMinBytes: -1, KeepCoveredPoints: true}
	cc, err := cache.Open(c)
	require.NoError(t, err)
	defer cc.Close()
	s := New(st, cc)
	ctx := context.Background()
	_, err = s.GetRange(ctx, "o", 0, 600_000)
	require.NoError(t, err)
	st.bytes = 0
	got, err := s.GetRange(ctx, "o", 100_000, 700_000)
	require.NoError(t, err)
	require.Equal(t, st.objects["o"][100_000:800_000], got)
	require.Equal(t, int64(200_000), st.bytes, "only the bytes not cached")
}
