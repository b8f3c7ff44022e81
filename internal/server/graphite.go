package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/aerie-db/aerie/internal/carbon"
	"github.com/aerie-db/aerie/internal/pgarchive"
	"github.com/aerie-db/aerie/internal/rollup"
	"github.com/aerie-db/aerie/internal/statsd"
)

// GraphiteConfig is the `aerie: graphite:` section: carbon's listeners.
// An address left out takes carbon's default port on 127.0.0.1; "" turns
// the listener off. A default address that is taken (a carbon-cache
// already runs there) is skipped with a warning; an address set in the
// file that cannot be bound stops the server.
type GraphiteConfig struct {
	PlaintextTCP *string `yaml:"plaintext_tcp,omitempty"` // [127.0.0.1:2003]
	PlaintextUDP *string `yaml:"plaintext_udp,omitempty"` // [127.0.0.1:2003]
	PickleTCP    *string `yaml:"pickle_tcp,omitempty"`    // [127.0.0.1:2004]
	// GroupDepth: series whose paths share their first GroupDepth
	// components form one group (DESIGN.md §1) [2].
	GroupDepth int `yaml:"group_depth,omitempty"`
	QueueSize  int `yaml:"queue_size,omitempty"` // batches queued before TCP blocks and UDP drops [1024]
}

// StatsdConfig is the `aerie: statsd:` section.
type StatsdConfig struct {
	UDP             *string        `yaml:"udp,omitempty"`            // [127.0.0.1:8125]
	TCP             *string        `yaml:"tcp,omitempty"`            // [127.0.0.1:8125]
	FlushInterval   model.Duration `yaml:"flush_interval,omitempty"` // [10s]
	Percentiles     []float64      `yaml:"percentiles,omitempty"`    // [90]
	DeleteIdleStats bool           `yaml:"delete_idle_stats,omitempty"`
	// Prefixes of the flushed series (statsd's graphite backend, without
	// the legacy namespace).
	Prefix struct {
		Global  *string `yaml:"global,omitempty"`  // [stats]
		Counter *string `yaml:"counter,omitempty"` // [counters]
		Timer   *string `yaml:"timer,omitempty"`   // [timers]
		Gauge   *string `yaml:"gauge,omitempty"`   // [gauges]
		Set     *string `yaml:"set,omitempty"`     // [sets]
		Suffix  string  `yaml:"suffix,omitempty"`
	} `yaml:"prefix,omitempty"`
	MaxSeries int `yaml:"max_series,omitempty"` // [100000]
}

// RollupConfig is the `aerie: rollup:` section: carbon's storage schemas
// and aggregations, from carbon's own files and/or inline (the files'
// sections first, then the inline ones; first match wins).
type RollupConfig struct {
	SchemasFile     string `yaml:"schemas_file,omitempty"`     // a storage-schemas.conf
	AggregationFile string `yaml:"aggregation_file,omitempty"` // a storage-aggregation.conf
	Schemas         []struct {
		Name       string         `yaml:"name"`
		Pattern    string         `yaml:"pattern"`
		Retentions string         `yaml:"retentions"`
		Heartbeat  model.Duration `yaml:"heartbeat,omitempty"`
	} `yaml:"schemas,omitempty"`
	Aggregations []struct {
		Name              string   `yaml:"name"`
		Pattern           string   `yaml:"pattern"`
		XFilesFactor      *float64 `yaml:"x_files_factor,omitempty"`     // [0.5]
		AggregationMethod string   `yaml:"aggregation_method,omitempty"` // [average]
	} `yaml:"aggregations,omitempty"`
	// Interval is how often settled raw data are rolled up [1m].
	Interval model.Duration `yaml:"interval,omitempty"`
}

// ArchiveConfig is the `aerie: archive:` section.
type ArchiveConfig struct {
	// Postgres, if set, also keeps every rollup level in PostgreSQL in
	// Tgres's bundle layout (internal/pgarchive, docs/format/pgarchive.md).
	Postgres *struct {
		DSN                 string  `yaml:"dsn"`
		SegmentWidth        int     `yaml:"segment_width,omitempty"`          // [200]
		MaxFlushesPerSecond float64 `yaml:"max_flushes_per_second,omitempty"` // [0: no limit]
		QueueSize           int     `yaml:"queue_size,omitempty"`             // [100000]
	} `yaml:"postgres,omitempty"`
}

// rules builds the rollup rules; relative file names are relative to the
// configuration file's directory (dir).
func (c *RollupConfig) rules(dir string) (*rollup.Rules, error) {
	r := &rollup.Rules{}
	var err error
	if c.SchemasFile != "" {
		if r.Schemas, err = parseConfFile(dir, c.SchemasFile, rollup.ParseSchemasConf); err != nil {
			return nil, fmt.Errorf("rollup.schemas_file: %w", err)
		}
	}
	if c.AggregationFile != "" {
		if r.Aggregations, err = parseConfFile(dir, c.AggregationFile, rollup.ParseAggregationConf); err != nil {
			return nil, fmt.Errorf("rollup.aggregation_file: %w", err)
		}
	}
	for i, s := range c.Schemas {
		sc, err := rollup.NewSchema(s.Name, s.Pattern, s.Retentions, time.Duration(s.Heartbeat))
		if err != nil {
			return nil, fmt.Errorf("rollup.schemas[%d]: %w", i, err)
		}
		r.Schemas = append(r.Schemas, sc)
	}
	for i, a := range c.Aggregations {
		xff := 0.5
		if a.XFilesFactor != nil {
			xff = *a.XFilesFactor
		}
		m := a.AggregationMethod
		if m == "" {
			m = "average"
		}
		ag, err := rollup.NewAggregation(a.Name, a.Pattern, xff, m)
		if err != nil {
			return nil, fmt.Errorf("rollup.aggregations[%d]: %w", i, err)
		}
		r.Aggregations = append(r.Aggregations, ag)
	}
	return r, nil
}

// parseConfFile parses the carbon configuration file name, relative to
// dir unless absolute, with parse.
func parseConfFile[T any](dir, name string, parse func(io.Reader, string) (T, error)) (T, error) {
	p := name
	if dir != "" && !isAbs(p) {
		p = dir + string(os.PathSeparator) + p
	}
	f, err := os.Open(p)
	if err != nil {
		var zero T
		return zero, err
	}
	defer f.Close()
	return parse(f, p)
}

func isAbs(p string) bool { return len(p) > 0 && p[0] == os.PathSeparator }

// addr returns a listener address: the configured one (explicit), or the
// default.
func addr(v *string, def string) (string, bool) {
	if v != nil {
		return *v, true
	}
	return def, false
}

// freeOrOff returns a default address if it can be bound now, else "" with
// a warning: a default listener never stops the server.
func freeOrOff(log *slog.Logger, network, a, what string, explicit bool) string {
	if a == "" || explicit {
		return a
	}
	var err error
	if network == "udp" {
		var pc net.PacketConn
		if pc, err = net.ListenPacket("udp", a); err == nil {
			pc.Close()
		}
	} else {
		var ln net.Listener
		if ln, err = net.Listen("tcp", a); err == nil {
			ln.Close()
		}
	}
	if err != nil {
		log.Warn("default listener address is taken; listener off (set it in the configuration to make this an error)", "listener", what, "addr", a, "err", err)
		return ""
	}
	return a
}

// startGraphite starts carbon's receivers and statsd.
func (s *Server) startGraphite() error {
	g := s.cfg.Aerie.Graphite
	cc := carbon.DefaultConfig()
	var ex [3]bool
	cc.PlaintextTCP, ex[0] = addr(g.PlaintextTCP, cc.PlaintextTCP)
	cc.PlaintextUDP, ex[1] = addr(g.PlaintextUDP, cc.PlaintextUDP)
	cc.PickleTCP, ex[2] = addr(g.PickleTCP, cc.PickleTCP)
	log := s.log.With("component", "graphite")
	cc.PlaintextTCP = freeOrOff(log, "tcp", cc.PlaintextTCP, "plaintext_tcp", ex[0])
	cc.PlaintextUDP = freeOrOff(log, "udp", cc.PlaintextUDP, "plaintext_udp", ex[1])
	cc.PickleTCP = freeOrOff(log, "tcp", cc.PickleTCP, "pickle_tcp", ex[2])
	cc.QueueSize = g.QueueSize
	cc.Logger = log
	cc.Registerer = s.m.reg
	var err error
	if s.carbon, err = carbon.New(cc, countingAppendable{Appendable: s.db, m: s.m, protocol: "graphite"}); err != nil {
		return fmt.Errorf("graphite: %w", err)
	}
	if err := s.carbon.Start(); err != nil {
		return fmt.Errorf("graphite: %w", err)
	}

	st := s.cfg.Aerie.Statsd
	sc := statsd.DefaultConfig()
	var exU, exT bool
	sc.UDPAddr, exU = addr(st.UDP, sc.UDPAddr)
	sc.TCPAddr, exT = addr(st.TCP, sc.TCPAddr)
	slog := s.log.With("component", "statsd")
	sc.UDPAddr = freeOrOff(slog, "udp", sc.UDPAddr, "statsd udp", exU)
	sc.TCPAddr = freeOrOff(slog, "tcp", sc.TCPAddr, "statsd tcp", exT)
	if st.FlushInterval != 0 {
		sc.FlushInterval = time.Duration(st.FlushInterval)
	}
	if st.Percentiles != nil {
		sc.Percentiles = st.Percentiles
	}
	sc.DeleteIdleStats = st.DeleteIdleStats
	ns := statsd.DefaultNamespace()
	set := func(dst *string, v *string) {
		if v != nil {
			*dst = *v
		}
	}
	set(&ns.GlobalPrefix, st.Prefix.Global)
	set(&ns.Counter, st.Prefix.Counter)
	set(&ns.Timer, st.Prefix.Timer)
	set(&ns.Gauge, st.Prefix.Gauge)
	set(&ns.Set, st.Prefix.Set)
	ns.GlobalSuffix = st.Prefix.Suffix
	sc.Namespace = ns
	if st.MaxSeries > 0 {
		sc.MaxSeries = st.MaxSeries
	}
	sc.Logger = slog
	sc.Registerer = s.m.reg
	if s.statsd, err = statsd.New(countingAppendable{Appendable: s.db, m: s.m, protocol: "statsd"}, sc); err != nil {
		return fmt.Errorf("statsd: %w", err)
	}
	if err := s.statsd.Start(); err != nil {
		return fmt.Errorf("statsd: %w", err)
	}
	return nil
}

// stopGraphite stops the receivers, committing what they hold.
func (s *Server) stopGraphite() {
	closeIfOpen(s.log, "graphite receivers", s.carbon)
	closeIfOpen(s.log, "statsd", s.statsd)
}

// archiveSource is the rollup levels as pgarchive reads them.
type archiveSource struct{ m *rollup.Manager }

func (a archiveSource) Levels() []pgarchive.Level {
	var out []pgarchive.Level
	for _, l := range a.m.Levels() {
		out = append(out, pgarchive.Level{Name: l.Name, Step: l.Step, Retention: l.Retention})
	}
	return out
}

func (a archiveSource) Ready(l pgarchive.Level) int64 { return a.m.Done(l.Name) }

func (a archiveSource) Read(ctx context.Context, l pgarchive.Level, from, to int64, fn func(labels.Labels, []int64, []float64) error) error {
	lv := a.m.Level(l.Name)
	if lv == nil {
		return fmt.Errorf("no rollup level %s", l.Name)
	}
	q, err := lv.DB.Querier(from, to-1)
	if err != nil {
		return err
	}
	defer q.Close()
	ss := q.Select(ctx, true, &storage.SelectHints{Start: from, End: to - 1}, labels.MustNewMatcher(labels.MatchRegexp, labels.MetricName, ".+"))
	var (
		ts []int64
		vs []float64
		it chunkenc.Iterator
	)
	for ss.Next() {
		ts, vs = ts[:0], vs[:0]
		it = ss.At().Iterator(it)
		for it.Next() == chunkenc.ValFloat {
			t, v := it.At()
			ts, vs = append(ts, t), append(vs, v)
		}
		if err := it.Err(); err != nil {
			return err
		}
		if len(ts) == 0 {
			continue
		}
		if err := fn(ss.At().Labels(), ts, vs); err != nil {
			return err
		}
	}
	return ss.Err()
}

var errNoLevels = errors.New("archive.postgres: no rollup levels to archive (rollup.schemas have no archive beyond the raw one)")
