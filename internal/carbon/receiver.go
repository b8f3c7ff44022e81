package carbon

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"

	"github.com/aerie-db/aerie/internal/ingest"
	"github.com/aerie-db/aerie/internal/listen"
	"github.com/aerie-db/aerie/internal/positive"
)

// Listener names: the listener label of the metrics and log lines.
const (
	PlaintextTCP = "plaintext_tcp"
	PlaintextUDP = "plaintext_udp"
	PickleTCP    = "pickle_tcp"
)

// Defaults of Config (DefaultConfig holds the addresses).
const (
	DefaultQueueSize       = 1024
	DefaultBatchSize       = 5000
	DefaultMaxLineLen      = 16384 // Twisted's LineOnlyReceiver.MAX_LENGTH, carbon's limit
	DefaultMaxConns        = 1024
	DefaultIdleTimeout     = 5 * time.Minute
	DefaultMaxCachedSeries = 1 << 20
	DefaultCommitInterval  = 100 * time.Millisecond
)

// Config configures a Receiver. Start from DefaultConfig: in a Config's zero
// value every listener is off.
type Config struct {
	// PlaintextTCP, PlaintextUDP and PickleTCP are the listen addresses
	// ("host:port", port 0 picks one); "" turns the listener off.
	// DefaultConfig: 127.0.0.1:2003, 127.0.0.1:2003, 127.0.0.1:2004.
	PlaintextTCP string
	PlaintextUDP string
	PickleTCP    string

	// QueueSize is the number of batches waiting for the writer before TCP
	// readers block and UDP datagrams are dropped [1024].
	QueueSize int
	// BatchSize is the most samples in one batch of a reader [5000]; the
	// writer commits once 4×BatchSize samples are pending, and every
	// CommitInterval.
	BatchSize int
	// CommitInterval bounds how long an appended sample waits for its
	// commit [100ms]: larger commits cost the engine less per sample.
	CommitInterval time.Duration
	// MaxLineLen is the longest plaintext line in bytes [16384].
	MaxLineLen int
	// MaxPickleSize is the largest pickle payload [1 MiB, carbon's
	// PICKLE_RECEIVER_MAX_LENGTH]; a longer length prefix closes the
	// connection, as in carbon (the stream cannot be resynchronized).
	MaxPickleSize int
	// MaxDatagram is the largest UDP datagram [65507].
	MaxDatagram int
	// MaxConns is the most TCP connections per listener [1024].
	MaxConns int
	// IdleTimeout closes a TCP connection silent that long [5m; <0: never].
	IdleTimeout time.Duration
	// Limits bound paths and tags (see Limits for defaults).
	Limits Limits
	// MaxCachedSeries bounds the writer's path → series cache [1<<20].
	MaxCachedSeries int

	Logger     *slog.Logger          // nil: discarded
	Registerer prometheus.Registerer // nil: metrics not registered
	Now        func() time.Time      // clock for timestamp -1 [time.Now]
}

// DefaultConfig returns the configuration of carbon's default ports, on
// the loopback interface.
func DefaultConfig() Config {
	return Config{
		PlaintextTCP: "127.0.0.1:2003",
		PlaintextUDP: "127.0.0.1:2003",
		PickleTCP:    "127.0.0.1:2004",
	}
}

func (c *Config) setDefaults() {
	c.QueueSize = positive.Or(c.QueueSize, DefaultQueueSize)
	c.BatchSize = positive.Or(c.BatchSize, DefaultBatchSize)
	c.MaxLineLen = positive.Or(c.MaxLineLen, DefaultMaxLineLen)
	c.MaxPickleSize = positive.Or(c.MaxPickleSize, DefaultMaxPickleSize)
	c.MaxDatagram = positive.Or(c.MaxDatagram, listen.DefaultMaxDatagram)
	c.MaxConns = positive.Or(c.MaxConns, DefaultMaxConns)
	c.MaxCachedSeries = positive.Or(c.MaxCachedSeries, DefaultMaxCachedSeries)
	if c.IdleTimeout == 0 {
		c.IdleTimeout = DefaultIdleTimeout
	}
	c.CommitInterval = positive.Or(c.CommitInterval, DefaultCommitInterval)
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	c.Limits = c.Limits.withDefaults()
}

// Receiver runs carbon's plaintext (TCP, UDP) and pickle (TCP) receivers
// and writes what they receive through a storage.Appendable.
//
// Goroutines: the listeners' readers parse and queue batches; one writer
// (the queue's consumer) appends and commits them. The writer's fields
// (app, pending, appended, cache) are touched by it alone.
type Receiver struct {
	cfg Config
	db  storage.Appendable
	m   *metrics
	q   *listen.Queue[Sample]
	lm  *listen.Metrics
	log *rateLog

	batches sync.Pool // of *[]Sample, returned by the writer

	tcp, pickle *listen.TCPServer
	udp         *listen.UDPServer
	closeOnce   sync.Once
	started     bool

	// Writer state.
	app      storage.Appender
	pending  map[string]int // listener → samples appended, not committed
	appended int            // samples given to app, stored or not
	cache    map[string]cached

	// Commits run on their own goroutine, one at a time and in order,
	// while the writer fills the next appender: the batch a commit takes
	// grows with the time the previous one waited for its fsync, so
	// throughput is not bounded by the fsync latency.
	commits    chan commitJob // capacity 1: the writer blocks only with one commit running and one waiting
	commitDone chan struct{}
}

type commitJob struct {
	app     storage.Appender
	pending map[string]int
}

type cached struct {
	lset labels.Labels
	ref  storage.SeriesRef
}

// New checks cfg and registers the metrics; Start opens the listeners.
func New(cfg Config, db storage.Appendable) (*Receiver, error) {
	if db == nil {
		return nil, errors.New("carbon: no storage")
	}
	cfg.setDefaults()
	lm, err := listen.NewMetrics("aerie", "graphite", cfg.Registerer)
	if err != nil {
		return nil, err
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	r := &Receiver{
		cfg:     cfg,
		db:      db,
		m:       m,
		lm:      lm,
		log:     newRateLog(cfg.Logger, 10, 10*time.Second),
		pending: map[string]int{},
		cache:   map[string]cached{},
	}
	return r, nil
}

// Start opens the configured listeners and the writer. On error nothing is
// left open.
func (r *Receiver) Start() error {
	if r.started {
		return errors.New("carbon: receiver already started")
	}
	r.started = true
	r.commits = make(chan commitJob, 1)
	r.commitDone = make(chan struct{})
	go r.committer()
	r.q = listen.NewQueue(listen.QueueOptions{
		Size: r.cfg.QueueSize, Metrics: r.lm, Tick: r.tick, TickEvery: r.cfg.CommitInterval,
	}, r.write)
	tcpOpts := func(name string) listen.TCPOptions {
		return listen.TCPOptions{
			Name: name, MaxConns: r.cfg.MaxConns, IdleTimeout: r.cfg.IdleTimeout,
			MaxLineLen: r.cfg.MaxLineLen, Metrics: r.lm, Logger: r.cfg.Logger,
		}
	}
	var err error
	if a := r.cfg.PlaintextTCP; a != "" {
		r.tcp, err = listen.ListenLines(a, tcpOpts(PlaintextTCP), r.newLineConn)
	}
	if a := r.cfg.PlaintextUDP; a != "" && err == nil {
		r.udp, err = listen.ListenUDP(a, listen.UDPOptions{
			Name: PlaintextUDP, MaxDatagram: r.cfg.MaxDatagram, Metrics: r.lm, Logger: r.cfg.Logger,
		}, &udpHandler{r: r})
	}
	if a := r.cfg.PickleTCP; a != "" && err == nil {
		r.pickle, err = listen.ListenConns(a, tcpOpts(PickleTCP), r.servePickle)
	}
	if err != nil {
		r.Close()
		return fmt.Errorf("carbon: %w", err)
	}
	for _, l := range []struct {
		name string
		on   bool
		addr func() net.Addr
	}{{PlaintextTCP, r.tcp != nil, r.PlaintextTCPAddr}, {PlaintextUDP, r.udp != nil, r.PlaintextUDPAddr}, {PickleTCP, r.pickle != nil, r.PickleTCPAddr}} {
		if l.on {
			r.cfg.Logger.Info("graphite listener started", "listener", l.name, "addr", l.addr().String())
		}
	}
	return nil
}

// PlaintextTCPAddr returns the plaintext TCP listener's address (nil if off).
func (r *Receiver) PlaintextTCPAddr() net.Addr {
	if r.tcp == nil {
		return nil
	}
	return r.tcp.Addr()
}

// PlaintextUDPAddr returns the plaintext UDP listener's address (nil if off).
func (r *Receiver) PlaintextUDPAddr() net.Addr {
	if r.udp == nil {
		return nil
	}
	return r.udp.Addr()
}

// PickleTCPAddr returns the pickle listener's address (nil if off).
func (r *Receiver) PickleTCPAddr() net.Addr {
	if r.pickle == nil {
		return nil
	}
	return r.pickle.Addr()
}

// Close stops the listeners, lets every connection hand on the lines and
// frames it read, writes and commits everything queued, and returns when
// all goroutines are gone. It is idempotent.
func (r *Receiver) Close() error {
	var errs []error
	r.closeOnce.Do(func() {
		if r.tcp != nil {
			errs = append(errs, r.tcp.Close())
		}
		if r.udp != nil {
			errs = append(errs, r.udp.Close())
		}
		if r.pickle != nil {
			errs = append(errs, r.pickle.Close())
		}
		if r.q != nil {
			r.q.Close() // its last Tick hands the last appender over
			close(r.commits)
			<-r.commitDone
		}
	})
	return errors.Join(errs...)
}

func (r *Receiver) nowMs() int64 { return r.cfg.Now().UnixMilli() }

func (r *Receiver) getBatch() []Sample {
	if p, ok := r.batches.Get().(*[]Sample); ok {
		return (*p)[:0]
	}
	return make([]Sample, 0, min(r.cfg.BatchSize, 1024))
}

// producer is what the three readers share: a batch being filled and the
// accounting of one connection (or the UDP socket).
type producer struct {
	r        *Receiver
	listener string
	src      string
	batch    []Sample
	received prometheus.Counter
}

func (r *Receiver) newProducer(listener, src string) producer {
	return producer{r: r, listener: listener, src: src, received: r.m.received.WithLabelValues(listener)}
}

// add parses a result into the batch; it reports whether the batch is full.
func (p *producer) add(s Sample, err error, what []byte) bool {
	if err != nil {
		p.bad(err, what)
		return false
	}
	if p.batch == nil {
		p.batch = p.r.getBatch()
	}
	p.batch = append(p.batch, s)
	return len(p.batch) >= p.r.cfg.BatchSize
}

// bad counts and logs a line or entry that gave err.
func (p *producer) bad(err error, what []byte) {
	if errors.Is(err, ErrNaNValue) {
		p.r.m.rejected.WithLabelValues(p.listener, "nan_value").Inc()
		return
	}
	p.r.m.malformed.WithLabelValues(p.listener).Inc()
	if what == nil {
		p.r.log.warn("graphite: malformed input ignored", "listener", p.listener, "src", p.src, "err", err.Error())
		return
	}
	p.r.log.warn("graphite: malformed input ignored", "listener", p.listener, "src", p.src, "err", err.Error(), "line", quoteTrunc(what))
}

// take returns the batch for the queue, counted as received.
func (p *producer) take() listen.Batch[Sample] {
	b := listen.Batch[Sample]{Listener: p.listener, Items: p.batch}
	p.received.Add(float64(len(p.batch)))
	p.batch = nil
	return b
}

// put queues the batch, blocking while the queue is full (TCP).
func (p *producer) put() {
	if len(p.batch) == 0 {
		return
	}
	if err := p.r.q.Put(p.take()); err != nil {
		// Only after Close of the queue, which waits for the listeners first.
		p.r.cfg.Logger.Error("graphite: batch refused by a closed queue", "listener", p.listener, "err", err)
	}
}

// lineConn handles one plaintext TCP connection.
// lineConn reads the clock once per read from the socket (Flush), not
// once per line: the clock only stands in for a timestamp of -1, and
// reading it per line cost 8 % of a 500 K-series ingest.
type lineConn struct {
	producer
	now int64
}

func (r *Receiver) newLineConn(src net.Addr) listen.ConnHandler {
	return &lineConn{producer: r.newProducer(PlaintextTCP, src.String()), now: r.nowMs()}
}

func (c *lineConn) Line(line []byte) {
	s, err := ParseLine(line, c.now, c.r.cfg.Limits)
	if err != nil && isBlank(line) {
		return // carbon's LineOnlyReceiver passes empty lines, which fail; skipping them quietly is kinder
	}
	if c.add(s, err, line) {
		c.put()
	}
}

func (c *lineConn) TooLong(n int) {
	c.bad(&ParseError{Field: "line", Msg: fmt.Sprintf("%d bytes, over the limit of %d", n, c.r.cfg.MaxLineLen)}, nil)
}

func (c *lineConn) Flush() {
	c.put()
	c.now = c.r.nowMs()
}
func (c *lineConn) Close() {}

// udpHandler handles the plaintext UDP socket's datagrams.
type udpHandler struct{ r *Receiver }

func (h *udpHandler) Packet(pkt []byte, src net.Addr) {
	p := h.r.newProducer(PlaintextUDP, src.String())
	now := h.r.nowMs()
	forEachLinePy(pkt, func(line []byte) {
		s, err := ParseLine(line, now, h.r.cfg.Limits)
		if p.add(s, err, line) {
			h.r.q.TryPut(p.take())
		}
	})
	if len(p.batch) > 0 {
		h.r.q.TryPut(p.take())
	}
}

func (h *udpHandler) TooLong(n int, src net.Addr) {
	p := h.r.newProducer(PlaintextUDP, src.String())
	p.bad(&ParseError{Field: "datagram", Msg: fmt.Sprintf("over the limit of %d bytes", h.r.cfg.MaxDatagram)}, nil)
}

// servePickle reads carbon's pickle frames: a 4-byte big-endian length and
// that many bytes of pickle.
func (r *Receiver) servePickle(ctx context.Context, c net.Conn) {
	p := r.newProducer(PickleTCP, c.RemoteAddr().String())
	var hdr [4]byte
	var buf []byte
	for {
		if _, err := io.ReadFull(c, hdr[:]); err != nil {
			return // EOF, Close, idle timeout or a cut inside the header: nothing complete is lost
		}
		n := binary.BigEndian.Uint32(hdr[:])
		if uint64(n) > uint64(r.cfg.MaxPickleSize) {
			p.bad(&PickleError{Msg: fmt.Sprintf("frame of %d bytes, over the limit of %d; connection closed", n, r.cfg.MaxPickleSize)}, nil)
			return
		}
		if cap(buf) < int(n) {
			buf = make([]byte, n)
		}
		buf = buf[:n]
		if _, err := io.ReadFull(c, buf); err != nil {
			return // a partial frame is discarded
		}
		now := r.nowMs()
		err := DecodePickle(buf, func(e PickleEntry) {
			s, err := MakeSample(e.Path, e.T, e.V, now, r.cfg.Limits)
			if p.add(s, err, e.Path) {
				p.put()
			}
		}, func(e *EntryError) { p.bad(e, nil) })
		if err != nil {
			p.bad(err, nil)
		}
		p.put()
	}
}

// write is the queue's consumer: it appends a batch and commits when
// 4×BatchSize samples are pending; tick commits the rest every
// CommitInterval and at Close.
func (r *Receiver) write(b listen.Batch[Sample]) {
	if r.app == nil {
		r.app = r.db.Appender(context.Background())
	}
	n := 0
	for _, s := range b.Items {
		c, ok := r.cache[s.Path]
		if !ok {
			c.lset = Labels(s.Path)
		}
		ref, err := r.app.Append(c.ref, c.lset, s.T, s.V)
		if err != nil {
			reason := RejectReason(err)
			r.m.rejected.WithLabelValues(b.Listener, reason).Inc()
			r.log.warn("graphite: sample rejected", "listener", b.Listener, "reason", reason, "path", s.Path, "t", s.T, "err", err.Error())
			continue
		}
		n++
		if !ok || c.ref != ref {
			if !ok && len(r.cache) >= r.cfg.MaxCachedSeries {
				clear(r.cache)
			}
			c.ref = ref
			r.cache[s.Path] = c
		}
	}
	r.pending[b.Listener] += n
	items := b.Items[:0]
	clear(b.Items) // drop the path strings
	r.batches.Put(&items)
	r.appended += len(b.Items)
	switch {
	case r.appended >= maxCommitBatches*r.cfg.BatchSize:
		r.handOver(true) // bounds the memory of uncommitted samples
	case r.appended >= 4*r.cfg.BatchSize:
		r.handOver(false)
	}
}

// maxCommitBatches×BatchSize samples is the most one appender holds: past
// it the writer waits for the committer.
const maxCommitBatches = 64

func (r *Receiver) tick() {
	if r.app != nil {
		r.handOver(true)
	}
}

// handOver gives the appender to the committer; without wait it does so
// only if the committer can take it now, else the writer keeps appending.
func (r *Receiver) handOver(wait bool) {
	job := commitJob{app: r.app, pending: r.pending}
	if wait {
		r.commits <- job
	} else {
		select {
		case r.commits <- job:
		default:
			return
		}
	}
	r.app, r.appended, r.pending = nil, 0, map[string]int{}
}

// committer commits the appenders in the order the writer handed them
// over, so a series' samples reach the engine in time order.
func (r *Receiver) committer() {
	defer close(r.commitDone)
	for job := range r.commits {
		err := job.app.Commit()
		for l, n := range job.pending {
			if err != nil {
				r.m.rejected.WithLabelValues(l, "commit_failed").Add(float64(n))
			} else {
				r.m.stored.WithLabelValues(l).Add(float64(n))
			}
		}
		if err != nil {
			r.log.warn("graphite: commit failed", "err", err.Error())
		}
	}
}

// RejectReason names why storage refused a sample, for the reason label:
// the snake_case prefix of the engine's own errors ("too_far_in_future:
// ..."), else the reason the ingest handlers give the error.
func RejectReason(err error) string {
	msg := err.Error()
	if i := strings.IndexByte(msg, ':'); i > 0 && isSnake(msg[:i]) {
		return msg[:i]
	}
	return ingest.AppendReason(err)
}

func isSnake(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= 'a' && c <= 'z' || c == '_') {
			return false
		}
	}
	return strings.IndexByte(s, '_') > 0
}

func isBlank(line []byte) bool {
	for i := 0; i < len(line); i++ {
		if w, _ := spaceAt(line, i); !w {
			return false
		}
	}
	return true
}

// forEachLinePy calls fn for every line of b as Python's str.splitlines()
// splits them (carbon's MetricDatagramReceiver), ASCII line breaks only,
// skipping blank lines.
func forEachLinePy(b []byte, fn func(line []byte)) {
	start := 0
	for i := 0; i <= len(b); i++ {
		if i < len(b) {
			switch b[i] {
			case '\n', '\r', '\v', '\f', 0x1c, 0x1d, 0x1e:
			default:
				continue
			}
		}
		if line := b[start:i]; !isBlank(line) {
			fn(line)
		}
		start = i + 1
	}
}

// quoteTrunc returns b for a log line, cut at 400 bytes as carbon does.
func quoteTrunc(b []byte) string {
	if len(b) > 400 {
		return string(b[:400]) + "..."
	}
	return string(b)
}
