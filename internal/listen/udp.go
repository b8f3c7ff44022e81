package listen

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/aerie-db/aerie/internal/positive"
)

// DefaultMaxDatagram is UDPOptions.MaxDatagram when zero: the largest UDP
// payload over IPv4.
const DefaultMaxDatagram = 65507

// UDPOptions configure a UDPServer.
type UDPOptions struct {
	// Name labels the metrics and log lines of this listener ("plaintext_udp").
	Name string
	// MaxDatagram is the largest datagram passed on (default
	// DefaultMaxDatagram); a longer one is counted as too long and given to
	// TooLong instead (with MaxDatagram+1 as its length: the kernel
	// truncated the rest).
	MaxDatagram int
	// ReadBuffer sets the socket's receive buffer (SO_RCVBUF) in bytes if > 0.
	ReadBuffer int
	// Metrics count too long datagrams (nil: not counted).
	Metrics *Metrics
	// Logger logs read errors (nil: discarded).
	Logger *slog.Logger
}

// PacketHandler receives the datagrams of a UDPServer, from one goroutine.
type PacketHandler interface {
	// Packet is called for every datagram; pkt is valid only during the call.
	Packet(pkt []byte, src net.Addr)
	// TooLong is called for a datagram over MaxDatagram.
	TooLong(n int, src net.Addr)
}

// UDPServer reads datagrams in one goroutine and hands them to a PacketHandler.
type UDPServer struct {
	opts      UDPOptions
	conn      net.PacketConn
	h         PacketHandler
	done      chan struct{}
	closeOnce sync.Once
	closing   chan struct{}
}

// ListenUDP listens on addr ("host:port"; port 0 picks one).
func ListenUDP(addr string, o UDPOptions, h PacketHandler) (*UDPServer, error) {
	o.MaxDatagram = positive.Or(o.MaxDatagram, DefaultMaxDatagram)
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	c, err := net.ListenPacket("udp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen %s udp %s: %w", o.Name, addr, err)
	}
	if o.ReadBuffer > 0 {
		if uc, ok := c.(*net.UDPConn); ok {
			if err := uc.SetReadBuffer(o.ReadBuffer); err != nil {
				o.Logger.Warn("set UDP read buffer", "listener", o.Name, "bytes", o.ReadBuffer, "err", err)
			}
		}
	}
	s := &UDPServer{opts: o, conn: c, h: h, done: make(chan struct{}), closing: make(chan struct{})}
	go s.readLoop()
	return s, nil
}

// Addr returns the address listened on.
func (s *UDPServer) Addr() net.Addr { return s.conn.LocalAddr() }

func (s *UDPServer) readLoop() {
	defer close(s.done)
	buf := make([]byte, s.opts.MaxDatagram+1)
	for {
		n, src, err := s.conn.ReadFrom(buf)
		if n > s.opts.MaxDatagram {
			s.opts.Metrics.addTooLong(s.opts.Name)
			s.h.TooLong(n, src)
		} else if n > 0 {
			s.h.Packet(buf[:n], src)
		}
		if err != nil {
			select {
			case <-s.closing:
				return
			default:
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// ICMP errors and the like: log and go on reading.
			s.opts.Logger.Warn("udp read failed", "listener", s.opts.Name, "err", err)
			time.Sleep(time.Millisecond)
		}
	}
}

// Close stops reading and returns after the datagram being handled, if any,
// has been handed on. It is idempotent.
func (s *UDPServer) Close() error {
	var err error
	s.closeOnce.Do(func() {
		close(s.closing)
		err = s.conn.Close()
	})
	<-s.done
	return err
}

// ForEachLine calls fn for every "\n"-separated line of b, the last one
// even without "\n", skipping empty lines (a datagram's lines: statsd and
// Graphite plaintext over UDP).
func ForEachLine(b []byte, fn func(line []byte)) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			i = len(b)
		}
		if i > 0 {
			fn(b[:i])
		}
		if i == len(b) {
			return
		}
		b = b[i+1:]
	}
}
