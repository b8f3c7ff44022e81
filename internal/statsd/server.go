package statsd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"

	"github.com/aerie-db/aerie/internal/listen"
	"github.com/aerie-db/aerie/internal/mathx"
)

// Listener names, as in the metrics' listener label.
const (
	ListenerUDP = "udp"
	ListenerTCP = "tcp"
)

// maxBatch is the most values a TCP connection batches before queueing
// them, whether or not its reader has caught up.
const maxBatch = 4096

// malformedLogEvery spaces the log lines about malformed input: the
// others are counted and the count is logged with the next line.
const malformedLogEvery = time.Second

// Server receives statsd over UDP and TCP, aggregates and flushes to
// storage every flush interval.
//
// Locking: mu guards the lifecycle fields; flushMu serializes flushes and
// guards lastFlush, snap and every series.out. They are never held
// together.
type Server struct {
	cfg  Config
	app  storage.Appendable
	acfg *aggConfig
	agg  *aggregator
	m    *metrics
	lm   *listen.Metrics
	logl logLimiter

	// Internal stats of the current interval (Config.InternalStats).
	packets, metricsIn, badLines atomic.Int64

	mu       sync.Mutex // guards following
	started  bool
	closed   bool
	udp      *listen.UDPServer
	tcp      *listen.TCPServer
	q        *listen.Queue[rec]
	stop     chan struct{}
	loopDone chan struct{}

	flushMu   sync.Mutex // guards following and series.out
	lastFlush int64      // ms; flush timestamps strictly increase
	snap      snapshot
}

// New returns a server that flushes into app. It listens only once
// started.
func New(app storage.Appendable, cfg Config) (*Server, error) {
	cfg.fill()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, app: app, acfg: cfg.aggConfig()}
	s.agg = newAggregator(s.acfg)
	var err error
	if s.lm, err = listen.NewMetrics("aerie", "statsd", cfg.Registerer); err != nil {
		return nil, err
	}
	if s.m, err = newMetrics(cfg.Registerer, s.agg); err != nil {
		return nil, err
	}
	return s, nil
}

// Start opens the listeners and starts the flush loop.
func (s *Server) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started || s.closed {
		return errors.New("statsd: server already started")
	}
	q := listen.NewQueue(listen.QueueOptions{Size: s.cfg.QueueSize, Metrics: s.lm}, s.consume)
	var udp *listen.UDPServer
	var err error
	if s.cfg.UDPAddr != "" {
		h := &udpHandler{s: s, q: q, p: NewParser(s.cfg.Limits, s.cfg.KeepNames)}
		h.add = h.b.add
		udp, err = listen.ListenUDP(s.cfg.UDPAddr, listen.UDPOptions{
			Name: ListenerUDP, MaxDatagram: s.cfg.MaxPacketBytes, ReadBuffer: s.cfg.UDPReadBuffer,
			Metrics: s.lm, Logger: s.cfg.Logger,
		}, h)
		if err != nil {
			q.Close()
			return fmt.Errorf("statsd: %w", err)
		}
	}
	var tcp *listen.TCPServer
	if s.cfg.TCPAddr != "" {
		tcp, err = listen.ListenLines(s.cfg.TCPAddr, listen.TCPOptions{
			Name: ListenerTCP, MaxConns: s.cfg.MaxConns, IdleTimeout: s.cfg.IdleTimeout,
			MaxLineLen: s.cfg.MaxPacketBytes, Metrics: s.lm, Logger: s.cfg.Logger,
		}, func(src net.Addr) listen.ConnHandler { return s.newConn(q, src) })
		if err != nil {
			if udp != nil {
				udp.Close()
			}
			q.Close()
			return fmt.Errorf("statsd: %w", err)
		}
	}
	s.q, s.udp, s.tcp = q, udp, tcp
	s.stop, s.loopDone = make(chan struct{}), make(chan struct{})
	s.started = true
	go s.loop(s.stop, s.loopDone)
	return nil
}

// UDPAddr returns the UDP listener's address (nil if off or not started).
func (s *Server) UDPAddr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.udp == nil {
		return nil
	}
	return s.udp.Addr()
}

// TCPAddr returns the TCP listener's address (nil if off or not started).
func (s *Server) TCPAddr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tcp == nil {
		return nil
	}
	return s.tcp.Addr()
}

// Close stops the listeners, aggregates everything they read, stops the
// flush loop and flushes once more, so nothing received is lost. It is
// idempotent.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed || !s.started {
		s.closed = true
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	udp, tcp, q, stop, done := s.udp, s.tcp, s.q, s.stop, s.loopDone
	s.mu.Unlock()

	var errs []error
	if tcp != nil {
		errs = append(errs, tcp.Close())
	}
	if udp != nil {
		errs = append(errs, udp.Close())
	}
	q.Close()
	close(stop)
	<-done
	errs = append(errs, s.Flush())
	return errors.Join(errs...)
}

// Flush flushes now (Clock.Now), outside the flush loop's schedule.
func (s *Server) Flush() error {
	return s.flushAt(s.cfg.Clock.Now().UnixMilli())
}

// loop flushes at every multiple of the flush interval until stop.
func (s *Server) loop(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	iv := s.cfg.FlushInterval.Milliseconds()
	for {
		now := s.cfg.Clock.Now().UnixMilli()
		next := (mathx.FloorDiv(now, iv) + 1) * iv
		select {
		case <-s.cfg.Clock.After(time.Duration(next-now) * time.Millisecond):
			s.flushAt(next) // errors are logged and counted
		case <-stop:
			return
		}
	}
}

// flushAt sends the interval's statistics at ts (ms; moved past the
// previous flush if not after it) in one Commit.
func (s *Server) flushAt(ts int64) error {
	s.flushMu.Lock()
	defer s.flushMu.Unlock()
	if ts <= s.lastFlush {
		ts = s.lastFlush + 1
	}
	s.lastFlush = ts
	internal := [3]float64{float64(s.packets.Swap(0)), float64(s.metricsIn.Swap(0)), float64(s.badLines.Swap(0))}
	s.agg.snapshot(internal, &s.snap)
	e := &appendEmitter{acfg: s.acfg, app: s.app.Appender(context.Background()), ts: ts}
	s.acfg.compute(&s.snap, e)
	// Let the interval's timer values and forgotten series go.
	clear(s.snap.counters)
	clear(s.snap.gauges)
	clear(s.snap.timers)
	clear(s.snap.sets)

	s.m.flushes.Inc()
	s.m.flushedSamples.Add(float64(e.n))
	if e.errs > 0 {
		s.m.appendErrors.Add(float64(e.errs))
		s.cfg.Logger.Warn("statsd flush: samples refused by storage", "refused", e.errs, "stored", e.n, "first_err", e.firstErr)
	}
	if err := e.app.Commit(); err != nil {
		s.m.flushFailures.Inc()
		s.cfg.Logger.Error("statsd flush: commit failed, the interval's samples are lost", "samples", e.n, "err", err)
		return fmt.Errorf("statsd flush at %d: %w", ts, err)
	}
	return nil
}

// appendEmitter appends a flush's samples, building each output series'
// labels once and remembering its storage ref.
type appendEmitter struct {
	acfg     *aggConfig
	app      storage.Appender
	ts       int64
	b        labels.ScratchBuilder
	n, errs  int
	firstErr error
}

func (e *appendEmitter) emit(sr *series, idx int, prefix, stat string, v float64) {
	for len(sr.out) <= idx {
		sr.out = append(sr.out, outSeries{})
	}
	o := &sr.out[idx]
	if o.lset.IsEmpty() {
		o.lset = e.acfg.labels(&e.b, sr, prefix, stat)
	}
	ref, err := e.app.Append(o.ref, o.lset, e.ts, v)
	if err != nil {
		e.errs++
		if e.firstErr == nil {
			e.firstErr = fmt.Errorf("series %s: %w", o.lset, err)
		}
		o.ref = 0
		return
	}
	o.ref = ref
	e.n++
}

// labels returns the labels of statistic stat of sr: __name__ is its
// Graphite path, the tags are the other labels.
func (c *aggConfig) labels(b *labels.ScratchBuilder, sr *series, prefix, stat string) labels.Labels {
	b.Reset()
	b.Add(labels.MetricName, c.name(sr, prefix, stat))
	for _, t := range sr.tags {
		b.Add(t.Name, t.Value)
	}
	b.Sort()
	return b.Labels()
}

// name returns the Graphite path of statistic stat of sr.
func (c *aggConfig) name(sr *series, prefix, stat string) string {
	return prefix + sr.name + stat + c.suffix
}

// consume aggregates a batch from the queue (the queue's one consumer).
func (s *Server) consume(b listen.Batch[rec]) {
	sr, vr := s.agg.addBatch(b.Items)
	s.m.received(b.Listener).Add(float64(len(b.Items) - sr - vr))
	if sr > 0 {
		s.m.rejected.WithLabelValues("series_limit").Add(float64(sr))
		s.logMalformed(b.Listener, nil, errSeriesLimit, "refused", sr)
	}
	if vr > 0 {
		s.m.rejected.WithLabelValues("values_limit").Add(float64(vr))
		s.logMalformed(b.Listener, nil, errValuesLimit, "refused", vr)
	}
}

// malformed counts and logs a malformed line.
func (s *Server) malformed(listener string, src net.Addr, err error, lines int) {
	s.m.malformed(listener).Add(float64(lines))
	s.badLines.Add(int64(lines))
	s.metricsIn.Add(int64(lines))
	s.logMalformed(listener, src, err, "lines", lines)
}

// logMalformed logs bad input at most once per malformedLogEvery, with the
// number of log lines suppressed since the last.
func (s *Server) logMalformed(listener string, src net.Addr, err error, what string, n int) {
	ok, suppressed := s.logl.allow(s.cfg.Clock.Now())
	if !ok {
		return
	}
	args := []any{"listener", listener, what, n, "err", err, "suppressed_since_last", suppressed}
	if src != nil {
		args = append(args, "src", src.String())
	}
	s.cfg.Logger.Warn("statsd: bad input", args...)
}

// logLimiter lets one event through per malformedLogEvery.
type logLimiter struct {
	mu         sync.Mutex // guards following
	next       time.Time
	suppressed int
}

func (l *logLimiter) allow(now time.Time) (bool, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Before(l.next) {
		l.suppressed++
		return false, 0
	}
	n := l.suppressed
	l.next, l.suppressed = now.Add(malformedLogEvery), 0
	return true, n
}

// udpHandler parses datagrams (one goroutine: listen's read loop).
type udpHandler struct {
	s   *Server
	q   *listen.Queue[rec]
	p   *Parser
	b   batcher
	add func(*Metric) // b.add, bound once
}

func (h *udpHandler) Packet(pkt []byte, src net.Addr) {
	s := h.s
	s.packets.Add(1)
	s.m.packets(ListenerUDP).Inc()
	n, skipped := h.p.ParsePacket(pkt, h.add, func(e *ParseError) {
		s.malformed(ListenerUDP, src, e, 1)
	})
	if skipped > 1 {
		s.malformed(ListenerUDP, src, fmt.Errorf("%d more lines after the limit refused", skipped-1), skipped-1)
	}
	s.metricsIn.Add(int64(n))
	h.q.TryPut(listen.Batch[rec]{Listener: ListenerUDP, Items: h.b.take()})
}

func (h *udpHandler) TooLong(n int, src net.Addr) {
	h.s.logMalformed(ListenerUDP, src, fmt.Errorf("datagram of %d bytes or more, over %d", n, h.s.cfg.MaxPacketBytes), "datagrams", 1)
}

// tcpConn parses the lines of one TCP connection (one goroutine).
type tcpConn struct {
	s    *Server
	q    *listen.Queue[rec]
	src  net.Addr
	p    *Parser
	b    batcher
	add  func(*Metric)
	line int
}

func (s *Server) newConn(q *listen.Queue[rec], src net.Addr) listen.ConnHandler {
	c := &tcpConn{s: s, q: q, src: src, p: NewParser(s.cfg.Limits, s.cfg.KeepNames)}
	c.add = c.b.add
	return c
}

func (c *tcpConn) Line(line []byte) {
	c.line++
	if len(line) == 0 || (len(line) == 1 && line[0] == '\r') {
		return
	}
	c.s.packets.Add(1)
	c.s.m.packets(ListenerTCP).Inc()
	n := c.b.len()
	if err := c.p.ParseLine(line, c.add); err != nil {
		var pe *ParseError
		if errors.As(err, &pe) {
			pe.Line = c.line
		}
		c.s.malformed(ListenerTCP, c.src, err, 1)
		return
	}
	c.s.metricsIn.Add(int64(c.b.len() - n))
	if c.b.len() >= maxBatch {
		c.Flush()
	}
}

func (c *tcpConn) TooLong(n int) {
	c.line++
	c.s.logMalformed(ListenerTCP, c.src, fmt.Errorf("line %d of %d bytes, over %d", c.line, n, c.s.cfg.MaxPacketBytes), "lines", 1)
}

// Flush queues the batch, blocking while the queue is full (backpressure).
func (c *tcpConn) Flush() {
	if err := c.q.Put(listen.Batch[rec]{Listener: ListenerTCP, Items: c.b.take()}); err != nil {
		// Close closes the listeners before the queue: not expected.
		c.s.cfg.Logger.Error("statsd: batch lost", "listener", ListenerTCP, "src", c.src.String(), "err", err)
	}
}

func (c *tcpConn) Close() {}

// metrics are the server's own, beside listen's.
type metrics struct {
	packetsVec, receivedVec, malformedVec *prometheus.CounterVec
	rejected                              *prometheus.CounterVec
	flushes, flushFailures                prometheus.Counter
	flushedSamples, appendErrors          prometheus.Counter
	series                                prometheus.GaugeFunc

	// children by listener, resolved once
	packetsC, receivedC, malformedC sync.Map
}

func newMetrics(reg prometheus.Registerer, agg *aggregator) (*metrics, error) {
	o := func(name, help string) prometheus.CounterOpts {
		return prometheus.CounterOpts{Namespace: "aerie", Subsystem: "statsd", Name: name, Help: help}
	}
	m := &metrics{
		packetsVec:     prometheus.NewCounterVec(o("packets_total", "Datagrams (UDP) and lines (TCP) received."), []string{"listener"}),
		receivedVec:    prometheus.NewCounterVec(o("received_total", "Metric values aggregated."), []string{"listener"}),
		malformedVec:   prometheus.NewCounterVec(o("malformed_total", "Malformed lines (refused whole)."), []string{"listener"}),
		rejected:       prometheus.NewCounterVec(o("rejected_total", "Well-formed values refused by a limit (series_limit: MaxSeries, values_limit: MaxIntervalValues)."), []string{"reason"}),
		flushes:        prometheus.NewCounter(o("flushes_total", "Flushes to storage.")),
		flushFailures:  prometheus.NewCounter(o("flush_failures_total", "Flushes whose commit failed (their samples are lost).")),
		flushedSamples: prometheus.NewCounter(o("flushed_samples_total", "Samples appended by flushes.")),
		appendErrors:   prometheus.NewCounter(o("append_errors_total", "Samples of flushes refused by storage.")),
		series: prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "aerie", Subsystem: "statsd", Name: "series",
			Help: "Distinct statsd metrics held by the aggregator."}, func() float64 { return float64(agg.seriesLen()) }),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.packetsVec, m.receivedVec, m.malformedVec, m.rejected, m.flushes, m.flushFailures, m.flushedSamples, m.appendErrors, m.series} {
			if err := reg.Register(c); err != nil {
				return nil, fmt.Errorf("statsd: register metrics: %w", err)
			}
		}
	}
	return m, nil
}

func child(cache *sync.Map, vec *prometheus.CounterVec, listener string) prometheus.Counter {
	if c, ok := cache.Load(listener); ok {
		return c.(prometheus.Counter)
	}
	c := vec.WithLabelValues(listener)
	cache.Store(listener, c)
	return c
}

func (m *metrics) packets(l string) prometheus.Counter  { return child(&m.packetsC, m.packetsVec, l) }
func (m *metrics) received(l string) prometheus.Counter { return child(&m.receivedC, m.receivedVec, l) }
func (m *metrics) malformed(l string) prometheus.Counter {
	return child(&m.malformedC, m.malformedVec, l)
}
