package statsd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/stretchr/testify/require"

	"github.com/aerie-db/aerie/internal/listen"
	"github.com/aerie-db/aerie/internal/tsdb"
)

type listenBatch = listen.Batch[rec]

// fakeClock is moved by hand; waiting receives a value every time the
// flush loop starts waiting (so also once each flush is done).
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	waiters []fakeWaiter
	waiting chan struct{}
}

type fakeWaiter struct {
	at time.Time
	ch chan time.Time
}

func newFakeClock(now time.Time) *fakeClock {
	return &fakeClock{now: now, waiting: make(chan struct{}, 1)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	ch := make(chan time.Time, 1)
	c.waiters = append(c.waiters, fakeWaiter{c.now.Add(d), ch})
	c.mu.Unlock()
	c.waiting <- struct{}{}
	return ch
}

// set moves the clock to t and fires the waiters due.
func (c *fakeClock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
	keep := c.waiters[:0]
	for _, w := range c.waiters {
		if !w.at.After(t) {
			w.ch <- t
		} else {
			keep = append(keep, w)
		}
	}
	c.waiters = keep
}

// recorder is a storage.Appendable that keeps committed samples.
type recorder struct {
	mu       sync.Mutex
	commits  [][]recSample // guarded by mu
	failNext bool          // the next Commit fails
	refs     map[string]storage.SeriesRef
}

type recSample struct {
	lset labels.Labels
	ref  storage.SeriesRef // as given to Append
	t    int64
	v    float64
}

func (r *recorder) Appender(context.Context) storage.Appender { return &recAppender{r: r} }

// flush returns commit i as series string → value, checking that every
// sample has timestamp ts.
func (r *recorder) flush(t *testing.T, i int, ts int64) map[string]float64 {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	require.Greater(t, len(r.commits), i, "commits")
	out := map[string]float64{}
	for _, s := range r.commits[i] {
		require.Equal(t, ts, s.t, "timestamp of %s", s.lset)
		out[seriesString(s.lset)] = s.v
	}
	return out
}

func (r *recorder) numCommits() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.commits)
}

// seriesString is the Graphite path, then the other labels in braces.
func seriesString(l labels.Labels) string {
	name := l.Get(labels.MetricName)
	rest := l.DropMetricName()
	if rest.IsEmpty() {
		return name
	}
	return name + rest.String()
}

type recAppender struct {
	storage.Appender // unused methods: nil
	r                *recorder
	buf              []recSample
}

func (a *recAppender) Append(ref storage.SeriesRef, l labels.Labels, t int64, v float64) (storage.SeriesRef, error) {
	if math.IsNaN(v) {
		return 0, errors.New("NaN")
	}
	a.buf = append(a.buf, recSample{l, ref, t, v})
	a.r.mu.Lock()
	defer a.r.mu.Unlock()
	if a.r.refs == nil {
		a.r.refs = map[string]storage.SeriesRef{}
	}
	k := l.String()
	if a.r.refs[k] == 0 {
		a.r.refs[k] = storage.SeriesRef(len(a.r.refs) + 1)
	}
	if ref != 0 && ref != a.r.refs[k] {
		return 0, fmt.Errorf("ref %d given for %s, which has %d", ref, k, a.r.refs[k])
	}
	return a.r.refs[k], nil
}

func (a *recAppender) Commit() error {
	a.r.mu.Lock()
	defer a.r.mu.Unlock()
	if a.r.failNext {
		a.r.failNext = false
		return errors.New("disk on fire")
	}
	a.r.commits = append(a.r.commits, a.buf)
	return nil
}

func (a *recAppender) Rollback() error { return nil }

// waitFor polls cond until it holds (a wait, not a timing assertion: the
// deadline only bounds a broken test).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func counter(t *testing.T, reg *prometheus.Registry, name string, lbls ...string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metric:
		for _, m := range mf.GetMetric() {
			for i := 0; i+1 < len(lbls); i += 2 {
				found := false
				for _, lp := range m.GetLabel() {
					if lp.GetName() == lbls[i] && lp.GetValue() == lbls[i+1] {
						found = true
					}
				}
				if !found {
					continue metric
				}
			}
			if m.GetCounter() != nil {
				return m.GetCounter().GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	return 0
}

func send(t *testing.T, network string, addr net.Addr, payload string) {
	t.Helper()
	c, err := net.Dial(network, addr.String())
	require.NoError(t, err)
	_, err = c.Write([]byte(payload))
	require.NoError(t, err)
	require.NoError(t, c.Close())
}

// TestServerEndToEnd sends the spec's examples over real UDP and TCP
// sockets, lets the flush loop flush at the interval boundary, and
// checks what reached storage, then that Close flushes once more.
func TestServerEndToEnd(t *testing.T) {
	start := time.UnixMilli(1_700_000_003_000) // 3 s into an interval
	fc := newFakeClock(start)
	rec := &recorder{}
	reg := prometheus.NewRegistry()
	s, err := New(rec, Config{UDPAddr: "127.0.0.1:0", TCPAddr: "127.0.0.1:0", Clock: fc, Registerer: reg, InternalStats: true})
	require.NoError(t, err)
	require.NoError(t, s.Start())
	<-fc.waiting // the loop waits for the boundary

	send(t, "udp", s.UDPAddr(), "gorets:1|c\ngorets:1|c|@0.1\nbad line\nuniques:765|s|#env:prod")
	send(t, "udp", s.UDPAddr(), "uniques:766|s|#env:prod\nuniques:765|s|#env:prod")
	send(t, "tcp", s.TCPAddr(), "gaugor:333|g\ngaugor:-10|g\r\ngaugor:+4|g\n\nglork:320|ms|@0.1\nx:1|q\nlast:2|c") // the last line ends at EOF
	waitFor(t, "received metrics", func() bool {
		return counter(t, reg, "aerie_statsd_received_total", "listener", "udp") == 5 &&
			counter(t, reg, "aerie_statsd_received_total", "listener", "tcp") == 5
	})
	require.Equal(t, 1.0, counter(t, reg, "aerie_statsd_malformed_total", "listener", "udp"))
	require.Equal(t, 1.0, counter(t, reg, "aerie_statsd_malformed_total", "listener", "tcp"))
	require.Equal(t, 2.0, counter(t, reg, "aerie_statsd_packets_total", "listener", "udp"))
	require.Equal(t, 6.0, counter(t, reg, "aerie_statsd_packets_total", "listener", "tcp"), "non-empty lines")
	require.Equal(t, 5.0, counter(t, reg, "aerie_statsd_series"))
	require.Zero(t, rec.numCommits())

	boundary := time.UnixMilli(1_700_000_010_000)
	fc.set(boundary)
	<-fc.waiting // flushed, waiting for the next boundary
	want := merge(map[string]float64{
		"stats.counters.gorets.rate": 1.1, "stats.counters.gorets.count": 11,
		"stats.counters.last.rate": 0.2, "stats.counters.last.count": 2,
		`stats.sets.uniques.count{env="prod"}`: 2,
		"stats.gauges.gaugor":                  327,
		// 2 datagrams and 6 lines; 10 values and 2 bad lines.
		"stats.counters.statsd.packets_received.rate": 0.8, "stats.counters.statsd.packets_received.count": 8,
		"stats.counters.statsd.metrics_received.rate": 1.2, "stats.counters.statsd.metrics_received.count": 12,
		"stats.counters.statsd.bad_lines_seen.rate": 0.2, "stats.counters.statsd.bad_lines_seen.count": 2,
		"stats.statsd.numStats": 8,
	}, timer1("glork", 320, 10))
	require.Equal(t, want, rec.flush(t, 0, boundary.UnixMilli()))
	require.Equal(t, 1.0, counter(t, reg, "aerie_statsd_flushes_total"))
	require.Equal(t, float64(len(want)), counter(t, reg, "aerie_statsd_flushed_samples_total"))

	// Close flushes the next interval (nothing new: zeros, the gauge again)
	// at the clock's time.
	end := boundary.Add(4 * time.Second)
	fc.set(end)
	require.NoError(t, s.Close())
	require.NoError(t, s.Close())
	require.Equal(t, map[string]float64{
		"stats.counters.gorets.rate": 0, "stats.counters.gorets.count": 0,
		"stats.counters.last.rate": 0, "stats.counters.last.count": 0,
		`stats.sets.uniques.count{env="prod"}`: 0,
		"stats.gauges.gaugor":                  327,
		"stats.timers.glork.count":             0, "stats.timers.glork.count_ps": 0,
		"stats.counters.statsd.packets_received.rate": 0, "stats.counters.statsd.packets_received.count": 0,
		"stats.counters.statsd.metrics_received.rate": 0, "stats.counters.statsd.metrics_received.count": 0,
		"stats.counters.statsd.bad_lines_seen.rate": 0, "stats.counters.statsd.bad_lines_seen.count": 0,
		"stats.statsd.numStats": 8,
	}, rec.flush(t, 1, end.UnixMilli()))

	// The second flush appended by the refs the first one got.
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, smp := range rec.commits[1] {
		require.NotZero(t, smp.ref, "series %s appended without its ref", smp.lset)
	}
}

// TestServerUDPDropsCounted blocks the aggregator, overflows the queue
// and checks that every datagram is either aggregated or counted as
// dropped.
func TestServerUDPDropsCounted(t *testing.T) {
	rec := &recorder{}
	reg := prometheus.NewRegistry()
	fc := newFakeClock(time.UnixMilli(1_700_000_000_001))
	s, err := New(rec, Config{UDPAddr: "127.0.0.1:0", QueueSize: 2, Clock: fc, Registerer: reg})
	require.NoError(t, err)
	require.NoError(t, s.Start())
	<-fc.waiting

	const n = 50
	s.agg.mu.Lock() // the consumer blocks on its first batch
	c, err := net.Dial("udp", s.UDPAddr().String())
	require.NoError(t, err)
	for range n {
		_, err := c.Write([]byte("hits:1|c"))
		require.NoError(t, err)
	}
	require.NoError(t, c.Close())
	waitFor(t, "datagrams read", func() bool { return counter(t, reg, "aerie_statsd_packets_total", "listener", "udp") == n })
	s.agg.mu.Unlock()
	waitFor(t, "datagrams handled", func() bool {
		return counter(t, reg, "aerie_statsd_received_total", "listener", "udp")+counter(t, reg, "aerie_statsd_dropped_total", "listener", "udp") == n
	})
	dropped := counter(t, reg, "aerie_statsd_dropped_total", "listener", "udp")
	require.GreaterOrEqual(t, dropped, float64(n-4), "at most one batch held by the consumer and two queued")
	require.NoError(t, s.Close())
	require.Equal(t, n-dropped, rec.flush(t, 0, 1_700_000_000_001)["stats.counters.hits.count"])
}

// TestServerTCPBackpressure blocks the aggregator: the TCP reader waits
// instead of dropping, and everything arrives once it is released.
func TestServerTCPBackpressure(t *testing.T) {
	rec := &recorder{}
	reg := prometheus.NewRegistry()
	fc := newFakeClock(time.UnixMilli(1_700_000_000_001))
	s, err := New(rec, Config{TCPAddr: "127.0.0.1:0", QueueSize: 1, Clock: fc, Registerer: reg})
	require.NoError(t, err)
	require.NoError(t, s.Start())
	<-fc.waiting
	require.Nil(t, s.UDPAddr())

	s.agg.mu.Lock()
	c, err := net.Dial("tcp", s.TCPAddr().String())
	require.NoError(t, err)
	done := make(chan error, 1)
	const lines = 20000
	go func() {
		var err error
		for i := range lines {
			if _, err = fmt.Fprintf(c, "hits:1|c\nk%d:%d|g\n", i%10, i); err != nil {
				break
			}
		}
		done <- errors.Join(err, c.Close())
	}()
	waitFor(t, "the reader to block", func() bool { return counter(t, reg, "aerie_statsd_packets_total", "listener", "tcp") > 0 })
	s.agg.mu.Unlock()
	require.NoError(t, <-done)
	waitFor(t, "every line", func() bool { return counter(t, reg, "aerie_statsd_received_total", "listener", "tcp") == 2*lines })
	require.Zero(t, counter(t, reg, "aerie_statsd_dropped_total", "listener", "tcp"))
	require.NoError(t, s.Close())
	got := rec.flush(t, 0, 1_700_000_000_001)
	require.Equal(t, float64(lines), got["stats.counters.hits.count"])
	require.Equal(t, float64(lines-1), got["stats.gauges.k9"], "a connection's lines are aggregated in order")
}

func TestServerFlushTimestampsIncrease(t *testing.T) {
	rec := &recorder{}
	fc := newFakeClock(time.UnixMilli(5000))
	s, err := New(rec, Config{Clock: fc})
	require.NoError(t, err)
	require.NoError(t, s.Flush())
	require.NoError(t, s.Flush())
	require.NoError(t, s.flushAt(4000))
	rec.mu.Lock()
	defer rec.mu.Unlock()
	require.Len(t, rec.commits, 3)
	// Nothing was received: empty commits, but at increasing times.
	for _, c := range rec.commits {
		require.Empty(t, c)
	}
	require.Equal(t, int64(5002), s.lastFlush)
}

func TestServerCommitFailure(t *testing.T) {
	rec := &recorder{failNext: true}
	reg := prometheus.NewRegistry()
	fc := newFakeClock(time.UnixMilli(10_000))
	s, err := New(rec, Config{Clock: fc, Registerer: reg})
	require.NoError(t, err)
	h := &udpHandler{s: s, p: NewParser(Limits{}, false)}
	h.add = h.b.add
	feed := func(pkt string) {
		h.p.ParsePacket([]byte(pkt), h.add, func(e *ParseError) { t.Fatal(e) })
		s.consume(struct2batch(h.b.take()))
	}
	feed("g:5|g\nc:1|c")
	require.ErrorContains(t, s.Flush(), "disk on fire")
	require.Equal(t, 1.0, counter(t, reg, "aerie_statsd_flush_failures_total"))
	// The server goes on; the failed interval's counts are lost, the gauge
	// is not.
	feed("c:2|c")
	fc.set(time.UnixMilli(20_000))
	require.NoError(t, s.Flush())
	require.Equal(t, map[string]float64{"stats.gauges.g": 5, "stats.counters.c.count": 2, "stats.counters.c.rate": 0.2}, rec.flush(t, 0, 20_000))
}

func struct2batch(rs []rec) (b listenBatch) {
	b.Listener, b.Items = ListenerUDP, rs
	return b
}

func TestServerAppendErrors(t *testing.T) {
	rcd := &recorder{}
	reg := prometheus.NewRegistry()
	// 0/0: a NaN rate that the recorder refuses, counted.
	s, err := New(rcd, Config{Clock: newFakeClock(time.UnixMilli(10_000)), Registerer: reg})
	require.NoError(t, err)
	s.consume(struct2batch([]rec{{key: "t", typ: Gauge, value: math.Inf(1)}, {key: "u", typ: Gauge, value: math.Inf(-1)}}))
	s.agg.mu.Lock()
	s.agg.gauges["t"].v = math.NaN()
	s.agg.mu.Unlock()
	require.NoError(t, s.Flush())
	require.Equal(t, 1.0, counter(t, reg, "aerie_statsd_append_errors_total"))
	require.Equal(t, map[string]float64{"stats.gauges.u": math.Inf(-1)}, rcd.flush(t, 0, 10_000))
}

func TestServerLifecycle(t *testing.T) {
	rec := &recorder{}
	s, err := New(rec, Config{UDPAddr: "127.0.0.1:0"})
	require.NoError(t, err)
	require.Nil(t, s.UDPAddr())
	require.NoError(t, s.Start())
	require.Error(t, s.Start())
	require.NotNil(t, s.UDPAddr())
	require.Nil(t, s.TCPAddr())
	require.NoError(t, s.Close())
	require.Error(t, s.Start(), "no restart after Close")

	s, err = New(rec, Config{})
	require.NoError(t, err)
	require.NoError(t, s.Close(), "Close without Start")

	// A port in use: Start fails and leaves nothing running.
	s1, err := New(rec, Config{TCPAddr: "127.0.0.1:0"})
	require.NoError(t, err)
	require.NoError(t, s1.Start())
	s2, err := New(rec, Config{UDPAddr: "127.0.0.1:0", TCPAddr: s1.TCPAddr().String()})
	require.NoError(t, err)
	require.ErrorContains(t, s2.Start(), "address already in use")
	require.NoError(t, s1.Close())

	// Registering twice with one registry fails.
	reg := prometheus.NewRegistry()
	_, err = New(rec, Config{Registerer: reg})
	require.NoError(t, err)
	_, err = New(rec, Config{Registerer: reg})
	require.Error(t, err)
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []struct {
		cfg Config
		err string
	}{
		{Config{FlushInterval: time.Microsecond}, "shorter than 1ms"},
		{Config{Percentiles: []float64{0}}, "percentile threshold 0"},
		{Config{Percentiles: []float64{100.5}}, "percentile threshold 100.5"},
		{Config{Percentiles: []float64{math.NaN()}}, "percentile threshold NaN"},
		{Config{Percentiles: []float64{90, -10, 90}}, "percentile threshold 90 given twice"},
		{Config{Histograms: []Histogram{{Metric: "x", Bins: []float64{2, 1}}}}, `histogram 0 ("x")`},
		{Config{Histograms: []Histogram{{Bins: []float64{math.NaN()}}}}, "not ascending"},
		{Config{Namespace: Namespace{GlobalPrefix: "\xff"}}, "not valid UTF-8"},
	} {
		_, err := New(&recorder{}, c.cfg)
		require.ErrorContains(t, err, c.err)
	}
	d := DefaultConfig()
	require.Equal(t, "127.0.0.1:8125", d.UDPAddr)
	require.Equal(t, "127.0.0.1:8125", d.TCPAddr)
	d.fill()
	require.Equal(t, 10*time.Second, d.FlushInterval)
	require.Equal(t, []float64{90}, d.Percentiles)
	require.Equal(t, DefaultNamespace(), d.Namespace)
}

// TestServerEngine flushes into Aerie's engine and reads the series back
// by their Graphite paths (and a tag).
func TestServerEngine(t *testing.T) {
	db, err := tsdb.Open(t.TempDir(), &tsdb.Options{FlushCheckInterval: -1, PartitionRange: 2 * 3600_000, MaxFuture: 600_000})
	require.NoError(t, err)
	defer func() { require.NoError(t, db.Close()) }()
	iv := int64(10_000)
	t0 := time.Now().UnixMilli() / iv * iv
	fc := newFakeClock(time.UnixMilli(t0 + 1))
	s, err := New(db, Config{UDPAddr: "127.0.0.1:0", Clock: fc, Percentiles: []float64{}})
	require.NoError(t, err)
	require.NoError(t, s.Start())
	<-fc.waiting
	send(t, "udp", s.UDPAddr(), "gaugor:333|g\ngorets:1|c|@0.1|#env:prod")
	waitFor(t, "received", func() bool { return s.agg.seriesLen() == 2 })
	fc.set(time.UnixMilli(t0 + iv))
	<-fc.waiting
	send(t, "udp", s.UDPAddr(), "gaugor:-10|g\ngaugor:+4|g")
	waitFor(t, "received", func() bool {
		s.agg.mu.Lock()
		defer s.agg.mu.Unlock()
		return s.agg.gauges["gaugor"].v == 327
	})
	fc.set(time.UnixMilli(t0 + 2*iv))
	<-fc.waiting
	require.NoError(t, s.Close()) // flushes at t0+2*iv+1

	q, err := db.Querier(t0, t0+3*iv)
	require.NoError(t, err)
	defer q.Close()
	read := func(ms ...*labels.Matcher) map[string][][2]float64 {
		out := map[string][][2]float64{}
		ss := q.Select(context.Background(), true, nil, ms...)
		for ss.Next() {
			it := ss.At().Iterator(nil)
			for it.Next() != 0 {
				ts, v := it.At()
				out[seriesString(ss.At().Labels())] = append(out[seriesString(ss.At().Labels())], [2]float64{float64(ts - t0), v})
			}
			require.NoError(t, it.Err())
		}
		require.NoError(t, ss.Err())
		return out
	}
	require.Equal(t, map[string][][2]float64{
		"stats.gauges.gaugor": {{float64(iv), 333}, {float64(2 * iv), 327}, {float64(2*iv + 1), 327}},
	}, read(labels.MustNewMatcher(labels.MatchEqual, labels.MetricName, "stats.gauges.gaugor")))
	require.Equal(t, map[string][][2]float64{
		`stats.counters.gorets.count{env="prod"}`: {{float64(iv), 10}, {float64(2 * iv), 0}, {float64(2*iv + 1), 0}},
		`stats.counters.gorets.rate{env="prod"}`:  {{float64(iv), 1}, {float64(2 * iv), 0}, {float64(2*iv + 1), 0}},
	}, read(labels.MustNewMatcher(labels.MatchEqual, "env", "prod")))
}

// TestServerBadInputLogged: malformed lines and refused values are
// counted, and logged with their source at most once a second with the
// number of log lines suppressed.
func TestServerBadInputLogged(t *testing.T) {
	var logBuf syncBuffer
	reg := prometheus.NewRegistry()
	fc := newFakeClock(time.UnixMilli(1_700_000_000_001))
	s, err := New(&recorder{}, Config{UDPAddr: "127.0.0.1:0", Clock: fc, Registerer: reg, MaxSeries: 1,
		Logger: slog.New(slog.NewTextHandler(&logBuf, nil))})
	require.NoError(t, err)
	require.NoError(t, s.Start())
	<-fc.waiting
	send(t, "udp", s.UDPAddr(), "ok:1|c\nbad line one\nother:1|c")
	send(t, "udp", s.UDPAddr(), "x:1|zz")
	waitFor(t, "bad input counted", func() bool {
		return counter(t, reg, "aerie_statsd_malformed_total", "listener", "udp") == 2 &&
			counter(t, reg, "aerie_statsd_rejected_total", "reason", "series_limit") == 1 &&
			counter(t, reg, "aerie_statsd_received_total", "listener", "udp") == 1
	})
	fc.set(fc.Now().Add(time.Second))
	send(t, "udp", s.UDPAddr(), "third bad")
	waitFor(t, "third", func() bool { return counter(t, reg, "aerie_statsd_malformed_total", "listener", "udp") == 3 })
	require.NoError(t, s.Close())

	lines := strings.Split(strings.TrimSpace(logBuf.String()), "\n")
	require.Len(t, lines, 2, "log:\n%s", logBuf.String())
	require.Contains(t, lines[0], `err="statsd line 2, byte 19, metric \"bad line one\": no ':' after the metric name"`)
	require.Contains(t, lines[0], "src=127.0.0.1:")
	require.Contains(t, lines[0], "suppressed_since_last=0")
	require.Contains(t, lines[1], `metric \"third bad\"`)
	require.Contains(t, lines[1], "suppressed_since_last=2", "the second bad packet and the refused series")
}

// syncBuffer is a bytes.Buffer safe for the logger's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
