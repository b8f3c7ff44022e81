package harness

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

func TestMetricValue(t *testing.T) {
	m := []byte("# HELP aerie_flush_groups x\naerie_flush_groups_done 3\naerie_flush_groups 7\naerie_flushes_total{x=\"y\"} 2\naerie_flushes_total 1e+01\nvm_rows{type=\"storage/inmemory\"} 0\n")
	for _, tc := range []struct {
		name string
		want float64
		ok   bool
	}{{"aerie_flush_groups", 7, true}, {"aerie_flush_groups_done", 3, true}, {"aerie_flushes_total", 10, true}, {"aerie_blocks", 0, false}, {`vm_rows{type="storage/inmemory"}`, 0, true}} {
		if v, ok := MetricValue(m, tc.name); v != tc.want || ok != tc.ok {
			t.Errorf("MetricValue(%s) = %v, %v; want %v, %v", tc.name, v, ok, tc.want, tc.ok)
		}
	}
}

// TestAwaitVMFlush: force_flush first, then /metrics until no rows are in
// memory; a non-200 answer is an error naming the peer.
func TestAwaitVMFlush(t *testing.T) {
	var flushed, polls atomic.Int32
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/internal/force_flush":
			flushed.Add(1)
		case "/metrics":
			rows := "0"
			if polls.Add(1) < 3 {
				rows = "12"
			}
			w.Write([]byte("vm_rows{type=\"storage/inmemory\"} " + rows + "\nvm_rows{type=\"indexdb/inmemory\"} 0\n"))
		default:
			http.Error(w, "no such path", http.StatusNotFound)
		}
	}))
	defer ts.Close()
	p := &Peer{Spec: PeerSpec{Name: "vm"}, Addrs: []string{strings.TrimPrefix(ts.URL, "http://")}}
	if err := AwaitVMFlush(context.Background(), p); err != nil || flushed.Load() != 1 || polls.Load() != 3 {
		t.Fatalf("AwaitVMFlush: %v after %d flushes and %d polls", err, flushed.Load(), polls.Load())
	}
	if _, err := p.Get(context.Background(), "/x"); err == nil || !strings.Contains(err.Error(), "vm /x: HTTP 404: no such path") {
		t.Fatalf("Get of a 404: %v", err)
	}
}
