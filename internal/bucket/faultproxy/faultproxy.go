// Package faultproxy is an HTTP reverse proxy for tests that puts the
// faults of a flaky object store between a client and a server: added
// latency, 503 answers with an S3-style XML error body, response bodies cut
// short, and connections reset.
//
// Each request is delayed by Options.Latency, then suffers at most one
// fault, chosen in this order with three uniform draws from a generator
// seeded by Options.Seed: a 503 (P503), else a reset (PReset), else, if it
// is forwarded and its response has a body, a truncated body (PTruncate).
// A 503 and a reset never reach the server. Requests drawn in the same
// order from the same seed suffer the same faults.
//
// The proxy forwards the client's Host header unchanged, so signatures
// that cover it (S3's SigV4) still verify.
//
// Locking: mu guards the options and the generator; the counters are
// atomic. Every method is goroutine-safe.
package faultproxy

import (
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Options are the faults; the zero Options forwards every request as is.
type Options struct {
	// Latency is added before every request is handled.
	Latency time.Duration
	// P503 is the probability of answering 503 SlowDown without
	// forwarding.
	P503 float64
	// PTruncate is the probability of cutting a forwarded response's body
	// to half its Content-Length and closing the connection; the header
	// still announces the whole length. Responses without a body (HEAD, a
	// Content-Length of 0 or unknown) are not cut.
	PTruncate float64
	// PReset is the probability of resetting the connection (close with
	// SO_LINGER 0, so the client reads ECONNRESET) without forwarding.
	PReset float64
	// Seed seeds the draws.
	Seed int64
}

func (o Options) validate() error {
	for _, p := range []struct {
		name string
		v    float64
	}{{"P503", o.P503}, {"PTruncate", o.PTruncate}, {"PReset", o.PReset}} {
		if !(p.v >= 0 && p.v <= 1) {
			return fmt.Errorf("faultproxy: %s = %v is not a probability", p.name, p.v)
		}
	}
	if o.Latency < 0 {
		return fmt.Errorf("faultproxy: negative Latency %s", o.Latency)
	}
	return nil
}

// Stats counts requests and the faults injected.
type Stats struct {
	Requests    int64 // requests received
	Delayed     int64 // requests delayed by Latency
	Unavailable int64 // 503 answers
	Truncated   int64 // bodies cut short
	Reset       int64 // connections reset
}

// Proxy is a running fault-injecting reverse proxy.
type Proxy struct {
	// URL is the proxy's base URL, http://127.0.0.1:port.
	URL string
	// Addr is the proxy's host:port.
	Addr string

	target    *url.URL
	transport *http.Transport
	rp        *httputil.ReverseProxy
	srv       *http.Server
	served    chan struct{} // closed when Serve returns
	handlers  sync.WaitGroup

	mu   sync.Mutex // guards opts and rng
	opts Options
	rng  *rand.Rand

	requests, delayed, unavailable, truncated, reset atomic.Int64
}

type truncateKey struct{}

// New starts a proxy on a free port of 127.0.0.1 that forwards to target,
// a base URL such as "http://127.0.0.1:7070". Like httptest.NewServer it
// panics if it cannot start, and on invalid options.
func New(target string, opts Options) *Proxy {
	u, err := url.Parse(target)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		panic(fmt.Sprintf("faultproxy: target %q is not an http(s) base URL", target))
	}
	if err := opts.validate(); err != nil {
		panic(err.Error())
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(fmt.Sprintf("faultproxy: listen: %v", err))
	}
	p := &Proxy{
		URL:    "http://" + ln.Addr().String(),
		Addr:   ln.Addr().String(),
		target: u,
		transport: &http.Transport{
			Proxy:               nil,
			DisableCompression:  true, // a decompressed body would change Content-Length
			MaxIdleConnsPerHost: 64,
			IdleConnTimeout:     30 * time.Second,
		},
		served: make(chan struct{}),
		opts:   opts,
		rng:    newRand(opts.Seed),
	}
	quiet := log.New(io.Discard, "", 0)
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(p.target)
			pr.Out.Host = pr.In.Host
		},
		Transport:      p.transport,
		ModifyResponse: p.modifyResponse,
		// Flush every write, so a cut body's first half reaches the
		// client before the connection closes.
		FlushInterval: -1,
		ErrorLog:      quiet,
	}
	p.srv = &http.Server{Handler: http.HandlerFunc(p.serve), ErrorLog: quiet}
	go func() {
		defer close(p.served)
		_ = p.srv.Serve(ln)
	}()
	return p
}

func newRand(seed int64) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(seed), 0x9e3779b97f4a7c15))
}

// SetOptions replaces the options and reseeds the draws; requests already
// past their draws keep their faults. It panics on invalid options.
func (p *Proxy) SetOptions(opts Options) {
	if err := opts.validate(); err != nil {
		panic(err.Error())
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.opts = opts
	p.rng = newRand(opts.Seed)
}

// Options returns the current options.
func (p *Proxy) Options() Options {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.opts
}

// Stats returns the counters so far.
func (p *Proxy) Stats() Stats {
	return Stats{
		Requests:    p.requests.Load(),
		Delayed:     p.delayed.Load(),
		Unavailable: p.unavailable.Load(),
		Truncated:   p.truncated.Load(),
		Reset:       p.reset.Load(),
	}
}

// Close stops the proxy: it closes the listener and every connection, and
// waits for the handlers and the server goroutine to return.
func (p *Proxy) Close() {
	_ = p.srv.Close()
	<-p.served
	p.handlers.Wait()
	p.transport.CloseIdleConnections()
}

type fault int

const (
	none fault = iota
	unavailable
	reset
	truncate
)

// draw picks the fault of one request: always three draws, so that the
// sequence of faults depends only on the seed and the order of requests.
func (p *Proxy) draw() (time.Duration, fault) {
	p.mu.Lock()
	defer p.mu.Unlock()
	u503, uReset, uTrunc := p.rng.Float64(), p.rng.Float64(), p.rng.Float64()
	switch {
	case u503 < p.opts.P503:
		return p.opts.Latency, unavailable
	case uReset < p.opts.PReset:
		return p.opts.Latency, reset
	case uTrunc < p.opts.PTruncate:
		return p.opts.Latency, truncate
	}
	return p.opts.Latency, none
}

func (p *Proxy) serve(w http.ResponseWriter, r *http.Request) {
	p.handlers.Add(1)
	defer p.handlers.Done()
	p.requests.Add(1)
	latency, f := p.draw()
	if latency > 0 {
		p.delayed.Add(1)
		t := time.NewTimer(latency)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return
		}
	}
	switch f {
	case unavailable:
		p.unavailable.Add(1)
		body := fmt.Sprintf(`<?xml version="1.0" encoding="UTF-8"?>`+"\n"+
			`<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message>`+
			`<Resource>%s</Resource><RequestId>faultproxy-%d</RequestId></Error>`,
			xmlEscape(r.URL.Path), p.unavailable.Load())
		w.Header().Set("Content-Type", "application/xml")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.Header().Set("Retry-After", "0")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, body)
		return
	case reset:
		if p.resetConn(w) {
			return
		}
	case truncate:
		r = r.WithContext(context.WithValue(r.Context(), truncateKey{}, true))
	}
	p.rp.ServeHTTP(w, r)
}

// resetConn closes the client's connection with SO_LINGER 0, which sends a
// TCP RST; it reports false if the connection cannot be hijacked (HTTP/2).
func (p *Proxy) resetConn(w http.ResponseWriter) bool {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return false
	}
	// counted before the client can see the reset: a client that reads
	// Stats after its error finds it
	p.reset.Add(1)
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
	return true
}

func (p *Proxy) modifyResponse(resp *http.Response) error {
	if resp.Request == nil || resp.Request.Context().Value(truncateKey{}) == nil {
		return nil
	}
	if resp.Request.Method == http.MethodHead || resp.ContentLength <= 0 {
		return nil
	}
	p.truncated.Add(1)
	// ReverseProxy copies the headers, Content-Length included, then the
	// body; when the body fails it aborts the handler, and the server
	// closes the connection with the body cut short.
	resp.Body = &cutBody{rc: resp.Body, left: resp.ContentLength / 2}
	return nil
}

var errCut = errors.New("faultproxy: body cut short")

type cutBody struct {
	rc   io.ReadCloser
	left int64
}

func (c *cutBody) Read(b []byte) (int, error) {
	if c.left <= 0 {
		return 0, errCut
	}
	if int64(len(b)) > c.left {
		b = b[:c.left]
	}
	n, err := c.rc.Read(b)
	c.left -= int64(n)
	if err == io.EOF {
		err = errCut
	}
	return n, err
}

func (c *cutBody) Close() error { return c.rc.Close() }

func xmlEscape(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}
