package graphite

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
)

// apiNow is 2024-03-15 10:30:00 UTC, on the minute.
var apiNow = time.Date(2024, 3, 15, 10, 30, 0, 0, time.UTC)

// testAPI serves a memStore holding:
//
//	servers.web1.cpu.user   1..11 at 60 s from now-600
//	servers.web1.cpu.system 2 × that
//	servers.web2.cpu.user   100 at now
//	servers.web1.mem        5 at now
//	a.b (leaf) and a.b.c    1 at now
//	disk.used;dc=east;host=h1 and disk.used;dc=west;host=h2
//	up{instance="x:9100",job="node"}  (a Prometheus series)
func testAPI(t *testing.T, opts Options) (*memStore, *httptest.Server) {
	t.Helper()
	st := &memStore{}
	t0 := apiNow.Unix() - 600
	var user, system []float64
	for i := 1; i <= 11; i++ {
		user = append(user, float64(i))
		system = append(system, 2*float64(i))
	}
	now := apiNow.Unix()
	st.add(labels.FromStrings("__name__", "servers.web1.cpu.user"), t0, 60, user...)
	st.add(labels.FromStrings("__name__", "servers.web1.cpu.system"), t0, 60, system...)
	st.add(labels.FromStrings("__name__", "servers.web2.cpu.user"), now, 60, 100)
	st.add(labels.FromStrings("__name__", "servers.web1.mem"), now, 60, 5)
	st.add(labels.FromStrings("__name__", "a.b"), now, 60, 1)
	st.add(labels.FromStrings("__name__", "a.b.c"), now, 60, 1)
	st.add(labels.FromStrings("__name__", "disk.used", "dc", "east", "host", "h1"), now, 60, 10)
	st.add(labels.FromStrings("__name__", "disk.used", "dc", "west", "host", "h2"), now, 60, 20)
	st.add(labels.FromStrings("__name__", "up", "instance", "x:9100", "job", "node"), now, 60, 1)
	if opts.Now == nil {
		opts.Now = func() time.Time { return apiNow }
	}
	mux := http.NewServeMux()
	New(st, opts).Register(mux, nil)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return st, srv
}

func get(t *testing.T, srv *httptest.Server, path string) (int, string, http.Header) {
	t.Helper()
	resp, err := http.Get(srv.URL + path)
	code, body := readAnswer(t, resp, err)
	return code, body, resp.Header
}

func post(t *testing.T, srv *httptest.Server, path string, form url.Values) (int, string) {
	t.Helper()
	resp, err := http.PostForm(srv.URL+path, form)
	return readAnswer(t, resp, err)
}

// readAnswer returns the status and body of a request's answer, failing t
// if the request (err) or reading the body failed.
func readAnswer(t *testing.T, resp *http.Response, err error) (int, string) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

type apiCase struct {
	path   string
	status int
	want   string // the body, or with status != 200 a part of it
}

func runAPICases(t *testing.T, srv *httptest.Server, cases []apiCase) {
	t.Helper()
	for _, tc := range cases {
		code, body, _ := get(t, srv, tc.path)
		if code != tc.status {
			t.Errorf("GET %s: status %d, want %d (%s)", tc.path, code, tc.status, body)
			continue
		}
		if tc.status == 200 && strings.TrimSpace(body) != tc.want || tc.status != 200 && !strings.Contains(body, tc.want) {
			t.Errorf("GET %s:\n got %s\nwant %s", tc.path, body, tc.want)
		}
	}
}

func TestFind(t *testing.T) {
	_, srv := testAPI(t, Options{})
	branch := func(id, text string) string {
		return `{"text":"` + text + `","id":"` + id + `","allowChildren":1,"expandable":1,"leaf":0}`
	}
	leaf := func(id, text string) string {
		return `{"text":"` + text + `","id":"` + id + `","allowChildren":0,"expandable":0,"leaf":1}`
	}
	runAPICases(t, srv, []apiCase{
		{"/metrics/find?query=servers.*", 200, "[" + branch("servers.web1", "web1") + "," + branch("servers.web2", "web2") + "]"},
		{"/metrics/find?query=servers.web1.*", 200, "[" + branch("servers.web1.cpu", "cpu") + "," + leaf("servers.web1.mem", "mem") + "]"},
		{"/metrics/find?query=servers.web1.*&wildcards=1", 200, "[" + branch("servers.web1.*", "*") + "," + branch("servers.web1.cpu", "cpu") + "," + leaf("servers.web1.mem", "mem") + "]"},
		{"/metrics/find?query=servers.web1.cpu.*&wildcards=1", 200, "[" + leaf("servers.web1.cpu.*", "*") + "," + leaf("servers.web1.cpu.system", "system") + "," + leaf("servers.web1.cpu.user", "user") + "]"},
		{"/metrics/find?query=servers.{web2,nope}", 200, "[" + branch("servers.web2", "web2") + "]"},
		{"/metrics/find?query=servers.web[2-9]", 200, "[" + branch("servers.web2", "web2") + "]"},
		// the id is the query's base path and the name, as graphite-web's tree_json
		{"/metrics/find?query=servers.web?.mem", 200, "[" + leaf("servers.web?.mem", "mem") + "]"},
		// a.b is a series and a branch: tree_json keeps the name once
		{"/metrics/find?query=a.*", 200, "[" + branch("a.b", "b") + "]"},
		{"/metrics/find?query=a.*&leavesOnly=1", 200, "[" + leaf("a.b", "b") + "]"},
		// paths of tagged and Prometheus series are their __name__
		{"/metrics/find?query=*", 200, "[" + branch("a", "a") + "," + branch("disk", "disk") + "," + branch("servers", "servers") + "," + leaf("up", "up") + "]"},
		{"/metrics/find?query=nothing.*", 200, "[]"},
		{"/metrics/find?query=servers.*&jsonp=cb", 200, "cb([" + branch("servers.web1", "web1") + "," + branch("servers.web2", "web2") + "])"},
		{"/metrics/find?query=servers.web1.&format=completer", 200,
			`{"metrics":[{"path":"servers.web1.cpu.","name":"cpu","is_leaf":"0"},{"path":"servers.web1.mem","name":"mem","is_leaf":"1"}]}`},
		{"/metrics/find?query=servers.web1.m&format=completer", 200,
			`{"metrics":[{"path":"servers.web1.mem","name":"mem","is_leaf":"1"}]}`},
		{"/metrics/find?query=servers.web1,web2&format=completer&automatic_variants=1", 200,
			`{"metrics":[{"path":"servers.web1.","name":"web1","is_leaf":"0"},{"path":"servers.web2.","name":"web2","is_leaf":"0"}]}`},
		{"/metrics/find?query=servers.*.cpu.*&format=nodelist&position=1", 200, `{"nodes":["web1","web2"]}`},
		{"/metrics/find?query=servers.web2.cpu.user&from=-1h&until=now", 200, "[" + leaf("servers.web2.cpu.user", "user") + "]"},
		// from and until are checked but, as graphite-web's whisper finder, ignored
		{"/metrics/find?query=servers.web2.cpu.user&from=-1h&until=-30min", 200, "[" + leaf("servers.web2.cpu.user", "user") + "]"},
		{"/metrics/find?query=servers.web2.cpu.user&from=-1", 200, "[" + leaf("servers.web2.cpu.user", "user") + "]"},
		{"/metrics/find", 400, "parameter query: missing"},
		{"/metrics/find?query=", 400, "parameter query: empty"},
		{"/metrics/find?query=a.[b", 400, `parameter query: path expression "a.[b": unterminated [ at byte 2`},
		{"/metrics/find?query=a&format=pickle", 400, "parameter format"},
		{"/metrics/find?query=a&from=bogus", 400, "parameter from"},
		{"/metrics/find?query=a&leavesOnly=x", 400, "parameter leavesOnly"},
		{"/metrics/find?query=a&jsonp=alert(1)", 400, "parameter jsonp"},
		{"/metrics?query=servers.web1.*", 200, "[" + branch("servers.web1.cpu", "cpu") + "," + leaf("servers.web1.mem", "mem") + "]"},
	})
}

func TestFindLimit(t *testing.T) {
	_, srv := testAPI(t, Options{MaxFindResults: 2})
	runAPICases(t, srv, []apiCase{
		{"/metrics/find?query=*", 422, "more than 2 find results"},
		{"/metrics/find?query=servers.*", 200, `[{"text":"web1","id":"servers.web1","allowChildren":1,"expandable":1,"leaf":0},{"text":"web2","id":"servers.web2","allowChildren":1,"expandable":1,"leaf":0}]`},
		{"/metrics/index.json", 422, "more than 2"},
	})
}

func TestExpandAndIndex(t *testing.T) {
	_, srv := testAPI(t, Options{})
	runAPICases(t, srv, []apiCase{
		{"/metrics/expand?query=servers.*.cpu", 200, `{"results":["servers.web1.cpu","servers.web2.cpu"]}`},
		{"/metrics/expand?query=servers.*.cpu.user&query=servers.web1.*", 200,
			`{"results":["servers.web1.cpu","servers.web1.cpu.user","servers.web1.mem","servers.web2.cpu.user"]}`},
		{"/metrics/expand?query=servers.web1.*&leavesOnly=1", 200, `{"results":["servers.web1.mem"]}`},
		{"/metrics/expand?query=servers.web1.*&query=a&groupByExpr=1", 200,
			`{"results":{"a":["a"],"servers.web1.*":["servers.web1.cpu","servers.web1.mem"]}}`},
		{"/metrics/expand", 200, `{"results":[]}`},
		{"/metrics/expand?query=a.{b", 400, "parameter query"},
		{"/metrics/index.json", 200, `["a.b","a.b.c","disk.used","servers.web1.cpu.system","servers.web1.cpu.user","servers.web1.mem","servers.web2.cpu.user","up"]`},
		{"/metrics/index.json?jsonp=f", 200, `f(["a.b","a.b.c","disk.used","servers.web1.cpu.system","servers.web1.cpu.user","servers.web1.mem","servers.web2.cpu.user","up"])`},
		{"/version", 200, "1.1.8"},
	})
}

func TestTags(t *testing.T) {
	_, srv := testAPI(t, Options{})
	runAPICases(t, srv, []apiCase{
		{"/tags", 200, `[{"tag":"dc"},{"tag":"host"},{"tag":"instance"},{"tag":"job"},{"tag":"name"}]`},
		{"/tags?filter=h", 200, `[{"tag":"host"}]`},
		{"/tags?filter=^(d|j)", 200, `[{"tag":"dc"},{"tag":"job"}]`},
		{"/tags?limit=2", 200, `[{"tag":"dc"},{"tag":"host"}]`},
		{"/tags?filter=(", 400, "parameter filter"},
		{"/tags/dc", 200, `{"tag":"dc","values":[{"value":"east","count":1},{"value":"west","count":1}]}`},
		{"/tags/dc?filter=w", 200, `{"tag":"dc","values":[{"value":"west","count":1}]}`},
		{"/tags/name?filter=disk", 200, `{"tag":"name","values":[{"value":"disk.used","count":2}]}`},
		{"/tags/nope", 200, `null`},
		{"/tags/findSeries?expr=dc=east", 200, `["disk.used;dc=east;host=h1"]`},
		{"/tags/findSeries?expr=name=disk.used&expr=host!=h1", 200, `["disk.used;dc=west;host=h2"]`},
		{"/tags/findSeries?expr=name=~disk", 200, `["disk.used;dc=east;host=h1","disk.used;dc=west;host=h2"]`},
		{"/tags/findSeries?expr=name=~isk", 200, `[]`}, // regexes are anchored at the start
		{"/tags/findSeries?expr=dc!=~e", 400, "at least one must not match"},
		{"/tags/findSeries?expr=name=~d&expr=dc!=~e", 200, `["disk.used;dc=west;host=h2"]`},
		{"/tags/findSeries?expr[]=job=node", 200, `["up;instance=x:9100;job=node"]`},
		{"/tags/findSeries?expr=job=", 400, "at least one must not match the empty value"},
		{"/tags/findSeries", 400, "parameter expr: no tag expressions specified"},
		{"/tags/findSeries?expr=bad", 400, `invalid tag expression \"bad\"`},
		{"/tags/findSeries?expr=a=~(", 400, "bad regular expression"},
		{"/tags/autoComplete/tags", 200, `["dc","host","instance","job","name"]`},
		{"/tags/autoComplete/tags?tagPrefix=h", 200, `["host"]`},
		{"/tags/autoComplete/tags?limit=1", 200, `["dc"]`},
		{"/tags/autoComplete/tags?expr=name=disk.used", 200, `["dc","host"]`},
		{"/tags/autoComplete/tags?expr=name=disk.used&tagPrefix=d", 200, `["dc"]`},
		{"/tags/autoComplete/values?tag=dc", 200, `["east","west"]`},
		{"/tags/autoComplete/values?tag=dc&valuePrefix=w", 200, `["west"]`},
		{"/tags/autoComplete/values?tag=host&expr=dc=west", 200, `["h2"]`},
		{"/tags/autoComplete/values?tag=name&expr=job=node", 200, `["up"]`},
		{"/tags/autoComplete/values", 400, "parameter tag: no tag specified"},
		{"/tags/tagSeries?path=a", 405, "use POST"},
	})
	// jsonResponse errors are {"error": …}
	_, body, _ := get(t, srv, "/tags/findSeries")
	if !strings.HasPrefix(body, `{"error":`) {
		t.Errorf("tags error body %s, want {\"error\": …}", body)
	}
	for _, tc := range []struct {
		form   url.Values
		path   string
		status int
		want   string
	}{
		{url.Values{"path": {"a.b;z=1;a=2"}}, "/tags/tagSeries", 200, `"a.b;a=2;z=1"`},
		{url.Values{"path": {`a.b{z="1",a="x\"y"}`}}, "/tags/tagSeries", 200, `"a.b;a=x\"y;z=1"`},
		{url.Values{"path": {"~a.b"}}, "/tags/tagSeries", 200, `"a.b"`},
		{url.Values{"path": {"a.b;=1"}}, "/tags/tagSeries", 400, "invalid segment"},
		{url.Values{"path": {"a.b;k=~v"}}, "/tags/tagSeries", 400, "not allowed to start with"},
		{url.Values{"path": {"a.b;k!x=v"}}, "/tags/tagSeries", 400, "not allowed in tag"},
		{url.Values{}, "/tags/tagSeries", 400, "no path specified"},
		{url.Values{"path": {"b;y=1;x=2", "a"}}, "/tags/tagMultiSeries", 200, `["b;x=2;y=1","a"]`},
		{url.Values{"path[]": {"b;y=1"}}, "/tags/tagMultiSeries", 200, `["b;y=1"]`},
		{url.Values{}, "/tags/tagMultiSeries", 400, "no paths specified"},
		{url.Values{"expr": {"dc=west"}}, "/tags/findSeries", 200, `["disk.used;dc=west;host=h2"]`},
	} {
		code, body := post(t, srv, tc.path, tc.form)
		if code != tc.status || (code == 200 && body != tc.want) || (code != 200 && !strings.Contains(body, tc.want)) {
			t.Errorf("POST %s %v = %d %s, want %d %s", tc.path, tc.form, code, body, tc.status, tc.want)
		}
	}
}
