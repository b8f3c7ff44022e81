package server

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aerie-db/aerie/internal/server/servertest"
)

// TestBucketConfig: `aerie: storage: bucket: {}` opens the filesystem
// bucket at <data.dir>/bucket as the engine's remote tier, its metrics
// are served, and a bad bucket configuration stops the server with an
// error naming the section. With no storage section the tier is on, on
// the same filesystem bucket; `tier: false` turns it off.
func TestBucketConfig(t *testing.T) {
	dir := t.TempDir()
	cfg := writeFile(t, dir, "aerie.yml", "aerie:\n  storage:\n    bucket: {}\n    local_retention: 2h\n    cache_size: 16MiB\n")
	addr := servertest.FreeAddr(t)
	s, srv := serveForTest(t, Options{DataDir: filepath.Join(dir, "data"), HTTPAddr: addr, ConfigFile: cfg, Logger: slog.New(slog.DiscardHandler)})
	st, err := os.Stat(filepath.Join(dir, "data", "bucket"))
	require.NoError(t, err)
	require.True(t, st.IsDir())
	require.Equal(t, int64(2*3600_000), s.cfg.Aerie.EngineOptions().LocalRetention)
	_, body := get(t, srv.URL+"/metrics")
	for _, m := range []string{"aerie_bucket_data_gets_total", "aerie_bucket_meta_gets_total", "aerie_bucket_metrics_gets_total", "aerie_bucket_metrics_cache_bytes", "aerie_bucket_query_needed_bytes_total", "aerie_bucket_blocks", "aerie_bucket_upload_lag_seconds", "aerie_bucket_requests_total"} {
		require.Contains(t, body, m)
	}
	require.NotContains(t, body, `aerie_cache_slabs{cache="chunks"}`, "no chunk cache in front of the filesystem bucket by default")
	srv.Stop()

	// chunk_cache: true puts one in front of it anyway
	writeFile(t, dir, "aerie.yml", "aerie:\n  storage:\n    bucket: {}\n    chunk_cache: true\n    chunk_cache_size: 8MiB\n")
	s, err = New(Options{DataDir: filepath.Join(dir, "data"), HTTPAddr: addr, ConfigFile: cfg, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	require.NotNil(t, s.chunks)
	st, err = os.Stat(filepath.Join(dir, "data", "cache", "chunks.cache"))
	require.NoError(t, err)
	require.Equal(t, int64(8<<20), st.Size())
	s.shutdown()

	writeFile(t, dir, "aerie.yml", "aerie:\n  storage:\n    bucket: {type: NOPE}\n")
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
		writeFile(t, dir, "aerie.yml", tc.config)
		s, err := New(Options{DataDir: d, HTTPAddr: servertest.FreeAddr(t), ConfigFile: cfg, Logger: slog.New(slog.DiscardHandler)})
		require.NoError(t, err)
		_, err = os.Stat(filepath.Join(d, "bucket"))
		require.Equal(t, tc.tier, err == nil, "%q: %v", tc.config, err)
		require.Equal(t, tc.tier, s.bkt != nil, "%q", tc.config)
		s.shutdown()
	}
}
