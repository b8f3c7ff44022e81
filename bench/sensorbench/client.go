package sensorbench

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/aerie-db/aerie/bench/harness"
)

// httpClient is shared by every client goroutine.
var httpClient = harness.NewClient(64, 30*time.Minute)

// send sends a request to s and hands the body of a 2xx answer to read
// as it arrives; it returns the time from sending to the last byte.
func send(ctx context.Context, s *harness.Peer, method, path, contentType string, body io.Reader, size int64, read func(io.Reader) error) (time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, method, s.URL(path), body)
	if err != nil {
		return 0, err
	}
	if body != nil {
		req.ContentLength = size
		req.Header.Set("Content-Type", contentType)
	}
	fail := func(err error) error { return fmt.Errorf("%s %s %s: %w", s.Spec.Name, method, short(path), err) }
	t0 := time.Now()
	resp, err := httpClient.Do(req)
	if err != nil {
		return 0, fail(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 500))
		return 0, fail(fmt.Errorf("HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(b))))
	}
	err = read(resp.Body)
	d := time.Since(t0)
	if err != nil {
		return 0, fail(err)
	}
	_, err = io.Copy(io.Discard, resp.Body)
	return d, err
}

// do is send that returns the answer read whole.
func do(ctx context.Context, s *harness.Peer, method, path, contentType string, body io.Reader, size int64) ([]byte, time.Duration, error) {
	var b []byte
	d, err := send(ctx, s, method, path, contentType, body, size, func(r io.Reader) (err error) {
		b, err = io.ReadAll(r)
		return err
	})
	return b, d, err
}

// postForm posts form to s and returns the answer and its time.
func postForm(ctx context.Context, s *harness.Peer, path string, form url.Values) ([]byte, time.Duration, error) {
	body := form.Encode()
	return do(ctx, s, http.MethodPost, path, "application/x-www-form-urlencoded", strings.NewReader(body), int64(len(body)))
}

// short cuts a path for an error message.
func short(p string) string {
	if len(p) > 200 {
		return p[:200] + "…"
	}
	return p
}

// promTime formats ms as the Prometheus API's seconds.
func promTime(ms int64) string {
	return strconv.FormatFloat(float64(ms)/1000, 'f', 3, 64)
}

// forEach runs fn on every item from n goroutines at most; the first
// error cancels the others' context and is returned.
func forEach[T any](ctx context.Context, n int, items []T, fn func(ctx context.Context, item T) error) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(n)
	for _, it := range items {
		if gctx.Err() != nil {
			break
		}
		g.Go(func() error { return fn(gctx, it) })
	}
	return cmp.Or(g.Wait(), ctx.Err())
}

// measure runs fn and returns its wall time and srv's CPU time over it; if
// fn fails because srv has exited, that is the error.
func measure(srv *harness.Peer, fn func() error) (wall, cpu time.Duration, err error) {
	before, err := srv.CPU()
	if err != nil {
		return 0, 0, err
	}
	t0 := time.Now()
	if err := fn(); err != nil {
		return 0, 0, cmp.Or(srv.Alive(), err)
	}
	wall = time.Since(t0)
	after, err := srv.CPU()
	return wall, after - before, err
}

// perSecond is n ÷ seconds (0 for none).
func perSecond(n int64, seconds float64) float64 {
	if seconds <= 0 {
		return 0
	}
	return float64(n) / seconds
}
