package bucket

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/minio/minio-go/v7"
	"github.com/ncw/swift"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/thanos-io/objstore"
	"google.golang.org/api/googleapi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// ErrNotFound is matched, with errors.Is, by the error of any Bucket
// method whose object does not exist.
var ErrNotFound = errors.New("object not found")

// errShortBody marks a body that ended, cleanly, before the bytes asked for.
var errShortBody = errors.New("short body")

// Operation names, the "operation" label of the metrics.
const (
	opGet        = "get"
	opGetRange   = "get_range"
	opUpload     = "upload"
	opDelete     = "delete"
	opExists     = "exists"
	opAttributes = "attributes"
	opIter       = "iter"
)

// Retry reasons, the "reason" label of aerie_bucket_retries_total.
const (
	reasonServerError = "server_error"     // HTTP 5xx but 501 and 505, gRPC Unavailable or Internal
	reasonThrottled   = "throttled"        // HTTP 429, gRPC ResourceExhausted
	reasonTimeout     = "timeout"          // the per-request timeout, an I/O timeout, HTTP 408
	reasonTruncated   = "truncated"        // body ended before its Content-Length
	reasonShortBody   = "short_body"       // body ended cleanly, but short of the length asked for
	reasonConnReset   = "connection_reset" // connection reset, or closed before a response
	reasonNetwork     = "network"          // another error of the network stack
)

// maxPrealloc caps the buffer a GET allocates before its body arrives, so
// that a wrong length costs memory only as the bytes come.
const maxPrealloc = 64 << 20

// Bucket is an object-storage bucket with bounded retries, per-request
// timeouts, whole-body reads checked for length, a bound on parallel GETs
// and metrics. Its methods are goroutine-safe (see the package doc's
// Locking).
type Bucket struct {
	// All fields are set by Wrap and never change.
	bkt        objstore.Bucket
	logger     *slog.Logger
	timeout    time.Duration
	maxRetries int
	minBackoff time.Duration
	maxBackoff time.Duration
	getSlots   chan struct{} // semaphore: a token per Get or GetRange attempt in flight
	m          *metrics

	// sleep waits d or until ctx is done. Tests replace it to see backoffs.
	sleep func(ctx context.Context, d time.Duration) error
}

type metrics struct {
	requests     *prometheus.CounterVec   // operation, result: one per attempt
	retries      *prometheus.CounterVec   // operation, reason
	fetched      *prometheus.CounterVec   // operation: body bytes read by GETs
	duration     *prometheus.HistogramVec // operation: seconds per attempt
	getsInFlight prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "aerie_bucket_requests_total",
			Help: "Object-storage request attempts, by operation and result (success, not_found, transient, error, canceled).",
		}, []string{"operation", "result"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "aerie_bucket_retries_total",
			Help: "Object-storage requests retried after a transient error, by operation and reason.",
		}, []string{"operation", "reason"}),
		fetched: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "aerie_bucket_fetched_bytes_total",
			Help: "Body bytes read from object storage by GETs, retried attempts included.",
		}, []string{"operation"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "aerie_bucket_request_duration_seconds",
			Help:    "Duration of object-storage request attempts, bodies read included, by operation.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"operation"}),
		getsInFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "aerie_bucket_gets_in_flight",
			Help: "Get and GetRange attempts in flight (at most max_parallel_gets).",
		}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.requests, m.retries, m.fetched, m.duration, m.getsInFlight} {
			if err := reg.Register(c); err != nil {
				return nil, fmt.Errorf("bucket: register metrics: %w", err)
			}
		}
	}
	return m, nil
}

// Wrap returns a Bucket over an objstore.Bucket that is already open, with
// the options of cfg (its Type and Config are ignored). logger and reg may
// be nil. Close closes bkt.
func Wrap(bkt objstore.Bucket, cfg Config, logger *slog.Logger, reg prometheus.Registerer) (*Bucket, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	m, err := newMetrics(reg)
	if err != nil {
		return nil, err
	}
	c := cfg.withDefaults()
	return &Bucket{
		bkt:        bkt,
		logger:     logger,
		timeout:    c.Timeout,
		maxRetries: c.MaxRetries,
		minBackoff: c.RetryMinBackoff,
		maxBackoff: c.RetryMaxBackoff,
		getSlots:   make(chan struct{}, c.MaxParallelGets),
		m:          m,
		sleep:      sleepCtx,
	}, nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Raw returns the provider's bucket, without retries, timeouts or metrics.
func (b *Bucket) Raw() objstore.Bucket { return b.bkt }

// Close closes the provider's bucket.
func (b *Bucket) Close() error { return b.bkt.Close() }

// IsObjNotFoundErr reports whether err, from a Bucket method or from the
// provider, means that the object does not exist.
func (b *Bucket) IsObjNotFoundErr(err error) bool {
	return errors.Is(err, ErrNotFound) || b.providerNotFound(err)
}

// providerNotFound asks the provider about err and every error it wraps:
// providers unwrap only with github.com/pkg/errors' Cause, which does not
// see through fmt.Errorf.
func (b *Bucket) providerNotFound(err error) bool {
	for ; err != nil; err = errors.Unwrap(err) {
		if b.bkt.IsObjNotFoundErr(err) {
			return true
		}
	}
	return false
}

// Get returns the whole object. It asks Attributes for the size and fails
// on a body of any other length (invariant 1).
func (b *Bucket) Get(ctx context.Context, name string) ([]byte, error) {
	if err := checkName(name); err != nil {
		return nil, fmt.Errorf("bucket: get %q: %w", name, err)
	}
	var data []byte
	n, err := b.do(ctx, opGet, name, func(ctx context.Context, _ int) error {
		attrs, err := b.bkt.Attributes(ctx, name)
		if err != nil {
			return err
		}
		rc, err := b.bkt.Get(ctx, name)
		if err != nil {
			return err
		}
		data, err = b.readBody(rc, opGet, attrs.Size)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("bucket: get %q (%s): %w", name, attempts(n), err)
	}
	return data, nil
}

// GetRange returns length bytes of the object from offset off; a body of
// any other length is retried, then an error naming the object, the offset
// and the length (invariant 1). A zero length returns no bytes and makes
// no request.
func (b *Bucket) GetRange(ctx context.Context, name string, off, length int64) ([]byte, error) {
	if err := checkName(name); err != nil {
		return nil, fmt.Errorf("bucket: get range of %q: %w", name, err)
	}
	if off < 0 || length < 0 {
		return nil, fmt.Errorf("bucket: get range of %q: negative offset %d or length %d", name, off, length)
	}
	if length == 0 {
		return []byte{}, nil
	}
	var data []byte
	n, err := b.do(ctx, opGetRange, name, func(ctx context.Context, _ int) error {
		rc, err := b.bkt.GetRange(ctx, name, off, length)
		if err != nil {
			return err
		}
		data, err = b.readBody(rc, opGetRange, length)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("bucket: get range of %q at offset %d, length %d (%s): %w", name, off, length, attempts(n), err)
	}
	return data, nil
}

// readBody reads and closes rc, which must hold exactly want bytes.
func (b *Bucket) readBody(rc io.ReadCloser, op string, want int64) ([]byte, error) {
	defer rc.Close()
	buf := make([]byte, 0, min(want, maxPrealloc))
	var err error
	for int64(len(buf)) < want && err == nil {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, int(min(want-int64(len(buf)), int64(len(buf)))))
		}
		end := min(int64(cap(buf)), want)
		var k int
		k, err = rc.Read(buf[len(buf):end])
		buf = buf[:len(buf)+k]
	}
	b.m.fetched.WithLabelValues(op).Add(float64(len(buf)))
	switch {
	case int64(len(buf)) == want:
		// A body may end with an error once its bytes are in, and an
		// error then changes nothing; but a byte more is a body longer
		// than asked for: the server ignored the range, or the object
		// changed since Attributes.
		var one [1]byte
		if k, _ := io.ReadFull(rc, one[:]); k > 0 {
			return nil, fmt.Errorf("body longer than the %d bytes asked for", want)
		}
		return buf, nil
	case errors.Is(err, io.EOF):
		return nil, fmt.Errorf("%w: got %d of %d bytes", errShortBody, len(buf), want)
	default:
		return nil, fmt.Errorf("body cut at %d of %d bytes: %w", len(buf), want, err)
	}
}

// Upload writes data as the object name, replacing any object of that name.
func (b *Bucket) Upload(ctx context.Context, name string, data []byte) error {
	if err := checkName(name); err != nil {
		return fmt.Errorf("bucket: upload %q: %w", name, err)
	}
	n, err := b.do(ctx, opUpload, name, func(ctx context.Context, _ int) error {
		return b.bkt.Upload(ctx, name, bytes.NewReader(data))
	})
	if err != nil {
		return fmt.Errorf("bucket: upload %q, %d bytes (%s): %w", name, len(data), attempts(n), err)
	}
	return nil
}

// Delete removes the object. A missing object is ErrNotFound, except on a
// retry: the attempt that failed may have deleted it.
func (b *Bucket) Delete(ctx context.Context, name string) error {
	if err := checkName(name); err != nil {
		return fmt.Errorf("bucket: delete %q: %w", name, err)
	}
	n, err := b.do(ctx, opDelete, name, func(ctx context.Context, attempt int) error {
		err := b.bkt.Delete(ctx, name)
		if attempt > 0 && err != nil && b.providerNotFound(err) {
			return nil
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("bucket: delete %q (%s): %w", name, attempts(n), err)
	}
	return nil
}

// Exists reports whether the object exists.
func (b *Bucket) Exists(ctx context.Context, name string) (bool, error) {
	if err := checkName(name); err != nil {
		return false, fmt.Errorf("bucket: exists %q: %w", name, err)
	}
	var ok bool
	n, err := b.do(ctx, opExists, name, func(ctx context.Context, _ int) error {
		var err error
		ok, err = b.bkt.Exists(ctx, name)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("bucket: exists %q (%s): %w", name, attempts(n), err)
	}
	return ok, nil
}

// Attributes returns the object's size and modification time.
func (b *Bucket) Attributes(ctx context.Context, name string) (objstore.ObjectAttributes, error) {
	if err := checkName(name); err != nil {
		return objstore.ObjectAttributes{}, fmt.Errorf("bucket: attributes of %q: %w", name, err)
	}
	var attrs objstore.ObjectAttributes
	n, err := b.do(ctx, opAttributes, name, func(ctx context.Context, _ int) error {
		var err error
		attrs, err = b.bkt.Attributes(ctx, name)
		return err
	})
	if err != nil {
		return objstore.ObjectAttributes{}, fmt.Errorf("bucket: attributes of %q (%s): %w", name, attempts(n), err)
	}
	return attrs, nil
}

// Iter calls f with the full name of each entry of dir ("" for the top),
// in sorted order; entries that are directories end in "/" unless
// recursive, which lists the objects below dir at every depth. The whole
// listing is read, with retries, before f is first called (invariant 7);
// f's error stops Iter and is returned as is. The per-request timeout
// bounds the whole listing.
func (b *Bucket) Iter(ctx context.Context, dir string, f func(string) error, recursive bool) error {
	if err := checkDir(dir); err != nil {
		return fmt.Errorf("bucket: iter %q: %w", dir, err)
	}
	var opts []objstore.IterOption
	if recursive {
		opts = append(opts, objstore.WithRecursiveIter())
	}
	var names []string
	n, err := b.do(ctx, opIter, dir, func(ctx context.Context, _ int) error {
		names = names[:0]
		return b.bkt.Iter(ctx, dir, func(name string) error {
			names = append(names, name)
			return nil
		}, opts...)
	})
	if err != nil {
		return fmt.Errorf("bucket: iter %q (%s): %w", dir, attempts(n), err)
	}
	for _, name := range names {
		if err := f(name); err != nil {
			return err
		}
	}
	return nil
}

func attempts(n int) string {
	if n == 1 {
		return "1 attempt"
	}
	return fmt.Sprintf("%d attempts", n)
}

// do runs attempt until it succeeds, fails for good, or has run
// 1+maxRetries times, and returns how many times it ran. Each run gets a
// context bounded by the per-request timeout; GETs hold a semaphore slot
// for the run.
func (b *Bucket) do(ctx context.Context, op, name string, attempt func(ctx context.Context, attempt int) error) (int, error) {
	get := op == opGet || op == opGetRange
	for i := 0; ; i++ {
		if err := ctx.Err(); err != nil {
			return i, err
		}
		if get {
			select {
			case b.getSlots <- struct{}{}:
			case <-ctx.Done():
				return i, ctx.Err()
			}
			b.m.getsInFlight.Inc()
		}
		actx, cancel := context.WithTimeout(ctx, b.timeout)
		start := time.Now()
		err := attempt(actx, i)
		timedOut := actx.Err() != nil
		cancel()
		if get {
			b.m.getsInFlight.Dec()
			<-b.getSlots
		}
		b.m.duration.WithLabelValues(op).Observe(time.Since(start).Seconds())

		if code := httpStatus(err); code != 0 {
			// Some SDKs' messages lack the status (minio's is the
			// response's Message alone).
			err = fmt.Errorf("HTTP %d: %w", code, err)
		}
		var reason string
		switch {
		case err == nil:
			b.m.requests.WithLabelValues(op, "success").Inc()
			return i + 1, nil
		case ctx.Err() != nil:
			// The caller's own context: never retried (invariant 3).
			b.m.requests.WithLabelValues(op, "canceled").Inc()
			return i + 1, err
		case b.providerNotFound(err):
			b.m.requests.WithLabelValues(op, "not_found").Inc()
			return i + 1, fmt.Errorf("%w: %w", ErrNotFound, err)
		case timedOut:
			reason = reasonTimeout
			err = fmt.Errorf("per-request timeout of %s: %w", b.timeout, err)
		default:
			reason = transient(err)
		}
		if reason == "" {
			b.m.requests.WithLabelValues(op, "error").Inc()
			return i + 1, err
		}
		b.m.requests.WithLabelValues(op, "transient").Inc()
		if i == b.maxRetries {
			return i + 1, err
		}
		b.m.retries.WithLabelValues(op, reason).Inc()
		wait := b.backoff(i)
		b.logger.Debug("bucket request failed, retrying", "op", op, "object", name,
			"attempt", i+1, "reason", reason, "backoff", wait, "err", err)
		if serr := b.sleep(ctx, wait); serr != nil {
			return i + 1, fmt.Errorf("%w, while waiting to retry after: %w", serr, err)
		}
	}
}

// backoff returns the wait before retry i+1: full jitter, uniform in
// [0, min(maxBackoff, minBackoff·2^i)].
func (b *Bucket) backoff(i int) time.Duration {
	ceil := b.maxBackoff
	if i < 32 {
		if d := b.minBackoff << i; d > 0 && d < ceil {
			ceil = d
		}
	}
	return rand.N(ceil + 1)
}

// transient returns why err is worth a retry, or "" if it is not.
func transient(err error) string {
	switch {
	case errors.Is(err, errShortBody):
		return reasonShortBody
	case errors.Is(err, io.ErrUnexpectedEOF):
		return reasonTruncated
	case errors.Is(err, context.DeadlineExceeded):
		return reasonTimeout
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.ECONNABORTED), errors.Is(err, syscall.EPIPE):
		return reasonConnReset
	}
	if code := httpStatus(err); code != 0 {
		switch {
		case code == http.StatusTooManyRequests:
			return reasonThrottled
		case code == http.StatusRequestTimeout:
			return reasonTimeout
		case code >= 500 && code != http.StatusNotImplemented && code != http.StatusHTTPVersionNotSupported:
			return reasonServerError
		}
		return ""
	}
	if s, ok := status.FromError(err); ok {
		switch s.Code() {
		case codes.Unavailable, codes.Internal:
			return reasonServerError
		case codes.ResourceExhausted:
			return reasonThrottled
		case codes.DeadlineExceeded:
			return reasonTimeout
		}
		return ""
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		if dnsErr.IsTimeout || dnsErr.IsTemporary {
			return reasonNetwork
		}
		return ""
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) {
		if opErr.Timeout() {
			return reasonTimeout
		}
		return reasonNetwork
	}
	// A connection closed before a response: net/http reports io.EOF
	// inside a *url.Error.
	var urlErr *url.Error
	if errors.As(err, &urlErr) && errors.Is(err, io.EOF) {
		return reasonConnReset
	}
	return ""
}

// httpStatus returns the HTTP status of a provider's error, or 0.
func httpStatus(err error) int {
	var minioErr minio.ErrorResponse
	if errors.As(err, &minioErr) {
		return minioErr.StatusCode
	}
	var azErr *azcore.ResponseError
	if errors.As(err, &azErr) {
		return azErr.StatusCode
	}
	var gErr *googleapi.Error
	if errors.As(err, &gErr) {
		return gErr.Code
	}
	var swiftErr *swift.Error
	if errors.As(err, &swiftErr) {
		return swiftErr.StatusCode
	}
	var sc interface{ StatusCode() int }
	if errors.As(err, &sc) {
		return sc.StatusCode()
	}
	return 0
}

// checkName enforces invariant 8 for an object name.
func checkName(name string) error {
	switch {
	case name == "":
		return errors.New("invalid object name: empty")
	case strings.HasPrefix(name, "/"):
		return errors.New("invalid object name: absolute")
	case path.Clean(name) != name:
		return errors.New("invalid object name: not a clean path")
	case name == "." || name == ".." || strings.HasPrefix(name, "../"):
		return errors.New("invalid object name: outside the bucket")
	}
	return nil
}

// checkDir enforces invariant 8 for a directory to list: "" or a name,
// with or without a trailing slash.
func checkDir(dir string) error {
	if dir == "" {
		return nil
	}
	return checkName(strings.TrimSuffix(dir, "/"))
}
