package httpbench

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aerie-db/aerie/bench/harness"
	"github.com/aerie-db/aerie/bench/tsbs"
)

// fakeServer serves h as a peer named "fake".
func fakeServer(t *testing.T, h http.HandlerFunc) *harness.Peer {
	ts := httptest.NewServer(h)
	t.Cleanup(func() {
		httpClient.CloseIdleConnections()
		ts.Close()
	})
	return &harness.Peer{Spec: harness.PeerSpec{Name: "fake"}, Addrs: []string{strings.TrimPrefix(ts.URL, "http://")}}
}

func TestWrite(t *testing.T) {
	var calls atomic.Int32
	s := fakeServer(t, func(w http.ResponseWriter, r *http.Request) {
		n := calls.Add(1)
		b, _ := io.ReadAll(r.Body)
		switch {
		case r.URL.Path == "/write" && r.URL.Query().Get("precision") == "ms" && string(b) == "m f=1 1\n":
			w.WriteHeader(http.StatusNoContent)
		case r.URL.Path == "/api/v1/write" && r.Header.Get("Content-Encoding") == "snappy" && n < 3:
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusServiceUnavailable)
		case r.URL.Path == "/api/v1/write" && r.Header.Get("X-Prometheus-Remote-Write-Version") == "0.1.0":
			w.WriteHeader(http.StatusNoContent)
		default:
			http.Error(w, "bad line 1", http.StatusBadRequest)
		}
	})
	ctx := context.Background()
	if n, err := write(ctx, s, lineProtocol, []byte("m f=1 1\n")); n != 0 || err != nil {
		t.Fatalf("line protocol: %d retries, %v", n, err)
	}
	if n, err := write(ctx, s, remoteWrite, []byte("x")); n != 1 || err != nil {
		t.Fatalf("remote write after a 503: %d retries, %v", n, err)
	}
	if _, err := write(ctx, s, lineProtocol, []byte("bad")); err == nil || !strings.Contains(err.Error(), "HTTP 400: bad line 1") {
		t.Fatalf("a 400: %v", err)
	}
}

func TestPromQuery(t *testing.T) {
	s := fakeServer(t, func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		if r.Method != http.MethodPost {
			http.Error(w, "want POST", http.StatusMethodNotAllowed)
			return
		}
		io.WriteString(w, r.URL.Path+" "+r.Form.Encode())
	})
	ctx := context.Background()
	b, d, err := promQuery(ctx, s, query{Query: tsbs.Query{Expr: "up", Start: 1_700_000_000_000, End: 1_700_000_360_500, Step: 300_000_000_000}})
	if err != nil || d <= 0 {
		t.Fatal(err, d)
	}
	if want := "/api/v1/query_range end=1700000360.500&query=up&start=1700000000.000&step=300"; string(b) != want {
		t.Fatalf("%s, want %s", b, want)
	}
	b, _, err = promQuery(ctx, s, query{Query: tsbs.Query{Expr: "up", Start: 1_700_000_000_001, Instant: true}, nocache: true})
	if want := "/api/v1/query nocache=1&query=up&time=1700000000.001"; err != nil || string(b) != want {
		t.Fatalf("%s, %v; want %s", b, err, want)
	}
}
