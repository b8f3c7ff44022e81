package sensor

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/stretchr/testify/require"
)

func TestMetaListDelete(t *testing.T) {
	e := newEnv(t, Options{})
	rng := rand.New(rand.NewPCG(7, 8))
	pts, body := walk(rng, t0+5_000, 10_000, 6*360) // 6 h at 10 s
	code, msg := e.do("POST", "/upload/m1/csv/0-1-,/float32", body)
	require.Equal(t, http.StatusOK, code, msg)
	code, msg = e.do("POST", "/upload/m2/json/default/int32", fmt.Sprintf(`{"t":%d,"v":3}`+"\n"+`{"t":%d,"v":-4}`, t0, t0+1000))
	require.Equal(t, http.StatusOK, code, msg)
	e.reopen(Options{})

	code, msg = e.do("GET", "/list", "")
	require.Equal(t, http.StatusOK, code, msg)
	require.JSONEq(t, `["m1","m2"]`, msg)

	code, msg = e.do("GET", "/meta/m1", "")
	require.Equal(t, http.StatusOK, code, msg)
	var m Meta
	require.NoError(t, json.Unmarshal([]byte(msg), &m))
	require.Equal(t, "float32", m.Type)
	require.True(t, m.Uploaded)
	require.Equal(t, pts[0].t, m.First)
	require.Equal(t, pts[len(pts)-1].t, m.Last)
	require.Equal(t, uint64(len(pts)), m.Count)
	require.Equal(t, 6, m.Intervals)
	require.Positive(t, m.IndexBytes)
	require.Positive(t, m.DataBytes)

	code, msg = e.do("GET", "/meta/nosuch", "")
	require.Equal(t, http.StatusNotFound, code, msg)

	// Delete the first two hours: gone from extraction and meta.
	code, msg = e.do("DELETE", fmt.Sprintf("/delete/m1/%d-%d", t0, t0+2*hour-1), "")
	require.Equal(t, http.StatusNoContent, code, msg)
	left, first := 0, int64(0)
	for _, p := range pts {
		if p.t >= t0+2*hour {
			if left == 0 {
				first = p.t
			}
			left++
		}
	}
	require.Len(t, decodePoints(t, "json", getOK(t, e, fmt.Sprintf("/extract/m1/%d-%d/0/none/json", t0, t0+10*hour))), left)
	code, msg = e.do("GET", "/meta/m1", "")
	require.Equal(t, http.StatusOK, code, msg)
	require.NoError(t, json.Unmarshal([]byte(msg), &m))
	require.Equal(t, uint64(left), m.Count)
	require.Equal(t, first, m.First)
}

func getOK(t *testing.T, e *env, path string) string {
	t.Helper()
	code, body := e.do("GET", path, "")
	require.Equal(t, http.StatusOK, code, body)
	return body
}

// sec writes a time in ms as the native API's start and end take it.
func sec(ms int64) string { return fmt.Sprintf("%.3f", float64(ms)/1000) }

// TestNative checks the many-series endpoints against the per-sensor ones.
func TestNative(t *testing.T) {
	e := newEnv(t, Options{})
	rng := rand.New(rand.NewPCG(9, 10))
	for _, s := range []string{"room_a", "room_b", "other"} {
		_, body := walk(rng, t0, 60_000, 12*60)
		e.upload(s, body)
	}
	e.reopen(Options{})
	q := url.Values{"match[]": {`{__name__=~"room_.*"}`}, "start": {sec(t0)}, "end": {sec(t0 + 12*hour - 1)}, "cond": {"max gte 100"}}
	code, msg := e.do("GET", "/api/v1/sensor/search?"+q.Encode(), "")
	require.Equal(t, http.StatusOK, code, msg)
	var sr struct {
		Status string
		Data   []struct {
			Metric    map[string]string
			Intervals []Interval
		}
	}
	require.NoError(t, json.Unmarshal([]byte(msg), &sr), msg)
	require.Equal(t, "success", sr.Status)
	for _, d := range sr.Data {
		name := d.Metric[labels.MetricName]
		require.Contains(t, []string{"room_a", "room_b"}, name)
		code, one := e.do("POST", fmt.Sprintf("/search/%s/%d-%d/json", name, t0, t0+12*hour-1), "max gte 100")
		require.Equal(t, http.StatusOK, code, one)
		var ivs []Interval
		require.NoError(t, json.Unmarshal([]byte(one), &ivs))
		require.Equal(t, ivs, d.Intervals, name)
	}

	q = url.Values{"match[]": {`{__name__=~"room_.*"}`}, "start": {sec(t0)}, "end": {sec(t0 + 12*hour - 1)}, "resolution": {"1h"}, "func": {"min,max"}}
	code, msg = e.do("GET", "/api/v1/sensor/extract?"+q.Encode(), "")
	require.Equal(t, http.StatusOK, code, msg)
	var er struct {
		Data []struct {
			Metric map[string]string
			Rows   []map[string]float64
		}
	}
	require.NoError(t, json.Unmarshal([]byte(msg), &er), msg)
	require.Len(t, er.Data, 2)
	for _, d := range er.Data {
		require.Len(t, d.Rows, 12)
	}

	for _, bad := range []url.Values{
		{},
		{"match[]": {"{"}},
		{"match[]": {"x"}, "cond": {"min"}},
		{"match[]": {"x"}, "cond": {"min gt 1"}, "resolution": {"7m"}},
		{"match[]": {"x"}, "cond": {"min gt 1"}, "start": {"yesterday"}},
	} {
		code, msg := e.do("GET", "/api/v1/sensor/search?"+bad.Encode(), "")
		require.Equal(t, http.StatusBadRequest, code, "%v: %s", bad, msg)
		require.Contains(t, msg, `"errorType":"bad_data"`)
	}
}

// TestOneQuerierPerRequest: every request reads the engine through one
// querier, whatever steps it takes (issue 22: /meta opened five, one per
// step).
func TestOneQuerierPerRequest(t *testing.T) {
	e := newEnv(t, Options{})
	rng := rand.New(rand.NewPCG(11, 12))
	_, body := walk(rng, t0, 60_000, 6*60)
	e.upload("m1", body)
	e.reopen(Options{})
	_, body = walk(rng, t0+6*hour, 60_000, 60) // and an hour in the head
	e.upload("m1", body)

	native := url.Values{"match[]": {"m1"}, "start": {sec(t0)}, "end": {sec(t0 + 7*hour - 1)}, "resolution": {"1h"}}
	search, extract := url.Values{"cond": {"max gte 0"}}, url.Values{"func": {"min,max"}}
	for k, v := range native {
		search[k], extract[k] = v, v
	}
	for _, r := range []struct{ method, path, body string }{
		{"GET", "/meta/m1", ""},
		{"POST", fmt.Sprintf("/search/m1/%d-%d/json", t0, t0+7*hour-1), "max gte 0"},
		{"GET", fmt.Sprintf("/extract/m1/%d-%d/%d/max/json", t0, t0+7*hour-1, hour), ""}, // from block metrics
		{"GET", fmt.Sprintf("/extract/m1/%d-%d/0/none/json", t0+17_000, t0+7*hour-1), ""},
		{"GET", "/list", ""},
		{"GET", "/api/v1/sensor/search?" + search.Encode(), ""},
		{"GET", "/api/v1/sensor/extract?" + extract.Encode(), ""},
	} {
		before := e.db.Stats().Queriers
		code, msg := e.do(r.method, r.path, r.body)
		require.Equal(t, http.StatusOK, code, "%s %s: %s", r.method, r.path, msg)
		require.Equal(t, int64(1), e.db.Stats().Queriers-before, "queriers opened by %s %s", r.method, r.path)
	}
}
