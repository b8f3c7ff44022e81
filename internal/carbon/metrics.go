package carbon

import (
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	received  *prometheus.CounterVec
	malformed *prometheus.CounterVec
	rejected  *prometheus.CounterVec
	stored    *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	cv := func(name, help string, l ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "aerie", Subsystem: "graphite", Name: name, Help: help}, l)
	}
	m := &metrics{
		received:  cv("received_total", "Graphite samples parsed and queued for storage.", "listener"),
		malformed: cv("malformed_total", "Graphite lines, pickle frames or entries that did not parse (ignored).", "listener"),
		rejected:  cv("rejected_total", "Graphite samples parsed but not stored, by reason (nan_value, out_of_order, too_old, duplicate, ...).", "listener", "reason"),
		stored:    cv("stored_total", "Graphite samples appended and committed to storage.", "listener"),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.received, m.malformed, m.rejected, m.stored} {
			if err := reg.Register(c); err != nil {
				return nil, fmt.Errorf("carbon: register metrics: %w", err)
			}
		}
	}
	return m, nil
}

// rateLog logs at most burst messages per period and says how many it
// suppressed in between.
type rateLog struct {
	l      *slog.Logger
	burst  int
	period time.Duration

	mu         sync.Mutex // guards following
	start      time.Time
	n          int
	suppressed int
}

func newRateLog(l *slog.Logger, burst int, period time.Duration) *rateLog {
	return &rateLog{l: l, burst: burst, period: period}
}

func (r *rateLog) warn(msg string, args ...any) {
	now := time.Now()
	r.mu.Lock()
	if now.Sub(r.start) >= r.period {
		r.start, r.n = now, 0
	}
	if r.n >= r.burst {
		r.suppressed++
		r.mu.Unlock()
		return
	}
	r.n++
	s := r.suppressed
	r.suppressed = 0
	r.mu.Unlock()
	if s > 0 {
		args = append(args, "suppressed_before", s)
	}
	r.l.Warn(msg, args...)
}
