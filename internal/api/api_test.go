package api

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/metadata"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/rules"
	v1 "github.com/prometheus/prometheus/web/api/v1"
	"github.com/stretchr/testify/require"

	"github.com/aerie-db/aerie/internal/tsdb"
)

// small writes three samples of two series and metadata for one of them.
func small(t testing.TB, db *tsdb.DB) {
	t.Helper()
	app := db.Appender(context.Background())
	for i, v := range []float64{21.5, 22, 22.5} {
		ts := base + int64(i)*15000
		_, err := app.Append(0, labels.FromStrings("__name__", "temp", "job", "home", "room", "kitchen"), ts, v)
		require.NoError(t, err)
		_, err = app.Append(0, labels.FromStrings("__name__", "up", "job", "home", "instance", "pi:9100"), ts, 1)
		require.NoError(t, err)
	}
	_, err := app.UpdateMetadata(0, labels.FromStrings("__name__", "temp"), metadata.Metadata{Type: "gauge", Help: "Temperature.", Unit: "celsius"})
	require.NoError(t, err)
	require.NoError(t, app.Commit())
}

func TestQueryGolden(t *testing.T) {
	db, h := newAerie(t, Options{})
	small(t, db)
	want := `{"status":"success","data":{"resultType":"vector","result":[` +
		`{"metric":{"__name__":"temp","job":"home","room":"kitchen"},"value":[1700000030,"22.5"]}]}}`
	for _, m := range []string{http.MethodGet, http.MethodPost} {
		code, body := do(t, h, m, "/api/v1/query", vals("query", "temp", "time", "1700000030"))
		require.Equal(t, http.StatusOK, code)
		require.JSONEq(t, want, string(body), m)
		require.Equal(t, want, string(body), m) // byte for byte
	}
	code, body := do(t, h, http.MethodGet, "/api/v1/query", vals("query", "sum(up) * 2", "time", "1700000030"))
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1700000030,"2"]}]}}`, string(body))
	code, body = do(t, h, http.MethodGet, "/api/v1/query", vals("query", "temp[30s]", "time", "1700000030"))
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, `{"status":"success","data":{"resultType":"matrix","result":[`+
		`{"metric":{"__name__":"temp","job":"home","room":"kitchen"},"values":[[1700000015,"22"],[1700000030,"22.5"]]}]}}`, string(body))
	code, body = do(t, h, http.MethodGet, "/api/v1/query", vals("query", "42", "time", "1700000030"))
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, `{"status":"success","data":{"resultType":"scalar","result":[1700000030,"42"]}}`, string(body))
}

func TestQueryRangeGolden(t *testing.T) {
	db, h := newAerie(t, Options{})
	small(t, db)
	want := `{"status":"success","data":{"resultType":"matrix","result":[` +
		`{"metric":{"__name__":"temp","job":"home","room":"kitchen"},"values":[[1700000000,"21.5"],[1700000015,"22"],[1700000030,"22.5"],[1700000045,"22.5"]]}]}}`
	for _, m := range []string{http.MethodGet, http.MethodPost} {
		code, body := do(t, h, m, "/api/v1/query_range", vals("query", "temp", "start", "1700000000", "end", "1700000045", "step", "15s"))
		require.Equal(t, http.StatusOK, code)
		require.Equal(t, want, string(body), m)
	}
	// Statistics on request, in Prometheus' shape.
	data := ok(t, h, http.MethodGet, "/api/v1/query_range", vals("query", "temp", "start", "1700000000", "end", "1700000045", "step", "15", "stats", "all"))
	var qd struct {
		Stats struct {
			Timings map[string]float64 `json:"timings"`
			Samples struct {
				TotalQueryableSamples int `json:"totalQueryableSamples"`
				PeakSamples           int `json:"peakSamples"`
			} `json:"samples"`
		} `json:"stats"`
	}
	require.NoError(t, json.Unmarshal(data, &qd))
	require.Contains(t, qd.Stats.Timings, "evalTotalTime")
	require.Equal(t, 4, qd.Stats.Samples.TotalQueryableSamples)
}

func TestSeriesLabelsGolden(t *testing.T) {
	db, h := newAerie(t, Options{})
	small(t, db)
	for _, m := range []string{http.MethodGet, http.MethodPost} {
		code, body := do(t, h, m, "/api/v1/series", vals("match[]", `{job="home"}`, "start", "1699999000", "end", "1700001000"))
		require.Equal(t, http.StatusOK, code)
		require.Equal(t, `{"status":"success","data":[{"__name__":"temp","job":"home","room":"kitchen"},{"__name__":"up","instance":"pi:9100","job":"home"}]}`, string(body))
		code, body = do(t, h, m, "/api/v1/labels", nil)
		require.Equal(t, http.StatusOK, code)
		require.Equal(t, `{"status":"success","data":["__name__","instance","job","room"]}`, string(body))
	}
	code, body := do(t, h, http.MethodGet, "/api/v1/label/__name__/values", nil)
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, `{"status":"success","data":["temp","up"]}`, string(body))
	code, body = do(t, h, http.MethodGet, "/api/v1/label/room/values", vals("match[]", "up"))
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, `{"status":"success","data":[]}`, string(body))
	// Outside the data's time range.
	code, body = do(t, h, http.MethodGet, "/api/v1/series", vals("match[]", "up", "start", "1800000000", "end", "1800000100"))
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, `{"status":"success","data":[]}`, string(body))
}

func TestMetadata(t *testing.T) {
	db, h := newAerie(t, Options{})
	small(t, db)
	code, body := do(t, h, http.MethodGet, "/api/v1/metadata", nil)
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, `{"status":"success","data":{"temp":[{"type":"gauge","unit":"celsius","help":"Temperature."}]}}`, string(body))
	code, body = do(t, h, http.MethodGet, "/api/v1/metadata", vals("metric", "temp"))
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, `{"status":"success","data":{"temp":[{"type":"gauge","unit":"celsius","help":"Temperature."}]}}`, string(body))
	code, body = do(t, h, http.MethodGet, "/api/v1/metadata", vals("metric", "up"))
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, `{"status":"success","data":{}}`, string(body))
	code, body = do(t, h, http.MethodGet, "/api/v1/metadata", vals("limit", "x"))
	require.Equal(t, http.StatusBadRequest, code)
	require.Equal(t, `{"status":"error","errorType":"bad_data","error":"limit must be a number"}`, string(body))
	// The pseudo-target holding the metadata is not a target.
	code, body = do(t, h, http.MethodGet, "/api/v1/targets", nil)
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, `{"status":"success","data":{"activeTargets":[],"droppedTargets":[],"droppedTargetCounts":{}}}`, string(body))

	db2, h2 := newAerie(t, Options{TargetMetadataOnly: true})
	small(t, db2)
	code, body = do(t, h2, http.MethodGet, "/api/v1/metadata", nil)
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, `{"status":"success","data":{}}`, string(body))
}

func TestExemplarsEmpty(t *testing.T) {
	db, h := newAerie(t, Options{})
	small(t, db)
	for _, m := range []string{http.MethodGet, http.MethodPost} {
		code, body := do(t, h, m, "/api/v1/query_exemplars", vals("query", "temp", "start", "1700000000", "end", "1700000030"))
		require.Equal(t, http.StatusOK, code)
		require.Equal(t, `{"status":"success","data":[]}`, string(body))
	}
}

func TestStatus(t *testing.T) {
	flags := map[string]string{"storage.tsdb.path": "data/", "query.timeout": "2m"}
	db, h := newAerie(t, Options{Flags: flags, StorageRetention: "15d"})
	small(t, db)

	var bi v1.PrometheusVersion
	require.NoError(t, json.Unmarshal(ok(t, h, http.MethodGet, "/api/v1/status/buildinfo", nil), &bi))
	require.Equal(t, Version, bi.Version)
	require.Equal(t, runtime.Version(), bi.GoVersion)
	raw := ok(t, h, http.MethodGet, "/api/v1/status/buildinfo", nil)
	var keys map[string]any
	require.NoError(t, json.Unmarshal(raw, &keys))
	for _, k := range []string{"version", "revision", "branch", "buildUser", "buildDate", "goVersion"} {
		require.Contains(t, keys, k)
	}

	code, body := do(t, h, http.MethodGet, "/api/v1/status/flags", nil)
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, `{"status":"success","data":{"query.timeout":"2m","storage.tsdb.path":"data/"}}`, string(body))

	var ri v1.RuntimeInfo
	require.NoError(t, json.Unmarshal(ok(t, h, http.MethodGet, "/api/v1/status/runtimeinfo", nil), &ri))
	host, _ := os.Hostname()
	cwd, _ := os.Getwd()
	require.Equal(t, host, ri.Hostname)
	require.Equal(t, cwd, ri.CWD)
	require.Equal(t, runtime.GOMAXPROCS(0), ri.GOMAXPROCS)
	require.Equal(t, "15d", ri.StorageRetention)
	require.True(t, ri.ReloadConfigSuccess)
	require.Positive(t, ri.GoroutineCount)
	require.WithinDuration(t, time.Now(), ri.ServerTime, time.Minute)
	require.False(t, ri.StartTime.After(ri.ServerTime))

	var cfg struct {
		YAML string `json:"yaml"`
	}
	require.NoError(t, json.Unmarshal(ok(t, h, http.MethodGet, "/api/v1/status/config", nil), &cfg))
	require.Contains(t, cfg.YAML, "scrape_interval: 1m")

	// chunkCount: the head's group partitions, temp's group's and up's
	// (they differ in instance), one partition each.
	code, body = do(t, h, http.MethodGet, "/api/v1/status/tsdb", nil)
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, `{"status":"success","data":{"headStats":{"numSeries":2,"numLabelPairs":5,"chunkCount":2,"minTime":1700000000000,"maxTime":1700000030000},`+
		`"seriesCountByMetricName":[{"name":"temp","value":1},{"name":"up","value":1}],`+
		`"labelValueCountByLabelName":[{"name":"__name__","value":2},{"name":"instance","value":1},{"name":"job","value":1},{"name":"room","value":1}],`+
		`"memoryInBytesByLabelName":[`+memoryStats()+`],`+
		`"seriesCountByLabelValuePair":[{"name":"job=home","value":2},{"name":"__name__=temp","value":1},{"name":"__name__=up","value":1},{"name":"instance=pi:9100","value":1},{"name":"room=kitchen","value":1}]}}`,
		string(body))
	code, body = do(t, h, http.MethodGet, "/api/v1/status/tsdb", vals("limit", "1"))
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, string(body), `"seriesCountByMetricName":[{"name":"temp","value":1}]`)
	code, body = do(t, h, http.MethodGet, "/api/v1/status/tsdb", vals("limit", "0"))
	require.Equal(t, http.StatusBadRequest, code)
	require.Equal(t, `{"status":"error","errorType":"bad_data","error":"limit must be a positive number"}`, string(body))

	code, body = do(t, h, http.MethodGet, "/api/v1/status/tsdb/blocks", nil)
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, `{"status":"success","data":{"blocks":[]}}`, string(body))
	require.NoError(t, db.FlushHead())
	var blocks struct {
		Blocks []struct {
			ULID    string `json:"ulid"`
			MinTime int64  `json:"minTime"`
			MaxTime int64  `json:"maxTime"`
			Stats   struct {
				NumSamples uint64 `json:"numSamples"`
				NumSeries  uint64 `json:"numSeries"`
			} `json:"stats"`
		} `json:"blocks"`
	}
	require.NoError(t, json.Unmarshal(ok(t, h, http.MethodGet, "/api/v1/status/tsdb/blocks", nil), &blocks))
	require.Len(t, blocks.Blocks, 1)
	require.Equal(t, db.Blocks()[0].ULID, blocks.Blocks[0].ULID)
	require.Equal(t, uint64(6), blocks.Blocks[0].Stats.NumSamples)
	require.Equal(t, uint64(2), blocks.Blocks[0].Stats.NumSeries)
	// Still queryable from the block.
	code, body = do(t, h, http.MethodGet, "/api/v1/query", vals("query", "temp", "time", "1700000030"))
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, string(body), `"value":[1700000030,"22.5"]`)

	code, body = do(t, h, http.MethodGet, "/api/v1/status/walreplay", nil)
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, `{"status":"success","data":{"min":0,"max":0,"current":0}}`, string(body))

	var feats map[string]map[string]bool
	require.NoError(t, json.Unmarshal(ok(t, h, http.MethodGet, "/api/v1/features", nil), &feats))
	require.True(t, feats["api"]["remote_write_receiver"])
	require.False(t, feats["api"]["admin"])
	require.True(t, feats["promql"]["at_modifier"], "%v", feats["promql"])
}

// memoryStats is memoryInBytesByLabelName for the small data set, by
// Prometheus' own formula (labels.SizeOfLabels), largest first.
func memoryStats() string {
	type st struct {
		name string
		v    uint64
	}
	s := func(n string, vs ...string) st {
		var total uint64
		for _, v := range vs {
			total += labels.SizeOfLabels(n, v, 1)
		}
		return st{n, total}
	}
	l := []st{s("__name__", "temp", "up"), s("job", "home", "home"), s("instance", "pi:9100"), s("room", "kitchen")}
	for i := range l { // insertion sort: value desc, name asc
		for j := i; j > 0 && (l[j].v > l[j-1].v || l[j].v == l[j-1].v && l[j].name < l[j-1].name); j-- {
			l[j], l[j-1] = l[j-1], l[j]
		}
	}
	out := ""
	for i, e := range l {
		if i > 0 {
			out += ","
		}
		b, _ := json.Marshal(map[string]any{"name": e.name, "value": e.v})
		out += string(b)
	}
	return out
}

func TestErrors(t *testing.T) {
	db, h := newAerie(t, Options{})
	small(t, db)
	code, body := do(t, h, http.MethodGet, "/api/v1/query", vals("query", "sum(rate(temp[5m])", "time", "1700000030"))
	require.Equal(t, http.StatusBadRequest, code)
	require.Equal(t, `{"status":"error","errorType":"bad_data","error":"invalid parameter \"query\": 1:19: parse error: unclosed left parenthesis"}`, string(body))
	code, body = do(t, h, http.MethodPost, "/api/v1/query_range", vals("query", "temp", "start", "1700000030", "end", "1700000000", "step", "15"))
	require.Equal(t, http.StatusBadRequest, code)
	require.Equal(t, `{"status":"error","errorType":"bad_data","error":"invalid parameter \"end\": end timestamp must not be before start time"}`, string(body))
	code, body = do(t, h, http.MethodGet, "/api/v1/query_range", vals("query", "temp", "start", "1700000000", "end", "1700000030"))
	require.Equal(t, http.StatusBadRequest, code)
	require.Equal(t, `{"status":"error","errorType":"bad_data","error":"invalid parameter \"step\": cannot parse \"\" to a valid duration"}`, string(body))
	code, _ = do(t, h, http.MethodPut, "/api/v1/query", nil)
	require.Equal(t, http.StatusMethodNotAllowed, code)

	// Too many samples: 422 execution.
	_, lim := newAerieWith(t, Options{MaxSamples: 2})
	code, body = do(t, lim, http.MethodGet, "/api/v1/query", vals("query", "temp[1m]", "time", "1700000030"))
	require.Equal(t, http.StatusUnprocessableEntity, code)
	require.Equal(t, `{"status":"error","errorType":"execution","error":"query processing would load too many samples into memory in query execution"}`, string(body))

	// Timeout: 503 timeout. A subquery stepping by 1ms over a day is far
	// too heavy for 50ms (and the engine checks the deadline every step).
	_, slow := newAerieWith(t, Options{QueryTimeout: 50 * time.Millisecond, MaxSamples: 1 << 40})
	code, body = do(t, slow, http.MethodGet, "/api/v1/query", vals("query", "max_over_time((vector(time()) * 2)[1d:1ms])", "time", "1700000030"))
	require.Equal(t, http.StatusServiceUnavailable, code, "%s", body)
	require.Equal(t, `{"status":"error","errorType":"timeout","error":"query timed out in expression evaluation"}`, string(body))
}

// newAerieWith returns a handler over a DB holding the small data set.
func newAerieWith(t testing.TB, opts Options) (*tsdb.DB, http.Handler) {
	t.Helper()
	db, h := newAerie(t, opts)
	small(t, db)
	return db, h
}

func TestAdmin(t *testing.T) {
	_, h := newAerieWith(t, Options{})
	code, body := do(t, h, http.MethodPost, "/api/v1/admin/tsdb/delete_series", vals("match[]", "up"))
	require.Equal(t, http.StatusInternalServerError, code)
	require.Equal(t, `{"status":"error","errorType":"unavailable","error":"admin APIs disabled"}`, string(body))

	_, h = newAerieWith(t, Options{EnableAdmin: true})
	code, body = do(t, h, http.MethodGet, "/api/v1/query", vals("query", "count(up)", "time", "1700000030"))
	require.Equal(t, http.StatusOK, code, string(body))
	require.NotContains(t, string(body), `"result":[]`, "up exists before the delete")
	for _, m := range []string{http.MethodPost, http.MethodPut} {
		code, body = do(t, h, m, "/api/v1/admin/tsdb/delete_series", vals("match[]", "up"))
		require.Equal(t, http.StatusNoContent, code, string(body))
		code, body = do(t, h, http.MethodGet, "/api/v1/query", vals("query", "up", "time", "1700000030"))
		require.Equal(t, http.StatusOK, code)
		require.Contains(t, string(body), `"result":[]`, "tombstones are honoured by queries")
		code, body = do(t, h, m, "/api/v1/admin/tsdb/delete_series", nil)
		require.Equal(t, http.StatusBadRequest, code)
		require.Equal(t, `{"status":"error","errorType":"bad_data","error":"no match[] parameter provided"}`, string(body))
		code, _ = do(t, h, m, "/api/v1/admin/tsdb/clean_tombstones", nil)
		require.Equal(t, http.StatusNoContent, code)
	}
	code, body = do(t, h, http.MethodPost, "/api/v1/admin/tsdb/snapshot", nil)
	require.Equal(t, http.StatusInternalServerError, code)
	require.Equal(t, `{"status":"error","errorType":"internal","error":"create snapshot: snapshots are not supported by Aerie"}`, string(body))
}

func TestEmptyManagers(t *testing.T) {
	_, h := newAerieWith(t, Options{})
	for path, want := range map[string]string{
		"/api/v1/rules":            `{"status":"success","data":{"groups":[]}}`,
		"/api/v1/alerts":           `{"status":"success","data":{"alerts":[]}}`,
		"/api/v1/targets":          `{"status":"success","data":{"activeTargets":[],"droppedTargets":[],"droppedTargetCounts":{}}}`,
		"/api/v1/alertmanagers":    `{"status":"success","data":{"activeAlertmanagers":[],"droppedAlertmanagers":[]}}`,
		"/api/v1/scrape_pools":     `{"status":"success","data":{"scrapePools":[]}}`,
		"/api/v1/targets/metadata": `{"status":"success","data":[]}`,
		"/api/v1/notifications":    `{"status":"success","data":[]}`,
	} {
		code, body := do(t, h, http.MethodGet, path, nil)
		require.Equal(t, http.StatusOK, code, path)
		require.Equal(t, want, string(body), path)
	}
	code, _ := do(t, h, http.MethodGet, "/api/v1/notifications/live", nil)
	require.Equal(t, http.StatusNoContent, code)
}

// fakeRules is a rules manager with one empty group.
type fakeRules struct{}

func (fakeRules) RuleGroups() []*rules.Group {
	expr, err := parser.ParseExpr("sum(up)")
	if err != nil {
		panic(err)
	}
	r := rules.NewRecordingRule("job:up:sum", expr, labels.EmptyLabels())
	return []*rules.Group{rules.NewGroup(rules.GroupOptions{Name: "g", File: "r.yml", Interval: time.Minute, Rules: []rules.Rule{r}, Opts: &rules.ManagerOptions{}})}
}
func (fakeRules) AlertingRules() []*rules.AlertingRule { return nil }

func TestManagersPassedIn(t *testing.T) {
	_, h := newAerieWith(t, Options{
		Rules: func(context.Context) v1.RulesRetriever { return fakeRules{} },
		Config: func() config.Config {
			c := config.DefaultConfig
			c.GlobalConfig.ExternalLabels = labels.FromStrings("dc", "eu1")
			return c
		},
	})
	var rd struct {
		Groups []struct {
			Name string `json:"name"`
			File string `json:"file"`
		} `json:"groups"`
	}
	require.NoError(t, json.Unmarshal(ok(t, h, http.MethodGet, "/api/v1/rules", nil), &rd))
	require.Len(t, rd.Groups, 1)
	require.Equal(t, "g", rd.Groups[0].Name)
	var cfg struct {
		YAML string `json:"yaml"`
	}
	require.NoError(t, json.Unmarshal(ok(t, h, http.MethodGet, "/api/v1/status/config", nil), &cfg))
	require.Contains(t, cfg.YAML, "dc: eu1")
}

func TestReady(t *testing.T) {
	ready := false
	_, h := newAerieWith(t, Options{Ready: func() bool { return ready }})
	code, body := do(t, h, http.MethodGet, "/api/v1/query", vals("query", "up", "time", "1700000030"))
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Equal(t, "Service Unavailable", string(body))
	ready = true
	code, _ = do(t, h, http.MethodGet, "/api/v1/query", vals("query", "up", "time", "1700000030"))
	require.Equal(t, http.StatusOK, code)
	// Outside /api/v1.
	code, _ = do(t, h, http.MethodGet, "/metrics", nil)
	require.Equal(t, http.StatusNotFound, code)
}

func TestCORS(t *testing.T) {
	_, h := newAerieWith(t, Options{})
	req, _ := http.NewRequest(http.MethodGet, "/api/v1/query?query=up&time=1700000030", nil)
	req.Header.Set("Origin", "https://grafana.example")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	require.Equal(t, http.StatusOK, rec.Code)
	require.Equal(t, "*", rec.Header().Get("Access-Control-Allow-Origin"))
}

func TestActiveQueryTracker(t *testing.T) {
	db, h := newAerie(t, Options{MaxConcurrentQueries: 4})
	small(t, db)
	ok(t, h, http.MethodGet, "/api/v1/query", vals("query", "up", "time", "1700000030"))
	_, err := os.Stat(db.Dir() + "/queries.active")
	require.NoError(t, err)
}

func TestNewNilDB(t *testing.T) {
	_, _, err := New(nil, Options{})
	require.Error(t, err)
}
