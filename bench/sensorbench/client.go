package sensorbench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// httpClient is shared by every client goroutine: keep-alive connections,
// no transparent gzip (answers are measured as sent).
var httpClient = &http.Client{
	Transport: &http.Transport{
		MaxIdleConns:        64,
		MaxIdleConnsPerHost: 64,
		DisableCompression:  true,
		IdleConnTimeout:     time.Minute,
	},
	Timeout: 30 * time.Minute,
}

// do sends a request to s and returns the body of a 2xx answer, read
// whole, and the time from sending to the last byte.
func do(ctx context.Context, s *server, method, path, contentType string, body io.Reader, size int64) ([]byte, time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, method, s.url(path), body)
	if err != nil {
		return nil, 0, err
	}
	if body != nil {
		req.ContentLength = size
		req.Header.Set("Content-Type", contentType)
	}
	t0 := time.Now()
	resp, err := httpClient.Do(req)
	if err != nil {
		return nil, 0, fmt.Errorf("%s %s %s: %w", s.name, method, short(path), err)
	}
	b, err := io.ReadAll(resp.Body)
	d := time.Since(t0)
	resp.Body.Close()
	if err != nil {
		return nil, 0, fmt.Errorf("%s %s %s: %w", s.name, method, short(path), err)
	}
	if resp.StatusCode/100 != 2 {
		return nil, 0, fmt.Errorf("%s %s %s: HTTP %d: %s", s.name, method, short(path), resp.StatusCode, strings.TrimSpace(string(b[:min(len(b), 500)])))
	}
	return b, d, nil
}

func get(ctx context.Context, s *server, path string) ([]byte, error) {
	b, _, err := do(ctx, s, http.MethodGet, path, "", nil, 0)
	return b, err
}

// stream sends a GET to s and hands the answer's body to read as it
// arrives; it returns the time from sending to the last byte.
func stream(ctx context.Context, s *server, path string, read func(io.Reader) error) (time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url(path), nil)
	if err != nil {
		return 0, err
	}
	t0 := time.Now()
	resp, err := httpClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("%s GET %s: %w", s.name, short(path), err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 500))
		return 0, fmt.Errorf("%s GET %s: HTTP %d: %s", s.name, short(path), resp.StatusCode, strings.TrimSpace(string(b)))
	}
	err = read(resp.Body)
	d := time.Since(t0)
	if err != nil {
		return 0, fmt.Errorf("%s GET %s: %w", s.name, short(path), err)
	}
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return 0, err
	}
	return d, nil
}

// short cuts a path for an error message.
func short(p string) string {
	if len(p) > 200 {
		return p[:200] + "…"
	}
	return p
}

// metricValue returns the value of a series of a Prometheus text
// exposition, named as exposed (with its labels in their order).
func metricValue(exposition []byte, name string) (float64, bool) {
	for line := range bytes.SplitSeq(exposition, []byte{'\n'}) {
		rest, ok := bytes.CutPrefix(line, []byte(name+" "))
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(string(rest)), 64)
		return v, err == nil
	}
	return 0, false
}

// promTime formats ms as the Prometheus API's seconds.
func promTime(ms int64) string {
	return strconv.FormatFloat(float64(ms)/1000, 'f', 3, 64)
}
