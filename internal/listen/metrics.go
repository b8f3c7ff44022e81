package listen

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the counters and gauges of one protocol's listeners and queue,
// named <namespace>_<subsystem>_<name>: with namespace "aerie" and subsystem
// "graphite" they are
//
//	aerie_graphite_dropped_total{listener}              samples dropped because the queue was full (UDP)
//	aerie_graphite_queue_length                         batches waiting for the consumer
//	aerie_graphite_connections{listener}                open TCP connections
//	aerie_graphite_connections_refused_total{listener}  TCP connections closed at once over MaxConns
//	aerie_graphite_too_long_total{listener}             lines or datagrams longer than the limit
//
// One Metrics is shared by every listener and the queue of a protocol; a nil
// *Metrics counts nothing. The methods are safe for concurrent use.
type Metrics struct {
	dropped    *prometheus.CounterVec
	queueLen   prometheus.Gauge
	conns      *prometheus.GaugeVec
	refused    *prometheus.CounterVec
	tooLong    *prometheus.CounterVec
	namespace  string
	subsystem  string
	registerer prometheus.Registerer
}

// NewMetrics creates the metrics of namespace_subsystem and registers them with
// reg (nil: not registered, still counted, which tests use). Registering the
// same namespace and subsystem twice with one registry is an error.
func NewMetrics(namespace, subsystem string, reg prometheus.Registerer) (*Metrics, error) {
	perListener := func(name, help string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: subsystem, Name: name, Help: help,
		}, []string{"listener"})
	}
	m := &Metrics{
		namespace:  namespace,
		subsystem:  subsystem,
		registerer: reg,
		dropped: perListener("dropped_total",
			"Samples dropped because the ingestion queue was full (UDP listeners only; TCP blocks)."),
		queueLen: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: namespace, Subsystem: subsystem, Name: "queue_length",
			Help: "Batches of samples waiting in the ingestion queue.",
		}),
		conns: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: namespace, Subsystem: subsystem, Name: "connections",
			Help: "Open TCP connections.",
		}, []string{"listener"}),
		refused: perListener("connections_refused_total",
			"TCP connections closed at once because the listener had MaxConns open."),
		tooLong: perListener("too_long_total",
			"Lines or datagrams longer than the listener's limit (skipped)."),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.dropped, m.queueLen, m.conns, m.refused, m.tooLong} {
			if err := reg.Register(c); err != nil {
				var are prometheus.AlreadyRegisteredError
				if errors.As(err, &are) {
					return nil, fmt.Errorf("listen: metrics %s_%s already registered: %w", namespace, subsystem, err)
				}
				return nil, fmt.Errorf("listen: register metrics %s_%s: %w", namespace, subsystem, err)
			}
		}
	}
	return m, nil
}

// Namespace and Subsystem return the prefix the metrics were created with, so
// a protocol package can name its own metrics alike.
func (m *Metrics) Namespace() string { return m.namespace }

// Subsystem: see Namespace.
func (m *Metrics) Subsystem() string { return m.subsystem }

// Registerer returns the registerer given to NewMetrics (may be nil).
func (m *Metrics) Registerer() prometheus.Registerer { return m.registerer }

// Dropped returns the number of samples dropped by listener so far.
func (m *Metrics) Dropped(listener string) float64 {
	if m == nil {
		return 0
	}
	return counterValue(m.dropped.WithLabelValues(listener))
}

// TooLong returns the number of too long lines or datagrams of listener so far.
func (m *Metrics) TooLong(listener string) float64 {
	if m == nil {
		return 0
	}
	return counterValue(m.tooLong.WithLabelValues(listener))
}

// Refused returns the number of connections refused by listener so far.
func (m *Metrics) Refused(listener string) float64 {
	if m == nil {
		return 0
	}
	return counterValue(m.refused.WithLabelValues(listener))
}

func (m *Metrics) addDropped(listener string, n int) {
	if m != nil && n > 0 {
		m.dropped.WithLabelValues(listener).Add(float64(n))
	}
}

// AddTooLong counts one too long line or datagram of listener; the TCP and UDP
// servers call it themselves before calling the handler's TooLong.
func (m *Metrics) addTooLong(listener string) {
	if m != nil {
		m.tooLong.WithLabelValues(listener).Inc()
	}
}

func (m *Metrics) addRefused(listener string) {
	if m != nil {
		m.refused.WithLabelValues(listener).Inc()
	}
}

func (m *Metrics) addConns(listener string, d float64) {
	if m != nil {
		m.conns.WithLabelValues(listener).Add(d)
	}
}

func (m *Metrics) addQueueLen(d float64) {
	if m != nil {
		m.queueLen.Add(d)
	}
}
