package api

import (
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/storage"
	promtsdb "github.com/prometheus/prometheus/tsdb"
	"github.com/stretchr/testify/require"

	"github.com/aerie-db/aerie/internal/tsdb"
)

// base is the first sample's timestamp (ms); the data set spans one hour
// at a 15 s interval.
const (
	base     = int64(1_700_000_000_000)
	interval = int64(15_000)
	steps    = 240
)

// at returns the timestamp of step i.
func at(i int) int64 { return base + int64(i)*interval }

// sec formats a millisecond timestamp as an API time parameter.
func sec(ms int64) string { return strconv.FormatFloat(float64(ms)/1000, 'f', -1, 64) }

type sample struct {
	l labels.Labels
	t int64
	v float64
}

// dataset is an hour of a small Prometheus server's data: targets' up,
// counters (one with a reset), gauges, a classic histogram, a series that
// goes stale, a sparse one, NaN and Inf values and UTF-8 names.
func dataset() []sample {
	var out []sample
	for i := range steps {
		t := at(i)
		add := func(v float64, kv ...string) {
			out = append(out, sample{labels.FromStrings(kv...), t, v})
		}
		add(1, "__name__", "up", "job", "api", "instance", "a:9090")
		upB := 1.0
		if i >= 120 && i < 160 {
			upB = 0
		}
		add(upB, "__name__", "up", "job", "api", "instance", "b:9090")
		add(1, "__name__", "up", "job", "db", "instance", "c:9100")
		for ci, code := range []string{"200", "500"} {
			for mi, m := range []string{"GET", "POST"} {
				for ii, inst := range []string{"a:9090", "b:9090"} {
					rate := float64(1+ci*7+mi*3+ii) * 1.5
					n := i
					if inst == "b:9090" && code == "200" && m == "GET" && i >= 100 {
						n = i - 100 // counter reset
					}
					add(float64(n)*rate, "__name__", "http_requests_total", "job", "api", "instance", inst, "code", code, "method", m)
				}
			}
		}
		add(40+5*math.Sin(float64(i)/10), "__name__", "node_temp", "job", "node", "instance", "a:9090", "sensor", "cpu")
		add(55.25+float64(i%7)*0.5, "__name__", "node_temp", "job", "node", "instance", "a:9090", "sensor", "gpu")
		for _, b := range []struct {
			le string
			n  float64
		}{{"0.1", 3}, {"0.5", 7}, {"1", 9}, {"+Inf", 10}} {
			add(float64(i)*b.n, "__name__", "req_duration_seconds_bucket", "job", "api", "instance", "a:9090", "le", b.le)
		}
		add(float64(i)*4.2, "__name__", "req_duration_seconds_sum", "job", "api", "instance", "a:9090")
		add(float64(i)*10, "__name__", "req_duration_seconds_count", "job", "api", "instance", "a:9090")
		switch {
		case i < 80:
			add(float64(i), "__name__", "stale_metric", "job", "x")
		case i == 80:
			add(math.Float64frombits(value.StaleNaN), "__name__", "stale_metric", "job", "x")
		}
		if i%20 == 0 {
			add(float64(i), "__name__", "sparse", "job", "x")
		}
		w := float64(i)
		switch i % 10 {
		case 3:
			w = math.NaN()
		case 7:
			w = math.Inf(1)
		case 8:
			w = math.Inf(-1)
		}
		add(w, "__name__", "weird", "job", "x")
		add(float64(i)/4, "__name__", "utf8.metric", "host.name", "h1", "job", "x")
	}
	return out
}

// write appends samples in batches of 20 timestamps, as a few scrapes
// would.
func write(t testing.TB, a storage.Appendable, ss []sample) {
	t.Helper()
	ctx := context.Background()
	app := a.Appender(ctx)
	batchEnd := base + 20*interval
	for _, s := range ss {
		if s.t >= batchEnd {
			require.NoError(t, app.Commit())
			app = a.Appender(ctx)
			batchEnd += 20 * interval
		}
		_, err := app.Append(0, s.l, s.t, s.v)
		require.NoError(t, err, "%s %d", s.l, s.t)
	}
	require.NoError(t, app.Commit())
}

func openAerie(t testing.TB, opts ...tsdb.Options) *tsdb.DB {
	t.Helper()
	o := tsdb.Options{}
	if len(opts) > 0 {
		o = opts[0]
	}
	o.FlushCheckInterval = -1
	db, err := tsdb.Open(t.TempDir(), &o)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	return db
}

// newAerie returns an Aerie DB and its API handler.
func newAerie(t testing.TB, opts Options, dbOpts ...tsdb.Options) (*tsdb.DB, http.Handler) {
	t.Helper()
	db := openAerie(t, dbOpts...)
	h, engine, err := New(db, opts)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, engine.Close()) })
	return db, h
}

// promAdmin is what Prometheus' main.go readyStorage does for a tsdb.DB.
type promAdmin struct{ *promtsdb.DB }

func (p promAdmin) Stats(name string, limit int) (*promtsdb.Stats, error) {
	return p.Head().Stats(name, limit), nil
}

func (promAdmin) WALReplayStatus() (promtsdb.WALReplayStatus, error) {
	return promtsdb.WALReplayStatus{}, nil
}

func (p promAdmin) BlockMetas() ([]promtsdb.BlockMeta, error) { return p.DB.BlockMetas(), nil }

// newProm returns a Prometheus tsdb (Prometheus' defaults, exemplar
// storage on as in Prometheus) behind the same API wiring.
func newProm(t testing.TB, opts Options) (*promtsdb.DB, http.Handler) {
	t.Helper()
	dir := t.TempDir()
	po := promtsdb.DefaultOptions()
	po.EnableExemplarStorage = true
	po.MaxExemplars = 100000
	db, err := promtsdb.Open(dir, nil, nil, po, nil)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	engine := NewEngine(dir, opts)
	t.Cleanup(func() { require.NoError(t, engine.Close()) })
	return db, newHandler(engine, db, db, db, db, promAdmin{db}, dir, nil, nil, opts)
}

// do serves one request: GET with params in the query string, POST and
// PUT with them as a form.
func do(t testing.TB, h http.Handler, method, path string, params url.Values) (int, []byte) {
	t.Helper()
	var req *http.Request
	if method == http.MethodGet || method == http.MethodDelete {
		u := path
		if len(params) > 0 {
			u += "?" + params.Encode()
		}
		req = httptest.NewRequest(method, u, nil)
	} else {
		req = httptest.NewRequest(method, path, strings.NewReader(params.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	body, err := io.ReadAll(rec.Result().Body)
	require.NoError(t, err)
	return rec.Code, body
}

// response is Prometheus' API envelope.
type response struct {
	Status    string          `json:"status"`
	Data      json.RawMessage `json:"data"`
	ErrorType string          `json:"errorType"`
	Error     string          `json:"error"`
	Warnings  []string        `json:"warnings"`
	Infos     []string        `json:"infos"`
}

func decode(t testing.TB, body []byte) response {
	t.Helper()
	var r response
	require.NoError(t, json.Unmarshal(body, &r), "%s", body)
	return r
}

// ok requests and expects a 200 success, returning its data.
func ok(t testing.TB, h http.Handler, method, path string, params url.Values) json.RawMessage {
	t.Helper()
	code, body := do(t, h, method, path, params)
	require.Equal(t, http.StatusOK, code, "%s %s: %s", method, path, body)
	r := decode(t, body)
	require.Equal(t, "success", r.Status, "%s", body)
	return r.Data
}

func vals(kv ...string) url.Values {
	v := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Add(kv[i], kv[i+1])
	}
	return v
}
