package bucket

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/thanos-io/objstore"
)

// step is one scripted misbehaviour of fakeBucket, used by one call.
type step struct {
	err     error // the call's error
	apply   bool  // with err: do the operation first, then fail
	cut     int64 // with bodyErr: the body ends after cut bytes with bodyErr
	bodyErr error
	hang    bool // block until the call's context is done
	partial bool // Iter: pass the first name to f, then fail with err
}

// fakeBucket is an in-memory objstore.Bucket whose calls follow a script:
// each call of an operation takes the next step for that operation, and
// behaves normally when there is none.
type fakeBucket struct {
	objstore.Bucket // *objstore.InMemBucket: the objects

	mu     sync.Mutex // guards script and calls
	script map[string][]step
	calls  map[string]int

	gate        chan struct{} // if non-nil, GetRange waits for a token
	inflight    atomic.Int64
	maxInflight atomic.Int64
}

func newFake() *fakeBucket {
	return &fakeBucket{Bucket: objstore.NewInMemBucket(), script: map[string][]step{}, calls: map[string]int{}}
}

func (f *fakeBucket) next(ctx context.Context, op string) (step, error) {
	f.mu.Lock()
	f.calls[op]++
	var s step
	if q := f.script[op]; len(q) > 0 {
		s, f.script[op] = q[0], q[1:]
	}
	f.mu.Unlock()
	if s.hang {
		<-ctx.Done()
		return s, ctx.Err()
	}
	return s, nil
}

func (f *fakeBucket) callCount(op string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[op]
}

func (f *fakeBucket) body(s step, rc io.ReadCloser) io.ReadCloser {
	if s.bodyErr == nil {
		return rc
	}
	return struct {
		io.Reader
		io.Closer
	}{io.MultiReader(io.LimitReader(rc, s.cut), errReader{s.bodyErr}), rc}
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

func (f *fakeBucket) Get(ctx context.Context, name string) (io.ReadCloser, error) {
	s, err := f.next(ctx, opGet)
	if err != nil {
		return nil, err
	}
	if s.err != nil {
		return nil, s.err
	}
	rc, err := f.Bucket.Get(ctx, name)
	if err != nil {
		return nil, err
	}
	return f.body(s, rc), nil
}

func (f *fakeBucket) GetRange(ctx context.Context, name string, off, length int64) (io.ReadCloser, error) {
	n := f.inflight.Add(1)
	defer f.inflight.Add(-1)
	for {
		m := f.maxInflight.Load()
		if n <= m || f.maxInflight.CompareAndSwap(m, n) {
			break
		}
	}
	if f.gate != nil {
		select {
		case <-f.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	s, err := f.next(ctx, opGetRange)
	if err != nil {
		return nil, err
	}
	if s.err != nil {
		return nil, s.err
	}
	rc, err := f.Bucket.GetRange(ctx, name, off, length)
	if err != nil {
		return nil, err
	}
	return f.body(s, rc), nil
}

func (f *fakeBucket) Upload(ctx context.Context, name string, r io.Reader, opts ...objstore.ObjectUploadOption) error {
	s, err := f.next(ctx, opUpload)
	if err != nil {
		return err
	}
	if s.err != nil && !s.apply {
		return s.err
	}
	if err := f.Bucket.Upload(ctx, name, r, opts...); err != nil {
		return err
	}
	return s.err
}

func (f *fakeBucket) Delete(ctx context.Context, name string) error {
	s, err := f.next(ctx, opDelete)
	if err != nil {
		return err
	}
	if s.err != nil && !s.apply {
		return s.err
	}
	if err := f.Bucket.Delete(ctx, name); err != nil {
		return err
	}
	return s.err
}

func (f *fakeBucket) Exists(ctx context.Context, name string) (bool, error) {
	s, err := f.next(ctx, opExists)
	if err != nil {
		return false, err
	}
	if s.err != nil {
		return false, s.err
	}
	return f.Bucket.Exists(ctx, name)
}

func (f *fakeBucket) Attributes(ctx context.Context, name string) (objstore.ObjectAttributes, error) {
	s, err := f.next(ctx, opAttributes)
	if err != nil {
		return objstore.ObjectAttributes{}, err
	}
	if s.err != nil {
		return objstore.ObjectAttributes{}, s.err
	}
	return f.Bucket.Attributes(ctx, name)
}

func (f *fakeBucket) Iter(ctx context.Context, dir string, fn func(string) error, opts ...objstore.IterOption) error {
	s, err := f.next(ctx, opIter)
	if err != nil {
		return err
	}
	if s.partial {
		first := true
		err := f.Bucket.Iter(ctx, dir, func(name string) error {
			if !first {
				return s.err
			}
			first = false
			return fn(name)
		}, opts...)
		if err == nil {
			err = s.err
		}
		return err
	}
	if s.err != nil {
		return s.err
	}
	return f.Bucket.Iter(ctx, dir, fn, opts...)
}

// Provider errors as the SDKs return them.
var (
	err503 = fmt.Errorf("upload s3 object: %w", minio.ErrorResponse{StatusCode: 503, Code: "SlowDown", Message: "Please reduce your request rate."})
	err500 = minio.ErrorResponse{StatusCode: 500, Code: "InternalError"}
	err429 = minio.ErrorResponse{StatusCode: 429, Code: "TooManyRequests"}
	err403 = minio.ErrorResponse{StatusCode: 403, Code: "AccessDenied"}
	err501 = minio.ErrorResponse{StatusCode: 501, Code: "NotImplemented"}
	errRST = &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}
)

// testBucket wraps a fake with fast retries and records the backoffs
// instead of sleeping them.
type testBucket struct {
	*Bucket
	fake *fakeBucket
	reg  *prometheus.Registry

	mu       sync.Mutex // guards backoffs
	backoffs []time.Duration
}

func newTestBucket(t *testing.T, cfg Config) *testBucket {
	t.Helper()
	if cfg.RetryMinBackoff == 0 {
		cfg.RetryMinBackoff = 10 * time.Millisecond
	}
	if cfg.RetryMaxBackoff == 0 {
		cfg.RetryMaxBackoff = 80 * time.Millisecond
	}
	tb := &testBucket{fake: newFake(), reg: prometheus.NewRegistry()}
	b, err := Wrap(tb.fake, cfg, nil, tb.reg)
	if err != nil {
		t.Fatal(err)
	}
	b.sleep = func(ctx context.Context, d time.Duration) error {
		tb.mu.Lock()
		tb.backoffs = append(tb.backoffs, d)
		tb.mu.Unlock()
		return ctx.Err()
	}
	tb.Bucket = b
	return tb
}

func (tb *testBucket) retries(op, reason string) int {
	return int(testutil.ToFloat64(tb.m.retries.WithLabelValues(op, reason)))
}

func (tb *testBucket) requests(op, result string) int {
	return int(testutil.ToFloat64(tb.m.requests.WithLabelValues(op, result)))
}

func (tb *testBucket) totalRetries() int {
	mfs, err := tb.reg.Gather()
	if err != nil {
		panic(err)
	}
	total := 0
	for _, mf := range mfs {
		if mf.GetName() == "aerie_bucket_retries_total" {
			for _, m := range mf.GetMetric() {
				total += int(m.GetCounter().GetValue())
			}
		}
	}
	return total
}

var object = bytes.Repeat([]byte("abcdefghijklmnopqrstuvwxyz012345"), 32) // 1 KiB

func TestRetry(t *testing.T) {
	const name = "blocks/01/chunks/000001"
	type call func(ctx context.Context, b *testBucket) error
	getRange := func(off, length int64) call {
		return func(ctx context.Context, b *testBucket) error {
			got, err := b.GetRange(ctx, name, off, length)
			if err == nil && !bytes.Equal(got, object[off:off+length]) {
				return fmt.Errorf("GetRange returned wrong bytes: %q", got)
			}
			return err
		}
	}
	get := func(ctx context.Context, b *testBucket) error {
		got, err := b.Get(ctx, name)
		if err == nil && !bytes.Equal(got, object) {
			return fmt.Errorf("Get returned %d wrong bytes", len(got))
		}
		return err
	}
	tests := []struct {
		name       string
		cfg        Config
		script     map[string][]step
		call       call
		wantErr    []string // substrings of the error; nil for success
		notFound   bool
		wantCalls  map[string]int
		wantRetry  map[string]int // "op/reason" → retries
		wantResult map[string]int // "op/result" → attempts
	}{
		{
			name:       "503 twice then success",
			script:     map[string][]step{opGetRange: {{err: err503}, {err: err503}}},
			call:       getRange(100, 50),
			wantCalls:  map[string]int{opGetRange: 3},
			wantRetry:  map[string]int{"get_range/server_error": 2},
			wantResult: map[string]int{"get_range/transient": 2, "get_range/success": 1},
		},
		{
			name:      "500, 429 and a reset",
			script:    map[string][]step{opGetRange: {{err: err500}, {err: err429}, {err: errRST}}},
			call:      getRange(0, 1024),
			wantCalls: map[string]int{opGetRange: 4},
			wantRetry: map[string]int{"get_range/server_error": 1, "get_range/throttled": 1, "get_range/connection_reset": 1},
		},
		{
			name:      "short body then success",
			script:    map[string][]step{opGetRange: {{cut: 10, bodyErr: io.EOF}}},
			call:      getRange(100, 50),
			wantCalls: map[string]int{opGetRange: 2},
			wantRetry: map[string]int{"get_range/short_body": 1},
		},
		{
			name:      "truncated body then success",
			script:    map[string][]step{opGetRange: {{cut: 10, bodyErr: io.ErrUnexpectedEOF}}},
			call:      getRange(100, 50),
			wantCalls: map[string]int{opGetRange: 2},
			wantRetry: map[string]int{"get_range/truncated": 1},
		},
		{
			name:      "per-request timeout then success",
			cfg:       Config{Timeout: 20 * time.Millisecond},
			script:    map[string][]step{opGetRange: {{hang: true}}},
			call:      getRange(0, 10),
			wantCalls: map[string]int{opGetRange: 2},
			wantRetry: map[string]int{"get_range/timeout": 1},
		},
		{
			name:       "short body every time",
			cfg:        Config{MaxRetries: 3},
			script:     map[string][]step{opGetRange: {{cut: 10, bodyErr: io.EOF}, {cut: 10, bodyErr: io.EOF}, {cut: 10, bodyErr: io.EOF}, {cut: 10, bodyErr: io.EOF}}},
			call:       getRange(100, 50),
			wantErr:    []string{`"blocks/01/chunks/000001"`, "offset 100", "length 50", "4 attempts", "short body: got 10 of 50 bytes"},
			wantCalls:  map[string]int{opGetRange: 4},
			wantRetry:  map[string]int{"get_range/short_body": 3},
			wantResult: map[string]int{"get_range/transient": 4},
		},
		{
			name:      "cut body every time",
			cfg:       Config{MaxRetries: 1},
			script:    map[string][]step{opGetRange: {{cut: 7, bodyErr: io.ErrUnexpectedEOF}, {cut: 7, bodyErr: io.ErrUnexpectedEOF}}},
			call:      getRange(1000, 24),
			wantErr:   []string{`"blocks/01/chunks/000001" at offset 1000, length 24 (2 attempts)`, "body cut at 7 of 24 bytes: unexpected EOF"},
			wantCalls: map[string]int{opGetRange: 2},
		},
		{
			name:     "range past the end",
			cfg:      Config{MaxRetries: 2},
			call:     getRange(1000, 100),
			wantErr:  []string{"offset 1000, length 100 (3 attempts)", "short body: got 24 of 100 bytes"},
			notFound: false,
		},
		{
			name: "not found is not retried",
			call: func(ctx context.Context, b *testBucket) error {
				_, err := b.GetRange(ctx, "missing", 0, 10)
				return err
			},
			wantErr:    []string{`"missing" at offset 0, length 10 (1 attempt)`, "object not found"},
			notFound:   true,
			wantCalls:  map[string]int{opGetRange: 1},
			wantResult: map[string]int{"get_range/not_found": 1},
		},
		{
			name:       "permanent error is not retried",
			script:     map[string][]step{opGetRange: {{err: err403}}},
			call:       getRange(0, 10),
			wantErr:    []string{"(1 attempt): HTTP 403: Access Denied"},
			wantCalls:  map[string]int{opGetRange: 1},
			wantResult: map[string]int{"get_range/error": 1},
		},
		{
			name:      "501 is not retried",
			script:    map[string][]step{opGetRange: {{err: err501}}},
			call:      getRange(0, 10),
			wantErr:   []string{"(1 attempt)"},
			wantCalls: map[string]int{opGetRange: 1},
		},
		{
			name:      "retries run out",
			cfg:       Config{MaxRetries: 2},
			script:    map[string][]step{opGetRange: {{err: err503}, {err: err503}, {err: err503}, {err: err503}}},
			call:      getRange(0, 10),
			wantErr:   []string{"(3 attempts): HTTP 503: upload s3 object: Please reduce your request rate."},
			wantCalls: map[string]int{opGetRange: 3},
			wantRetry: map[string]int{"get_range/server_error": 2},
		},
		{
			name:      "get: short body against the size from attributes",
			script:    map[string][]step{opGet: {{cut: 1000, bodyErr: io.EOF}}},
			call:      get,
			wantCalls: map[string]int{opGet: 2, opAttributes: 2},
			wantRetry: map[string]int{"get/short_body": 1},
		},
		{
			name:      "get: attributes fails with 503",
			script:    map[string][]step{opAttributes: {{err: err503}}},
			call:      get,
			wantCalls: map[string]int{opGet: 1, opAttributes: 2},
			wantRetry: map[string]int{"get/server_error": 1},
		},
		{
			name: "get: not found",
			call: func(ctx context.Context, b *testBucket) error {
				_, err := b.Get(ctx, "blocks/02/meta.json")
				return err
			},
			wantErr:   []string{`get "blocks/02/meta.json" (1 attempt): object not found`},
			notFound:  true,
			wantCalls: map[string]int{opAttributes: 1},
		},
		{
			name:   "upload retried",
			script: map[string][]step{opUpload: {{err: err503}, {err: errRST, apply: true}}},
			call: func(ctx context.Context, b *testBucket) error {
				if err := b.Upload(ctx, "x/y", []byte("payload")); err != nil {
					return err
				}
				got, err := b.Get(ctx, "x/y")
				if err == nil && string(got) != "payload" {
					err = fmt.Errorf("uploaded %q", got)
				}
				return err
			},
			wantCalls: map[string]int{opUpload: 3},
			wantRetry: map[string]int{"upload/server_error": 1, "upload/connection_reset": 1},
		},
		{
			name:   "upload gives up, naming the object",
			cfg:    Config{MaxRetries: 1},
			script: map[string][]step{opUpload: {{err: err503}, {err: err503}}},
			call: func(ctx context.Context, b *testBucket) error {
				return b.Upload(ctx, "x/y", []byte("payload"))
			},
			wantErr:   []string{`upload "x/y", 7 bytes (2 attempts)`},
			wantCalls: map[string]int{opUpload: 2},
		},
		{
			name:   "delete: a retry that finds the object gone succeeds",
			script: map[string][]step{opDelete: {{err: err503, apply: true}}},
			call: func(ctx context.Context, b *testBucket) error {
				if err := b.Delete(ctx, name); err != nil {
					return err
				}
				if ok, err := b.Exists(ctx, name); ok || err != nil {
					return fmt.Errorf("after Delete, Exists = %v, %v", ok, err)
				}
				return nil
			},
			wantCalls: map[string]int{opDelete: 2, opExists: 1},
			wantRetry: map[string]int{"delete/server_error": 1},
		},
		{
			name:     "delete: missing object on the first attempt",
			call:     func(ctx context.Context, b *testBucket) error { return b.Delete(ctx, "gone") },
			wantErr:  []string{`delete "gone" (1 attempt)`},
			notFound: true,
		},
		{
			name:   "exists and attributes retried",
			script: map[string][]step{opExists: {{err: err500}}, opAttributes: {{err: err429}}},
			call: func(ctx context.Context, b *testBucket) error {
				if ok, err := b.Exists(ctx, name); !ok || err != nil {
					return fmt.Errorf("Exists = %v, %v", ok, err)
				}
				a, err := b.Attributes(ctx, name)
				if err == nil && a.Size != int64(len(object)) {
					err = fmt.Errorf("Attributes size %d", a.Size)
				}
				return err
			},
			wantCalls: map[string]int{opExists: 2, opAttributes: 2},
			wantRetry: map[string]int{"exists/server_error": 1, "attributes/throttled": 1},
		},
		{
			name:   "iter retried without calling f twice",
			script: map[string][]step{opIter: {{err: err503, partial: true}}},
			call: func(ctx context.Context, b *testBucket) error {
				for _, n := range []string{"blocks/02/meta.json", "blocks/03/meta.json"} {
					if err := b.Upload(ctx, n, []byte("{}")); err != nil {
						return err
					}
				}
				var names []string
				if err := b.Iter(ctx, "blocks/", func(n string) error { names = append(names, n); return nil }, false); err != nil {
					return err
				}
				if want := []string{"blocks/01/", "blocks/02/", "blocks/03/"}; !reflect.DeepEqual(names, want) {
					return fmt.Errorf("Iter gave %q, want %q", names, want)
				}
				return nil
			},
			wantCalls: map[string]int{opIter: 2},
			wantRetry: map[string]int{"iter/server_error": 1},
		},
		{
			name: "iter returns f's error as is",
			call: func(ctx context.Context, b *testBucket) error {
				stop := errors.New("stop")
				if err := b.Iter(ctx, "", func(string) error { return stop }, true); err != stop {
					return fmt.Errorf("Iter returned %v, want f's error", err)
				}
				return nil
			},
			wantCalls: map[string]int{opIter: 1},
		},
		{
			name:    "invalid names make no request",
			call:    invalidNames,
			wantErr: []string{"invalid object name"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := newTestBucket(t, tc.cfg)
			ctx := context.Background()
			if err := b.fake.Bucket.Upload(ctx, name, bytes.NewReader(object)); err != nil {
				t.Fatal(err)
			}
			b.fake.script = tc.script
			err := tc.call(ctx, b)
			if tc.wantErr == nil && err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			for _, want := range tc.wantErr {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("error %v, want one with %q", err, want)
				}
			}
			if got := err != nil && (errors.Is(err, ErrNotFound) && b.IsObjNotFoundErr(err)); got != tc.notFound {
				t.Errorf("error %v: not found = %v, want %v", err, got, tc.notFound)
			}
			for op, want := range tc.wantCalls {
				if got := b.fake.callCount(op); got != want {
					t.Errorf("%d calls of %s, want %d", got, op, want)
				}
			}
			wantTotal := 0
			for k, want := range tc.wantRetry {
				op, reason, _ := strings.Cut(k, "/")
				if got := b.retries(op, reason); got != want {
					t.Errorf("retries{%s, %s} = %d, want %d", op, reason, got, want)
				}
				wantTotal += want
			}
			if tc.wantRetry != nil {
				if got := b.totalRetries(); got != wantTotal {
					t.Errorf("%d retries in all, want %d", got, wantTotal)
				}
			}
			for k, want := range tc.wantResult {
				op, result, _ := strings.Cut(k, "/")
				if got := b.requests(op, result); got != want {
					t.Errorf("requests{%s, %s} = %d, want %d", op, result, got, want)
				}
			}
			// Every backoff is within its full-jitter ceiling.
			cfg := tc.cfg
			if cfg.RetryMinBackoff == 0 {
				cfg.RetryMinBackoff = 10 * time.Millisecond
			}
			if cfg.RetryMaxBackoff == 0 {
				cfg.RetryMaxBackoff = 80 * time.Millisecond
			}
			b.mu.Lock()
			defer b.mu.Unlock()
			if len(b.backoffs) != b.totalRetries() {
				t.Errorf("%d backoffs for %d retries", len(b.backoffs), b.totalRetries())
			}
			for i, d := range b.backoffs {
				if ceil := min(cfg.RetryMaxBackoff, cfg.RetryMinBackoff<<i); d < 0 || d > ceil {
					t.Errorf("backoff %d = %s, outside [0, %s]", i, d, ceil)
				}
			}
		})
	}
}

func invalidNames(ctx context.Context, b *testBucket) error {
	for _, n := range []string{"", "/abs", "a//b", "a/./b", "../up", "a/../../b", "dir/", "."} {
		if _, err := b.GetRange(ctx, n, 0, 1); err == nil || !strings.Contains(err.Error(), "invalid object name") {
			return fmt.Errorf("GetRange(%q): %v, want an invalid-name error", n, err)
		}
		if err := b.Upload(ctx, n, nil); err == nil {
			return fmt.Errorf("Upload(%q) succeeded", n)
		}
	}
	if err := b.Iter(ctx, "../", func(string) error { return nil }, false); err == nil {
		return errors.New(`Iter("../") succeeded`)
	}
	if b.fake.callCount(opGetRange)+b.fake.callCount(opUpload)+b.fake.callCount(opIter) != 0 {
		return errors.New("an invalid name reached the provider")
	}
	_, err := b.GetRange(ctx, "a/../../b", 0, 1)
	return err
}

// TestBackoffBounded checks the full-jitter backoff: every wait lies in
// [0, min(max, min·2^i)], and the waits spread over that range.
func TestBackoffBounded(t *testing.T) {
	b, err := Wrap(newFake(), Config{RetryMinBackoff: time.Millisecond, RetryMaxBackoff: 50 * time.Millisecond}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 70 {
		ceil := min(50*time.Millisecond, time.Millisecond<<min(i, 40))
		var lo, hi time.Duration = ceil, 0
		for range 2000 {
			d := b.backoff(i)
			if d < 0 || d > ceil {
				t.Fatalf("backoff(%d) = %s, outside [0, %s]", i, d, ceil)
			}
			lo, hi = min(lo, d), max(hi, d)
		}
		if lo > ceil/10 || hi < ceil*9/10 {
			t.Fatalf("backoff(%d) ranged over [%s, %s] in 2000 draws, not over [0, %s]", i, lo, hi, ceil)
		}
	}
}

// TestCallerContext checks invariant 3: the caller's own deadline or
// cancellation is not a transient timeout, and stops a backoff.
func TestCallerContext(t *testing.T) {
	t.Run("deadline during an attempt", func(t *testing.T) {
		b := newTestBucket(t, Config{Timeout: time.Minute})
		b.fake.script = map[string][]step{opExists: {{hang: true}}}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		_, err := b.Exists(ctx, "x")
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("error %v, want the caller's deadline", err)
		}
		if n := b.fake.callCount(opExists); n != 1 || b.totalRetries() != 0 || b.requests(opExists, "canceled") != 1 {
			t.Fatalf("%d calls, %d retries, %d canceled; want 1, 0, 1", n, b.totalRetries(), b.requests(opExists, "canceled"))
		}
	})
	t.Run("cancel during a backoff", func(t *testing.T) {
		b := newTestBucket(t, Config{RetryMinBackoff: 4 * time.Minute, RetryMaxBackoff: 4 * time.Minute})
		b.sleep = sleepCtx
		b.fake.script = map[string][]step{opExists: {{err: err503}, {err: err503}}}
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(20*time.Millisecond, cancel)
		_, err := b.Exists(ctx, "x")
		if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "after: HTTP 503") {
			t.Fatalf("error %v, want the cancellation and the last error", err)
		}
		if n := b.fake.callCount(opExists); n != 1 {
			t.Fatalf("%d calls, want 1", n)
		}
	})
	t.Run("already cancelled", func(t *testing.T) {
		b := newTestBucket(t, Config{})
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := b.GetRange(ctx, "x", 0, 1); !errors.Is(err, context.Canceled) {
			t.Fatalf("error %v, want context.Canceled", err)
		}
		if n := b.fake.callCount(opGetRange); n != 0 {
			t.Fatalf("%d calls, want none", n)
		}
	})
}

// TestMaxParallelGets checks invariant 5: no more GetRange attempts are in
// flight than max_parallel_gets.
func TestMaxParallelGets(t *testing.T) {
	const limit, callers = 3, 12
	b := newTestBucket(t, Config{MaxParallelGets: limit})
	if err := b.fake.Bucket.Upload(context.Background(), "obj", bytes.NewReader(object)); err != nil {
		t.Fatal(err)
	}
	b.fake.gate = make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := b.GetRange(context.Background(), "obj", 0, 10)
			errs <- err
		}()
	}
	// Wait until the semaphore is full, give the others time to pass it
	// if they could, then let them all through.
	for b.fake.inflight.Load() < limit {
		time.Sleep(time.Millisecond)
	}
	if got := testutil.ToFloat64(b.m.getsInFlight); got != limit {
		t.Errorf("aerie_bucket_gets_in_flight = %v, want %d", got, limit)
	}
	time.Sleep(20 * time.Millisecond)
	for range callers {
		b.fake.gate <- struct{}{}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := b.fake.maxInflight.Load(); got != limit {
		t.Fatalf("%d GetRange attempts in flight at most, want %d", got, limit)
	}
	if got := testutil.ToFloat64(b.m.fetched.WithLabelValues(opGetRange)); got != 10*callers {
		t.Fatalf("aerie_bucket_fetched_bytes_total = %v, want %d", got, 10*callers)
	}
}

// TestTransient classifies errors as the providers and the network stack
// return them.
func TestTransient(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{err503, reasonServerError},
		{err500, reasonServerError},
		{minio.ErrorResponse{StatusCode: 502}, reasonServerError},
		{err429, reasonThrottled},
		{minio.ErrorResponse{StatusCode: 408}, reasonTimeout},
		{err403, ""},
		{err501, ""},
		{minio.ErrorResponse{StatusCode: 404, Code: "NoSuchBucket"}, ""},
		{errRST, reasonConnReset},
		{fmt.Errorf("write: %w", syscall.EPIPE), reasonConnReset},
		{&net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}, reasonNetwork},
		{&net.DNSError{Err: "no such host", Name: "s3.invalid", IsNotFound: true}, ""},
		{&net.DNSError{Err: "timeout", Name: "s3", IsTimeout: true}, reasonNetwork},
		{fmt.Errorf("read body: %w", io.ErrUnexpectedEOF), reasonTruncated},
		{fmt.Errorf("%w: got 1 of 2 bytes", errShortBody), reasonShortBody},
		{context.DeadlineExceeded, reasonTimeout},
		{errors.New("some other error"), ""},
		{io.EOF, ""},
	}
	for _, tc := range tests {
		if got := transient(tc.err); got != tc.want {
			t.Errorf("transient(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}

// BenchmarkGetRange measures what Bucket adds to a range read (a length-
// checked whole-body read, the GET semaphore, the per-request context and
// the metrics) over an in-memory provider, against the provider read into
// a buffer of the same size.
//
//	go test -run '^$' -bench BenchmarkGetRange -count 10 ./internal/bucket/ > new.txt
//	benchstat old.txt new.txt
func BenchmarkGetRange(b *testing.B) {
	ctx := context.Background()
	data := make([]byte, 4<<20)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	mem := objstore.NewInMemBucket()
	if err := mem.Upload(ctx, "obj", bytes.NewReader(data)); err != nil {
		b.Fatal(err)
	}
	for _, size := range []int{4 << 10, 64 << 10, 1 << 20} {
		for _, path := range []string{"provider", "bucket"} {
			b.Run(fmt.Sprintf("size=%d/path=%s", size, path), func(b *testing.B) {
				bkt, err := Wrap(mem, Config{}, nil, nil)
				if err != nil {
					b.Fatal(err)
				}
				rng := rand.New(rand.NewPCG(3, 4))
				b.SetBytes(int64(size))
				b.ReportAllocs()
				for b.Loop() {
					off := rng.Int64N(int64(len(data) - size))
					var got []byte
					if path == "provider" {
						rc, err := mem.GetRange(ctx, "obj", off, int64(size))
						if err != nil {
							b.Fatal(err)
						}
						got = make([]byte, size)
						_, err = io.ReadFull(rc, got)
						rc.Close()
						if err != nil {
							b.Fatal(err)
						}
					} else if got, err = bkt.GetRange(ctx, "obj", off, int64(size)); err != nil {
						b.Fatal(err)
					}
					if got[0] != data[off] {
						b.Fatal("wrong bytes")
					}
				}
				if path == "bucket" {
					attempts := testutil.ToFloat64(bkt.m.requests.WithLabelValues(opGetRange, "success"))
					b.ReportMetric(attempts/float64(b.N), "attempts/op")
				}
			})
		}
	}
}
