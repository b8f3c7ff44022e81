package graphite

import (
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"

	"github.com/aerie-db/aerie/internal/tsdb"
)

// openDB opens an engine in a temp dir, as internal/sensor's tests do.
func openDB(t *testing.T) *tsdb.DB {
	t.Helper()
	db, err := tsdb.Open(t.TempDir(), &tsdb.Options{FlushCheckInterval: -1, PartitionRange: 2 * 3600_000, MaxFuture: 600_000})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Error(err)
		}
	})
	return db
}

type sample struct {
	lset labels.Labels
	t    int64 // seconds
	v    float64
}

func appendSamples(t *testing.T, db *tsdb.DB, ss []sample) {
	t.Helper()
	app := db.Appender(context.Background())
	for _, s := range ss {
		if _, err := app.Append(0, s.lset, s.t*1000, s.v); err != nil {
			t.Fatalf("append %s@%d: %v", s.lset, s.t, err)
		}
	}
	if err := app.Commit(); err != nil {
		t.Fatal(err)
	}
}

// sameValues compares values with NaN equal to NaN.
func sameValues(a, b []float64) bool {
	return slices.EqualFunc(a, b, func(x, y float64) bool { return x == y || math.IsNaN(x) && math.IsNaN(y) })
}

func TestQueryableStore(t *testing.T) {
	db := openDB(t)
	// an hour ago, on the minute: the engine takes samples near the wall
	// clock
	base := time.Now().Add(-time.Hour).Unix() / 60 * 60
	abc := labels.FromStrings("__name__", "a.b.c")
	east := labels.FromStrings("__name__", "disk.used", "dc", "east")
	eastX := labels.FromStrings("__name__", "disk.used", "dc", "east", "extra", "x")
	appendSamples(t, db, []sample{
		{abc, base, 1}, {abc, base + 30, 2}, // one interval: the last
		{abc, base + 60, 3},
		{abc, base + 150, 4},
		// base+180 … base+239: nothing
		{abc, base + 240, 5},
		{abc, base + 300, math.Float64frombits(value.StaleNaN)},
		{east, base, 10}, {eastX, base, 99}, {eastX, base + 60, 99},
	})
	st := NewQueryableStore(db, QueryableOptions{})
	ctx := context.Background()
	now := base + 3600

	check := func(what string) {
		t.Helper()
		// whisper's grid: from base-60 starts at base; until base+299
		// ends at base+300
		p, err := st.Points(ctx, abc, base-60, base+299, now)
		if err != nil {
			t.Fatal(err)
		}
		if want := []float64{2, 3, 4, nan, 5}; p.Start != base || p.Step != 60 || !sameValues(p.Values, want) || p.Method != "average" {
			t.Errorf("%s: Points(a.b.c) = %+v, want start %d step 60 values %v", what, p, base, want)
		}
		// the staleness marker is a null
		p, err = st.Points(ctx, abc, base+240, base+300, now)
		if err != nil || !sameValues(p.Values, []float64{nan}) || p.Start != base+300 {
			t.Errorf("%s: Points(a.b.c) over the marker = %+v, %v", what, p, err)
		}
		// a series with more labels is another series
		p, err = st.Points(ctx, east, base-60, base+60, now)
		if err != nil || !sameValues(p.Values, []float64{10, nan}) {
			t.Errorf("%s: Points(disk.used{dc=east}) = %+v, %v; want [10 NaN]", what, p, err)
		}
		// until clamped to now; from after now is nothing
		p, err = st.Points(ctx, abc, base-60, base+100000, base+60)
		if err != nil || !sameValues(p.Values, []float64{2, 3}) {
			t.Errorf("%s: Points clamped to now = %+v, %v; want [2 3]", what, p, err)
		}
		p, err = st.Points(ctx, abc, now+60, now+120, now)
		if err != nil || len(p.Values) != 0 {
			t.Errorf("%s: Points after now = %+v, %v; want none", what, p, err)
		}
		sets, err := st.Series(ctx, math.MinInt64, math.MaxInt64, labels.MustNewMatcher(labels.MatchRegexp, "__name__", "disk.*"))
		if err != nil || len(sets) != 2 || !labels.Equal(sets[0], east) || !labels.Equal(sets[1], eastX) {
			t.Errorf("%s: Series(disk.*) = %v, %v", what, sets, err)
		}
		sets, err = st.Series(ctx, (base+3000)*1000, (base+3600)*1000, labels.MustNewMatcher(labels.MatchRegexp, "__name__", ".+"))
		if err != nil || len(sets) != 0 {
			t.Errorf("%s: Series with no data in range = %v, %v", what, sets, err)
		}
	}
	check("head")
	if err := db.FlushHead(); err != nil {
		t.Fatal(err)
	}
	check("blocks")

	// the grid is bounded
	small := NewQueryableStore(db, QueryableOptions{Step: 10, MaxPoints: 100})
	if _, err := small.Points(ctx, abc, base-7200, base, now); err == nil {
		t.Error("Points over 720 intervals with MaxPoints 100: no error")
	}

	// the whole API over the engine
	mux := http.NewServeMux()
	New(st, Options{Now: func() time.Time { return time.Unix(now, 0) }}).Register(mux, nil)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	b := strconv.FormatInt(base, 10)
	_, body, _ := get(t, srv, "/render?format=json&target=seriesByTag('name=~a.b')&target=disk.used;dc=east&from="+strconv.FormatInt(base-60, 10)+"&until="+strconv.FormatInt(base+119, 10))
	want := `[{"target": "a.b.c", "tags": {"name": "a.b.c"}, "datapoints": [[2.0, ` + b + `], [3.0, ` + strconv.FormatInt(base+60, 10) + `]]}, ` +
		`{"target": "disk.used;dc=east", "tags": {"dc": "east", "name": "disk.used"}, "datapoints": [[10.0, ` + b + `], [null, ` + strconv.FormatInt(base+60, 10) + `]]}]`
	if body != want {
		t.Errorf("render over the engine:\n got %s\nwant %s", body, want)
	}
	_, body, _ = get(t, srv, "/metrics/find?query=*")
	if want := `[{"text":"a","id":"a","allowChildren":1,"expandable":1,"leaf":0},{"text":"disk","id":"disk","allowChildren":1,"expandable":1,"leaf":0}]`; body != want {
		t.Errorf("find over the engine: %s, want %s", body, want)
	}
}

// TestQueryableStoreSameAnswers loads testAPI's series into an engine and
// checks that the API over QueryableStore (which answers tag names and
// values from the engine's index, TagIndex) gives the answers the API
// over the memStore (which lists series) gives.
func TestQueryableStoreSameAnswers(t *testing.T) {
	mem, memSrv := testAPI(t, Options{})
	db := openDB(t)
	var ss []sample
	for _, s := range mem.series {
		for i, v := range s.values {
			ss = append(ss, sample{s.lset, s.start + int64(i)*s.step, v})
		}
	}
	appendSamples(t, db, ss)
	mux := http.NewServeMux()
	New(NewQueryableStore(db, QueryableOptions{}), Options{Now: func() time.Time { return apiNow }}).Register(mux, nil)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	for _, path := range []string{
		"/tags", "/tags?filter=h", "/tags?limit=2", "/tags/dc", "/tags/name", "/tags/nope",
		"/tags/findSeries?expr=name=~disk", "/tags/findSeries?expr[]=job=node",
		"/tags/autoComplete/tags", "/tags/autoComplete/tags?tagPrefix=h", "/tags/autoComplete/tags?limit=1",
		"/tags/autoComplete/tags?expr=name=disk.used", "/tags/autoComplete/tags?expr=name=~.*&tagPrefix=i",
		"/tags/autoComplete/values?tag=dc", "/tags/autoComplete/values?tag=dc&valuePrefix=w",
		"/tags/autoComplete/values?tag=host&expr=dc=west", "/tags/autoComplete/values?tag=name&expr=job=node",
		"/tags/autoComplete/values?tag=name", "/tags/autoComplete/values?tag=name&limit=3", "/tags/autoComplete/values?tag=__name__",
		"/metrics/find?query=*", "/metrics/find?query=servers.*.*", "/metrics/expand?query=*.*&groupByExpr=1",
		"/metrics/index.json",
		"/render?format=json&target=servers.*.cpu.*&target=seriesByTag('dc=~.*')&from=-10min&until=now",
		"/render?format=raw&target=up&target=a.b.c&from=-10min&until=now",
	} {
		wc, want, _ := get(t, memSrv, path)
		gc, got, _ := get(t, srv, path)
		if gc != wc || got != want {
			t.Errorf("%s:\nengine %d %s\nmemory %d %s", path, gc, got, wc, want)
		}
	}
}
