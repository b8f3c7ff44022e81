package server

import (
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/aerie-db/aerie/internal/cache"
	"github.com/aerie-db/aerie/internal/graphite/archive"
	"github.com/aerie-db/aerie/internal/rendercache"
	"github.com/aerie-db/aerie/internal/resultcache"
)

// openResultsCache puts the results cache (aerie.cache.results) in front
// of the API's query_range: it returns the handler to serve it with, or
// api itself when the cache is off. The cache starts empty at every start
// (its file is removed first): the writes it must hear of to stay exact
// are those of this process only, and an offline `aerie import` could
// have written into any cached range.
func (s *Server) openResultsCache(apiHandler http.Handler) (http.Handler, error) {
	rcfg := s.cfg.Aerie.Cache.Results
	if rcfg.Enabled != nil && !*rcfg.Enabled {
		return apiHandler, nil
	}
	c, err := s.openFreshCache("results", int64(rcfg.Size))
	if err != nil {
		return nil, fmt.Errorf("results cache: %w", err)
	}
	retention := time.Duration(s.cfg.Aerie.Retention).Milliseconds()
	rc, err := resultcache.New(apiHandler, c, resultcache.Options{
		MaxFreshness:  time.Duration(rcfg.MaxFreshness),
		SplitInterval: time.Duration(rcfg.SplitInterval),
		LookbackDelta: s.opts.LookbackDelta,
		MinTime: func() int64 {
			oldest := s.retainer.Oldest()
			if retention > 0 {
				if n := s.db.NewestTime(); n != math.MinInt64 {
					oldest = max(oldest, n-retention)
				}
			}
			return oldest
		},
		Logger:     s.log.With("component", "results_cache"),
		Registerer: s.m.reg,
	})
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("results cache: %w", err)
	}
	s.results = c
	s.late = append(s.late, rc)
	return rc, nil
}

// openRenderCache puts the render cache (aerie.cache.render) between
// Graphite's render API and the rollup levels: it returns the store the
// API reads, the rollup.Manager itself when the cache is off. As the
// results cache, it starts empty at every start.
func (s *Server) openRenderCache() (archive.Store, error) {
	rcfg := s.cfg.Aerie.Cache.Render
	if rcfg.Enabled != nil && !*rcfg.Enabled {
		return s.rollups, nil
	}
	c, err := s.openFreshCache("render", int64(rcfg.Size))
	if err != nil {
		return nil, fmt.Errorf("render cache: %w", err)
	}
	retention := time.Duration(s.cfg.Aerie.Retention).Milliseconds()
	rc, err := rendercache.New(s.rollups, c, rendercache.Options{
		MaxFreshness: time.Duration(rcfg.MaxFreshness),
		MinTime: func() int64 {
			if n := s.db.NewestTime(); retention > 0 && n != math.MinInt64 {
				return n - retention
			}
			return math.MinInt64
		},
		Logger:     s.log.With("component", "render_cache"),
		Registerer: s.m.reg,
	})
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("render cache: %w", err)
	}
	s.render = c
	s.late = append(s.late, rc)
	return rc.Graphite(), nil
}

// openFreshCache opens the slab store of the results or render cache,
// <data.dir>/cache/<name>.cache of size bytes (0: 256 MiB), empty: the
// file and its index are removed first.
func (s *Server) openFreshCache(name string, size int64) (*cache.Cache, error) {
	dir := filepath.Join(s.opts.DataDir, "cache")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, name+".cache")
	for _, p := range []string{path, path + ".index"} {
		if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
			return nil, err
		}
	}
	if size == 0 {
		size = 256 << 20
	}
	return cache.Open(cache.Options{
		Path: path, Size: size, Name: name, Registerer: s.m.reg,
		Logger: s.log.With("component", name+"_cache"),
		// A dashboard's shifted range, a refresh's, is worth its head even
		// when small: the engine's cost is per sample read, not per request.
		PartialMinBytes: -1,
	})
}

// openChunkCache opens the bucket tier's chunk cache (aerie.storage.
// chunk_cache): unlike the results cache it is kept across clean restarts,
// since data objects never change under their names.
func openChunkCache(dataDir string, size int64, log *slog.Logger, reg prometheus.Registerer) (*cache.Cache, error) {
	dir := filepath.Join(dataDir, "cache")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if size == 0 {
		size = 1 << 30
	}
	return cache.Open(cache.Options{
		Path: filepath.Join(dir, "chunks.cache"), Size: size, Name: "chunks", KeepCoveredPoints: true,
		Logger: log.With("component", "chunk_cache"), Registerer: reg,
	})
}
