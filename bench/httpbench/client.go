package httpbench

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/aerie-db/aerie/bench/harness"
)

// httpClient is shared by every client goroutine.
var httpClient = harness.NewClient(64, 10*time.Minute)

// maxRetries bounds the retries of a write answered 429 or 503.
const maxRetries = 20

// write sends one request body of protocol to p and returns the retries
// it took (429 and 503 are retried after Retry-After or 100 ms).
func write(ctx context.Context, p *harness.Peer, protocol string, b []byte) (int, error) {
	path, hdr := "/write?precision=ms", map[string]string{"Content-Type": "text/plain; charset=utf-8"}
	if protocol == remoteWrite {
		path, hdr = "/api/v1/write", map[string]string{
			"Content-Encoding":                  "snappy",
			"Content-Type":                      "application/x-protobuf",
			"X-Prometheus-Remote-Write-Version": "0.1.0",
		}
	}
	for retries := 0; ; retries++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.URL(path), bytes.NewReader(b))
		if err != nil {
			return retries, err
		}
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := httpClient.Do(req)
		if err != nil {
			return retries, fmt.Errorf("%s %s: %w", p.Spec.Name, path, err)
		}
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		switch {
		case resp.StatusCode/100 == 2:
			return retries, nil
		case (resp.StatusCode == http.StatusServiceUnavailable || resp.StatusCode == http.StatusTooManyRequests) && retries < maxRetries:
			wait := 100 * time.Millisecond
			if sec, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && sec > 0 {
				wait = time.Duration(sec) * time.Second
			}
			select {
			case <-ctx.Done():
				return retries, ctx.Err()
			case <-time.After(wait):
			}
		default:
			return retries, fmt.Errorf("%s %s: HTTP %d: %s", p.Spec.Name, path, resp.StatusCode, strings.TrimSpace(string(msg)))
		}
	}
}

// promQuery runs q over the Prometheus HTTP API of p and returns the
// answer's body (whatever its status) and the time from sending the
// request to reading the last byte of the answer.
func promQuery(ctx context.Context, p *harness.Peer, q query) ([]byte, time.Duration, error) {
	form := url.Values{"query": {q.Expr}}
	if q.nocache {
		form.Set("nocache", "1")
	}
	path := "/api/v1/query"
	if q.Instant {
		form.Set("time", promTime(q.Start))
	} else {
		path = "/api/v1/query_range"
		form.Set("start", promTime(q.Start))
		form.Set("end", promTime(q.End))
		form.Set("step", strconv.FormatFloat(q.Step.Seconds(), 'f', -1, 64))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.URL(path), strings.NewReader(form.Encode()))
	if err != nil {
		return nil, 0, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if q.gzip {
		req.Header.Set("Accept-Encoding", "gzip")
	}
	t0 := time.Now()
	resp, err := httpClient.Do(req)
	if err != nil {
		return nil, 0, fmt.Errorf("%s %s: %w", p.Spec.Name, path, err)
	}
	b, err := io.ReadAll(resp.Body)
	d := time.Since(t0)
	resp.Body.Close()
	if err != nil {
		return nil, 0, fmt.Errorf("%s %s: %w", p.Spec.Name, path, err)
	}
	if resp.Header.Get("Content-Encoding") == "gzip" { // after the clock: the client's work
		if b, err = gunzip(b); err != nil {
			return nil, 0, fmt.Errorf("%s %s: gzip answer: %w", p.Spec.Name, path, err)
		}
	}
	return b, d, nil
}

func gunzip(b []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	return io.ReadAll(zr)
}

// promTime formats ms as the API's seconds.
func promTime(ms int64) string {
	return strconv.FormatFloat(float64(ms)/1000, 'f', 3, 64)
}
