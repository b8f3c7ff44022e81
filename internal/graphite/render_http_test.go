package graphite

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The render window of most cases: from=-5min until=now on apiNow gives
// whisper's grid 1710498360 … 1710498600 (5 minutes).
const r5 = "&from=-5min&until=now"

func TestRenderJSON(t *testing.T) {
	_, srv := testAPI(t, Options{})
	user := `{"target": "servers.web1.cpu.user", "tags": {"name": "servers.web1.cpu.user"}, "datapoints": [[7.0, 1710498360], [8.0, 1710498420], [9.0, 1710498480], [10.0, 1710498540], [11.0, 1710498600]]}`
	runAPICases(t, srv, []apiCase{
		{"/render?format=json&target=servers.web1.cpu.user" + r5, 200, "[" + user + "]"},
		{"/render?format=json&target=servers.web1.cpu.user" + r5 + "&jsonp=cb.fn", 200, "cb.fn([" + user + "])"},
		{"/render?format=json&target=servers.web1.cpu.user&from=1710498300&until=1710498600", 200, "[" + user + "]"},
		// until before from: swapped
		{"/render?format=json&target=servers.web1.cpu.user&until=-5min&from=now", 200, "[" + user + "]"},
		{"/render?format=json&target=servers.web2.cpu.user" + r5, 200,
			`[{"target": "servers.web2.cpu.user", "tags": {"name": "servers.web2.cpu.user"}, "datapoints": [[null, 1710498360], [null, 1710498420], [null, 1710498480], [null, 1710498540], [100.0, 1710498600]]}]`},
		{"/render?format=json&target=servers.web2.cpu.user&noNullPoints" + r5, 200,
			`[{"target": "servers.web2.cpu.user", "tags": {"name": "servers.web2.cpu.user"}, "datapoints": [[100.0, 1710498600]]}]`},
		{"/render?format=json&target=nothing.here&noNullPoints" + r5, 200, `[]`},
		// tagged series are named and tagged as graphite-web names them
		{"/render?format=json&target=seriesByTag('dc=west')&noNullPoints" + r5, 200,
			`[{"target": "disk.used;dc=west;host=h2", "tags": {"dc": "west", "host": "h2", "name": "disk.used"}, "datapoints": [[20.0, 1710498600]]}]`},
		{"/render?format=json&target=disk.used;host=h1;dc=east&noNullPoints" + r5, 200,
			`[{"target": "disk.used;dc=east;host=h1", "tags": {"dc": "east", "host": "h1", "name": "disk.used"}, "datapoints": [[10.0, 1710498600]]}]`},
		// a Prometheus series by its __name__ and by its labels
		{"/render?format=json&target=up&noNullPoints" + r5, 200,
			`[{"target": "up;instance=x:9100;job=node", "tags": {"instance": "x:9100", "job": "node", "name": "up"}, "datapoints": [[1.0, 1710498600]]}]`},
		{"/render?format=json&target=seriesByTag('job=~no')&noNullPoints" + r5, 200,
			`[{"target": "up;instance=x:9100;job=node", "tags": {"instance": "x:9100", "job": "node", "name": "up"}, "datapoints": [[1.0, 1710498600]]}]`},
		// maxDataPoints: 5 values, 2 points: valuesPerPoint 3, step 180;
		// start 1710498360 is 120 past a multiple of 180, so the nudge is
		// 60 and no value is dropped: [7 8 9] [10 11]
		{"/render?format=json&target=servers.web1.cpu.user&maxDataPoints=2" + r5, 200,
			`[{"target": "servers.web1.cpu.user", "tags": {"name": "servers.web1.cpu.user"}, "datapoints": [[8.0, 1710498420], [10.5, 1710498600]]}]`},
		{"/render?format=json&target=servers.web1.cpu.user&maxDataPoints=1" + r5, 200,
			`[{"target": "servers.web1.cpu.user", "tags": {"name": "servers.web1.cpu.user"}, "datapoints": [[9.0, 1710498360]]}]`},
		{"/render?format=json&target=servers.web1.cpu.user&maxDataPoints=x" + r5, 200, "[" + user + "]"},
		// targets in order, globs sorted by name
		{"/render?format=json&target=servers.web1.cpu.*&target=servers.web2.cpu.user&noNullPoints&from=-1min&until=now", 200,
			`[{"target": "servers.web1.cpu.system", "tags": {"name": "servers.web1.cpu.system"}, "datapoints": [[22.0, 1710498600]]}, ` +
				`{"target": "servers.web1.cpu.user", "tags": {"name": "servers.web1.cpu.user"}, "datapoints": [[11.0, 1710498600]]}, ` +
				`{"target": "servers.web2.cpu.user", "tags": {"name": "servers.web2.cpu.user"}, "datapoints": [[100.0, 1710498600]]}]`},
	})
}

func TestRenderErrors(t *testing.T) {
	_, srv := testAPI(t, Options{MaxTargets: 3, MaxTargetLen: 100})
	runAPICases(t, srv, []apiCase{
		{"/render?target=a.b", 400, "parameter format: missing: this server does not draw images"},
		{"/render?target=a.b&format=png", 400, `parameter format: "png" is not supported`},
		{"/render?target=a.b&format=json&from=bogus", 400, "parameter from"},
		{"/render?target=a.b&format=json&until=25:00_20240101", 400, "parameter until"},
		{"/render?target=a.b&format=json&now=x", 400, "parameter now"},
		{"/render?target=a.b&format=json&from=now&until=now", 400, "empty time range"},
		{"/render?target=a.b&format=json&xFilesFactor=2", 400, "parameter xFilesFactor"},
		{"/render?target=a.b&format=json&jsonp=a-b", 400, "parameter jsonp"},
		{"/render?target=a&target=b&target=c&target=d&format=json", 400, "parameter target: 4 targets: at most 3"},
		{"/render?format=json&target=" + strings.Repeat("a", 101), 400, "parameter target: target 1"},
		{"/render?format=json&target=a.b&target=noSuchFunction(a.b)", 400, `parameter target: target 2 "noSuchFunction(a.b)": unknown function "noSuchFunction"`},
		{"/render?format=json&target=sumSeries(a.b", 400, `parameter target: target 1 "sumSeries(a.b"`},
		{"/render?format=json&target=a.[b", 400, `parameter target: target 1 "a.[b"`},
		{"/render?format=json&target=seriesByTag('dc!=x')", 400, "at least one must not match"},
		{"/render?format=json&target=seriesByTag('dc=~(')", 400, "invalid regular expression"},
	})
	// an empty target list is an empty answer, as graphite-web's
	runAPICases(t, srv, []apiCase{{"/render?format=json", 200, "[]"}})
}

func TestRenderLimits(t *testing.T) {
	_, srv := testAPI(t, Options{MaxSeries: 2})
	runAPICases(t, srv, []apiCase{
		{"/render?format=json&target=servers.*.cpu.*", 422, "more than 2 series"},
		{"/render?format=json&target=servers.web1.cpu.*" + r5, 200,
			`[{"target": "servers.web1.cpu.system", "tags": {"name": "servers.web1.cpu.system"}, "datapoints": [[14.0, 1710498360], [16.0, 1710498420], [18.0, 1710498480], [20.0, 1710498540], [22.0, 1710498600]]}, ` +
				`{"target": "servers.web1.cpu.user", "tags": {"name": "servers.web1.cpu.user"}, "datapoints": [[7.0, 1710498360], [8.0, 1710498420], [9.0, 1710498480], [10.0, 1710498540], [11.0, 1710498600]]}]`},
	})
	_, srv = testAPI(t, Options{MaxPoints: 9})
	runAPICases(t, srv, []apiCase{
		{"/render?format=json&target=servers.web1.cpu.*" + r5, 422, "more than 9 points"},
		{"/render?format=json&target=servers.web1.cpu.user" + r5, 200,
			`[{"target": "servers.web1.cpu.user", "tags": {"name": "servers.web1.cpu.user"}, "datapoints": [[7.0, 1710498360], [8.0, 1710498420], [9.0, 1710498480], [10.0, 1710498540], [11.0, 1710498600]]}]`},
	})
	// maxDataPoints is capped by the option
	_, srv = testAPI(t, Options{MaxDataPoints: 1})
	runAPICases(t, srv, []apiCase{
		{"/render?format=json&target=servers.web1.cpu.user&maxDataPoints=1000" + r5, 200,
			`[{"target": "servers.web1.cpu.user", "tags": {"name": "servers.web1.cpu.user"}, "datapoints": [[9.0, 1710498360]]}]`},
	})
}

func TestRenderPOST(t *testing.T) {
	_, srv := testAPI(t, Options{})
	code, body := post(t, srv, "/render", url.Values{
		"target": {"servers.web2.cpu.user", "servers.web1.mem"}, "format": {"json"},
		"from": {"-1min"}, "until": {"now"}, "noNullPoints": {"1"},
	})
	want := `[{"target": "servers.web2.cpu.user", "tags": {"name": "servers.web2.cpu.user"}, "datapoints": [[100.0, 1710498600]]}, ` +
		`{"target": "servers.web1.mem", "tags": {"name": "servers.web1.mem"}, "datapoints": [[5.0, 1710498600]]}]`
	if code != 200 || body != want {
		t.Errorf("POST /render = %d %s\nwant %s", code, body, want)
	}
}

func TestRenderCSVAndRaw(t *testing.T) {
	_, srv := testAPI(t, Options{})
	code, body, hdr := get(t, srv, "/render?format=csv&target=servers.web2.cpu.user&from=-2min&until=now")
	want := "servers.web2.cpu.user,2024-03-15 10:29:00,\r\nservers.web2.cpu.user,2024-03-15 10:30:00,100.0\r\n"
	if code != 200 || body != want || hdr.Get("Content-Type") != "text/csv" {
		t.Errorf("csv = %d %q %s, want %q", code, body, hdr.Get("Content-Type"), want)
	}
	// tz moves the timestamps
	_, body, _ = get(t, srv, "/render?format=csv&target=servers.web2.cpu.user&from=-1min&until=now&tz=Europe/Paris")
	if want := "servers.web2.cpu.user,2024-03-15 11:30:00,100.0\r\n"; body != want {
		t.Errorf("csv tz=Europe/Paris = %q, want %q", body, want)
	}
	code, body, hdr = get(t, srv, "/render?format=raw&target=servers.web2.cpu.user&target=servers.web1.cpu.user&from=-2min&until=now")
	want = "servers.web2.cpu.user,1710498540,1710498660,60|None,100.0\nservers.web1.cpu.user,1710498540,1710498660,60|10.0,11.0\n"
	if code != 200 || body != want || hdr.Get("Content-Type") != "text/plain" {
		t.Errorf("raw = %d %q, want %q", code, body, want)
	}
	// rawData and pickle are graphite-web's older spellings of format
	_, body, _ = get(t, srv, "/render?rawData=1&target=servers.web1.cpu.user&from=-2min&until=now")
	if want := "servers.web1.cpu.user,1710498540,1710498660,60|10.0,11.0\n"; body != want {
		t.Errorf("rawData = %q, want %q", body, want)
	}
}

// TestRenderPickle decodes the pickle answer with Python's own unpickler
// when python3 is installed.
func TestRenderPickle(t *testing.T) {
	_, srv := testAPI(t, Options{})
	code, body, hdr := get(t, srv, "/render?pickle=1&target=servers.web2.cpu.user&target=seriesByTag('dc=east')&from=-2min&until=now")
	if code != 200 || hdr.Get("Content-Type") != "application/pickle" {
		t.Fatalf("pickle: %d %s", code, hdr.Get("Content-Type"))
	}
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not installed")
	}
	f := t.TempDir() + "/render.pickle"
	if err := os.WriteFile(f, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(py, "-c", `import json, pickle, sys
print(json.dumps(pickle.load(open(sys.argv[1], "rb")), sort_keys=True))`, f).CombinedOutput()
	if err != nil {
		t.Fatalf("python3 unpickle: %v\n%s", err, out)
	}
	want := `[{"consolidationFunc": "average", "end": 1710498660, "name": "servers.web2.cpu.user", "pathExpression": "servers.web2.cpu.user", "start": 1710498540, "step": 60, "values": [null, 100.0], "valuesPerPoint": 1, "xFilesFactor": 0.0}, ` +
		`{"consolidationFunc": "average", "end": 1710498660, "name": "disk.used;dc=east;host=h1", "pathExpression": "seriesByTag('dc=east')", "start": 1710498540, "step": 60, "values": [null, 10.0], "valuesPerPoint": 1, "xFilesFactor": 0.0}]`
	if got := strings.TrimSpace(string(out)); got != want {
		t.Errorf("unpickled:\n got %s\nwant %s", got, want)
	}
}

func TestPickleEncoder(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not installed")
	}
	// a list longer than one batch, ints of every width, floats, None,
	// bools, non-ASCII strings
	b := AppendPickleHeader(nil)
	b = AppendPickleList(b, 2500, func(b []byte, i int) []byte {
		switch i % 6 {
		case 0:
			return AppendPickleInt(b, int64(i)*1_000_000_007)
		case 1:
			return AppendPickleInt(b, -int64(i))
		case 2:
			return AppendPickleValue(b, float64(i)/4)
		case 3:
			return AppendPickleValue(b, nan)
		case 4:
			return AppendPickleString(b, "é"+strconv.Itoa(i))
		}
		return AppendPickleBool(b, i%2 == 0)
	})
	b = AppendPickleStop(b)
	f := t.TempDir() + "/p.pickle"
	if err := os.WriteFile(f, b, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(py, "-c", `import json, pickle, sys
print(json.dumps(pickle.load(open(sys.argv[1], "rb"))))`, f).CombinedOutput()
	if err != nil {
		t.Fatalf("python3 unpickle: %v\n%s", err, out)
	}
	var got []any
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if len(got) != 2500 {
		t.Fatalf("%d items, want 2500", len(got))
	}
	for i, v := range got {
		var want any
		switch i % 6 {
		case 0:
			want = float64(int64(i) * 1_000_000_007)
		case 1:
			want = float64(-i)
		case 2:
			want = float64(i) / 4
		case 3:
			want = nil
		case 4:
			want = "é" + strconv.Itoa(i)
		case 5:
			want = i%2 == 0
		}
		if v != want {
			t.Fatalf("item %d = %v, want %v", i, v, want)
		}
	}
}

// funcJSON is funcInfo without the params, whose defaults may be
// 1e9999 (Infinity), which encoding/json does not decode into a float.
type funcJSON struct {
	Name, Function, Group string
	Params                json.RawMessage
}

func TestFunctionsEndpoint(t *testing.T) {
	_, srv := testAPI(t, Options{})
	code, body, _ := get(t, srv, "/functions")
	var all map[string]funcJSON
	if code != 200 || json.Unmarshal([]byte(body), &all) != nil {
		t.Fatalf("/functions = %d %.200s", code, body)
	}
	for _, name := range []string{"sumSeries", "seriesByTag", "aliasByNode"} {
		if all[name].Name != name || all[name].Group == "" {
			t.Errorf("/functions lacks %s: %+v", name, all[name])
		}
	}
	code, body, _ = get(t, srv, "/functions/sumSeries")
	var one funcJSON
	if code != 200 || json.Unmarshal([]byte(body), &one) != nil || one.Name != "sumSeries" || !strings.HasPrefix(one.Function, "sumSeries(") {
		t.Errorf("/functions/sumSeries = %d %s", code, body)
	}
	code, body, _ = get(t, srv, "/functions/noSuch")
	if code != 404 || !strings.Contains(body, "Function not found: noSuch") {
		t.Errorf("/functions/noSuch = %d %s", code, body)
	}
	code, body, _ = get(t, srv, "/functions?grouped=1&group=Combine")
	var grouped map[string]map[string]funcJSON
	if code != 200 || json.Unmarshal([]byte(body), &grouped) != nil || len(grouped) != 1 || grouped["Combine"]["sumSeries"].Name != "sumSeries" {
		t.Errorf("/functions?grouped=1&group=Combine = %d %.300s", code, body)
	}
}

// TestRenderFunctions renders through expr's functions to check the
// Fetcher's series (names, steps) suit them.
func TestRenderFunctions(t *testing.T) {
	_, srv := testAPI(t, Options{})
	runAPICases(t, srv, []apiCase{
		{"/render?format=json&target=sumSeries(servers.web1.cpu.*)&from=-2min&until=now", 200,
			`[{"target": "sumSeries(servers.web1.cpu.*)", "tags": {"aggregatedBy": "sum", "name": "sumSeries(servers.web1.cpu.*)"}, "datapoints": [[30.0, 1710498540], [33.0, 1710498600]]}]`},
		{"/render?format=json&target=aliasByNode(servers.web1.cpu.*,3)&from=-1min&until=now", 200,
			`[{"target": "system", "tags": {"name": "servers.web1.cpu.system"}, "datapoints": [[22.0, 1710498600]]}, {"target": "user", "tags": {"name": "servers.web1.cpu.user"}, "datapoints": [[11.0, 1710498600]]}]`},
	})
}

func TestRenderClock(t *testing.T) {
	// now= moves the window: the series ends at apiNow
	_, srv := testAPI(t, Options{Now: func() time.Time { return apiNow.Add(time.Hour) }})
	_, body, _ := get(t, srv, "/render?format=json&target=servers.web1.cpu.user&noNullPoints&from=-2min&until=now&now=1710498600")
	want := `[{"target": "servers.web1.cpu.user", "tags": {"name": "servers.web1.cpu.user"}, "datapoints": [[10.0, 1710498540], [11.0, 1710498600]]}]`
	if body != want {
		t.Errorf("now=: %s\nwant %s", body, want)
	}
	_, body, _ = get(t, srv, "/render?format=json&target=servers.web1.cpu.user&noNullPoints&from=-2min&until=now")
	if !bytes.Equal([]byte(body), []byte("[]")) {
		t.Errorf("an hour later: %s, want []", body)
	}
	// a window after now has no series at all (whisper's fetch)
	_, body, _ = get(t, srv, "/render?format=raw&target=servers.web1.cpu.user&from=now%2B1h&until=now%2B2h")
	if body != "" {
		t.Errorf("after now: %q, want nothing", body)
	}
	_ = http.StatusOK
}
