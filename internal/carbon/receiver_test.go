package carbon

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/stretchr/testify/require"

	"github.com/aerie-db/aerie/internal/tsdb"
)

// recDB is a storage.Appendable recording committed samples. gate, if
// set, is received from before every Append (a slow or stuck storage);
// reject, if set, refuses samples.
type recDB struct {
	gate   chan struct{}
	reject func(l labels.Labels, t int64) error

	mu      sync.Mutex
	samples []rec
	commits int
}

type rec struct {
	L string
	T int64
	V float64
}

func (d *recDB) Appender(context.Context) storage.Appender { return &recApp{d: d} }

func (d *recDB) get() []rec {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]rec(nil), d.samples...)
}

type recApp struct {
	storage.Appender // only Append, Commit and Rollback are used
	d                *recDB
	buf              []rec
}

func (a *recApp) Append(ref storage.SeriesRef, l labels.Labels, t int64, v float64) (storage.SeriesRef, error) {
	if a.d.gate != nil {
		<-a.d.gate
	}
	if a.d.reject != nil {
		if err := a.d.reject(l, t); err != nil {
			return 0, err
		}
	}
	a.buf = append(a.buf, rec{l.String(), t, v})
	return 1, nil
}

func (a *recApp) Commit() error {
	a.d.mu.Lock()
	a.d.samples = append(a.d.samples, a.buf...)
	a.d.commits++
	a.d.mu.Unlock()
	a.buf = nil
	return nil
}

func (a *recApp) Rollback() error { a.buf = nil; return nil }

// start runs a receiver on 127.0.0.1:0 for every listener.
func start(t *testing.T, db storage.Appendable, edit func(*Config)) *Receiver {
	t.Helper()
	cfg := Config{PlaintextTCP: "127.0.0.1:0", PlaintextUDP: "127.0.0.1:0", PickleTCP: "127.0.0.1:0", Registerer: prometheus.NewRegistry()}
	if edit != nil {
		edit(&cfg)
	}
	r, err := New(cfg, db)
	require.NoError(t, err)
	require.NoError(t, r.Start())
	t.Cleanup(func() { r.Close() })
	return r
}

func (r *Receiver) count(vec *prometheus.CounterVec, l ...string) float64 {
	return testutil.ToFloat64(vec.WithLabelValues(l...))
}

// checkAccounting checks invariant 2 after Close: every sample parsed was
// stored, rejected or dropped.
func checkAccounting(t *testing.T, r *Receiver) {
	t.Helper()
	for _, l := range []string{PlaintextTCP, PlaintextUDP, PickleTCP} {
		rejected := 0.0
		for _, reason := range []string{"out_of_order", "too_old", "duplicate", "out_of_bounds", "other", "commit_failed"} {
			rejected += r.count(r.m.rejected, l, reason)
		}
		require.Equal(t, r.count(r.m.received, l), r.count(r.m.stored, l)+rejected+r.lm.Dropped(l), "listener %s: received != stored+rejected+dropped", l)
	}
}

func send(t *testing.T, network string, addr net.Addr, data ...[]byte) {
	t.Helper()
	c, err := net.Dial(network, addr.String())
	require.NoError(t, err)
	defer c.Close()
	for _, d := range data {
		_, err := c.Write(d)
		require.NoError(t, err)
	}
}

func frame(payload []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(payload))), payload...)
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	require.Eventually(t, cond, 10*time.Second, 2*time.Millisecond, what)
}

// TestEndToEndEngine sends over all three listeners into a real engine and
// reads the samples back.
func TestEndToEndEngine(t *testing.T) {
	db, err := tsdb.Open(t.TempDir(), &tsdb.Options{FlushCheckInterval: -1})
	require.NoError(t, err)
	defer db.Close()
	base := time.Now().Add(-10*time.Minute).Unix() / 10 * 10
	r := start(t, db, nil)
	var lines bytes.Buffer
	for i := range 5 {
		fmt.Fprintf(&lines, "servers.web1.cpu %d %d\n", i, base+int64(i)*10)
		fmt.Fprintf(&lines, "servers.web1.mem;dc=eu;env=prod %d.5 %d\n", i, base+int64(i)*10)
	}
	send(t, "tcp", r.PlaintextTCPAddr(), lines.Bytes())
	send(t, "udp", r.PlaintextUDPAddr(), fmt.Appendf(nil, "udp.a 7 %d\nudp.b 8 %d", base, base))
	pk := AppendPickle(nil, []PickleEntry{{Path: []byte("pk.x"), T: float64(base), V: 1.25}, {Path: []byte("pk.y;k=v"), T: float64(base + 10), V: -3}})
	send(t, "tcp", r.PickleTCPAddr(), frame(pk))
	waitFor(t, "all received", func() bool {
		return r.count(r.m.received, PlaintextTCP) == 10 && r.count(r.m.received, PlaintextUDP) == 2 && r.count(r.m.received, PickleTCP) == 2
	})
	require.NoError(t, r.Close())
	checkAccounting(t, r)

	q, err := db.Querier(math.MinInt64, math.MaxInt64)
	require.NoError(t, err)
	defer q.Close()
	got := map[string][]string{}
	ss := q.Select(context.Background(), true, nil, labels.MustNewMatcher(labels.MatchRegexp, "__name__", ".+"))
	for ss.Next() {
		s := ss.At()
		it := s.Iterator(nil)
		for it.Next() != 0 {
			ts, v := it.At()
			got[s.Labels().String()] = append(got[s.Labels().String()], fmt.Sprintf("%d=%g", (ts-base*1000)/1000, v))
		}
		require.NoError(t, it.Err())
	}
	require.NoError(t, ss.Err())
	require.Equal(t, map[string][]string{
		`{__name__="servers.web1.cpu"}`:                      {"0=0", "10=1", "20=2", "30=3", "40=4"},
		`{__name__="servers.web1.mem", dc="eu", env="prod"}`: {"0=0.5", "10=1.5", "20=2.5", "30=3.5", "40=4.5"},
		`{__name__="udp.a"}`:                                 {"0=7"},
		`{__name__="udp.b"}`:                                 {"0=8"},
		`{__name__="pk.x"}`:                                  {"0=1.25"},
		`{__name__="pk.y", k="v"}`:                           {"10=-3"},
	}, got)
}

// TestMalformedKeepsListening: bad lines, frames and datagrams are counted
// and the listeners go on, on the same connection and new ones.
func TestMalformedKeepsListening(t *testing.T) {
	db := &recDB{}
	var logs bytes.Buffer
	var logMu sync.Mutex
	r := start(t, db, func(c *Config) {
		c.MaxLineLen = 100
		c.MaxPickleSize = 1000
		c.Logger = newTestLogger(&logs, &logMu)
		c.Now = func() time.Time { return time.UnixMilli(5_000_123) }
	})
	send(t, "tcp", r.PlaintextTCPAddr(), []byte("good.1 1 10\nbad line\n\nbad.value x 10\n"+strings.Repeat("z", 300)+"\ngood.2 2 -1\nnan.v nan 10\nbad;tag 1 1\n"))
	send(t, "tcp", r.PlaintextTCPAddr(), []byte("good.3 3 30\n"))
	send(t, "udp", r.PlaintextUDPAddr(), []byte("good.4 4 40\nbad\r\ngood.5 5 50\n"))
	evil, err := os.ReadFile(filepath.Join("testdata", "evil_reduce_proto2.bin"))
	require.NoError(t, err)
	// A refused pickle and a pickle with one bad entry, then a good one, on
	// one connection; then an oversized frame, which closes its connection.
	bad := []byte("(l(Vp.bad\n(I1\nNtta(Vp.ok\n(I60\nI6\ntta.")
	send(t, "tcp", r.PickleTCPAddr(), frame(evil), frame(bad), frame(AppendPickle(nil, []PickleEntry{{Path: []byte("p.good"), T: 70, V: 7}})))
	c, err := net.Dial("tcp", r.PickleTCPAddr().String())
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Write(binary.BigEndian.AppendUint32(nil, 1001))
	require.NoError(t, err)
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err = c.Read(make([]byte, 1))
	require.ErrorIs(t, err, io.EOF, "oversized pickle frame did not close the connection")

	waitFor(t, "all handled", func() bool {
		return len(db.get()) == 7 && r.count(r.m.malformed, PickleTCP) == 3 && r.count(r.m.malformed, PlaintextUDP) == 1
	})
	require.NoError(t, r.Close())
	checkAccounting(t, r)
	got := db.get()
	sort.Slice(got, func(i, j int) bool { return got[i].L < got[j].L })
	require.Equal(t, []rec{
		{`{__name__="good.1"}`, 10000, 1},
		{`{__name__="good.2"}`, 5_000_123, 2},
		{`{__name__="good.3"}`, 30000, 3},
		{`{__name__="good.4"}`, 40000, 4},
		{`{__name__="good.5"}`, 50000, 5},
		{`{__name__="p.good"}`, 70000, 7},
		{`{__name__="p.ok"}`, 60000, 6},
	}, got)
	require.Equal(t, 4.0, r.count(r.m.malformed, PlaintextTCP), "bad line, bad value, too long, bad tag")
	require.Equal(t, 1.0, r.count(r.m.rejected, PlaintextTCP, "nan_value"))
	require.Equal(t, 1.0, r.lm.TooLong(PlaintextTCP))
	logMu.Lock()
	out := logs.String()
	logMu.Unlock()
	require.Contains(t, out, `line="bad line"`)
	require.Contains(t, out, "src=127.0.0.1:")
	require.Contains(t, out, "value at byte 10")
	require.Contains(t, out, "GLOBAL")
	require.Contains(t, out, "pickle entry 0: value is a None")
	require.Contains(t, out, "over the limit of 1000")
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func newTestLogger(w io.Writer, mu *sync.Mutex) *slog.Logger {
	return slog.New(slog.NewTextHandler(lockedWriter{mu, w}, nil))
}

// TestUDPOverloadCountsDrops: with the writer stuck, datagrams beyond the
// queue are dropped and counted, and once it moves on the rest is stored.
func TestUDPOverloadCountsDrops(t *testing.T) {
	db := &recDB{gate: make(chan struct{})}
	r := start(t, db, func(c *Config) { c.QueueSize = 2; c.PlaintextTCP, c.PickleTCP = "", "" })
	require.Nil(t, r.PlaintextTCPAddr())
	require.Nil(t, r.PickleTCPAddr())
	c, err := net.Dial("udp", r.PlaintextUDPAddr().String())
	require.NoError(t, err)
	defer c.Close()
	const n = 50
	for i := range n {
		_, err := fmt.Fprintf(c, "udp.%d 1 %d\nudp.%d.b 2 %d", i, 100+i, i, 100+i)
		require.NoError(t, err)
	}
	// The writer holds one batch, the queue two; the rest is dropped. Wait
	// until every datagram the kernel delivered has been handled.
	waitFor(t, "datagrams handled", func() bool {
		return r.count(r.m.received, PlaintextUDP) >= 10 && r.lm.Dropped(PlaintextUDP) > 0
	})
	time.Sleep(100 * time.Millisecond)
	close(db.gate)
	require.NoError(t, r.Close())
	checkAccounting(t, r)
	dropped := r.lm.Dropped(PlaintextUDP)
	stored := r.count(r.m.stored, PlaintextUDP)
	require.Greater(t, dropped, 0.0)
	require.LessOrEqual(t, stored, 6.0, "more stored than the writer and queue can hold")
	require.Equal(t, float64(len(db.get())), stored)
	require.LessOrEqual(t, stored+dropped, float64(2*n))
}

// TestTCPBackpressure: with the writer stuck, a TCP client's writes block
// (nothing is dropped), and everything arrives once it moves on.
func TestTCPBackpressure(t *testing.T) {
	db := &recDB{gate: make(chan struct{})}
	r := start(t, db, func(c *Config) { c.QueueSize = 1; c.BatchSize = 100 })
	var data bytes.Buffer
	const n = 150_000 // ~6 MB: more than the socket buffers below hold
	for i := range n {
		fmt.Fprintf(&data, "some.fairly.long.metric.path.%06d %d %d\n", i%1000, i, 1000+i/1000)
	}
	c, err := net.Dial("tcp", r.PlaintextTCPAddr().String())
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.(*net.TCPConn).SetWriteBuffer(32<<10))
	written := make(chan error, 1)
	go func() {
		_, err := c.Write(data.Bytes())
		written <- err
	}()
	select {
	case err := <-written:
		t.Fatalf("client wrote %d bytes to a stuck server without blocking (err %v)", data.Len(), err)
	case <-time.After(500 * time.Millisecond):
	}
	require.Equal(t, 0.0, r.count(r.m.stored, PlaintextTCP))
	close(db.gate)
	require.NoError(t, <-written)
	require.NoError(t, c.Close())
	waitFor(t, "all stored", func() bool { return r.count(r.m.received, PlaintextTCP) == n })
	require.NoError(t, r.Close())
	checkAccounting(t, r)
	require.Equal(t, float64(n), r.count(r.m.stored, PlaintextTCP))
	require.Equal(t, 0.0, r.lm.Dropped(PlaintextTCP))
	got := db.get()
	require.Len(t, got, n)
	for i, s := range got { // one connection, one writer: order kept
		if s.V != float64(i) {
			t.Fatalf("sample %d has value %g", i, s.V)
		}
	}
}

// TestCloseCommitsWhatWasRead: Close with a client still connected and
// data in flight stores every line the server read, and a partial last
// line is discarded.
func TestCloseCommitsWhatWasRead(t *testing.T) {
	db := &recDB{}
	r := start(t, db, nil)
	c, err := net.Dial("tcp", r.PlaintextTCPAddr().String())
	require.NoError(t, err)
	defer c.Close()
	_, err = io.WriteString(c, "a.b 1 10\na.b 2 20\na.b 3 3")
	require.NoError(t, err)
	waitFor(t, "two lines", func() bool { return r.count(r.m.received, PlaintextTCP) == 2 })
	require.NoError(t, r.Close())
	checkAccounting(t, r)
	require.Equal(t, []rec{{`{__name__="a.b"}`, 10000, 1}, {`{__name__="a.b"}`, 20000, 2}}, db.get())
	require.NoError(t, r.Close(), "second Close")
}

// TestRejectedByStorage: samples the appender refuses are counted by
// reason, the rest of the batch is stored.
func TestRejectedByStorage(t *testing.T) {
	db := &recDB{reject: func(l labels.Labels, ts int64) error {
		switch {
		case ts < 0:
			return tsdb.ErrTooOldForRetention
		case l.Get("__name__") == "dup":
			return storage.ErrDuplicateSampleForTimestamp
		case l.Get("__name__") == "ooo":
			return fmt.Errorf("append: %w", storage.ErrOutOfOrderSample)
		}
		return nil
	}}
	r := start(t, db, nil)
	send(t, "tcp", r.PlaintextTCPAddr(), []byte("ok 1 1\nold 1 -5\ndup 1 1\nooo 1 1\nok 2 2\n"))
	waitFor(t, "stored", func() bool { return r.count(r.m.stored, PlaintextTCP) == 2 })
	require.NoError(t, r.Close())
	checkAccountingWith(t, r, "too_old_for_retention")
	require.Equal(t, 1.0, r.count(r.m.rejected, PlaintextTCP, "too_old_for_retention"))
	require.Equal(t, 1.0, r.count(r.m.rejected, PlaintextTCP, "duplicate"))
	require.Equal(t, 1.0, r.count(r.m.rejected, PlaintextTCP, "out_of_order"))
}

func checkAccountingWith(t *testing.T, r *Receiver, extra string) {
	t.Helper()
	rejected := r.count(r.m.rejected, PlaintextTCP, extra)
	for _, reason := range []string{"out_of_order", "too_old", "duplicate", "out_of_bounds", "other", "commit_failed"} {
		rejected += r.count(r.m.rejected, PlaintextTCP, reason)
	}
	require.Equal(t, r.count(r.m.received, PlaintextTCP), r.count(r.m.stored, PlaintextTCP)+rejected)
}

func TestRejectReason(t *testing.T) {
	for err, want := range map[error]string{
		tsdb.ErrTooFarInFuture:                      "too_far_in_future",
		tsdb.ErrTooOldForRetention:                  "too_old_for_retention",
		storage.ErrOutOfOrderSample:                 "out_of_order",
		storage.ErrTooOldSample:                     "too_old",
		storage.ErrOutOfBounds:                      "out_of_bounds",
		storage.ErrDuplicateSampleForTimestamp:      "duplicate",
		fmt.Errorf("x: %w", storage.ErrOutOfBounds): "out_of_bounds",
		io.EOF: "other",
	} {
		require.Equal(t, want, RejectReason(err), err.Error())
	}
}

func TestStartErrors(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer taken.Close()
	r, err := New(Config{PlaintextTCP: "127.0.0.1:0", PlaintextUDP: "127.0.0.1:0", PickleTCP: taken.Addr().String()}, &recDB{})
	require.NoError(t, err)
	require.ErrorContains(t, r.Start(), "pickle_tcp")
	require.NoError(t, r.Close()) // nothing left running (goleak)
	_, err = New(Config{}, nil)
	require.Error(t, err)
	reg := prometheus.NewRegistry()
	_, err = New(Config{Registerer: reg}, &recDB{})
	require.NoError(t, err)
	_, err = New(Config{Registerer: reg}, &recDB{})
	require.Error(t, err, "metrics registered twice")
}

func TestDefaultConfig(t *testing.T) {
	c := DefaultConfig()
	require.Equal(t, "127.0.0.1:2003", c.PlaintextTCP)
	require.Equal(t, "127.0.0.1:2003", c.PlaintextUDP)
	require.Equal(t, "127.0.0.1:2004", c.PickleTCP)
}

func TestForEachLinePy(t *testing.T) {
	var got []string
	forEachLinePy([]byte("a\r\nb\rc\vd\x1ce\n \n\nf"), func(l []byte) { got = append(got, string(l)) })
	require.Equal(t, []string{"a", "b", "c", "d", "e", "f"}, got)
}
