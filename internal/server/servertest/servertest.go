package servertest

import (
	"context"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"
)

// ReadyTimeout bounds Start's wait for /-/ready.
const ReadyTimeout = 10 * time.Second

// Server is what Start runs: *server.Server.
type Server interface {
	// Listen binds the HTTP address.
	Listen() error
	// Run serves until its context is done, then shuts down.
	Run(ctx context.Context) error
	// Addr is the bound HTTP address.
	Addr() string
}

// Running is a server that Start started.
type Running struct {
	// URL is http:// and the server's address, without a trailing slash.
	URL string

	t      testing.TB
	cancel context.CancelFunc
	exited chan struct{} // closed when Run has returned
	err    error         // Run's result, set before exited is closed
	once   sync.Once
}

// Start binds s, runs it, waits until its /-/ready answers 200 and
// registers Stop as a cleanup of t.
func Start(t testing.TB, s Server) *Running {
	t.Helper()
	if err := s.Listen(); err != nil {
		t.Fatalf("servertest: listen: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &Running{URL: "http://" + s.Addr(), t: t, cancel: cancel, exited: make(chan struct{})}
	go func() {
		r.err = s.Run(ctx)
		close(r.exited)
	}()
	t.Cleanup(r.Stop)
	client := &http.Client{Timeout: 2 * time.Second}
	defer client.CloseIdleConnections()
	deadline := time.Now().Add(ReadyTimeout)
	for {
		if ready(client, r.URL+"/-/ready") {
			return r
		}
		select {
		case <-r.exited:
			t.Fatalf("servertest: the server stopped before it was ready: %v", r.err)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("servertest: %s/-/ready did not answer 200 within %s", r.URL, ReadyTimeout)
		}
	}
}

func ready(c *http.Client, url string) bool {
	resp, err := c.Get(url)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// Stop cancels the server's context and waits for Run to return; the test
// fails if Run returned an error. Only the first call does anything, so a
// test may stop a server (to restart it on the same data) before its
// cleanup runs.
func (r *Running) Stop() {
	r.t.Helper()
	r.once.Do(func() {
		r.cancel()
		<-r.exited
		if r.err != nil {
			r.t.Fatalf("servertest: the server's Run returned %v", r.err)
		}
	})
}

// FreeAddr returns an address on 127.0.0.1 whose TCP port was free a
// moment ago, for a server whose address must be known before it starts
// (a configuration that names it, a restart on the same address).
func FreeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("servertest: free address: %v", err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
