package faultproxy

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// backend serves 4 KiB bodies on GET and echoes PUT bodies, and records
// the Host header and the number of requests it saw.
type backend struct {
	url  string
	hits atomic.Int64
	host atomic.Value
}

var body4k = bytes.Repeat([]byte("0123456789abcdef"), 256)

func startBackend(t *testing.T) *backend {
	t.Helper()
	b := &backend{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.hits.Add(1)
		b.host.Store(r.Host)
		data := body4k
		if r.Method == http.MethodPut {
			var err error
			if data, err = io.ReadAll(r.Body); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(data)))
		_, _ = w.Write(data)
	}))
	t.Cleanup(srv.Close)
	b.url = srv.URL
	return b
}

// client returns a client with a fresh connection per request, so the
// transport never retries a request on its own after a reset.
func client(t *testing.T) *http.Client {
	tr := &http.Transport{DisableKeepAlives: true}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

func TestFaults(t *testing.T) {
	tests := []struct {
		name  string
		opts  Options
		check func(t *testing.T, resp *http.Response, err error, be *backend, st Stats)
	}{
		{
			name: "none",
			opts: Options{},
			check: func(t *testing.T, resp *http.Response, err error, be *backend, st Stats) {
				if err != nil {
					t.Fatal(err)
				}
				got, err := io.ReadAll(resp.Body)
				if err != nil || !bytes.Equal(got, body4k) {
					t.Fatalf("body: %d bytes, err %v; want the 4 KiB body", len(got), err)
				}
				if be.hits.Load() != 1 || st != (Stats{Requests: 1}) {
					t.Fatalf("backend hits %d, stats %+v", be.hits.Load(), st)
				}
			},
		},
		{
			name: "latency",
			opts: Options{Latency: 30 * time.Millisecond},
			check: func(t *testing.T, resp *http.Response, err error, be *backend, st Stats) {
				if err != nil {
					t.Fatal(err)
				}
				if _, err := io.ReadAll(resp.Body); err != nil {
					t.Fatal(err)
				}
				if st != (Stats{Requests: 1, Delayed: 1}) {
					t.Fatalf("stats %+v", st)
				}
			},
		},
		{
			name: "503",
			opts: Options{P503: 1},
			check: func(t *testing.T, resp *http.Response, err error, be *backend, st Stats) {
				if err != nil {
					t.Fatal(err)
				}
				if resp.StatusCode != http.StatusServiceUnavailable {
					t.Fatalf("status %d, want 503", resp.StatusCode)
				}
				var e struct {
					Code     string
					Resource string
				}
				if err := xml.NewDecoder(resp.Body).Decode(&e); err != nil {
					t.Fatalf("error body: %v", err)
				}
				if e.Code != "SlowDown" || e.Resource != "/b/obj" {
					t.Fatalf("error body %+v", e)
				}
				if be.hits.Load() != 0 || st != (Stats{Requests: 1, Unavailable: 1}) {
					t.Fatalf("backend hits %d, stats %+v", be.hits.Load(), st)
				}
			},
		},
		{
			name: "truncate",
			opts: Options{PTruncate: 1},
			check: func(t *testing.T, resp *http.Response, err error, be *backend, st Stats) {
				if err != nil {
					t.Fatal(err)
				}
				if resp.ContentLength != int64(len(body4k)) {
					t.Fatalf("Content-Length %d, want the whole %d", resp.ContentLength, len(body4k))
				}
				got, err := io.ReadAll(resp.Body)
				if !errors.Is(err, io.ErrUnexpectedEOF) {
					t.Fatalf("read error %v, want unexpected EOF", err)
				}
				if !bytes.Equal(got, body4k[:len(body4k)/2]) {
					t.Fatalf("got %d bytes, want the first %d", len(got), len(body4k)/2)
				}
				if st != (Stats{Requests: 1, Truncated: 1}) {
					t.Fatalf("stats %+v", st)
				}
			},
		},
		{
			name: "reset",
			opts: Options{PReset: 1},
			check: func(t *testing.T, resp *http.Response, err error, be *backend, st Stats) {
				if !errors.Is(err, syscall.ECONNRESET) {
					t.Fatalf("error %v, want a connection reset", err)
				}
				if be.hits.Load() != 0 || st != (Stats{Requests: 1, Reset: 1}) {
					t.Fatalf("backend hits %d, stats %+v", be.hits.Load(), st)
				}
			},
		},
		{
			name: "503 wins over the others",
			opts: Options{P503: 1, PReset: 1, PTruncate: 1},
			check: func(t *testing.T, resp *http.Response, err error, be *backend, st Stats) {
				if err != nil || resp.StatusCode != http.StatusServiceUnavailable {
					t.Fatalf("resp %v, err %v; want a 503", resp, err)
				}
				if st != (Stats{Requests: 1, Unavailable: 1}) {
					t.Fatalf("stats %+v", st)
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			be := startBackend(t)
			p := New(be.url, tc.opts)
			defer p.Close()
			start := time.Now()
			resp, err := client(t).Get(p.URL + "/b/obj")
			if resp != nil {
				defer resp.Body.Close()
			}
			if tc.opts.Latency > 0 && time.Since(start) < tc.opts.Latency {
				t.Errorf("answered in %s, before the latency of %s", time.Since(start), tc.opts.Latency)
			}
			tc.check(t, resp, err, be, p.Stats())
		})
	}
}

// TestForward checks that a PUT's body and the client's Host header reach
// the server unchanged.
func TestForward(t *testing.T) {
	be := startBackend(t)
	p := New(be.url, Options{})
	defer p.Close()
	data := bytes.Repeat([]byte{7}, 100_000)
	req, err := http.NewRequest(http.MethodPut, p.URL+"/b/put", bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("echo: %d bytes, err %v", len(got), err)
	}
	if h := be.host.Load(); h != p.Addr {
		t.Fatalf("backend saw Host %v, want the proxy's %s", h, p.Addr)
	}
}

// TestSeed checks that the same seed gives the same faults to the same
// sequence of requests, and that SetOptions reseeds.
func TestSeed(t *testing.T) {
	be := startBackend(t)
	opts := Options{P503: 0.5, Seed: 42}
	run := func(p *Proxy) []int {
		c := client(t)
		var codes []int
		for range 40 {
			resp, err := c.Get(p.URL + "/b/obj")
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			codes = append(codes, resp.StatusCode)
		}
		return codes
	}
	p1 := New(be.url, opts)
	defer p1.Close()
	p2 := New(be.url, Options{})
	defer p2.Close()
	p2.SetOptions(opts)
	a, b := run(p1), run(p2)
	n503 := 0
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("request %d: %d and %d with the same seed", i, a[i], b[i])
		}
		if a[i] == http.StatusServiceUnavailable {
			n503++
		}
	}
	if n503 == 0 || n503 == len(a) {
		t.Fatalf("%d of %d requests got a 503 with P503 0.5", n503, len(a))
	}
	if got := p1.Stats().Unavailable; got != int64(n503) {
		t.Fatalf("Stats().Unavailable = %d, want %d", got, n503)
	}
}

func TestInvalidOptions(t *testing.T) {
	for _, o := range []Options{{P503: -0.1}, {PTruncate: 1.5}, {PReset: 2}, {Latency: -time.Second}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("New(%+v) did not panic", o)
				}
			}()
			p := New("http://127.0.0.1:1", o)
			p.Close()
		}()
	}
}
