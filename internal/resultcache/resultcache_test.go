package resultcache

import (
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/aerie-db/aerie/internal/api"
	"github.com/aerie-db/aerie/internal/cache"
	"github.com/aerie-db/aerie/internal/tsdb"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// day0 is midnight UTC of the data's first day; the data span three days
// at a 1 min interval.
var day0 = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC).UnixMilli()

const minute = int64(60_000)

type env struct {
	db    *tsdb.DB
	api   http.Handler
	rc    *Cache
	reg   *prometheus.Registry
	now   time.Time
	calls int // requests that reached the API
}

func newEnv(t testing.TB) *env {
	t.Helper()
	dir := t.TempDir()
	db, err := tsdb.Open(filepath.Join(dir, "data"), &tsdb.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	app := db.Appender(context.Background())
	for i := int64(0); i < 3*1440; i++ {
		ts := day0 + i*minute
		for inst := range 3 {
			l := labels.FromStrings("__name__", "requests_total", "job", "api", "instance", fmt.Sprint(inst))
			_, err := app.Append(0, l, ts, float64(i*int64(inst+1)))
			require.NoError(t, err)
			if i%200 != 7 || inst != 2 { // a series with gaps
				_, err = app.Append(0, labels.FromStrings("__name__", "temp", "instance", fmt.Sprint(inst)), ts, 20+10*math.Sin(float64(i)/50+float64(inst)))
				require.NoError(t, err)
			}
		}
	}
	require.NoError(t, app.Commit())
	h, _, err := api.New(db, api.Options{})
	require.NoError(t, err)
	e := &env{db: db, reg: prometheus.NewRegistry(), now: time.UnixMilli(day0 + 3*1440*minute + 3600_000)}
	e.api = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { e.calls++; h.ServeHTTP(w, r) })
	c, err := cache.Open(cache.Options{Path: filepath.Join(dir, "cache"), Size: 64 << 20, SlabSize: 1 << 20, PartialMinBytes: -1})
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	e.rc, err = New(e.api, c, Options{Now: func() time.Time { return e.now }, Registerer: e.reg})
	require.NoError(t, err)
	db.SetLateObserver(e.rc)
	return e
}

func get(t testing.TB, h http.Handler, q string, start, end int64, step string) (int, string) {
	t.Helper()
	v := url.Values{"query": {q}, "start": {formatTime(start)}, "end": {formatTime(end)}, "step": {step}}
	r := httptest.NewRequest(http.MethodGet, "/api/v1/query_range?"+v.Encode(), nil)
	r.Header.Set("Accept-Encoding", "gzip") // as Go clients send it: the cache must still read the engine's answers
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	var body io.Reader = w.Body
	if w.Header().Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(w.Body)
		require.NoError(t, err)
		body = zr
	}
	b, err := io.ReadAll(body)
	require.NoError(t, err)
	return w.Code, string(b)
}

// TestSameAnswers: through the cache (cold, warm, shifted, across day
// boundaries, with unaligned starts) every answer is byte for byte the
// engine's own.
func TestSameAnswers(t *testing.T) {
	e := newEnv(t)
	queries := []string{
		`requests_total`,
		`rate(requests_total[5m])`,
		`sum by (job) (rate(requests_total[10m]))`,
		`temp`,
		`avg_over_time(temp[17m]) offset 1h`,
		`max_over_time(temp[30m:5m])`,
		`temp > 25`,
		`sum(temp) / count(temp)`,
		`timestamp(temp)`,
		`nonexistent_metric`,
		`temp @ end()`, // not cacheable: passed through
		`temp offset -5m`,
	}
	ranges := []struct {
		start, end int64
		step       string
	}{
		{day0 + 6*3600_000, day0 + 12*3600_000, "60"},
		{day0 + 6*3600_000 + 30*minute, day0 + 12*3600_000 + 30*minute, "60"}, // shifted: partial hits
		{day0 + 20*3600_000, day0 + 30*3600_000, "300"},                       // across midnight
		{day0 + 20*3600_000 + 7_000, day0 + 52*3600_000, "137"},               // unaligned start, odd step
		{day0 + 60*3600_000, e.now.UnixMilli(), "60"},                         // reaches the fresh part
		{day0 + 6*3600_000, day0 + 12*3600_000, "60"},                         // again: hits
	}
	for round := range 2 {
		for _, q := range queries {
			for _, rg := range ranges {
				wantCode, want := get(t, e.api, q, rg.start, rg.end, rg.step)
				code, got := get(t, e.rc, q, rg.start, rg.end, rg.step)
				require.Equal(t, wantCode, code, "%s %d-%d", q, rg.start, rg.end)
				require.Equal(t, want, got, "round %d: %s %d-%d step %s", round, q, rg.start, rg.end, rg.step)
			}
		}
	}
	hits := testutil.ToFloat64(e.rc.m.hits)
	partials := testutil.ToFloat64(e.rc.m.partials)
	require.Positive(t, hits)
	require.Positive(t, partials)
	require.Positive(t, testutil.ToFloat64(e.rc.m.passed))
	t.Logf("hits %v partials %v misses %v passed %v engine queries %v", hits, partials, testutil.ToFloat64(e.rc.m.misses), testutil.ToFloat64(e.rc.m.passed), testutil.ToFloat64(e.rc.m.downstream))
}

// TestWarmHitSkipsEngine: a repeated request older than the freshness
// bound is answered without reaching the engine.
func TestWarmHitSkipsEngine(t *testing.T) {
	e := newEnv(t)
	q := `sum(rate(requests_total[5m]))`
	_, first := get(t, e.rc, q, day0+3600_000, day0+20*3600_000, "60")
	calls := e.calls
	_, again := get(t, e.rc, q, day0+3600_000, day0+20*3600_000, "60")
	require.Equal(t, first, again)
	require.Equal(t, calls, e.calls, "a warm request reaches the engine")
	// shifted by an hour: only the new hour is asked for
	_, _ = get(t, e.rc, q, day0+2*3600_000, day0+21*3600_000, "60")
	require.Equal(t, calls+1, e.calls)
}

// TestBackfillInvalidates: a sample written into a cached range (through
// the backfill) is in the next answer: the entry was dropped before the
// write was acknowledged.
func TestBackfillInvalidates(t *testing.T) {
	e := newEnv(t)
	q := `max(temp)`
	start, end := day0+3600_000, day0+10*3600_000
	_, before := get(t, e.rc, q, start, end, "60")
	_, cached := get(t, e.rc, q, start, end, "60")
	require.Equal(t, before, cached)

	app := e.db.Appender(context.Background())
	_, err := app.Append(0, labels.FromStrings("__name__", "temp", "instance", "9"), day0+5*3600_000+30_000, 1e6)
	require.NoError(t, err)
	require.NoError(t, app.Commit())

	_, after := get(t, e.rc, q, start, end, "60")
	_, want := get(t, e.api, q, start, end, "60")
	require.Equal(t, want, after)
	require.Contains(t, after, `"1000000"`)
	require.Positive(t, testutil.ToFloat64(e.rc.m.invalidated))

	// a write to a series no cached query selects drops nothing
	inv := testutil.ToFloat64(e.rc.m.invalidated)
	app = e.db.Appender(context.Background())
	_, err = app.Append(0, labels.FromStrings("__name__", "other"), day0+5*3600_000+30_000, 1)
	require.NoError(t, err)
	require.NoError(t, app.Commit())
	require.Equal(t, inv, testutil.ToFloat64(e.rc.m.invalidated))
}

// TestDeleteInvalidates: a deletion through the admin path drops the
// entries whose data it reaches.
func TestDeleteInvalidates(t *testing.T) {
	e := newEnv(t)
	q := `sum(temp)`
	start, end := day0+3600_000, day0+10*3600_000
	get(t, e.rc, q, start, end, "60")
	m, err := labels.NewMatcher(labels.MatchEqual, "__name__", "temp")
	require.NoError(t, err)
	require.NoError(t, e.db.Delete(context.Background(), day0+2*3600_000, day0+3*3600_000, m))
	_, got := get(t, e.rc, q, start, end, "60")
	_, want := get(t, e.api, q, start, end, "60")
	require.Equal(t, want, got)
}

// TestErrorsPassThrough: bad requests get the API's own answers.
func TestErrorsPassThrough(t *testing.T) {
	e := newEnv(t)
	for _, q := range []string{`sum(`, `rate(temp)`} {
		wantCode, want := get(t, e.api, q, day0, day0+3600_000, "60")
		code, got := get(t, e.rc, q, day0, day0+3600_000, "60")
		require.Equal(t, wantCode, code)
		require.Equal(t, want, got)
	}
	r := httptest.NewRequest(http.MethodGet, "/api/v1/query_range?query=temp&start=x&end=1&step=1", nil)
	w := httptest.NewRecorder()
	e.rc.ServeHTTP(w, r)
	require.Equal(t, http.StatusBadRequest, w.Code)
	require.True(t, strings.Contains(w.Body.String(), "start"), w.Body.String())
}

// BenchmarkDashboardPanel answers a 6 h range at a 30 s step over three
// series: from the engine (off) and from the cache, warm (on).
//
//	go test -run '^$' -bench BenchmarkDashboardPanel -count 6 ./internal/resultcache/ | tee new.txt; benchstat old.txt new.txt
func BenchmarkDashboardPanel(b *testing.B) {
	e := newEnv(b)
	start, end := day0+26*3600_000, day0+32*3600_000
	for _, tc := range []struct {
		name string
		h    http.Handler
	}{{"cache=off", e.api}, {"cache=on", e.rc}} {
		b.Run(tc.name, func(b *testing.B) {
			get(b, tc.h, `rate(requests_total[5m])`, start, end, "30")
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				get(b, tc.h, `rate(requests_total[5m])`, start, end, "30")
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "answers/s")
		})
	}
}

// TestRegistryBound: when the registry is full, every registered part is
// dropped with it, so no cached part is left that a write could not
// invalidate.
func TestRegistryBound(t *testing.T) {
	defer func(n int) { maxEntries = n }(maxEntries)
	maxEntries = 2
	e := newEnv(t)
	start, end := day0+3600_000, day0+2*3600_000 // one part each
	for _, q := range []string{`sum(temp)`, `max(temp)`} {
		get(t, e.rc, q, start, end, "60")
	}
	calls := e.calls
	get(t, e.rc, `sum(temp)`, start, end, "60")
	require.Equal(t, calls, e.calls, "a hit")
	get(t, e.rc, `min(temp)`, start, end, "60") // the third part: the registry is full
	require.Equal(t, 1.0, testutil.ToFloat64(e.rc.m.registryResets))
	calls = e.calls
	_, got := get(t, e.rc, `sum(temp)`, start, end, "60")
	require.Equal(t, calls+1, e.calls, "dropped with the registry: asked again")
	_, want := get(t, e.api, `sum(temp)`, start, end, "60")
	require.Equal(t, want, got)
}
