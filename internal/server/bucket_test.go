package server

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestBucketConfig: `aerie: storage: bucket: {}` opens the filesystem
// bucket at <data.dir>/bucket as the engine's remote tier, its metrics
// are served, and a bad bucket configuration stops the server with an
// error naming the section. With no storage section the tier is on, on
// the same filesystem bucket; `tier: false` turns it off.
func TestBucketConfig(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "aerie.yml")
	require.NoError(t, os.WriteFile(cfg, []byte("aerie:\n  storage:\n    bucket: {}\n    local_retention: 2h\n    cache_size: 16MiB\n"), 0o644))
	addr := freeAddr(t)
	s, err := New(Options{DataDir: filepath.Join(dir, "data"), HTTPAddr: addr, ConfigFile: cfg, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	require.NoError(t, s.Listen())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	require.Eventually(t, func() bool { c, _ := get(t, "http://"+addr+"/-/ready"); return c == 200 }, 10*time.Second, 50*time.Millisecond)
	st, err := os.Stat(filepath.Join(dir, "data", "bucket"))
	require.NoError(t, err)
	require.True(t, st.IsDir())
	require.Equal(t, int64(2*3600_000), s.cfg.Aerie.EngineOptions().LocalRetention)
	_, body := get(t, "http://"+addr+"/metrics")
	for _, m := range []string{"aerie_bucket_data_gets_total", "aerie_bucket_meta_gets_total", "aerie_bucket_query_needed_bytes_total", "aerie_bucket_blocks", "aerie_bucket_upload_lag_seconds", "aerie_bucket_requests_total"} {
		require.Contains(t, body, m)
	}
	require.NotContains(t, body, `aerie_cache_slabs{cache="chunks"}`, "no chunk cache in front of the filesystem bucket by default")
	cancel()
	require.NoError(t, <-done)

	// chunk_cache: true puts one in front of it anyway
	require.NoError(t, os.WriteFile(cfg, []byte("aerie:\n  storage:\n    bucket: {}\n    chunk_cache: true\n    chunk_cache_size: 8MiB\n"), 0o644))
	s, err = New(Options{DataDir: filepath.Join(dir, "data"), HTTPAddr: addr, ConfigFile: cfg, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	require.NotNil(t, s.chunks)
	st, err = os.Stat(filepath.Join(dir, "data", "cache", "chunks.cache"))
	require.NoError(t, err)
	require.Equal(t, int64(8<<20), st.Size())
	s.shutdown()

	require.NoError(t, os.WriteFile(cfg, []byte("aerie:\n  storage:\n    bucket: {type: NOPE}\n"), 0o644))
	_, err = New(Options{DataDir: filepath.Join(dir, "data2"), HTTPAddr: addr, ConfigFile: cfg, Logger: slog.New(slog.DiscardHandler)})
	require.ErrorContains(t, err, "NOPE")

	for _, tc := range []struct {
		config string
		tier   bool
	}{
		{"", true},
		{"aerie:\n  storage:\n    tier: false\n", false},
	} {
		d := t.TempDir()
		require.NoError(t, os.WriteFile(cfg, []byte(tc.config), 0o644))
		s, err := New(Options{DataDir: d, HTTPAddr: freeAddr(t), ConfigFile: cfg, Logger: slog.New(slog.DiscardHandler)})
		require.NoError(t, err)
		_, err = os.Stat(filepath.Join(d, "bucket"))
		require.Equal(t, tc.tier, err == nil, "%q: %v", tc.config, err)
		require.Equal(t, tc.tier, s.bkt != nil, "%q", tc.config)
		s.shutdown()
	}
}
