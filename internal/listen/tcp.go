package listen

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aerie-db/aerie/internal/positive"
)

// Defaults of TCPOptions.
const (
	DefaultMaxConns    = 1024
	DefaultIdleTimeout = 2 * time.Minute
	DefaultMaxLineLen  = 64 << 10
)

// TCPOptions configure a TCPServer.
type TCPOptions struct {
	// Name labels the metrics and log lines of this listener ("plaintext_tcp").
	Name string
	// MaxConns is the number of connections served at once (default
	// DefaultMaxConns); a connection accepted over it is closed at once and
	// counted as refused.
	MaxConns int
	// IdleTimeout closes a connection on which nothing arrived for that long
	// (default DefaultIdleTimeout; negative: never).
	IdleTimeout time.Duration
	// MaxLineLen is the longest line ServeLines passes on, without its
	// newline (default DefaultMaxLineLen). A longer line is reported to
	// ConnHandler.TooLong with its length and skipped up to the next newline.
	MaxLineLen int
	// Metrics count connections and too long lines (nil: not counted).
	Metrics *Metrics
	// Logger logs accept errors and refused connections (nil: discarded).
	Logger *slog.Logger
}

func (o *TCPOptions) setDefaults() {
	o.MaxConns = positive.Or(o.MaxConns, DefaultMaxConns)
	if o.IdleTimeout == 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	o.MaxLineLen = positive.Or(o.MaxLineLen, DefaultMaxLineLen)
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// ConnHandler receives the lines of one TCP connection, from one goroutine.
type ConnHandler interface {
	// Line is called for every complete line, without its "\n" (a "\r"
	// before it is left for the parser). line is valid only during the call.
	Line(line []byte)
	// TooLong is called for a line of n bytes (without "\n") over MaxLineLen.
	TooLong(n int)
	// Flush is called before every read from the connection (the reader
	// may block in it) and once more at the end: a handler batching lines
	// hands its batch on here. It may be called with nothing new.
	Flush()
	// Close is called last, once, after the final Flush.
	Close()
}

// NewConnFunc returns the handler of a new connection from src.
type NewConnFunc func(src net.Addr) ConnHandler

// ServeConnFunc serves a raw connection (framed protocols such as pickle).
// Reads from c fail once ctx is done (Close) and after IdleTimeout without
// input; the function returns when it has handed on what it read.
type ServeConnFunc func(ctx context.Context, c net.Conn)

// TCPServer accepts connections and serves each in a goroutine of its own.
//
// Locking: mu guards conns. The closing flag is set before the connections'
// read deadlines are cut, and every Read checks it under the connection's own
// mutex before extending its deadline, so no Read can outlive Close.
type TCPServer struct {
	opts   TCPOptions
	ln     net.Listener
	serve  ServeConnFunc
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	closing   atomic.Bool
	closeOnce sync.Once
	lastWarn  atomic.Int64 // unix nanos of the last refused-connection log line

	mu    sync.Mutex // guards following
	conns map[*idleConn]struct{}
}

// ListenLines listens on addr ("host:port"; port 0 picks one) and serves
// newline-delimited lines to a ConnHandler per connection.
func ListenLines(addr string, o TCPOptions, newConn NewConnFunc) (*TCPServer, error) {
	o.setDefaults()
	max := o.MaxLineLen
	name, m := o.Name, o.Metrics
	return ListenConns(addr, o, func(ctx context.Context, c net.Conn) {
		h := newConn(c.RemoteAddr())
		readLines(c, max, h, func() { m.addTooLong(name) })
		h.Flush()
		h.Close()
	})
}

// ListenConns listens on addr and calls serve for every connection.
func ListenConns(addr string, o TCPOptions, serve ServeConnFunc) (*TCPServer, error) {
	o.setDefaults()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen %s tcp %s: %w", o.Name, addr, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &TCPServer{opts: o, ln: ln, serve: serve, ctx: ctx, cancel: cancel, conns: map[*idleConn]struct{}{}}
	s.wg.Add(1)
	go s.acceptLoop()
	return s, nil
}

// Addr returns the address listened on.
func (s *TCPServer) Addr() net.Addr { return s.ln.Addr() }

func (s *TCPServer) acceptLoop() {
	defer s.wg.Done()
	var backoff time.Duration
	for {
		c, err := s.ln.Accept()
		if err != nil {
			if s.closing.Load() || errors.Is(err, net.ErrClosed) {
				return
			}
			// EMFILE and friends: wait and retry, as net/http does.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			s.opts.Logger.Warn("accept failed", "listener", s.opts.Name, "err", err, "retry_in", backoff)
			select {
			case <-time.After(backoff):
				continue
			case <-s.ctx.Done():
				return
			}
		}
		backoff = 0
		ic := &idleConn{Conn: c, srv: s}
		s.mu.Lock()
		if len(s.conns) >= s.opts.MaxConns {
			s.mu.Unlock()
			s.opts.Metrics.addRefused(s.opts.Name)
			// At most one line a second: a connection storm must not flood the log.
			if now, last := time.Now().UnixNano(), s.lastWarn.Load(); now-last >= int64(time.Second) && s.lastWarn.CompareAndSwap(last, now) {
				s.opts.Logger.Warn("connection refused: too many connections (logged at most once a second; see connections_refused_total)",
					"listener", s.opts.Name, "src", c.RemoteAddr().String(), "max_conns", s.opts.MaxConns)
			}
			c.Close()
			continue
		}
		s.conns[ic] = struct{}{}
		s.mu.Unlock()
		s.opts.Metrics.addConns(s.opts.Name, 1)
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer func() {
				s.mu.Lock()
				delete(s.conns, ic)
				s.mu.Unlock()
				s.opts.Metrics.addConns(s.opts.Name, -1)
				c.Close()
			}()
			s.serve(s.ctx, ic)
		}()
	}
}

// Close stops accepting, makes every connection's next read fail, waits
// until each handler has handed on what it read (complete lines are served,
// a partial last line is discarded) and returns when all goroutines are
// gone. It is idempotent.
func (s *TCPServer) Close() error {
	var err error
	s.closeOnce.Do(func() {
		s.closing.Store(true)
		err = s.ln.Close()
		s.cancel()
		s.mu.Lock()
		for c := range s.conns {
			c.interrupt()
		}
		s.mu.Unlock()
	})
	s.wg.Wait()
	return err
}

// errClosing is returned by reads after Close.
var errClosing = errors.New("listener closing")

// idleConn extends its read deadline by IdleTimeout before every Read and
// fails reads once the server is closing.
type idleConn struct {
	net.Conn
	srv *TCPServer
	mu  sync.Mutex // serializes deadline changes between Read and interrupt
}

func (c *idleConn) Read(p []byte) (int, error) {
	c.mu.Lock()
	if c.srv.closing.Load() {
		c.mu.Unlock()
		return 0, errClosing
	}
	if t := c.srv.opts.IdleTimeout; t > 0 {
		c.Conn.SetReadDeadline(time.Now().Add(t))
	}
	c.mu.Unlock()
	return c.Conn.Read(p)
}

func (c *idleConn) interrupt() {
	c.mu.Lock()
	c.Conn.SetReadDeadline(time.Unix(1, 0))
	c.mu.Unlock()
}

// readLines reads r line by line into h until EOF or an error. A last line
// without "\n" is passed on at a clean EOF and discarded on any other error
// (it may be cut short: by Close, a timeout or a reset).
func readLines(r io.Reader, maxLine int, h ConnHandler, tooLong func()) {
	// Flush before every read of the connection: the handler's batch holds
	// at most one buffer's worth of lines and nothing waits on a pause.
	br := bufio.NewReaderSize(flushReader{r, h}, min(maxLine+1, 64<<10))
	var long []byte // a line longer than br's buffer, assembled
	skipping := false
	skipped := 0
	for {
		chunk, err := br.ReadSlice('\n')
		full := err == nil
		if len(chunk) > 0 && full {
			chunk = chunk[:len(chunk)-1]
		}
		switch {
		case skipping:
			skipped += len(chunk)
			if full || err == io.EOF {
				tooLong()
				h.TooLong(skipped)
				skipping, skipped = false, 0
			}
		case len(long)+len(chunk) > maxLine:
			skipping, skipped = true, len(long)+len(chunk)
			long = long[:0]
			if full || (err == io.EOF && skipped > 0) {
				tooLong()
				h.TooLong(skipped)
				skipping, skipped = false, 0
			}
		case full:
			if len(long) > 0 {
				long = append(long, chunk...)
				h.Line(long)
				long = long[:0]
			} else {
				h.Line(chunk)
			}
		case err == bufio.ErrBufferFull:
			long = append(long, chunk...)
		case err == io.EOF:
			if len(long)+len(chunk) > 0 {
				h.Line(append(long, chunk...))
			}
		}
		if err != nil && err != bufio.ErrBufferFull {
			return
		}
	}
}

type flushReader struct {
	r io.Reader
	h ConnHandler
}

func (f flushReader) Read(p []byte) (int, error) {
	f.h.Flush()
	return f.r.Read(p)
}
