package statsd

import (
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/aerie-db/aerie/internal/positive"
)

// Config configures a Server. Start from DefaultConfig: zero numeric
// fields take the defaults in brackets, but empty addresses mean "off".
type Config struct {
	// UDPAddr and TCPAddr are the listen addresses ["127.0.0.1:8125"
	// each in DefaultConfig]; "" turns a listener off, port 0 picks one.
	UDPAddr, TCPAddr string

	// FlushInterval is statsd's flushInterval [10s], at least 1 ms.
	// Flushes happen at multiples of it since the Unix epoch.
	FlushInterval time.Duration

	// Percentiles are statsd's percentThreshold: nil means [90], an
	// empty non-nil slice none. Each is in [-100, 100] and not 0; a
	// negative one takes the highest values (mean_top10, lower_top10, ...).
	Percentiles []float64

	// Histograms are statsd's histogram setting: the first whose Metric is
	// a substring of a timer's name gives its bins.
	Histograms []Histogram

	// DeleteIdleStats is statsd's deleteIdleStats: metrics are forgotten
	// after every flush, so an idle counter, timer or set sends nothing
	// instead of 0 and an idle gauge nothing instead of its last value.
	DeleteIdleStats bool

	// Namespace names the flushed series; the zero Namespace is
	// DefaultNamespace().
	Namespace Namespace

	// KeepNames turns off statsd's keyNameSanitize (names kept as sent,
	// which must then be valid UTF-8).
	KeepNames bool

	// InternalStats sends statsd's own metrics with every flush: the
	// counters PrefixStats.packets_received, .metrics_received and
	// .bad_lines_seen (in the counter namespace) and
	// GlobalPrefix.PrefixStats.numStats, the number of metrics flushed.
	InternalStats bool
	// PrefixStats is statsd's prefixStats ["statsd"].
	PrefixStats string

	// Limits bound a packet (a datagram, or a line over TCP).
	Limits Limits
	// MaxPacketBytes bounds a datagram and a TCP line [65507]; longer ones
	// are counted (aerie_statsd_too_long_total) and skipped.
	MaxPacketBytes int
	// MaxSeries bounds the distinct metrics (name, tags and type) held
	// [100000]; values of new ones past it are refused and counted.
	MaxSeries int
	// MaxIntervalValues bounds the timer values and set members held
	// until the next flush [1 << 22].
	MaxIntervalValues int

	// QueueSize is the batches queued between the listeners and the
	// aggregator [listen.DefaultQueueSize]: UDP drops (and counts) past
	// it, TCP blocks.
	QueueSize int
	// MaxConns and IdleTimeout bound TCP connections [listen's defaults].
	MaxConns    int
	IdleTimeout time.Duration
	// UDPReadBuffer sets the UDP socket's receive buffer if > 0.
	UDPReadBuffer int

	Logger     *slog.Logger          // [discard]
	Registerer prometheus.Registerer // takes aerie_statsd_* (nil: none)
	Clock      Clock                 // [the system clock]
}

// Histogram is one entry of statsd's histogram setting.
type Histogram struct {
	// Metric matches the timers whose name contains it ("" matches all).
	Metric string
	// Bins are ascending, exclusive upper bounds; math.Inf(1) last counts
	// the rest (statsd's 'inf'); values at or past the last bound are not
	// counted. No bins exempt the matching timers.
	Bins []float64
}

// Namespace is the statsd graphite backend's non-legacy namespace:
// counters are sent as GlobalPrefix.Counter.<name>.rate and .count,
// timers as GlobalPrefix.Timer.<name>.<stat>, gauges as
// GlobalPrefix.Gauge.<name>, sets as GlobalPrefix.Set.<name>.count, each
// followed by .GlobalSuffix if set. Empty parts are left out.
type Namespace struct {
	GlobalPrefix, Counter, Timer, Gauge, Set, GlobalSuffix string
}

// DefaultNamespace is statsd's: stats.counters, stats.timers,
// stats.gauges, stats.sets, no suffix.
func DefaultNamespace() Namespace {
	return Namespace{GlobalPrefix: "stats", Counter: "counters", Timer: "timers", Gauge: "gauges", Set: "sets"}
}

// Defaults.
const (
	DefaultAddr              = "127.0.0.1:8125"
	DefaultFlushInterval     = 10 * time.Second
	DefaultMaxPacketBytes    = 65507
	DefaultMaxSeries         = 100_000
	DefaultMaxIntervalValues = 1 << 22
	DefaultPrefixStats       = "statsd"
)

// DefaultConfig returns the defaults, both listeners on 127.0.0.1:8125.
func DefaultConfig() Config {
	return Config{UDPAddr: DefaultAddr, TCPAddr: DefaultAddr}
}

func (c *Config) fill() {
	if c.FlushInterval == 0 {
		c.FlushInterval = DefaultFlushInterval
	}
	if c.Percentiles == nil {
		c.Percentiles = []float64{90}
	}
	if c.Namespace == (Namespace{}) {
		c.Namespace = DefaultNamespace()
	}
	if c.PrefixStats == "" {
		c.PrefixStats = DefaultPrefixStats
	}
	c.Limits = c.Limits.withDefaults()
	c.MaxPacketBytes = positive.Or(c.MaxPacketBytes, DefaultMaxPacketBytes)
	c.MaxSeries = positive.Or(c.MaxSeries, DefaultMaxSeries)
	c.MaxIntervalValues = positive.Or(c.MaxIntervalValues, DefaultMaxIntervalValues)
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Clock == nil {
		c.Clock = systemClock{}
	}
}

func (c *Config) validate() error {
	if c.FlushInterval < time.Millisecond {
		return fmt.Errorf("statsd: flush interval %v is shorter than 1ms", c.FlushInterval)
	}
	for i, p := range c.Percentiles {
		if !(p >= -100 && p <= 100) || p == 0 {
			return fmt.Errorf("statsd: percentile threshold %v is not in [-100, 100] without 0", p)
		}
		if slices.Contains(c.Percentiles[:i], p) {
			return fmt.Errorf("statsd: percentile threshold %v given twice", p)
		}
	}
	for i, h := range c.Histograms {
		for j, b := range h.Bins {
			if math.IsNaN(b) || (j > 0 && b <= h.Bins[j-1]) {
				return fmt.Errorf("statsd: histogram %d (%q): bins %v are not ascending numbers", i, h.Metric, h.Bins)
			}
		}
	}
	ns := c.Namespace
	for _, s := range []string{c.PrefixStats, ns.GlobalPrefix, ns.Counter, ns.Timer, ns.Gauge, ns.Set, ns.GlobalSuffix} {
		if !utf8.ValidString(s) {
			return fmt.Errorf("statsd: prefix %q is not valid UTF-8", s)
		}
	}
	return nil
}

// aggConfig resolves c (filled and valid) for the aggregator.
func (c *Config) aggConfig() *aggConfig {
	ns := c.Namespace
	join := func(parts ...string) string {
		var b strings.Builder
		for _, p := range parts {
			if p != "" {
				b.WriteString(p)
				b.WriteByte('.')
			}
		}
		return b.String()
	}
	a := &aggConfig{
		intervalSec: c.FlushInterval.Seconds(),
		hists:       c.Histograms,
		deleteIdle:  c.DeleteIdleStats,
		maxSeries:   c.MaxSeries,
		maxValues:   c.MaxIntervalValues,
		internal:    c.InternalStats,
		prefixStats: c.PrefixStats,
		counterNS:   join(ns.GlobalPrefix, ns.Counter),
		timerNS:     join(ns.GlobalPrefix, ns.Timer),
		gaugeNS:     join(ns.GlobalPrefix, ns.Gauge),
		setNS:       join(ns.GlobalPrefix, ns.Set),
		statsNS:     join(ns.GlobalPrefix),
	}
	if ns.GlobalSuffix != "" {
		a.suffix = "." + ns.GlobalSuffix
	}
	for _, p := range c.Percentiles {
		a.pcts = append(a.pcts, newPct(p))
	}
	for _, h := range c.Histograms {
		names := make([]string, len(h.Bins))
		for j, b := range h.Bins {
			names[j] = binName(b)
		}
		a.binNames = append(a.binNames, names)
	}
	return a
}

// Clock is the time source of flushes; tests substitute one they move by
// hand.
type Clock interface {
	Now() time.Time
	// After is time.After: the flush loop waits on it for the next
	// multiple of the flush interval.
	After(d time.Duration) <-chan time.Time
}

type systemClock struct{}

func (systemClock) Now() time.Time                         { return time.Now() }
func (systemClock) After(d time.Duration) <-chan time.Time { return time.After(d) }
