package listen

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// recConn records the calls of one connection's handler.
type recConn struct {
	mu      *sync.Mutex
	events  *[]string
	src     net.Addr
	pending []string
}

func (c *recConn) Line(line []byte) { c.pending = append(c.pending, "line:"+string(line)) }
func (c *recConn) TooLong(n int)    { c.pending = append(c.pending, fmt.Sprintf("toolong:%d", n)) }
func (c *recConn) Flush() {
	c.mu.Lock()
	*c.events = append(*c.events, c.pending...)
	c.mu.Unlock()
	c.pending = c.pending[:0]
}
func (c *recConn) Close() {
	c.mu.Lock()
	*c.events = append(*c.events, "close")
	c.mu.Unlock()
}

type recorder struct {
	mu     sync.Mutex
	events []string
	srcs   []net.Addr
}

func (r *recorder) newConn(src net.Addr) ConnHandler {
	r.mu.Lock()
	r.srcs = append(r.srcs, src)
	r.mu.Unlock()
	return &recConn{mu: &r.mu, events: &r.events, src: src}
}

func (r *recorder) get() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.events...)
}

func TestReadLines(t *testing.T) {
	long := strings.Repeat("x", 100)
	for _, tc := range []struct {
		name string
		in   string
		max  int
		want []string
	}{
		{"simple", "a 1 2\nb 3 4\n", 64, []string{"line:a 1 2", "line:b 3 4"}},
		{"last line without newline at EOF", "a\nb", 64, []string{"line:a", "line:b"}},
		{"empty lines pass", "\n\na\n", 64, []string{"line:", "line:", "line:a"}},
		{"crlf kept for the parser", "a\r\n", 64, []string{"line:a\r"}},
		{"exactly max", "abcd\n", 4, []string{"line:abcd"}},
		{"one over max", "abcde\nok\n", 4, []string{"toolong:5", "line:ok"}},
		{"long line over buffer skipped", long + "\nok\n" + long + long + "\nok2\n", 40, []string{"toolong:100", "line:ok", "toolong:200", "line:ok2"}},
		{"long line assembled below max", long + "\n", 200, []string{"line:" + long}},
		{"too long at EOF", long, 40, []string{"toolong:100"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r recorder
			h := r.newConn(nil)
			// A reader returning one byte at a time also exercises refills.
			for _, src := range []io.Reader{strings.NewReader(tc.in), &oneByte{s: tc.in}} {
				r.events = nil
				n := 0
				readLines(src, tc.max, h, func() { n++ })
				h.Flush()
				require.Equal(t, tc.want, r.get())
				tl := 0
				for _, e := range tc.want {
					if strings.HasPrefix(e, "toolong") {
						tl++
					}
				}
				require.Equal(t, tl, n)
			}
		})
	}
}

type oneByte struct {
	s string
	i int
}

func (o *oneByte) Read(p []byte) (int, error) {
	if o.i >= len(o.s) {
		return 0, io.EOF
	}
	p[0] = o.s[o.i]
	o.i++
	return 1, nil
}

// errAfter returns its data then a non-EOF error: the partial line is dropped.
func TestReadLinesCutDiscardsPartial(t *testing.T) {
	var r recorder
	h := r.newConn(nil)
	readLines(io.MultiReader(strings.NewReader("a 1 2\nb 3 "), errReader{}), 64, h, func() {})
	h.Flush()
	require.Equal(t, []string{"line:a 1 2"}, r.get())
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, fmt.Errorf("reset") }

func TestTCPLines(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := NewMetrics("aerie", "test", reg)
	require.NoError(t, err)
	var r recorder
	s, err := ListenLines("127.0.0.1:0", TCPOptions{Name: "t", MaxLineLen: 10, Metrics: m}, r.newConn)
	require.NoError(t, err)
	c, err := net.Dial("tcp", s.Addr().String())
	require.NoError(t, err)
	_, err = io.WriteString(c, "a 1 2\n"+strings.Repeat("y", 50)+"\nb 3 4\n")
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(r.get()) == 3 }, 2*time.Second, time.Millisecond, "%q", r.get())
	require.Equal(t, []string{"line:a 1 2", "toolong:50", "line:b 3 4"}, r.get())
	require.Equal(t, 1.0, m.TooLong("t"))
	r.mu.Lock()
	require.Equal(t, c.LocalAddr().String(), r.srcs[0].String())
	r.mu.Unlock()
	// Close with the connection open and a partial line sent: complete lines
	// were handed on, the partial one is dropped, the handler closed.
	_, err = io.WriteString(c, "c 5 6\nd 7")
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(r.get()) == 4 }, 5*time.Second, time.Millisecond)
	require.NoError(t, s.Close())
	require.Equal(t, []string{"line:a 1 2", "toolong:50", "line:b 3 4", "line:c 5 6", "close"}, r.get())
	c.Close()
	_, err = net.Dial("tcp", s.Addr().String())
	require.Error(t, err, "closed listener still accepts")
	require.NoError(t, s.Close(), "second Close")
}

func TestTCPMaxConnsAndIdle(t *testing.T) {
	m, err := NewMetrics("aerie", "test", nil)
	require.NoError(t, err)
	var r recorder
	s, err := ListenLines("127.0.0.1:0", TCPOptions{Name: "t", MaxConns: 1, IdleTimeout: 200 * time.Millisecond, Metrics: m}, r.newConn)
	require.NoError(t, err)
	defer s.Close()
	c1, err := net.Dial("tcp", s.Addr().String())
	require.NoError(t, err)
	defer c1.Close()
	io.WriteString(c1, "x\n")
	require.Eventually(t, func() bool { return len(r.get()) == 1 }, 5*time.Second, time.Millisecond)
	c2, err := net.Dial("tcp", s.Addr().String())
	require.NoError(t, err)
	defer c2.Close()
	c2.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err = c2.Read(make([]byte, 1))
	require.Error(t, err, "connection over MaxConns not closed")
	require.Equal(t, 1.0, m.Refused("t"))
	// c1 idles past IdleTimeout: the server closes it.
	c1.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err = c1.Read(make([]byte, 1))
	require.ErrorIs(t, err, io.EOF)
	require.Equal(t, []string{"line:x", "close"}, r.get())
}

type recPackets struct {
	mu   sync.Mutex
	pkts []string
	long []int
	src  []net.Addr
}

func (r *recPackets) Packet(p []byte, src net.Addr) {
	r.mu.Lock()
	r.pkts = append(r.pkts, string(p))
	r.src = append(r.src, src)
	r.mu.Unlock()
}

func (r *recPackets) TooLong(n int, src net.Addr) {
	r.mu.Lock()
	r.long = append(r.long, n)
	r.mu.Unlock()
}

func TestUDP(t *testing.T) {
	m, err := NewMetrics("aerie", "test", nil)
	require.NoError(t, err)
	var r recPackets
	s, err := ListenUDP("127.0.0.1:0", UDPOptions{Name: "u", MaxDatagram: 16, Metrics: m}, &r)
	require.NoError(t, err)
	c, err := net.Dial("udp", s.Addr().String())
	require.NoError(t, err)
	defer c.Close()
	c.Write([]byte("a 1 2\nb 3 4"))
	c.Write(bytes.Repeat([]byte("z"), 100))
	c.Write([]byte("ok"))
	require.Eventually(t, func() bool { r.mu.Lock(); defer r.mu.Unlock(); return len(r.pkts) == 2 }, 5*time.Second, time.Millisecond)
	require.NoError(t, s.Close())
	require.Equal(t, []string{"a 1 2\nb 3 4", "ok"}, r.pkts)
	require.Equal(t, []int{17}, r.long)
	require.Equal(t, c.LocalAddr().String(), r.src[0].String())
	require.Equal(t, 1.0, m.TooLong("u"))
}

func TestForEachLine(t *testing.T) {
	for in, want := range map[string][]string{
		"":           nil,
		"a":          {"a"},
		"a\n":        {"a"},
		"a\n\nb\n":   {"a", "b"},
		"\n\n":       nil,
		"a b\r\nc d": {"a b\r", "c d"},
	} {
		var got []string
		ForEachLine([]byte(in), func(l []byte) { got = append(got, string(l)) })
		require.Equal(t, want, got, "%q", in)
	}
}

func TestQueue(t *testing.T) {
	m, err := NewMetrics("aerie", "test", nil)
	require.NoError(t, err)
	release := make(chan struct{})
	var mu sync.Mutex
	var got []int
	q := NewQueue(QueueOptions{Size: 2, Metrics: m}, func(b Batch[int]) {
		<-release
		mu.Lock()
		got = append(got, b.Items...)
		mu.Unlock()
	})
	// The consumer holds batch 1; 2 and 3 fill the queue; TryPut of 4 drops.
	require.NoError(t, q.Put(Batch[int]{Listener: "tcp", Items: []int{1}}))
	require.Eventually(t, func() bool { return q.Len() == 0 }, 5*time.Second, time.Millisecond)
	require.NoError(t, q.Put(Batch[int]{Listener: "tcp", Items: []int{2}}))
	require.True(t, q.TryPut(Batch[int]{Listener: "udp", Items: []int{3}}))
	require.False(t, q.TryPut(Batch[int]{Listener: "udp", Items: []int{4, 5}}))
	require.Equal(t, 2.0, m.Dropped("udp"))
	// A Put on the full queue blocks until the consumer takes a batch.
	put := make(chan error)
	go func() { put <- q.Put(Batch[int]{Listener: "tcp", Items: []int{6}}) }()
	select {
	case <-put:
		t.Fatal("Put on a full queue did not block")
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	require.NoError(t, <-put)
	q.Close()
	require.Equal(t, []int{1, 2, 3, 6}, got)
	require.ErrorIs(t, q.Put(Batch[int]{Items: []int{7}}), ErrClosed)
	require.False(t, q.TryPut(Batch[int]{Listener: "udp", Items: []int{8}}))
	require.Equal(t, 3.0, m.Dropped("udp"))
	q.Close()
}

func TestMetricsNames(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := NewMetrics("aerie", "statsd", reg)
	require.NoError(t, err)
	m.addDropped("udp", 3)
	m.addQueueLen(1)
	mfs, err := reg.Gather()
	require.NoError(t, err)
	var names []string
	for _, mf := range mfs {
		names = append(names, mf.GetName())
	}
	require.Contains(t, names, "aerie_statsd_dropped_total")
	require.Contains(t, names, "aerie_statsd_queue_length")
	_, err = NewMetrics("aerie", "statsd", reg)
	require.Error(t, err, "registering twice")
}

func TestQueueTick(t *testing.T) {
	var mu sync.Mutex
	var events []string
	q := NewQueue(QueueOptions{
		Tick:      func() { mu.Lock(); events = append(events, "tick"); mu.Unlock() },
		TickEvery: 10 * time.Millisecond,
	}, func(b Batch[int]) { mu.Lock(); events = append(events, fmt.Sprint(b.Items)); mu.Unlock() })
	require.NoError(t, q.Put(Batch[int]{Items: []int{1}}))
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(events) >= 3
	}, 5*time.Second, time.Millisecond, "no ticks")
	require.NoError(t, q.Put(Batch[int]{Items: []int{2}}))
	q.Close()
	require.Equal(t, "[1]", events[0])
	require.Equal(t, "tick", events[len(events)-1], "no tick after the last batch")
	require.Contains(t, events, "[2]")
}
