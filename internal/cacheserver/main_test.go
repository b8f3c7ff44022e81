package cacheserver

import (
	"path/filepath"
	"testing"

	"go.uber.org/goleak"

	"github.com/aerie-db/aerie/internal/cache"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// openCache opens a small cache in a temporary directory that returns
// every partial hit, closed at the end of the test.
func openCache(tb testing.TB, dir string) *cache.Cache {
	tb.Helper()
	c, err := cache.Open(cache.Options{
		Path:            filepath.Join(dir, "test.cache"),
		Size:            8 << 20,
		SlabSize:        64 << 10,
		PartialMinBytes: -1,
	})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := c.Close(); err != nil {
			tb.Error(err)
		}
	})
	return c
}
