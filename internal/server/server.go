package server

import (
	"context"
	"errors"
	"fmt"
	"github.com/aerie-db/aerie/internal/bucket"
	"github.com/aerie-db/aerie/internal/cache"
	"github.com/aerie-db/aerie/internal/chunkcache"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/discovery"
	_ "github.com/prometheus/prometheus/discovery/file" // file_sd_configs
	_ "github.com/prometheus/prometheus/discovery/http" // http_sd_configs
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/rules"
	"github.com/prometheus/prometheus/scrape"
	"github.com/prometheus/prometheus/storage"
	v1 "github.com/prometheus/prometheus/web/api/v1"

	"github.com/aerie-db/aerie/internal/api"
	"github.com/aerie-db/aerie/internal/carbon"
	"github.com/aerie-db/aerie/internal/graphite"
	"github.com/aerie-db/aerie/internal/ingest"
	"github.com/aerie-db/aerie/internal/pgarchive"
	"github.com/aerie-db/aerie/internal/positive"
	"github.com/aerie-db/aerie/internal/queryeval"
	"github.com/aerie-db/aerie/internal/rollup"
	"github.com/aerie-db/aerie/internal/sensor"
	"github.com/aerie-db/aerie/internal/statsd"
	"github.com/aerie-db/aerie/internal/tsdb"
	"github.com/aerie-db/aerie/internal/ui"
	"github.com/aerie-db/aerie/internal/vmformat"
)

// Options are the command-line settings of `aerie serve`.
type Options struct {
	DataDir    string // --data.dir
	HTTPAddr   string // --http.addr
	ConfigFile string // --config.file
	MaxBody    int64  // --http.max-body
	// MaxInflightWrites bounds concurrent write requests; beyond it they
	// get 503 + Retry-After (--http.max-inflight-writes).
	MaxInflightWrites int

	QueryTimeout         time.Duration
	MaxSamples           int
	MaxConcurrentQueries int
	LookbackDelta        time.Duration
	// NoDelayedNameRemoval turns PromQL's delayed __name__ removal off
	// (--query.delayed-name-removal=false); see api.Options.
	NoDelayedNameRemoval bool
	// QueryEngine is "aerie" (range functions over arrays, internal/
	// queryeval) or "prometheus" (Prometheus' engine alone) [aerie];
	// --query.engine.
	QueryEngine string

	// Runtime are the Go runtime settings `aerie serve` applies
	// (runtime.go).
	Runtime RuntimeOptions

	Logger *slog.Logger
	Flags  map[string]string // every flag, for /api/v1/status/flags
}

// Server is a running Aerie.
type Server struct {
	opts    Options
	log     *slog.Logger
	cfg     *Config
	db      *tsdb.DB
	bkt     *bucket.Bucket // the object-storage tier, if configured
	m       *metrics
	engine  *promql.Engine
	qstats  queryeval.Stats // Aerie's evaluator's counts, API and rules together
	scrape  *scrape.Manager
	disc    *discovery.Manager
	rules   *rules.Manager
	httpSrv *http.Server
	ln      net.Listener
	rollups *rollup.Manager     // rollup levels (aerie.rollup)
	archive *pgarchive.Archiver // PostgreSQL archive (aerie.archive.postgres), or nil
	carbon  *carbon.Receiver
	statsd  *statsd.Server
	results *cache.Cache // the results cache's store, or nil
	render  *cache.Cache // the render cache's store, or nil
	// late are the caches that hear of late writes and deletions
	// (tsdb.DB.SetLateObserver), set once both caches are open.
	late   tsdb.LateObservers
	chunks *cache.Cache // the bucket tier's chunk cache, or nil
	// retainer is the rollups' raw-data retention.
	retainer *rollup.Retainer
	ready    atomic.Bool

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// New loads the configuration, opens (and replays) the data directory and
// builds every component; Run starts them.
func New(opts Options) (*Server, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	opts.MaxBody = positive.Or(opts.MaxBody, 64<<20)
	opts.MaxInflightWrites = positive.Or(opts.MaxInflightWrites, 256)
	s := &Server{opts: opts, log: opts.Logger, m: newMetrics()}
	cfg, err := LoadConfig(opts.ConfigFile, s.log)
	if err != nil {
		return nil, err
	}
	for _, w := range cfg.Warnings {
		s.log.Warn("configuration", "warning", w)
	}
	s.cfg = cfg
	if _, err := applyRuntime(opts.Runtime, cfg.Prom.Runtime.GoGC, s.log); err != nil {
		return nil, err
	}
	eo := cfg.Aerie.EngineOptions()
	eo.Logger = s.log
	eo.OnWALFsync = func(d time.Duration) { s.m.walFsync.Observe(d.Seconds()) }
	eo.OnFlush = func(d time.Duration) { s.m.flushes.Observe(d.Seconds()) }
	eo.OnCompaction = func(d time.Duration) { s.m.compactions.Observe(d.Seconds()) }
	if st := cfg.Aerie.Storage; st.Tier == nil || *st.Tier {
		bc := bucket.Config{}
		if st.Bucket != nil {
			bc = *st.Bucket
		}
		s.bkt, err = bucket.Open(bc, opts.DataDir, s.log, s.m.reg)
		if err != nil {
			return nil, fmt.Errorf("aerie section: storage.bucket: %w", err)
		}
		cache := int64(cfg.Aerie.Storage.CacheSize)
		cache = positive.Or(cache, 256<<20)
		remote := strings.ToUpper(string(bc.Type))
		remote = strings.TrimPrefix(remote, "FILESYSTEM") // "": the local filesystem bucket
		var store bucket.RangeStore = s.bkt
		if on := st.ChunkCache; (on == nil && remote != "") || (on != nil && *on) {
			cc, err := openChunkCache(opts.DataDir, int64(st.ChunkCacheSize), s.log, s.m.reg)
			if err != nil {
				s.bkt.Close()
				return nil, fmt.Errorf("aerie section: storage.chunk_cache: %w", err)
			}
			s.chunks = cc
			store = chunkcache.New(s.bkt, cc)
		}
		tier := bucket.NewTier(store, 0, cache)
		tier.SetMetricsCache(bucket.NewMetricsCache(positive.Or(int64(st.MetricsCacheSize), bucket.DefaultMetricsCacheSize)))
		if p := strings.ToUpper(string(bc.Type)); p != "" && p != "FILESYSTEM" {
			size := int64(st.MetaCacheSize)
			size = positive.Or(size, 1<<30)
			mc, err := bucket.NewMetaCache(filepath.Join(opts.DataDir, "bucket-meta"), size)
			if err != nil {
				s.closeTier()
				return nil, fmt.Errorf("aerie section: storage.meta_cache_size: %w", err)
			}
			tier.SetMetaCache(mc)
		}
		eo.Remote = tier
	}
	retainer := rollup.NewRetainer(cfg.Rules, nil)
	s.retainer = retainer
	if len(cfg.Rules.Schemas) > 0 {
		eo.SeriesRetention = retainer.Cutoff
		eo.OnBackfill = retainer.Backfilled
	}
	start := time.Now()
	s.db, err = tsdb.Open(opts.DataDir, &eo)
	if err != nil {
		s.closeTier()
		return nil, fmt.Errorf("open data directory %s: %w", opts.DataDir, err)
	}
	s.log.Info("data directory open", "dir", opts.DataDir, "took", time.Since(start), "head_series", s.db.Head().NumSeries(), "blocks", len(s.db.Blocks()))
	s.m.registerEngine(s.db)
	s.m.registerQueries(&s.qstats)
	if t, ok := eo.Remote.(*bucket.Tier); ok {
		s.m.registerTier(s.db, t)
	}
	ro := cfg.Aerie.EngineOptions()
	ro.Remote = nil
	s.rollups, err = rollup.Open(filepath.Join(opts.DataDir, "rollup"), s.db, cfg.Rules, retainer, rollup.Options{
		Engine:     ro,
		Interval:   time.Duration(cfg.Aerie.Rollup.Interval),
		Logger:     s.log.With("component", "rollup"),
		Registerer: s.m.reg,
	})
	if err != nil {
		s.db.Close()
		s.closeTier()
		return nil, fmt.Errorf("rollup levels: %w", err)
	}
	if pg := cfg.Aerie.Archive.Postgres; pg != nil {
		s.archive, err = pgarchive.New(pgarchive.Config{
			DSN: pg.DSN, SegmentWidth: pg.SegmentWidth, MaxFlushesPerSecond: pg.MaxFlushesPerSecond, QueueSize: pg.QueueSize,
		}, archiveSource{s.rollups}, s.log.With("component", "pgarchive"), s.m.reg)
		if err != nil {
			s.rollups.Close()
			s.db.Close()
			s.closeTier()
			return nil, fmt.Errorf("aerie section: archive.postgres: %w", err)
		}
	}
	if err := s.build(); err != nil {
		s.rollups.Close()
		s.db.Close()
		s.closeTier()
		return nil, err
	}
	return s, nil
}

func (s *Server) build() error {
	reg := s.m.reg
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	sdMetrics, err := discovery.CreateAndRegisterSDMetrics(prefixed(reg))
	if err != nil {
		return err
	}
	s.disc = discovery.NewManager(ctx, s.log.With("component", "discovery"), prefixed(reg), sdMetrics)
	if s.disc == nil {
		return errors.New("discovery manager")
	}
	s.scrape, err = scrape.NewManager(&scrape.Options{}, s.log.With("component", "scrape"), nil,
		countingAppendable{Appendable: s.db, m: s.m, protocol: "scrape"}, nil, prefixed(reg))
	if err != nil {
		return err
	}
	handler, engine, err := api.New(s.db, api.Options{
		QueryTimeout:         s.opts.QueryTimeout,
		MaxSamples:           s.opts.MaxSamples,
		MaxConcurrentQueries: s.opts.MaxConcurrentQueries,
		LookbackDelta:        s.opts.LookbackDelta,
		NoDelayedNameRemoval: s.opts.NoDelayedNameRemoval,
		QueryEngine:          s.opts.QueryEngine,
		Flags:                s.opts.Flags,
		Config:               func() config.Config { return *s.cfg.Prom },
		Logger:               s.log.With("component", "api"),
		Registerer:           prefixed(reg),
		Gatherer:             reg,
		Ready:                s.ready.Load,
		Rules:                func(context.Context) v1.RulesRetriever { return s.rules },
		Targets:              func(context.Context) v1.TargetRetriever { return s.scrape },
		ScrapePools:          func(context.Context) v1.ScrapePoolsRetriever { return s.scrape },
		EnableAdmin:          true,
		Appendable:           countingAppendable{Appendable: s.db, m: s.m, protocol: "remote_write"},
		StorageRetention:     retentionString(s.cfg.Aerie.Retention),
		Rollups: func(name string) (storage.Queryable, bool) {
			if l := s.rollups.Level(name); l != nil {
				return l.DB, true
			}
			return nil, false
		},
		Levels:           levelNames(s.rollups),
		GlobalURLOptions: globalURLOptions(s.opts.HTTPAddr),
		QueryStats:       &s.qstats,
	})
	if err != nil {
		return err
	}
	s.engine = engine
	s.rules = rules.NewManager(&rules.ManagerOptions{
		Appendable:  countingAppendable{Appendable: s.db, m: s.m, protocol: "rules"},
		Queryable:   s.db,
		QueryFunc:   rules.EngineQueryFunc(api.QueryEngine(engine, api.Options{NoDelayedNameRemoval: s.opts.NoDelayedNameRemoval, LookbackDelta: s.opts.LookbackDelta, QueryEngine: s.opts.QueryEngine, MaxSamples: s.opts.MaxSamples, MetricInterval: s.db.MetricInterval(), QueryStats: &s.qstats}), s.db),
		NotifyFunc:  func(context.Context, string, ...*rules.Alert) {},
		Context:     ctx,
		ExternalURL: &url.URL{Scheme: "http", Host: s.opts.HTTPAddr},
		Logger:      s.log.With("component", "rules"),
		Registerer:  prefixed(reg),
	})

	queryRange, err := s.openResultsCache(handler)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	writes := newWriteLimiter(s.opts.MaxInflightWrites)
	mux.Handle("/api/v1/", s.m.instrument("api", limitBody(compressAnswers(handler), s.opts.MaxBody)))
	mux.Handle("/api/v1/query_range", s.m.instrument("api", limitBody(compressAnswers(queryRange), s.opts.MaxBody)))
	iopts := ingest.Options{MaxBodyBytes: s.opts.MaxBody, Logger: s.log.With("component", "ingest"), Metrics: s.m.ingestHook}
	// Remote write 1.0 through Aerie's decoder, 2.0 through Prometheus'
	// handler (in the API), which also refuses what the former cannot read.
	rw := ingest.NewRemoteWriteHandler(countingAppendable{Appendable: s.db, m: s.m, protocol: "remote_write"}, iopts, handler)
	mux.Handle("/api/v1/write", s.m.instrument("remote_write", writes.wrap(limitBody(rw, s.opts.MaxBody))))
	influx := ingest.NewInfluxHandler(s.db, iopts)
	mux.Handle("/write", s.m.instrument("influx_write", writes.wrap(influx)))
	mux.Handle("/api/v2/write", s.m.instrument("influx_v2_write", writes.wrap(influx)))
	mux.Handle("/api/v1/import/prometheus", s.m.instrument("import_prometheus",
		writes.wrap(ingest.NewPromImportHandler(s.db, iopts))))
	mux.Handle("/api/v1/import", s.m.instrument("import", writes.wrap(ingest.NewVMImportHandler(s.db, iopts, vmformat.Limits{}))))
	mux.Handle("/api/v1/import/csv", s.m.instrument("import_csv", writes.wrap(ingest.NewCSVImportHandler(s.db, iopts, vmformat.Limits{}))))
	eopts := api.ExportOptions{Logger: s.log.With("component", "export")}
	mux.Handle("/api/v1/export", s.m.instrument("export", api.NewExportHandler(s.db, eopts)))
	mux.Handle("/api/v1/export/csv", s.m.instrument("export_csv", api.NewCSVExportHandler(s.db, eopts)))
	svc, err := sensor.New(s.db, sensor.Options{
		Dir:            s.opts.DataDir,
		MaxUploadBytes: int64(s.cfg.Aerie.Sensor.MaxUploadSize),
		MaxSeries:      s.cfg.Aerie.Sensor.MaxSeries,
		Logger:         s.log.With("component", "sensor"),
		Registerer:     reg,
	})
	if err != nil {
		return fmt.Errorf("sensor API: %w", err)
	}
	svc.Register(mux, func(name string, h http.Handler) http.Handler {
		if name == "sensor_upload" {
			h = writes.wrap(h)
		}
		return s.m.instrument(name, h)
	})
	// graphite-web's API under its own paths; /metrics stays Prometheus'
	// (graphite-web's bare /metrics is its find).
	gmux := http.NewServeMux()
	gstore, err := s.openRenderCache()
	if err != nil {
		return err
	}
	if len(s.late) > 0 {
		s.db.SetLateObserver(s.late)
	}
	graphite.New(gstore, graphite.Options{}).Register(gmux, func(name string, h http.Handler) http.Handler {
		return s.m.instrument(name, limitBody(h, s.opts.MaxBody))
	})
	for _, p := range []string{"/render", "/metrics/", "/functions", "/functions/", "/version", "/tags", "/tags/"} {
		mux.Handle(p, gmux)
	}
	mux.Handle("/metrics", s.m.instrument("metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg})))
	mux.HandleFunc("/-/healthy", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "Aerie is Healthy.")
	})
	mux.HandleFunc("/-/ready", func(w http.ResponseWriter, _ *http.Request) {
		if !s.ready.Load() {
			http.Error(w, "Service Unavailable", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "Aerie is Ready.")
	})
	// The web UI on its own routes (/, /query, …, /assets/) only: every
	// other path keeps the mux's 404 and 405.
	if err := ui.Register(mux, func(h http.Handler) http.Handler { return s.m.instrument("ui", h) }); err != nil {
		return err
	}
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	s.httpSrv = &http.Server{Handler: mux, ReadHeaderTimeout: 30 * time.Second}
	return nil
}

// limitBody makes bodies over max fail with 413 inside the handlers that
// read them (Prometheus' remote write handler reports the read error).
func limitBody(h http.Handler, max int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > max {
			http.Error(w, fmt.Sprintf("request body of %d bytes exceeds --http.max-body=%d", r.ContentLength, max), http.StatusRequestEntityTooLarge)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, max)
		h.ServeHTTP(w, r)
	})
}

// Listen binds the HTTP address (":0" picks a port; Addr tells which).
func (s *Server) Listen() error {
	ln, err := net.Listen("tcp", s.opts.HTTPAddr)
	if err != nil {
		return err
	}
	s.ln = ln
	return nil
}

// Addr returns the bound address.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Run serves until ctx is done, then shuts down in order (invariant 2).
func (s *Server) Run(ctx context.Context) error {
	if s.ln == nil {
		if err := s.Listen(); err != nil {
			return err
		}
	}
	errc := make(chan error, 4)
	s.wg.Add(3)
	go func() { defer s.wg.Done(); errc <- s.disc.Run() }()
	go func() { defer s.wg.Done(); errc <- s.scrape.Run(s.disc.SyncCh()) }()
	go func() { defer s.wg.Done(); s.rules.Run() }()
	if err := s.applyConfig(); err != nil {
		s.shutdown()
		return err
	}
	s.rollups.Start()
	if s.archive != nil {
		if err := s.archive.Start(); err != nil {
			s.shutdown()
			return fmt.Errorf("archive.postgres: %w", err)
		}
	}
	if err := s.startGraphite(); err != nil {
		s.shutdown()
		return err
	}
	go func() {
		if err := s.httpSrv.Serve(s.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			errc <- err
		}
	}()
	s.ready.Store(true)
	s.log.Info("Aerie is ready", "addr", s.Addr())
	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
		if err != nil {
			s.log.Error("component failed", "err", err)
		}
	}
	s.shutdown()
	return err
}

func (s *Server) applyConfig() error {
	cfg := s.cfg.Prom
	if err := s.scrape.ApplyConfig(cfg); err != nil {
		return fmt.Errorf("scrape config: %w", err)
	}
	sd := map[string]discovery.Configs{}
	scfgs, err := cfg.GetScrapeConfigs()
	if err != nil {
		return err
	}
	for _, sc := range scfgs {
		sd[sc.JobName] = sc.ServiceDiscoveryConfigs
	}
	if err := s.disc.ApplyConfig(sd); err != nil {
		return fmt.Errorf("service discovery: %w", err)
	}
	files, err := ruleFiles(cfg)
	if err != nil {
		return err
	}
	interval := time.Duration(cfg.GlobalConfig.EvaluationInterval)
	if interval == 0 {
		interval = time.Duration(model.Duration(time.Minute))
	}
	if err := s.rules.Update(interval, files, labels.FromMap(nil), "", nil); err != nil {
		return fmt.Errorf("rule files: %w", err)
	}
	return nil
}

func (s *Server) shutdown() {
	s.ready.Store(false)
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.httpSrv.Shutdown(sctx); err != nil {
		s.log.Warn("http shutdown", "err", err)
	}
	s.stopGraphite()
	s.scrape.Stop()
	s.rules.Stop()
	s.cancel() // stops discovery
	s.wg.Wait()
	if err := s.engine.Close(); err != nil {
		s.log.Warn("close query engine", "err", err)
	}
	closeIfOpen(s.log, "postgres archive", s.archive)
	s.db.SetLateObserver(nil)
	closeIfOpen(s.log, "results cache", s.results)
	closeIfOpen(s.log, "render cache", s.render)
	if err := s.rollups.Close(); err != nil {
		s.log.Error("close rollup levels", "err", err)
	}
	if err := s.db.Close(); err != nil {
		s.log.Error("close data directory", "err", err)
	}
	closeIfOpen(s.log, "bucket", s.bkt)
	closeIfOpen(s.log, "chunk cache", s.chunks)
	s.log.Info("Aerie stopped")
}

// closeIfOpen closes c unless it is nil (a part that is off) and logs a
// warning naming what if that fails.
func closeIfOpen[C interface {
	comparable
	Close() error
}](log *slog.Logger, what string, c C) {
	var off C
	if c == off {
		return
	}
	if err := c.Close(); err != nil {
		log.Warn("close "+what, "err", err)
	}
}

func levelNames(m *rollup.Manager) []string {
	var out []string
	for _, l := range m.Levels() {
		out = append(out, l.Name)
	}
	return out
}

func retentionString(d model.Duration) string {
	if d == 0 {
		return "none"
	}
	return d.String()
}

// closeTier closes the bucket and the chunk cache of a server that failed
// to start.
func (s *Server) closeTier() {
	if s.bkt != nil {
		s.bkt.Close()
	}
	if s.chunks != nil {
		s.chunks.Close()
	}
}

// globalURLOptions are what /api/v1/targets needs to turn a scrape URL on
// localhost into one reachable from elsewhere (Prometheus' getGlobalURL):
// the listen address, whose port tells a self-scrape apart, and the host
// to put in its place: the address's own, or the machine's name when it
// listens on every interface, as Prometheus' default external URL does.
// Without ListenAddress, every target's lastError ended in "missing port
// in address".
func globalURLOptions(listen string) v1.GlobalURLOptions {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return v1.GlobalURLOptions{ListenAddress: listen, Host: listen, Scheme: "http"}
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		if name, err := os.Hostname(); err == nil {
			host = name
		} else {
			host = "localhost"
		}
	}
	return v1.GlobalURLOptions{ListenAddress: listen, Host: net.JoinHostPort(host, port), Scheme: "http"}
}
