package cacheserver

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/aerie-db/aerie/internal/cache"
)

func do(t *testing.T, h http.Handler, method, target, body string) *httptest.ResponseRecorder {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(method, target, r))
	return w
}

func TestHTTPPutGet(t *testing.T) {
	h := NewHandler(openCache(t, t.TempDir()), Options{})
	const q = "/cache/SELECT%20mean(v)%20FROM%20cpu%20GROUP%20BY%20time(10s)"
	body := `{"fields": {"mean": [[0, 1.5], [10, -2e3], [20, null], [100, "x\"y"]], "host": [[10, "a"], [10, "a"], [0, true]]}}`
	if w := do(t, h, "PUT", q+"?start=0&end=100", body); w.Code != http.StatusNoContent {
		t.Fatalf("PUT: %d %s", w.Code, w.Body)
	}
	for _, tc := range []struct {
		name, target string
		status       int
		cacheRange   string // X-Cache-Range
		body         string
	}{
		{"hit", q + "?start=0&end=100", 200, "",
			`{"status":"hit","start":0,"end":100,"fields":{"host":[[0,true],[10,"a"]],"mean":[[0,1.5],[10,-2e3],[20,null],[100,"x\"y"]]}}`},
		{"hit sub-range one field", q + "?start=5&end=20&field=mean", 200, "",
			`{"status":"hit","start":5,"end":20,"fields":{"mean":[[10,-2e3],[20,null]]}}`},
		{"fields in the order asked, twice is once", q + "?start=0&end=10&field=mean&field=host&field=mean", 200, "",
			`{"status":"hit","start":0,"end":10,"fields":{"mean":[[0,1.5],[10,-2e3]],"host":[[0,true],[10,"a"]]}}`},
		{"unknown field", q + "?start=0&end=10&field=nope", 200, "", `{"status":"hit","start":0,"end":10,"fields":{}}`},
		{"partial tail", q + "?start=50&end=150", 206, "50-100",
			`{"status":"partial","start":50,"end":100,"fields":{"mean":[[100,"x\"y"]]}}`},
		{"partial head", q + "?start=-100&end=10&field=host", 206, "0-10",
			`{"status":"partial","start":0,"end":10,"fields":{"host":[[0,true],[10,"a"]]}}`},
		{"miss", q + "?start=101&end=200", 404, "", `{"status":"miss"}`},
		{"miss other key", "/cache/other?start=0&end=1", 404, "", `{"status":"miss"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := do(t, h, "GET", tc.target, "")
			if w.Code != tc.status || w.Body.String() != tc.body || w.Header().Get("X-Cache-Range") != tc.cacheRange {
				t.Fatalf("got %d %q X-Cache-Range %q\nwant %d %q %q", w.Code, w.Body, w.Header().Get("X-Cache-Range"), tc.status, tc.body, tc.cacheRange)
			}
			if !json.Valid(w.Body.Bytes()) {
				t.Fatalf("invalid JSON %s", w.Body)
			}
		})
	}

	// The hexadecimal form of a key is the key; other text is hashed.
	hexKey := cache.KeyOf("SELECT mean(v) FROM cpu GROUP BY time(10s)").String()
	if w := do(t, h, "GET", "/cache/"+hexKey+"?start=0&end=0&field=host", ""); w.Code != 200 || w.Body.String() != `{"status":"hit","start":0,"end":0,"fields":{"host":[[0,true]]}}` {
		t.Fatalf("GET by hex key: %d %s", w.Code, w.Body)
	}

	// A key with a slash is percent-encoded in the path.
	if w := do(t, h, "PUT", "/cache/a%2Fb?start=0&end=0", `{"fields":{"x":[[0,1]]}}`); w.Code != http.StatusNoContent {
		t.Fatalf("PUT a/b: %d %s", w.Code, w.Body)
	}
	if w := do(t, h, "GET", "/cache/a%2Fb?start=0&end=0", ""); w.Code != 200 {
		t.Fatalf("GET a/b: %d %s", w.Code, w.Body)
	}
	if w := do(t, h, "GET", "/cache/a?start=0&end=0", ""); w.Code != 404 {
		t.Fatalf("GET a: %d %s", w.Code, w.Body)
	}

	if w := do(t, h, "GET", "/stats", ""); w.Code != 200 || !strings.Contains(w.Body.String(), `"Hits":`) {
		t.Fatalf("stats: %d %s", w.Code, w.Body)
	}
	if w := do(t, h, "DELETE", q, ""); w.Code != http.StatusNoContent {
		t.Fatalf("DELETE: %d %s", w.Code, w.Body)
	}
	if w := do(t, h, "DELETE", q, ""); w.Code != http.StatusNotFound {
		t.Fatalf("second DELETE: %d %s", w.Code, w.Body)
	}
	if w := do(t, h, "GET", q+"?start=0&end=100", ""); w.Code != http.StatusNotFound {
		t.Fatalf("GET after DELETE: %d %s", w.Code, w.Body)
	}
}

// An empty result is cached too: the range is known to hold nothing.
func TestHTTPPutEmpty(t *testing.T) {
	h := NewHandler(openCache(t, t.TempDir()), Options{})
	if w := do(t, h, "PUT", "/cache/q?start=10&end=20", `{"fields":{}}`); w.Code != http.StatusNoContent {
		t.Fatalf("PUT: %d %s", w.Code, w.Body)
	}
	if w := do(t, h, "GET", "/cache/q?start=12&end=15", ""); w.Code != 200 || w.Body.String() != `{"status":"hit","start":12,"end":15,"fields":{}}` {
		t.Fatalf("GET: %d %s", w.Code, w.Body)
	}
}

func TestHTTPBadInput(t *testing.T) {
	h := NewHandler(openCache(t, t.TempDir()), Options{MaxBodyBytes: 4096, MaxPoints: 3})
	long := strings.Repeat("k", MaxKeyLen+1)
	for _, tc := range []struct {
		name, method, target, body string
		status                     int
		msg                        string
	}{
		{"start missing", "PUT", "/cache/q?end=1", `{"fields":{}}`, 400, "query parameter start is missing"},
		{"start not a number", "PUT", "/cache/q?start=1.5&end=2", `{"fields":{}}`, 400, `query parameter start="1.5": not an int64`},
		{"end overflows", "GET", "/cache/q?start=1&end=9223372036854775808", "", 400, "query parameter end="},
		{"start twice", "GET", "/cache/q?start=1&start=2&end=3", "", 400, "query parameter start is given 2 times"},
		{"start after end", "GET", "/cache/q?start=5&end=3", "", 400, "start=5 is after end=3"},
		{"unknown parameter", "GET", "/cache/q?start=1&end=3&fields=a", "", 400, `unknown query parameter "fields"`},
		{"field on PUT", "PUT", "/cache/q?start=1&end=3&field=a", `{"fields":{}}`, 400, `unknown query parameter "field"`},
		{"bad query escape", "GET", "/cache/q?start=%zz", "", 400, "query string"},
		{"key too long", "GET", "/cache/" + long + "?start=1&end=2", "", 400, "key of 251 bytes is longer than 250"},
		{"field name too long in GET", "GET", "/cache/q?start=1&end=2&field=" + strings.Repeat("f", 257), "", 400, "name of 257 bytes is longer than 256"},
		{"body too large", "PUT", "/cache/q?start=0&end=1", `{"fields":{"a":[[0,"` + strings.Repeat("x", 5000) + `"]]}}`, 413, "exceeds the limit of 4096 bytes"},
		{"empty body", "PUT", "/cache/q?start=0&end=1", "", 400, "byte 0: want the body's opening '{', found end of body"},
		{"not JSON", "PUT", "/cache/q?start=0&end=1", "fields", 400, "byte 0: want the body's opening '{', found 'f'"},
		{"no fields member", "PUT", "/cache/q?start=0&end=1", " {}", 400, `byte 2: body lacks "fields"`},
		{"unknown member", "PUT", "/cache/q?start=0&end=1", `{"field":{}}`, 400, `byte 1: unknown member "field"`},
		{"fields twice", "PUT", "/cache/q?start=0&end=1", `{"fields":{},"fields":{}}`, 400, `byte 13: "fields" appears twice`},
		{"fields not an object", "PUT", "/cache/q?start=0&end=1", `{"fields":[]}`, 400, "byte 10: want '{' opening the object of fields, found '['"},
		{"trailing garbage", "PUT", "/cache/q?start=0&end=1", `{"fields":{}} x`, 400, "byte 14: 'x' after the body's closing '}'"},
		{"truncated", "PUT", "/cache/q?start=0&end=1", `{"fields":{"a":[[0,1]`, 400, `byte 21: want ',' or ']' after point 0 of field "a", found end of body`},
		{"points not an array", "PUT", "/cache/q?start=0&end=1", `{"fields":{"a":{}}}`, 400, `byte 15: want '[' opening the points of field "a"`},
		{"point not a pair", "PUT", "/cache/q?start=0&end=1", `{"fields":{"a":[[0,1],5]}}`, 400, `field "a" point 1 (byte 22): want '[' opening a [t, value] pair, found '5'`},
		{"point of three", "PUT", "/cache/q?start=0&end=1", `{"fields":{"a":[[0,1,2]]}}`, 400, `field "a" point 0 (byte 16): want ']' closing the [t, value] pair at byte 20, found ','`},
		{"point of one", "PUT", "/cache/q?start=0&end=1", `{"fields":{"a":[[0]]}}`, 400, `field "a" point 0 (byte 16): want ',' after the timestamp at byte 18, found ']'`},
		{"fractional timestamp", "PUT", "/cache/q?start=0&end=1", `{"fields":{"a":[[0.5,1]]}}`, 400, `field "a" point 0 (byte 16): timestamp at byte 17: 0.5 is not an integer`},
		{"string timestamp", "PUT", "/cache/q?start=0&end=1", `{"fields":{"a":[["0",1]]}}`, 400, `timestamp at byte 17: malformed number: found '"' at byte 17`},
		{"timestamp overflows", "PUT", "/cache/q?start=0&end=1", `{"fields":{"a":[[99999999999999999999,1]]}}`, 400, "99999999999999999999 overflows int64"},
		{"point before start", "PUT", "/cache/q?start=10&end=20", `{"fields":{"a":[[10,1]],"b":[[15,1],[9,2]]}}`, 400, `field "b" point 1 (byte 36): timestamp 9 outside the range [10, 20]`},
		{"point after end", "PUT", "/cache/q?start=10&end=20", `{"fields":{"a":[[21,1]]}}`, 400, `field "a" point 0 (byte 16): timestamp 21 outside the range [10, 20]`},
		{"value an object", "PUT", "/cache/q?start=0&end=1", `{"fields":{"a":[[0,{"x":1}]]}}`, 400, `field "a" point 0 (byte 16): value at byte 19: values are numbers, strings, true, false or null, not objects or arrays`},
		{"bad literal", "PUT", "/cache/q?start=0&end=1", `{"fields":{"a":[[0,nul]]}}`, 400, `value at byte 19: want a number, string, true, false or null, found 'n'`},
		{"bad number", "PUT", "/cache/q?start=0&end=1", `{"fields":{"a":[[0,01]]}}`, 400, `want ']' closing the [t, value] pair at byte 20, found '1'`},
		{"bad exponent", "PUT", "/cache/q?start=0&end=1", `{"fields":{"a":[[0,1e]]}}`, 400, `value at byte 19: malformed number: found ']' at byte 21`},
		{"control character in a string", "PUT", "/cache/q?start=0&end=1", "{\"fields\":{\"a\":[[0,\"x\ny\"]]}}", 400, "control character 0x0a at byte 21 in a string"},
		{"bad escape", "PUT", "/cache/q?start=0&end=1", `{"fields":{"a":[[0,"\x"]]}}`, 400, `bad escape at byte 20`},
		{"invalid UTF-8", "PUT", "/cache/q?start=0&end=1", "{\"fields\":{\"a\":[[0,\"\xff\"]]}}", 400, "string at byte 19 is not valid UTF-8"},
		{"unclosed string", "PUT", "/cache/q?start=0&end=1", `{"fields":{"a`, 400, "string at byte 11 is not closed"},
		{"field name too long", "PUT", "/cache/q?start=0&end=1", `{"fields":{"` + strings.Repeat("n", 257) + `":[]}}`, 400, "field name \"nnnn"},
		{"too many points", "PUT", "/cache/q?start=0&end=9", `{"fields":{"a":[[0,1],[1,1]],"b":[[2,1],[3,1]]}}`, 413, `field "b" point 1 (byte 40): the body holds more than 3 points`},
		{"DELETE key too long", "DELETE", "/cache/" + long, "", 400, "longer than 250"},
		{"POST", "POST", "/cache/q?start=0&end=1", "{}", 405, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := do(t, h, tc.method, tc.target, tc.body)
			if w.Code != tc.status || !strings.Contains(errorMessage(t, w), tc.msg) {
				t.Fatalf("got %d %s\nwant %d …%s…", w.Code, w.Body, tc.status, tc.msg)
			}
		})
	}
}

// errorMessage returns the message of an error body
// {"status":"error","error":"..."} (of the mux's plain text for a 405).
func errorMessage(t *testing.T, w *httptest.ResponseRecorder) string {
	t.Helper()
	if w.Code == http.StatusMethodNotAllowed {
		return w.Body.String()
	}
	var e struct{ Status, Error string }
	if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil || e.Status != "error" {
		t.Fatalf("error body %s: %v", w.Body, err)
	}
	return e.Error
}

// The limits that need bodies over TestHTTPBadInput's MaxBodyBytes.
func TestHTTPLimits(t *testing.T) {
	h := NewHandler(openCache(t, t.TempDir()), Options{})
	var b strings.Builder
	b.WriteString(`{"fields":{`)
	for i := range MaxFields + 1 {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`"f` + strconv.Itoa(i) + `":[]`)
	}
	b.WriteString("}}")
	w := do(t, h, "PUT", "/cache/q?start=0&end=1", b.String())
	if want := "more than 1024 fields"; w.Code != 400 || !strings.Contains(errorMessage(t, w), want) {
		t.Fatalf("got %d %s, want 400 …%s…", w.Code, w.Body, want)
	}
	var fields strings.Builder
	for i := range MaxFields + 1 {
		fields.WriteString("&field=f" + strconv.Itoa(i))
	}
	w = do(t, h, "GET", "/cache/q?start=0&end=1"+fields.String(), "")
	if want := "query parameter field is given 1025 times, more than 1024"; w.Code != 400 || !strings.Contains(errorMessage(t, w), want) {
		t.Fatalf("got %d %s, want 400 …%s…", w.Code, w.Body, want)
	}
	// A value larger than the cache takes (a quarter of its 64 KiB slabs).
	w = do(t, h, "PUT", "/cache/q?start=0&end=1", `{"fields":{"a":[[0,"`+strings.Repeat("x", 20000)+`"]]}}`)
	if want := "too large for the cache"; w.Code != 413 || !strings.Contains(errorMessage(t, w), want) {
		t.Fatalf("got %d %s, want 413 …%s…", w.Code, w.Body, want)
	}
}

// After Close the handler answers 503, not 400 or 500.
func TestHTTPClosedCache(t *testing.T) {
	c := openCache(t, t.TempDir())
	h := NewHandler(c, Options{})
	c.Close()
	if w := do(t, h, "PUT", "/cache/q?start=0&end=1", `{"fields":{"a":[[0,1]]}}`); w.Code != http.StatusServiceUnavailable {
		t.Fatalf("PUT after Close: %d %s", w.Code, w.Body)
	}
	if w := do(t, h, "GET", "/cache/q?start=0&end=1", ""); w.Code != http.StatusServiceUnavailable {
		t.Fatalf("GET after Close: %d %s", w.Code, w.Body)
	}
}
