package sensor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/aerie-db/aerie/internal/tsdb"
)

// Options configure a Service.
type Options struct {
	// Dir holds the sensor registry (the data directory).
	Dir string
	// TmpDir holds upload spools [Dir/tmp].
	TmpDir string
	// SpoolPoints is how many points of an upload are held in memory
	// before the rest spills to a temporary file [1 << 18: 4 MiB, so 256
	// uploads in flight hold at most 1 GiB].
	SpoolPoints int
	// BatchPoints is how many points an upload commits at a time [65536].
	BatchPoints int
	// MaxUploadBytes bounds an upload's body [16 GiB].
	MaxUploadBytes int64
	// MaxSeries bounds the series a native search or extraction touches
	// [100000].
	MaxSeries int
	Logger    *slog.Logger
	// Registerer takes the service's metrics (nil: none).
	Registerer prometheus.Registerer
}

// MaxNameLen bounds a sensor id (a metric name).
const MaxNameLen = 1024

func (o *Options) fill() {
	if o.TmpDir == "" {
		o.TmpDir = filepath.Join(o.Dir, "sensor-spool")
	}
	if o.SpoolPoints <= 0 {
		o.SpoolPoints = 1 << 18
	}
	if o.BatchPoints <= 0 {
		o.BatchPoints = 1 << 16
	}
	if o.MaxUploadBytes <= 0 {
		o.MaxUploadBytes = 16 << 30
	}
	if o.MaxSeries <= 0 {
		o.MaxSeries = 100_000
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// Service is Peregreen's set of operations over Aerie's engine.
type Service struct {
	db   *tsdb.DB
	reg  *registry
	opts Options
	m    serviceMetrics
}

type serviceMetrics struct {
	uploaded                            prometheus.Counter
	runPoints                           prometheus.Counter // of uploaded, straight into blocks
	extractPoints, extractIndex         prometheus.Counter
	searchIndex, searchHead, searchData prometheus.Counter
}

// New returns the service over db.
func New(db *tsdb.DB, opts Options) (*Service, error) {
	opts.fill()
	if err := os.MkdirAll(opts.TmpDir, 0o755); err != nil {
		return nil, err
	}
	reg, err := openRegistry(opts.Dir)
	if err != nil {
		return nil, err
	}
	s := &Service{db: db, reg: reg, opts: opts}
	s.m = serviceMetrics{
		uploaded:      prometheus.NewCounter(prometheus.CounterOpts{Name: "aerie_sensor_uploaded_points_total", Help: "Points stored through /upload."}),
		runPoints:     prometheus.NewCounter(prometheus.CounterOpts{Name: "aerie_sensor_upload_run_points_total", Help: "Points of aerie_sensor_uploaded_points_total written straight into blocks (in time order and older than the head's partitions)."}),
		searchIndex:   prometheus.NewCounter(prometheus.CounterOpts{Name: "aerie_sensor_search_index_intervals_total", Help: "Metric intervals value search answered from block indexes."}),
		searchHead:    prometheus.NewCounter(prometheus.CounterOpts{Name: "aerie_sensor_search_head_intervals_total", Help: "Metric intervals value search summed from the in-memory head."}),
		extractPoints: prometheus.NewCounter(prometheus.CounterOpts{Name: "aerie_sensor_extract_points_total", Help: "Points extractions read from the engine."}),
		extractIndex:  prometheus.NewCounter(prometheus.CounterOpts{Name: "aerie_sensor_extract_index_intervals_total", Help: "Metric intervals aggregations took from block metrics instead of data."}),
		searchData:    prometheus.NewCounter(prometheus.CounterOpts{Name: "aerie_sensor_search_data_intervals_total", Help: "Metric intervals value search recomputed from data (several sources or a deletion)."}),
	}
	if opts.Registerer != nil {
		for _, c := range []prometheus.Collector{s.m.uploaded, s.m.runPoints, s.m.searchIndex, s.m.searchHead, s.m.searchData, s.m.extractPoints, s.m.extractIndex} {
			if err := opts.Registerer.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return s, nil
}

// checkName checks a sensor id: a non-empty UTF-8 metric name.
func checkName(name string) error {
	switch {
	case name == "":
		return errors.New("empty sensor id")
	case len(name) > MaxNameLen:
		return fmt.Errorf("sensor id of %d bytes, more than %d", len(name), MaxNameLen)
	case !utf8.ValidString(name):
		return fmt.Errorf("sensor id %q is not valid UTF-8", name)
	}
	return nil
}

// Matchers returns the selector of sensor name: the series whose metric
// name is name.
func Matchers(name string) []*labels.Matcher {
	return []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, labels.MetricName, name)}
}

// ErrNotFound is wrapped when a sensor has no data.
var ErrNotFound = errors.New("sensor not found")

// ErrAmbiguous is wrapped when a sensor id names more than one series.
var ErrAmbiguous = errors.New("sensor id names several series")

// querier opens the one querier a request reads the engine through, so
// that its steps see the same blocks; over all time, as the sensor checks
// (series) read all time, while each read prunes blocks to its own range.
// Close must be called.
func (s *Service) querier() *tsdb.Querier {
	return s.db.OpenQuerier(math.MinInt64, math.MaxInt64)
}

// series returns the one series of sensor name in [mint, maxt], checking
// that the name is not shared by several series (Peregreen's endpoints
// take one sensor; the native ones take selectors). It reads the indexes
// only.
func (s *Service) series(ctx context.Context, q *tsdb.Querier, name string, mint, maxt int64) (labels.Labels, error) {
	if err := checkName(name); err != nil {
		return labels.EmptyLabels(), err
	}
	found, err := q.SeriesSets(ctx, mint, maxt, Matchers(name)...)
	if err != nil {
		return labels.EmptyLabels(), err
	}
	switch len(found) {
	case 0:
		return labels.EmptyLabels(), fmt.Errorf("%w: %q has no data", ErrNotFound, name)
	case 1:
		return found[0], nil
	}
	return labels.EmptyLabels(), fmt.Errorf("%w: %q names %d series (%s, %s, …); use /api/v1/sensor/* with a selector", ErrAmbiguous, name, len(found), found[0], found[1])
}

// Delete removes the sensor's points in [mint, maxt], durably (the
// engine's tombstones; compaction drops the points for good).
func (s *Service) Delete(ctx context.Context, name string, mint, maxt int64) error {
	if err := checkName(name); err != nil {
		return err
	}
	return s.db.Delete(ctx, mint, maxt, Matchers(name)...)
}

// List returns the sensor ids: the metric names of every series.
func (s *Service) List(ctx context.Context) ([]string, error) {
	q := s.querier()
	defer q.Close()
	names, _, err := q.LabelValues(ctx, labels.MetricName, nil)
	return names, err
}

// Meta is Peregreen's sensor meta information.
type Meta struct {
	Sensor string `json:"sensor"`
	Type   string `json:"type"`
	// Uploaded says the type was recorded by /upload; otherwise the
	// series came through another protocol and holds float64 values.
	Uploaded bool  `json:"uploaded"`
	First    int64 `json:"first"`
	Last     int64 `json:"last"`
	// Count is the number of numeric (non-NaN) points.
	Count uint64 `json:"count"`
	// Intervals is the number of metric intervals holding points, of
	// MetricInterval ms each.
	Intervals      int   `json:"intervals"`
	MetricInterval int64 `json:"metric_interval"`
	// IndexBytes and DataBytes are what the sensor takes in blocks: its
	// block metrics, and its value columns with its share of its groups'
	// timestamp columns. Points still in the in-memory head are not
	// counted.
	IndexBytes int64 `json:"index_bytes"`
	DataBytes  int64 `json:"data_bytes"`
}

// Meta returns the sensor's meta information, from the block metrics
// (first and last timestamps from the first and last intervals' data),
// through one querier.
func (s *Service) Meta(ctx context.Context, name string) (Meta, error) {
	q := s.querier()
	defer q.Close()
	lset, err := s.series(ctx, q, name, math.MinInt64, math.MaxInt64)
	if err != nil {
		return Meta{}, err
	}
	m := Meta{Sensor: name, Type: "float64", MetricInterval: s.db.MetricInterval()}
	if t, ok := s.reg.Type(name); ok {
		m.Type, m.Uploaded = t.String(), true
	}
	if m.IndexBytes, m.DataBytes, err = q.SeriesBytes(ctx, exact(lset)...); err != nil {
		return m, err
	}
	sms, _, err := q.SeriesMetrics(ctx, math.MinInt64/2, math.MaxInt64/2, Matchers(name)...)
	if err != nil {
		return m, err
	}
	for _, sm := range sms {
		if !labels.Equal(sm.Labels, lset) {
			continue
		}
		m.Intervals = len(sm.Intervals)
		for _, iv := range sm.Intervals {
			m.Count += iv.Count
		}
		if len(sm.Intervals) > 0 {
			iv := m.MetricInterval
			first, last := sm.Intervals[0].Interval*iv, sm.Intervals[len(sm.Intervals)-1].Interval*iv
			if m.First, _, err = s.edge(ctx, q, lset, first, first+iv-1, true); err != nil {
				return m, err
			}
			if m.Last, _, err = s.edge(ctx, q, lset, last, last+iv-1, false); err != nil {
				return m, err
			}
		}
	}
	return m, nil
}

// edge returns the first (or last) sample time of lset in [mint, maxt].
func (s *Service) edge(ctx context.Context, q *tsdb.Querier, lset labels.Labels, mint, maxt int64, first bool) (int64, bool, error) {
	ss := q.Select(ctx, false, &storage.SelectHints{Start: mint, End: maxt}, exact(lset)...)
	var t int64
	found := false
	for ss.Next() {
		if !labels.Equal(ss.At().Labels(), lset) {
			continue
		}
		it := ss.At().Iterator(nil)
		for vt := it.Next(); vt != chunkenc.ValNone; vt = it.Next() {
			t, found = it.AtT(), true
			if first {
				break
			}
		}
		if err := it.Err(); err != nil {
			return 0, false, err
		}
	}
	return t, found, ss.Err()
}

// exact returns matchers selecting lset (and its supersets).
func exact(lset labels.Labels) []*labels.Matcher {
	ms := make([]*labels.Matcher, 0, lset.Len())
	lset.Range(func(l labels.Label) {
		ms = append(ms, labels.MustNewMatcher(labels.MatchEqual, l.Name, l.Value))
	})
	return ms
}
