package cachebench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/aerie-db/aerie/bench/harness"
)

// errMissing marks a peer that is not installed.
var errMissing = errors.New("not installed (scripts/install-deps.sh installs Debian's influxdb and memcached)")

// Available returns an error if influxd or memcached is not on $PATH.
func Available() error {
	for _, bin := range []string{"influxd", "memcached"} {
		if _, err := exec.LookPath(bin); err != nil {
			return fmt.Errorf("%s: %w", bin, errMissing)
		}
	}
	return nil
}

// database is the InfluxDB database the bench writes and queries.
const database = "bench"

// influx is the run's influxd: Debian's InfluxDB 1.6, started on a free
// loopback port with its directories under the run's scratch directory.
type influx struct {
	*harness.Peer
	client  *http.Client
	queries atomic.Int64 // /query requests answered
}

// influxConfig is influxd's configuration: everything under dir, usage
// reporting, self-monitoring, the query log and the HTTP log off.
func influxConfig(dir, httpAddr, rpcAddr string) string {
	return fmt.Sprintf(`reporting-disabled = true
bind-address = %q
[meta]
  dir = %q
  logging-enabled = false
[data]
  dir = %q
  wal-dir = %q
  query-log-enabled = false
[monitor]
  store-enabled = false
[http]
  bind-address = %q
  log-enabled = false
  pprof-enabled = false
[continuous_queries]
  enabled = false
`, rpcAddr, filepath.Join(dir, "meta"), filepath.Join(dir, "data"), filepath.Join(dir, "wal"), httpAddr)
}

// startInflux starts influxd in fleet over Root/influxdb and creates the
// database. clients is the number of concurrent requests to keep
// connections for.
func startInflux(ctx context.Context, fleet *harness.Fleet, clients int) (*influx, error) {
	db := &influx{client: &http.Client{
		Timeout:   5 * time.Minute,
		Transport: &http.Transport{MaxIdleConnsPerHost: clients + 4, MaxIdleConns: clients + 4},
	}}
	spec := harness.PeerSpec{
		Name: "influxd", Bin: "influxd", Ports: 2, ReadyTimeout: time.Minute, StopGrace: 30 * time.Second,
		Args: func(dir string, addrs []string) ([]string, error) {
			conf := filepath.Join(dir, "influxdb.conf")
			return []string{"run", "-config", conf}, os.WriteFile(conf, []byte(influxConfig(dir, addrs[0], addrs[1])), 0o644)
		},
		// /ping answers 204 No Content (1.6 has no ?verbose).
		Ready: func(ctx context.Context, p *harness.Peer) error {
			resp, err := db.client.Get(p.URL("/ping"))
			if err != nil {
				return err
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusNoContent {
				return fmt.Errorf("/ping: %s", resp.Status)
			}
			return nil
		},
	}
	var err error
	if db.Peer, err = fleet.Start(ctx, spec, filepath.Join(fleet.Root, "influxdb")); err != nil {
		return nil, err
	}
	if _, err := db.statement("CREATE DATABASE " + database); err != nil {
		return nil, err
	}
	return db, nil
}

// post sends body to path (with its URL query) and returns the body of a
// 2xx answer.
func (db *influx) post(path, contentType string, body []byte) ([]byte, error) {
	resp, err := db.client.Post(db.URL(path), contentType, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("influxdb %s: %w", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("influxdb %s: %w", path, err)
	}
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("influxdb %s: %s: %s", path, resp.Status, bytes.TrimSpace(b))
	}
	return b, nil
}

// statement runs InfluxQL q (a form POST to /query) and returns the JSON.
func (db *influx) statement(q string) ([]byte, error) {
	form := url.Values{"db": {database}, "epoch": {"s"}, "q": {q}}
	return db.post("/query", "application/x-www-form-urlencoded", []byte(form.Encode()))
}

// loadBatchLines is the number of points per /write request.
const loadBatchLines = 5000

// load writes d over /write in batches from two writers and returns the
// bytes of line protocol sent.
func (db *influx) load(ctx context.Context, d Dataset) (int64, error) {
	type batch struct{ s, from, to int }
	batches := make(chan batch)
	var sent atomic.Int64
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		defer close(batches)
		for s := range d.Sensors {
			for from := 0; from < d.Steps(); from += loadBatchLines {
				select {
				case batches <- batch{s, from, min(from+loadBatchLines, d.Steps())}:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
		}
		return nil
	})
	path := "/write?" + url.Values{"db": {database}, "precision": {"s"}}.Encode()
	var bufs sync.Pool
	for range 2 {
		g.Go(func() error {
			for b := range batches {
				buf, _ := bufs.Get().(*[]byte)
				if buf == nil {
					buf = new([]byte)
				}
				*buf = d.AppendLines((*buf)[:0], b.s, b.from, b.to)
				sent.Add(int64(len(*buf)))
				_, err := db.post(path, "text/plain; charset=utf-8", *buf)
				bufs.Put(buf)
				if err != nil {
					return fmt.Errorf("write sensor %d steps [%d,%d): %w", b.s, b.from, b.to, err)
				}
			}
			return nil
		})
	}
	err := g.Wait()
	return sent.Load(), err
}

// queryResponse is the JSON of /query.
type queryResponse struct {
	Results []struct {
		Series []struct {
			Columns []string            `json:"columns"`
			Values  [][]json.RawMessage `json:"values"`
		} `json:"series"`
		Error string `json:"error"`
	} `json:"results"`
	Error string `json:"error"`
}

// query asks InfluxDB for k over [start, end] (seconds, inclusive).
func (db *influx) query(k Key, start, end int64) (Answer, error) {
	db.queries.Add(1)
	q := k.Range(start, end)
	b, err := db.statement(q)
	if err != nil {
		return nil, err
	}
	a, err := parseQueryResponse(b, k.Fields)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", q, err)
	}
	return a, nil
}

// parseQueryResponse reads the answer of a single-statement /query for
// fields (epoch=s). Null values are left out.
func parseQueryResponse(b []byte, fields []string) (Answer, error) {
	var r queryResponse
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("influxdb answer: %w", err)
	}
	if r.Error != "" {
		return nil, fmt.Errorf("influxdb: %s", r.Error)
	}
	a := make(Answer, len(fields))
	for i, f := range fields {
		a[i].Name = f
	}
	if len(r.Results) != 1 {
		return nil, fmt.Errorf("influxdb answer: %d results, want 1", len(r.Results))
	}
	if r.Results[0].Error != "" {
		return nil, fmt.Errorf("influxdb: %s", r.Results[0].Error)
	}
	for _, s := range r.Results[0].Series {
		if !slices.Equal(s.Columns, append([]string{"time"}, fields...)) {
			return nil, fmt.Errorf("influxdb answer: columns %v, want time and %v", s.Columns, fields)
		}
		for _, row := range s.Values {
			if len(row) != len(s.Columns) {
				return nil, fmt.Errorf("influxdb answer: row of %d values, want %d", len(row), len(s.Columns))
			}
			t, err := strconv.ParseInt(string(row[0]), 10, 64)
			if err != nil {
				return nil, fmt.Errorf("influxdb answer: time %s: %w", row[0], err)
			}
			for i := range fields {
				raw := string(row[i+1])
				if raw == "null" {
					continue
				}
				v, err := strconv.ParseFloat(raw, 64)
				if err != nil {
					return nil, fmt.Errorf("influxdb answer: %s at %d: %w", fields[i], t, err)
				}
				a[i].Points = append(a[i].Points, Point{T: t, V: formatValue(v)})
			}
		}
	}
	return a, nil
}
