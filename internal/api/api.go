// Package api serves the Prometheus HTTP API v1 for Aerie. It is built on
// Prometheus' own implementation (web/api/v1), so every endpoint answers
// with Prometheus' exact JSON shapes, status codes and error format; this
// package only adapts the Aerie engine to the interfaces that
// implementation needs (a SampleAndChunkQueryable, TSDB statistics, empty
// exemplars, empty rule/target/alertmanager retrievers) and wires it the way
// Prometheus' web package does, under the prefix /api/v1.
package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/grafana/regexp"
	remoteapi "github.com/prometheus/client_golang/exp/api/remote"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/route"

	"github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/scrape"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/util/features"
	"github.com/prometheus/prometheus/util/httputil"
	"github.com/prometheus/prometheus/util/notifications"
	v1 "github.com/prometheus/prometheus/web/api/v1"

	"github.com/aerie-db/aerie/internal/positive"
	"github.com/aerie-db/aerie/internal/queryeval"
	"github.com/aerie-db/aerie/internal/tsdb"
)

// Prefix is the path under which the handler serves the API.
const Prefix = "/api/v1"

// Options configure the API. Zero values take the defaults in brackets.
type Options struct {
	QueryTimeout         time.Duration // [2m]
	MaxSamples           int           // [50000000]
	MaxConcurrentQueries int           // [0 = no active query tracker]; > 0 tracks queries in <data dir>/queries.active, as Prometheus does
	LookbackDelta        time.Duration // [5m]

	// NoDelayedNameRemoval turns delayed __name__ removal off [on]. On,
	// functions and operators that drop the metric name (rate,
	// max_over_time, arithmetic, …) drop it at the end of the query
	// instead of at once, so `max by (__name__) (max_over_time({__name__=~
	// "a|b"}[1m]))` groups by name as VictoriaMetrics does, and
	// `max_over_time({__name__=~"a|b"}[1m])` answers instead of failing
	// with "vector cannot contain metrics with the same labelset". Off,
	// answers are Prometheus 3's without its promql-delayed-name-removal
	// feature.
	NoDelayedNameRemoval bool

	// QueryEngine names what evaluates PromQL: "aerie" [default]
	// evaluates aggregated range functions over arrays on every core
	// (internal/queryeval) and the rest through Prometheus' engine;
	// "prometheus" uses Prometheus' engine alone.
	QueryEngine string
	// MetricInterval is the storage's block metric interval (ms), whose
	// whole windows Aerie's evaluator answers from block metrics; New
	// sets it from the DB [block.DefaultMetricInterval].
	MetricInterval int64
	// QueryStats is where Aerie's evaluator counts the queries it plans,
	// the rollups it evaluates and the windows it answers from block
	// metrics (queryeval.Stats; nil: each engine its own).
	QueryStats *queryeval.Stats
	// tracker is the active-query tracker of New's engines (nil: none).
	tracker promql.QueryTracker

	Flags  map[string]string    // /status/flags [empty]
	Config func() config.Config // /status/config and remote read's external labels [config.DefaultConfig]

	Logger     *slog.Logger          // [discard]
	Registerer prometheus.Registerer // [nil: metrics not registered]
	Gatherer   prometheus.Gatherer   // /status/tsdb, /status/runtimeinfo [empty registry]

	// Ready gates every endpoint as Prometheus' web.Handler does: while it
	// returns false, requests get 503 "Service Unavailable" [always ready].
	Ready func() bool

	// Retrievers of the scrape, rules and notifier managers; nil means
	// none: the endpoints answer with empty lists.
	ScrapePools   func(context.Context) v1.ScrapePoolsRetriever
	Targets       func(context.Context) v1.TargetRetriever
	Alertmanagers func(context.Context) v1.AlertmanagerRetriever
	Rules         func(context.Context) v1.RulesRetriever

	// NotificationsGetter and NotificationsSub feed /notifications and
	// /notifications/live [none].
	NotificationsGetter func() []notifications.Notification
	NotificationsSub    func() (<-chan notifications.Notification, func(), bool)

	EnableAdmin bool // admin/tsdb/* endpoints

	// Appendable, if set, receives remote writes instead of the DB (the
	// server counts samples per protocol with it) [the DB].
	Appendable storage.Appendable
	// Rollups, if set, lets queries read a rollup level (internal/rollup)
	// instead of the raw data: a request with `rollup=<level>` (e.g. 1m)
	// on any query or series endpoint reads that level's engine, where
	// each series holds one consolidated point per step. Levels lists the
	// names for the error an unknown one gets.
	Rollups func(level string) (storage.Queryable, bool)
	Levels  []string

	// DisableRemoteWrite turns the /write receiver off [on, accepting
	// remote write 1.0 and 2.0 messages].
	DisableRemoteWrite bool
	// EnableOTLPWrite turns the /otlp/v1/metrics receiver on [off].
	EnableOTLPWrite bool

	RemoteReadSampleLimit      int // [50000000]
	RemoteReadConcurrencyLimit int // [10]
	RemoteReadMaxBytesInFrame  int // [1048576]

	GlobalURLOptions v1.GlobalURLOptions
	CORSOrigin       *regexp.Regexp // [.*]
	ExternalURL      string         // for the OpenAPI document
	StorageRetention string         // /status/runtimeinfo storageRetention

	FeatureRegistry features.Collector // /features [a new registry]

	// TargetMetadataOnly makes /metadata answer from the targets only, as
	// Prometheus does. By default, the metadata Aerie stored through its
	// appenders (remote write, scrapes) is served too, as if from one more
	// target.
	TargetMetadataOnly bool
}

// Version is Aerie's version, served by /status/buildinfo. Revision,
// Branch, BuildUser and BuildDate can be set with -ldflags -X; Revision and
// BuildDate otherwise come from the VCS stamp of the binary, if any.
var (
	Version   = "0.1.0-dev"
	Revision  = ""
	Branch    = ""
	BuildUser = ""
	BuildDate = ""
)

// BuildInfo returns the build information served by /status/buildinfo.
func BuildInfo() *v1.PrometheusVersion {
	bi := &v1.PrometheusVersion{
		Version:   Version,
		Revision:  Revision,
		Branch:    Branch,
		BuildUser: BuildUser,
		BuildDate: BuildDate,
		GoVersion: runtime.Version(),
	}
	if info, ok := debug.ReadBuildInfo(); ok {
		if info.GoVersion != "" {
			bi.GoVersion = info.GoVersion
		}
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				if bi.Revision == "" {
					bi.Revision = s.Value
				}
			case "vcs.time":
				if bi.BuildDate == "" {
					bi.BuildDate = s.Value
				}
			}
		}
	}
	return bi
}

// NewEngine returns the PromQL engine configured by opts, as Prometheus
// configures its own (@ modifier and negative offsets on).
func NewEngine(dataDir string, opts Options) *promql.Engine {
	opts = opts.withDefaults()
	eo := promql.EngineOpts{
		Logger:                   opts.Logger.With("component", "query engine"),
		Reg:                      opts.Registerer,
		MaxSamples:               opts.MaxSamples,
		Timeout:                  opts.QueryTimeout,
		LookbackDelta:            opts.LookbackDelta,
		EnableAtModifier:         true,
		EnableNegativeOffset:     true,
		EnableDelayedNameRemoval: !opts.NoDelayedNameRemoval,
		// As Prometheus: a subquery without a step steps by the global
		// evaluation interval.
		NoStepSubqueryIntervalFn: func(int64) int64 {
			if d := time.Duration(opts.Config().GlobalConfig.EvaluationInterval); d > 0 {
				return durationMilliseconds(d)
			}
			return durationMilliseconds(time.Minute)
		},
		FeatureRegistry: opts.FeatureRegistry,
	}
	if opts.tracker == nil {
		opts.tracker = activeQueryTracker(dataDir, opts)
	}
	if opts.tracker != nil {
		eo.ActiveQueryTracker = opts.tracker
	}
	return promql.NewEngine(eo)
}

// activeQueryTracker returns the tracker of opts.MaxConcurrentQueries in
// dataDir (nil: none). Planned queries are recorded as asked (see
// queryeval.Tracker).
func activeQueryTracker(dataDir string, opts Options) promql.QueryTracker {
	if opts.MaxConcurrentQueries <= 0 || dataDir == "" {
		return nil
	}
	return queryeval.Tracker(promql.NewActiveQueryTracker(dataDir, opts.MaxConcurrentQueries, opts.Logger))
}

func durationMilliseconds(d time.Duration) int64 { return int64(d / time.Millisecond) }

func (o Options) withDefaults() Options {
	o.QueryTimeout = positive.Or(o.QueryTimeout, 2*time.Minute)
	o.MaxSamples = positive.Or(o.MaxSamples, 50000000)
	o.LookbackDelta = positive.Or(o.LookbackDelta, 5*time.Minute)
	if o.Flags == nil {
		o.Flags = map[string]string{}
	}
	if o.Config == nil {
		o.Config = func() config.Config { return config.DefaultConfig }
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Gatherer == nil {
		o.Gatherer = prometheus.NewRegistry()
	}
	o.RemoteReadSampleLimit = positive.Or(o.RemoteReadSampleLimit, 5e7)
	o.RemoteReadConcurrencyLimit = positive.Or(o.RemoteReadConcurrencyLimit, 10)
	o.RemoteReadMaxBytesInFrame = positive.Or(o.RemoteReadMaxBytesInFrame, 1048576)
	if o.CORSOrigin == nil {
		o.CORSOrigin = regexp.MustCompile("^(?:.*)$")
	}
	if o.FeatureRegistry == nil {
		o.FeatureRegistry = features.NewRegistry()
	}
	if o.NotificationsGetter == nil {
		o.NotificationsGetter = func() []notifications.Notification { return []notifications.Notification{} }
	}
	if o.NotificationsSub == nil {
		o.NotificationsSub = func() (<-chan notifications.Notification, func(), bool) { return nil, func() {}, false }
	}
	return o
}

// New returns a handler serving the Prometheus HTTP API v1 over db under
// /api/v1/, and the PromQL engine it queries with through QueryEngine (the
// caller closes the engine, which releases the active query tracker, after
// the server stops).
func New(db *tsdb.DB, opts Options) (http.Handler, *promql.Engine, error) {
	if db == nil {
		return nil, nil, errors.New("api: nil DB")
	}
	opts = opts.withDefaults()
	opts.MetricInterval = db.MetricInterval()
	opts.Gatherer = headChunksGatherer{g: opts.Gatherer, n: db.Head().NumGroupPartitions}
	// One tracker for both engines: Aerie's evaluator waits for a place
	// in it as Prometheus' does.
	opts.tracker = activeQueryTracker(db.Dir(), opts)
	engine := NewEngine(db.Dir(), opts)
	s := &Storage{DB: db, App: opts.Appendable, Rollups: opts.Rollups}
	quarantined := func() int64 { return db.Stats().Quarantined }
	h := newHandler(QueryEngine(engine, opts), s, s, s, s, NewAdminStats(db), db.Dir(), db, quarantined, opts)
	if opts.Rollups != nil {
		h = withRollup(h, opts.Rollups, opts.Levels)
	}
	mux := http.NewServeMux()
	mux.Handle("/", h)
	mux.Handle(StorageStatusPath, statusHandler{db: db, storage: true})
	mux.Handle(SeriesStatusPath, statusHandler{db: db})
	return mux, engine, nil
}

// QueryEngine returns what queries ng as opts say: Aerie's evaluator
// over ng unless opts.QueryEngine is "prometheus"; with delayed name
// removal on, through NameCompatEngine; off, as Prometheus 3.
// Rules evaluate through it too.
func QueryEngine(ng *promql.Engine, opts Options) promql.QueryEngine {
	var e promql.QueryEngine = ng
	if opts.QueryEngine != "prometheus" {
		d := opts.withDefaults()
		e = queryeval.New(ng, queryeval.Options{
			MaxSamples: d.MaxSamples, DelayedNameRemoval: !opts.NoDelayedNameRemoval, MetricInterval: opts.MetricInterval,
			LookbackDelta: d.LookbackDelta, Timeout: d.QueryTimeout, Tracker: opts.tracker, Stats: opts.QueryStats,
		})
	}
	if opts.NoDelayedNameRemoval {
		return e
	}
	return NameCompatEngine(e, opts.LookbackDelta)
}

// newHandler wires Prometheus' API over the given storage exactly as
// Prometheus' web.Handler does.
func newHandler(
	engine promql.QueryEngine,
	q storage.SampleAndChunkQueryable,
	ap storage.Appendable,
	apV2 storage.AppendableV2,
	eq storage.ExemplarQueryable,
	admin v1.TSDBAdminStats,
	dbDir string,
	meta MetadataSource,
	corruptions func() int64,
	opts Options,
) http.Handler {
	opts = opts.withDefaults()
	start := time.Now().UTC()
	cwd, err := os.Getwd()
	if err != nil {
		cwd = "<error retrieving current working directory>"
	}

	ready := func(f http.HandlerFunc) http.HandlerFunc {
		if opts.Ready == nil {
			return f
		}
		return func(w http.ResponseWriter, r *http.Request) {
			if !opts.Ready() {
				w.Header().Set("X-Prometheus-Stopping", "false")
				w.WriteHeader(http.StatusServiceUnavailable)
				fmt.Fprintf(w, "Service Unavailable")
				return
			}
			f(w, r)
		}
	}
	runtimeInfo := func() (v1.RuntimeInfo, error) {
		var n int64
		if corruptions != nil {
			n = corruptions()
		}
		return runtimeInfo(start, cwd, opts, n)
	}

	spr := opts.ScrapePools
	if spr == nil {
		spr = func(context.Context) v1.ScrapePoolsRetriever { return Empty{} }
	}
	tr := opts.Targets
	if tr == nil {
		tr = func(context.Context) v1.TargetRetriever { return Empty{} }
	}
	ar := opts.Alertmanagers
	if ar == nil {
		ar = func(context.Context) v1.AlertmanagerRetriever { return Empty{} }
	}
	rr := opts.Rules
	if rr == nil {
		rr = func(context.Context) v1.RulesRetriever { return Empty{} }
	}

	// /metadata answers from the targets plus, unless TargetMetadataOnly,
	// one pseudo-target holding the metadata stored in the DB. Only
	// requests to /metadata are marked to see it, so /targets and
	// /targets/metadata never show it.
	var metaTarget *scrape.Target
	if meta != nil && !opts.TargetMetadataOnly {
		metaTarget = newMetadataTarget(meta)
	}
	targets := func(ctx context.Context) v1.TargetRetriever {
		if metaTarget != nil && ctx.Value(metadataRequestKey{}) != nil {
			return withMetadataTarget{TargetRetriever: tr(ctx), target: metaTarget}
		}
		return tr(ctx)
	}

	rwEnabled := !opts.DisableRemoteWrite
	api := v1.NewAPI(engine, q, ap, apV2, eq, spr, targets, ar,
		opts.Config,
		opts.Flags,
		opts.GlobalURLOptions,
		ready,
		admin,
		dbDir,
		opts.EnableAdmin,
		opts.Logger,
		rr,
		opts.RemoteReadSampleLimit,
		opts.RemoteReadConcurrencyLimit,
		opts.RemoteReadMaxBytesInFrame,
		false, // isAgent
		opts.CORSOrigin,
		runtimeInfo,
		BuildInfo(),
		opts.NotificationsGetter,
		opts.NotificationsSub,
		opts.Gatherer,
		opts.Registerer,
		nil, // statsRenderer: v1.DefaultStatsRenderer
		rwEnabled,
		remoteapi.MessageTypes{remoteapi.WriteV1MessageType, remoteapi.WriteV2MessageType},
		opts.EnableOTLPWrite,
		false, // otlpDeltaToCumulative
		false, // otlpNativeDeltaIngestion
		false, // stZeroIngestionEnabled
		opts.LookbackDelta,
		false, // enableTypeAndUnitLabels
		true,  // appendMetadata: remote write metadata reaches Aerie's metadata store
		nil,   // overrideErrorCode
		opts.FeatureRegistry,
		v1.OpenAPIOptions{ExternalURL: opts.ExternalURL, Version: Version},
	)

	r := opts.FeatureRegistry
	r.Set(features.API, "admin", opts.EnableAdmin)
	r.Set(features.API, "remote_write_receiver", rwEnabled)
	r.Set(features.API, "otlp_write_receiver", opts.EnableOTLPWrite)
	r.Enable(features.API, "label_values_match")
	r.Enable(features.API, "query_warnings")
	r.Enable(features.API, "query_stats")
	r.Enable(features.API, "time_range_series")
	r.Enable(features.API, "time_range_labels")
	r.Enable(features.API, "exclude_alerts")

	// As Prometheus' web.Handler: a route.Router for the API, under the
	// prefix.
	router := route.New().WithInstrumentation(setPathWithPrefix(Prefix))
	api.Register(router)
	h := http.StripPrefix(Prefix, router)
	mux := http.NewServeMux()
	mux.Handle(Prefix+"/", h)
	mux.Handle(Prefix+"/metadata", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), metadataRequestKey{}, true)))
	}))
	return mux
}

// metadataRequestKey marks the context of /metadata requests.
type metadataRequestKey struct{}

// setPathWithPrefix is Prometheus' web.setPathWithPrefix: it records the
// full request path for handlers that need it.
func setPathWithPrefix(prefix string) func(string, http.HandlerFunc) http.HandlerFunc {
	return func(_ string, handler http.HandlerFunc) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			handler(w, r.WithContext(httputil.ContextWithPath(r.Context(), prefix+r.URL.Path)))
		}
	}
}

// runtimeInfo is Prometheus' web.Handler.runtimeInfo. The counters come
// from the gatherer under Prometheus' metric names when present; without
// them, corruptionCount is the number of quarantined blocks and
// reloadConfigSuccess is true (no reload failed).
func runtimeInfo(start time.Time, cwd string, opts Options, corruptions int64) (v1.RuntimeInfo, error) {
	status := v1.RuntimeInfo{
		StartTime:           start,
		CWD:                 cwd,
		GoroutineCount:      runtime.NumGoroutine(),
		GOMAXPROCS:          runtime.GOMAXPROCS(0),
		GOMEMLIMIT:          debug.SetMemoryLimit(-1),
		GOGC:                os.Getenv("GOGC"),
		GODEBUG:             os.Getenv("GODEBUG"),
		StorageRetention:    opts.StorageRetention,
		CorruptionCount:     corruptions,
		ReloadConfigSuccess: true,
	}
	hostname, err := os.Hostname()
	if err != nil {
		return status, fmt.Errorf("error getting hostname: %w", err)
	}
	status.Hostname = hostname
	status.ServerTime = time.Now().UTC()

	mfs, err := opts.Gatherer.Gather()
	if err != nil {
		return status, fmt.Errorf("error gathering runtime status: %w", err)
	}
	for _, mf := range mfs {
		switch mf.GetName() {
		case "prometheus_tsdb_wal_corruptions_total":
			status.CorruptionCount = int64(toFloat64(mf))
		case "prometheus_config_last_reload_successful":
			status.ReloadConfigSuccess = toFloat64(mf) != 0
		case "prometheus_config_last_reload_success_timestamp_seconds":
			status.LastConfigTime = time.Unix(int64(toFloat64(mf)), 0).UTC()
		}
	}
	return status, nil
}

func toFloat64(f *dto.MetricFamily) float64 {
	if len(f.Metric) == 0 {
		return 0
	}
	m := f.Metric[0]
	switch {
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Untyped != nil:
		return m.Untyped.GetValue()
	}
	return 0
}
