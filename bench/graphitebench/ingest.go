package graphitebench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ErrMismatch is wrapped when Aerie stored other points than were sent
// (lost, duplicated or wrong values); the run stops.
var ErrMismatch = errors.New("stored data do not match what was sent")

// sendChunk is the size of each write of a client.
const sendChunk = 256 << 10

// send writes payloads[i] over connection i to addr, all at once, and
// returns the wall time from the first dial until the last connection
// is closed: the server has read everything but the last socket buffers.
func send(ctx context.Context, addr string, payloads [][]byte) (time.Duration, error) {
	start := time.Now()
	errs := make([]error, len(payloads))
	var wg sync.WaitGroup
	for i, p := range payloads {
		wg.Go(func() {
			var d net.Dialer
			c, err := d.DialContext(ctx, "tcp", addr)
			if err != nil {
				errs[i] = fmt.Errorf("client %d: %w", i, err)
				return
			}
			defer c.Close()
			stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Unix(1, 0)) })
			defer stop()
			for off := 0; off < len(p); off += sendChunk {
				if _, err := c.Write(p[off:min(off+sendChunk, len(p))]); err != nil {
					errs[i] = fmt.Errorf("client %d: write at byte %d: %w", i, off, err)
					return
				}
			}
			if err := c.(*net.TCPConn).CloseWrite(); err != nil {
				errs[i] = fmt.Errorf("client %d: %w", i, err)
				return
			}
			// The server closes its side once it has read everything.
			c.SetReadDeadline(time.Now().Add(10 * time.Minute))
			io.Copy(io.Discard, c)
		})
	}
	wg.Wait()
	return time.Since(start), errors.Join(errs...)
}

// aerieCounters are sums over listeners of Aerie's carbon counters.
type aerieCounters struct {
	Received, Stored, Rejected, Malformed float64
}

// get fetches u and returns the body of a 200 answer.
func get(ctx context.Context, c *http.Client, u string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("%s: %.300s", resp.Status, b)
	}
	return b, err
}

// readCounters reads aerie_graphite_*_total from Aerie's /metrics.
func readCounters(ctx context.Context, c *http.Client, base string) (aerieCounters, error) {
	var out aerieCounters
	b, err := get(ctx, c, base+"/metrics")
	if err != nil {
		return out, fmt.Errorf("GET /metrics: %w", err)
	}
	sums := map[string]*float64{"aerie_graphite_received_total": &out.Received, "aerie_graphite_stored_total": &out.Stored,
		"aerie_graphite_rejected_total": &out.Rejected, "aerie_graphite_malformed_total": &out.Malformed}
	for line := range strings.Lines(string(b)) {
		line = strings.TrimSpace(line)
		sum := sums[line[:max(0, strings.IndexAny(line, "{ "))]]
		if sum == nil {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			return out, fmt.Errorf("/metrics: %q: %w", line, err)
		}
		*sum += v
	}
	return out, nil
}

// promScalar runs an instant PromQL query whose answer is one sample (or
// none: 0) and returns its value.
func promScalar(ctx context.Context, c *http.Client, base, query string, at int64) (float64, error) {
	u := base + "/api/v1/query?" + url.Values{"query": {query}, "time": {strconv.FormatInt(at, 10)}}.Encode()
	b, err := get(ctx, c, u)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", query, err)
	}
	var r struct {
		Data struct {
			Result []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return 0, fmt.Errorf("%s: %w in %.300s", query, err, b)
	}
	switch len(r.Data.Result) {
	case 0:
		return 0, nil
	case 1:
		s, _ := r.Data.Result[0].Value[1].(string)
		return strconv.ParseFloat(s, 64)
	default:
		return 0, fmt.Errorf("%s: %d samples, want one", query, len(r.Data.Result))
	}
}

// selector matches every series of the run in PromQL.
var selector = fmt.Sprintf(`{__name__=~"%s\\..+"}`, Prefix)

// checkAerie compares what Aerie stored of d, through PromQL, with what
// was sent: series, points and the sum of the values.
func checkAerie(ctx context.Context, c *http.Client, base string, d dataset) (points int64, err error) {
	win := fmt.Sprintf("[%ds]", int64(d.Steps)*int64(Step.Seconds()))
	var v [3]float64 // points, series, sum
	for i, f := range []string{"sum(count_over_time(", "count(count_over_time(", "sum(sum_over_time("} {
		if v[i], err = promScalar(ctx, c, base, f+selector+win+"))", d.End); err != nil {
			return int64(v[0]), err
		}
	}
	n, series, sum := v[0], v[1], v[2]
	var errs []error
	if int64(n) != d.points() {
		errs = append(errs, fmt.Errorf("%w: %d points stored, %d sent", ErrMismatch, int64(n), d.points()))
	}
	if int(series) != d.series() {
		errs = append(errs, fmt.Errorf("%w: %d series stored, %d sent", ErrMismatch, int(series), d.series()))
	}
	if want := d.sum(); sum != want {
		errs = append(errs, fmt.Errorf("%w: values sum to %.17g, %.17g sent", ErrMismatch, sum, want))
	}
	return int64(n), errors.Join(errs...)
}

// checkWhisper counts the points of d in carbon's whisper files under dir.
func checkWhisper(dir string, d dataset) (points int64, sum float64, err error) {
	for _, m := range d.names() {
		n, s, err := countWhisper(whisperPath(dir, m), d.start(), d.End)
		if err != nil {
			return points, sum, err
		}
		points += n
		sum += s
	}
	return points, sum, nil
}

// round3 rounds to 3 significant figures, for the JSON.
func round3(x float64) float64 {
	if x == 0 || math.IsInf(x, 0) || math.IsNaN(x) {
		return x
	}
	p := math.Pow(10, 2-math.Floor(math.Log10(math.Abs(x))))
	return math.Round(x*p) / p
}
