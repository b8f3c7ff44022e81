package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/alecthomas/units"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"

	"github.com/aerie-db/aerie/internal/cache"
	"github.com/aerie-db/aerie/internal/cacheserver"
	"github.com/aerie-db/aerie/internal/listen"
)

type cacheOptions struct {
	path          string
	size          byteSize
	slabSize      byteSize
	httpAddr      string
	memcachedAddr string
}

func newCacheCmd() *cobra.Command {
	o := cacheOptions{size: 256 << 20, slabSize: 1 << 20}
	var logLevel string
	cmd := &cobra.Command{
		Use:   "cache",
		Short: "Run a standalone time-series cache (TSCache) for clients of any database, over HTTP and memcached's protocol",
		Long: `cache serves a TSCache slab cache in one file: clients store a query's
result for a time range under the query's key and get it back, or its head
or tail (a partial hit), for any range later. HTTP: PUT/GET/DELETE
/cache/{key}?start=&end=, GET /stats and /metrics; memcached's text
protocol with item keys <key>:<start>:<end>. docs/cache-api.md describes
both. SIGTERM or SIGINT close the cache cleanly (its index is saved; a
cache that was not closed starts empty).`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var lvl slog.Level
			if err := lvl.UnmarshalText([]byte(logLevel)); err != nil {
				return err
			}
			log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lvl}))
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			s, err := startCache(o, log)
			if err != nil {
				return err
			}
			log.Info("cache serving", "path", o.path, "size", int64(o.size), "http", s.httpAddr(), "memcached", s.memcachedAddr())
			<-ctx.Done()
			log.Info("cache shutting down")
			return s.close()
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.path, "cache.path", "./data/cache/aerie.cache", "cache file (created if missing; its directory too)")
	f.Var(&o.size, "cache.size", "cache file size in bytes, or with a unit: 256MiB, 4GiB")
	f.Var(&o.slabSize, "cache.slab-size", "slab size, a multiple of 4KiB from 64KiB to 64MiB")
	f.StringVar(&o.httpAddr, "http.addr", "127.0.0.1:11080", "HTTP address (the cache API, /stats and /metrics)")
	f.StringVar(&o.memcachedAddr, "memcached.addr", "127.0.0.1:11211", "memcached text protocol address (empty: off)")
	f.StringVar(&logLevel, "log.level", "info", "debug, info, warn or error")
	return cmd
}

// byteSize is a flag of bytes: a plain number or one with a unit (256MiB).
type byteSize int64

func (b *byteSize) String() string { return units.Base2Bytes(*b).String() }
func (b *byteSize) Type() string   { return "bytes" }

func (b *byteSize) Set(s string) error {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		var u units.Base2Bytes
		if u, err = units.ParseBase2Bytes(s); err != nil {
			return fmt.Errorf("%q: want bytes, as a number or with a unit such as 256MiB", s)
		}
		n = int64(u)
	}
	if n < 0 {
		return fmt.Errorf("%q is negative", s)
	}
	*b = byteSize(n)
	return nil
}

// cacheServer is a running `aerie cache`: the cache and its front ends.
type cacheServer struct {
	c      *cache.Cache
	httpLn net.Listener
	http   *http.Server
	httpWG chan struct{} // closed when Serve returned
	mc     *cacheserver.MemcachedServer
	log    *slog.Logger
}

// startCache opens the cache and starts serving it.
func startCache(o cacheOptions, log *slog.Logger) (_ *cacheServer, err error) {
	if err := os.MkdirAll(filepath.Dir(o.path), 0o755); err != nil {
		return nil, fmt.Errorf("cache directory: %w", err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	c, err := cache.Open(cache.Options{
		Path: o.path, Size: int64(o.size), SlabSize: int(o.slabSize),
		Logger: log, Registerer: reg, Name: "server",
	})
	if err != nil {
		return nil, err
	}
	s := &cacheServer{c: c, log: log, httpWG: make(chan struct{})}
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	if o.memcachedAddr != "" {
		m, err := listen.NewMetrics("aerie", "cache_memcached", reg)
		if err != nil {
			return nil, err
		}
		if s.mc, err = cacheserver.ListenMemcached(o.memcachedAddr, c, cacheserver.MemcachedOptions{Metrics: m, Logger: log}); err != nil {
			return nil, err
		}
	}
	if s.httpLn, err = net.Listen("tcp", o.httpAddr); err != nil {
		return nil, fmt.Errorf("listen http %s: %w", o.httpAddr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	mux.Handle("/", cacheserver.NewHandler(c, cacheserver.Options{Logger: log}))
	s.http = &http.Server{Handler: mux, ReadHeaderTimeout: 30 * time.Second, IdleTimeout: 2 * time.Minute}
	go func() {
		defer close(s.httpWG)
		if err := s.http.Serve(s.httpLn); !errors.Is(err, http.ErrServerClosed) {
			log.Error("http server failed", "err", err)
		}
	}()
	return s, nil
}

func (s *cacheServer) httpAddr() string {
	if s.httpLn == nil {
		return ""
	}
	return s.httpLn.Addr().String()
}

func (s *cacheServer) memcachedAddr() string {
	if s.mc == nil {
		return ""
	}
	return s.mc.Addr().String()
}

// close stops the front ends (letting requests under way finish, for up
// to 30 s) and then closes the cache, which saves its index.
func (s *cacheServer) close() error {
	var errs []error
	if s.http != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		errs = append(errs, s.http.Shutdown(ctx))
		cancel()
		<-s.httpWG
	} else if s.httpLn != nil {
		errs = append(errs, s.httpLn.Close())
	}
	if s.mc != nil {
		errs = append(errs, s.mc.Close())
	}
	errs = append(errs, s.c.Close())
	return errors.Join(errs...)
}
