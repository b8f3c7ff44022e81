package bucket_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"

	"github.com/aerie-db/aerie/internal/bucket"
	"github.com/aerie-db/aerie/internal/bucket/faultproxy"
	"github.com/aerie-db/aerie/internal/bucket/s3test"
)

// openThroughProxy starts versitygw and a fault proxy in front of it, and
// opens the S3 provider through the proxy with fast retries.
func openThroughProxy(t *testing.T, opts faultproxy.Options, maxRetries int) (*bucket.Bucket, *faultproxy.Proxy, *prometheus.Registry) {
	t.Helper()
	srv := s3test.Start(t)
	proxy := faultproxy.New("http://"+srv.Endpoint, opts)
	t.Cleanup(proxy.Close)
	cfg := srv.Config()
	cfg.Config["endpoint"] = proxy.Addr
	cfg.Timeout = 10 * time.Second
	cfg.MaxRetries = maxRetries
	cfg.RetryMinBackoff = time.Millisecond
	cfg.RetryMaxBackoff = 20 * time.Millisecond
	reg := prometheus.NewRegistry()
	b, err := bucket.Open(cfg, t.TempDir(), nil, reg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b, proxy, reg
}

// parallel runs f(i) for i in [0, n) on workers goroutines and returns
// the first error.
func parallel(n, workers int, f func(i int) error) error {
	var g errgroup.Group
	g.SetLimit(workers)
	for i := range n {
		g.Go(func() error { return f(i) })
	}
	return g.Wait()
}

// TestS3Faults uploads 200 objects to versitygw through a proxy that
// delays every request and fails a third of them (503s, cut bodies,
// resets), reads a range of each back, and checks every byte.
func TestS3Faults(t *testing.T) {
	// A request fails with probability about 0.35, so an operation fails
	// all its 1+15 attempts with probability 0.35^16 ≈ 5e-8.
	b, proxy, reg := openThroughProxy(t, faultproxy.Options{
		Latency: 5 * time.Millisecond, P503: 0.2, PTruncate: 0.1, PReset: 0.1, Seed: 1,
	}, 15)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(7, 7))
	const n = 200
	objects := make([][]byte, n)
	ranges := make([][2]int64, n)
	for i := range objects {
		objects[i] = make([]byte, 1+rng.IntN(64<<10))
		for j := range objects[i] {
			objects[i][j] = byte(rng.Uint32())
		}
		off := rng.Int64N(int64(len(objects[i])))
		ranges[i] = [2]int64{off, 1 + rng.Int64N(int64(len(objects[i]))-off)}
	}
	name := func(i int) string { return fmt.Sprintf("blocks/%03d/chunks/000001", i) }

	if err := parallel(n, 8, func(i int) error { return b.Upload(ctx, name(i), objects[i]) }); err != nil {
		t.Fatal(err)
	}
	if err := parallel(n, 8, func(i int) error {
		off, length := ranges[i][0], ranges[i][1]
		got, err := b.GetRange(ctx, name(i), off, length)
		if err != nil {
			return err
		}
		if !bytes.Equal(got, objects[i][off:off+length]) {
			return fmt.Errorf("GetRange(%s, %d, %d): wrong bytes", name(i), off, length)
		}
		if i%10 == 0 {
			if got, err = b.Get(ctx, name(i)); err != nil {
				return err
			}
			if !bytes.Equal(got, objects[i]) {
				return fmt.Errorf("Get(%s): wrong bytes", name(i))
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var listed int
	if err := b.Iter(ctx, "blocks/", func(string) error { listed++; return nil }, false); err != nil {
		t.Fatal(err)
	}
	if listed != n {
		t.Fatalf("Iter listed %d blocks, want %d", listed, n)
	}

	st := proxy.Stats()
	t.Logf("proxy: %+v", st)
	if st.Unavailable == 0 || st.Truncated == 0 || st.Reset == 0 || st.Delayed != st.Requests {
		t.Errorf("faults injected: %+v; want some of each, and every request delayed", st)
	}
	retries := retrySummary(t, reg)
	t.Logf("retries: %s", retries)
	for _, series := range []string{
		`aerie_bucket_retries_total{operation="upload",reason="server_error"}`,
		`aerie_bucket_retries_total{operation="get_range",reason="server_error"}`,
		`aerie_bucket_retries_total{operation="get_range",reason="truncated"}`,
	} {
		if !gathered(t, reg, series) {
			t.Errorf("no %s (retries: %s)", series, retries)
		}
	}
}

// retrySummary returns aerie_bucket_retries_total as "op/reason=n ...".
func retrySummary(t *testing.T, reg *prometheus.Registry) string {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var parts []string
	for _, mf := range mfs {
		if mf.GetName() != "aerie_bucket_retries_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			var op, reason string
			for _, lp := range m.GetLabel() {
				switch lp.GetName() {
				case "operation":
					op = lp.GetValue()
				case "reason":
					reason = lp.GetValue()
				}
			}
			parts = append(parts, fmt.Sprintf("%s/%s=%v", op, reason, m.GetCounter().GetValue()))
		}
	}
	return strings.Join(parts, " ")
}

// gathered reports whether reg has the series, with a value above zero.
func gathered(t *testing.T, reg *prometheus.Registry, series string) bool {
	t.Helper()
	name, labels, _ := strings.Cut(strings.TrimSuffix(series, "}"), "{")
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			for _, kv := range strings.Split(labels, ",") {
				k, v, _ := strings.Cut(kv, "=")
				found := false
				for _, lp := range m.GetLabel() {
					found = found || (lp.GetName() == k && `"`+lp.GetValue()+`"` == v)
				}
				if !found {
					continue next
				}
			}
			if m.GetCounter().GetValue() > 0 {
				return true
			}
		}
	}
	return false
}

// TestS3FaultsAlways checks that when every request fails, the error names
// the object (and, for a range, the offset and length) once the retries
// run out.
func TestS3FaultsAlways(t *testing.T) {
	b, proxy, reg := openThroughProxy(t, faultproxy.Options{}, 3)
	ctx := context.Background()
	data := bytes.Repeat([]byte("aerie"), 1000)
	if err := b.Upload(ctx, "blocks/x/index", data); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Get(ctx, "blocks/none"); !b.IsObjNotFoundErr(err) {
		t.Fatalf("Get of a missing object: %v, want not found", err)
	}
	tests := []struct {
		name    string
		opts    faultproxy.Options
		call    func() error
		wantErr []string
		reason  string
	}{
		{
			name: "503 on get range",
			opts: faultproxy.Options{P503: 1},
			call: func() error { _, err := b.GetRange(ctx, "blocks/x/index", 100, 200); return err },
			wantErr: []string{`get range of "blocks/x/index" at offset 100, length 200 (4 attempts)`,
				"HTTP 503"},
			reason: "server_error",
		},
		{
			name:    "cut bodies on get range",
			opts:    faultproxy.Options{PTruncate: 1},
			call:    func() error { _, err := b.GetRange(ctx, "blocks/x/index", 0, 5000); return err },
			wantErr: []string{`"blocks/x/index" at offset 0, length 5000 (4 attempts)`, "body cut at", "unexpected EOF"},
			reason:  "truncated",
		},
		{
			name:    "resets on upload",
			opts:    faultproxy.Options{PReset: 1},
			call:    func() error { return b.Upload(ctx, "blocks/y/index", data) },
			wantErr: []string{`upload "blocks/y/index", 5000 bytes (4 attempts)`},
		},
		{
			name:    "every fault on get",
			opts:    faultproxy.Options{P503: 1, PTruncate: 1, PReset: 1, Latency: time.Millisecond},
			call:    func() error { _, err := b.Get(ctx, "blocks/x/index"); return err },
			wantErr: []string{`get "blocks/x/index" (4 attempts)`, "HTTP 503"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			proxy.SetOptions(tc.opts)
			defer proxy.SetOptions(faultproxy.Options{})
			err := tc.call()
			for _, want := range tc.wantErr {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("error %v, want one with %q", err, want)
				}
			}
			if tc.reason != "" && !gathered(t, reg, `aerie_bucket_retries_total{reason="`+tc.reason+`"}`) {
				t.Errorf("no retries with reason %s", tc.reason)
			}
		})
	}
	// With the faults off, the bucket works again.
	if got, err := b.GetRange(ctx, "blocks/x/index", 5, 5); err != nil || string(got) != "aerie" {
		t.Fatalf("GetRange after the faults = %q, %v", got, err)
	}
}
