package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"
)

// freeAddr returns a 127.0.0.1 address with a port free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func TestCacheCommand(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "aerie.cache")
	httpAddr, mcAddr := freeAddr(t), freeAddr(t)
	root := newRootCmd()
	root.SetArgs([]string{"cache", "--cache.path", path, "--cache.size", "4MiB", "--cache.slab-size", "65536",
		"--http.addr", httpAddr, "--memcached.addr", mcAddr, "--log.level", "warn"})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error)
	go func() { done <- root.ExecuteContext(ctx) }()

	base := "http://" + httpAddr
	put := func() (*http.Response, error) {
		req, _ := http.NewRequest("PUT", base+"/cache/cpu?start=0&end=60", strings.NewReader(`{"fields":{"mean":[[0,0.5],[60,1.5]]}}`))
		return http.DefaultClient.Do(req)
	}
	var resp *http.Response
	var err error
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if resp, err = put(); err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("PUT: %s", resp.Status)
	}
	get := func(target string) (int, string) {
		t.Helper()
		resp, err := http.Get(base + target)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/cache/cpu?start=0&end=30"); code != http.StatusOK || body != `{"status":"hit","start":0,"end":30,"fields":{"mean":[[0,0.5]]}}` {
		t.Fatalf("GET: %d %s", code, body)
	}
	// A partial hit this small (under 512 KiB, TSCache §3.3) is a miss.
	if code, body := get("/cache/cpu?start=30&end=90"); code != http.StatusNotFound {
		t.Fatalf("GET of a small partial hit: %d %s", code, body)
	}
	if code, body := get("/metrics"); code != 200 || !strings.Contains(body, `aerie_cache_hits_total{cache="server"} 1`) {
		t.Fatalf("/metrics: %d, lacks the cache's hit:\n%s", code, body)
	}

	// The memcached listener serves the same cache.
	it, err := memcache.New(mcAddr).Get("cpu:0:60")
	if err != nil || string(it.Value) != `{"status":"hit","start":0,"end":60,"fields":{"mean":[[0,0.5],[60,1.5]]}}` {
		t.Fatalf("memcached get: %v %v", it, err)
	}

	cancel() // as SIGTERM does
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("aerie cache does not stop")
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
}

func TestCacheByteSizeFlag(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		err  string
	}{
		{"1048576", 1 << 20, ""},
		{"256MiB", 256 << 20, ""},
		{"4GiB", 4 << 30, ""},
		{"64KB", 64 << 10, ""},
		{"1.5x", 0, "want bytes"},
		{"-1", 0, "negative"},
	} {
		var b byteSize
		err := b.Set(tc.in)
		if (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) || (err == nil && int64(b) != tc.want) {
			t.Errorf("Set(%q) = %d, %v; want %d, %q", tc.in, b, err, tc.want, tc.err)
		}
	}
}
