package harness

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// peerClient asks peers for their metrics and control endpoints.
var peerClient = &http.Client{Timeout: 10 * time.Minute}

// NewClient is the HTTP client a workload's load goroutines share: up to
// conns idle keep-alive connections to each peer (any number of peers),
// and no transparent gzip, so that answers are measured as the servers
// send them. Every request stops after timeout.
func NewClient(conns int, timeout time.Duration) *http.Client {
	return &http.Client{
		Transport: &http.Transport{
			MaxIdleConnsPerHost: conns,
			DisableCompression:  true,
			IdleConnTimeout:     time.Minute,
		},
		Timeout: timeout,
	}
}

// Get fetches path from the peer's first address and returns the body of
// a 200 answer; any other answer is an error naming the peer.
func (p *Peer) Get(ctx context.Context, path string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.URL(path), nil)
	if err != nil {
		return nil, err
	}
	resp, err := peerClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", p.Spec.Name, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", p.Spec.Name, path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s %s: HTTP %d: %s", p.Spec.Name, path, resp.StatusCode, strings.TrimSpace(string(b[:min(len(b), 500)])))
	}
	return b, nil
}

// MetricValue returns the value of a series of a Prometheus text
// exposition (a peer's /metrics), named as exposed (with its labels in
// their order), or false if there is none.
func MetricValue(exposition []byte, name string) (float64, bool) {
	sc := bufio.NewScanner(bytes.NewReader(exposition))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), name+" ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
		return v, err == nil
	}
	return 0, false
}

// Sleep waits d, or until ctx is done.
func Sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// AwaitVMFlush calls VictoriaMetrics' /internal/force_flush, which makes
// the rows it buffers searchable in in-memory parts, and waits until
// those parts are on disk (-inmemoryDataFlushInterval, 5 s by default):
// no rows left in storage/inmemory or indexdb/inmemory. It gives up
// after a minute.
func AwaitVMFlush(ctx context.Context, p *Peer) error {
	if _, err := p.Get(ctx, "/internal/force_flush"); err != nil {
		return err
	}
	for deadline := time.Now().Add(time.Minute); ; {
		m, err := p.Get(ctx, "/metrics")
		if err != nil {
			return err
		}
		data, ok1 := MetricValue(m, `vm_rows{type="storage/inmemory"}`)
		index, ok2 := MetricValue(m, `vm_rows{type="indexdb/inmemory"}`)
		switch {
		case !ok1 || !ok2:
			return fmt.Errorf("%s /metrics has no vm_rows{type=\"storage/inmemory\"} or vm_rows{type=\"indexdb/inmemory\"}", p.Spec.Name)
		case data == 0 && index == 0:
			return nil
		case time.Now().After(deadline):
			return fmt.Errorf("%s: rows still in memory a minute after /internal/force_flush", p.Spec.Name)
		}
		if err := Sleep(ctx, 250*time.Millisecond); err != nil {
			return err
		}
	}
}
