package cacheserver

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/aerie-db/aerie/internal/cache"
)

// FuzzHTTPPut puts a body under a query string: no panic, the same answer
// twice, and a 2xx PUT followed by a GET of its range that hits returns
// exactly the points put (sorted, duplicates once).
func FuzzHTTPPut(f *testing.F) {
	f.Add("start=0&end=10", []byte(`{"fields":{"v":[[0,1],[10,"x"],[5,null],[5,null]],"w":[]}}`))
	f.Add("start=-5&end=-1", []byte(`{"fields":{"a":[[-5,1e3],[-1,-0.5]],"a":[[-3,true]]}}`))
	f.Add("start=1&end=1&x=1", []byte(`{"fields":{}}`))
	f.Add("start=1&end=0", []byte(`{"fields":{"\u00e9\n":[[1,"\ud83d\ude00"]]}}`))
	h := NewHandler(openCache(f, f.TempDir()), Options{MaxBodyBytes: 1 << 20, MaxPoints: 1000})
	var n atomic.Int64
	f.Fuzz(func(t *testing.T, query string, body []byte) {
		put := func() *httptest.ResponseRecorder {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest("PUT", "/cache/fuzz-"+strconv.FormatInt(n.Add(1), 10)+"?"+url.PathEscape(query), bytes.NewReader(body)))
			return w
		}
		w := put()
		if w2 := put(); w2.Code != w.Code || (w.Code >= 300 && w2.Body.String() != w.Body.String()) {
			t.Fatalf("the same PUT twice: %d %s, then %d %s", w.Code, w.Body, w2.Code, w2.Body)
		}
		if w.Code >= 300 {
			if !json.Valid(w.Body.Bytes()) {
				t.Fatalf("%d with invalid JSON %q", w.Code, w.Body)
			}
			return
		}
		if w.Code != http.StatusNoContent {
			t.Fatalf("PUT: %d %s", w.Code, w.Body)
		}
		start, end, _, ierr := rangeParams(url.PathEscape(query), false)
		if ierr != nil {
			t.Fatalf("PUT accepted a query rangeParams refuses: %v", ierr)
		}
		fields, ierr := parseBody(body, start, end, 1000)
		if ierr != nil {
			t.Fatalf("PUT accepted a body parseBody refuses: %v", ierr)
		}
		g := httptest.NewRecorder()
		target := "/cache/fuzz-" + strconv.FormatInt(n.Load(), 10) + "?start=" + strconv.FormatInt(start, 10) + "&end=" + strconv.FormatInt(end, 10)
		h.ServeHTTP(g, httptest.NewRequest("GET", target, nil))
		if !json.Valid(g.Body.Bytes()) {
			t.Fatalf("GET answered invalid JSON %q", g.Body)
		}
		if g.Code != http.StatusOK {
			return // evicted: the cache is small
		}
		want := cache.Result{Status: cache.Hit, Start: start, End: end, Fields: expectedFields(fields)}
		if exp := appendResult(nil, want); !bytes.Equal(g.Body.Bytes(), exp) {
			t.Fatalf("GET after PUT:\n got %s\nwant %s", g.Body, exp)
		}
	})
}

// expectedFields is what a Get of all fields returns of a Set of fields:
// fields by name, points in time then value order, each once, no empty field.
func expectedFields(fields []cache.Field) []cache.Field {
	var out []cache.Field
	for _, f := range fields {
		if len(f.Points) == 0 {
			continue
		}
		ps := slices.Clone(f.Points)
		slices.SortFunc(ps, func(a, b cache.Point) int { return cmp.Or(cmp.Compare(a.T, b.T), bytes.Compare(a.V, b.V)) })
		ps = slices.CompactFunc(ps, func(a, b cache.Point) bool { return a.T == b.T && bytes.Equal(a.V, b.V) })
		out = append(out, cache.Field{Name: f.Name, Points: ps})
	}
	slices.SortFunc(out, func(a, b cache.Field) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// FuzzMemcached runs a stream of commands through one connection's
// handler: no panic, memory bounded by the limits rather than by announced
// lengths, and every reply well formed (checkReplies).
func FuzzMemcached(f *testing.F) {
	const body = `{"fields":{"v":[[0,1],[5,true]]}}`
	set := fmt.Sprintf("set q:0:10 0 0 %d\r\n%s\r\n", len(body), body)
	for _, s := range []string{
		set + "get q:0:10 q:5:20 q:-1:3 x:0:1\r\ngets q:0:1\r\ndelete q\r\nversion\r\nquit\r\n",
		set + "set q:0:1 0 0 999999999\r\n",
		"set q:0:1 0 0 3\r\nabc\r\nget q\r\nbogus\r\n\r\ncas a:0:1 0 0 1 1\r\nx\r\n",
		"set a:b:1:2 1 0 13 noreply\r\n{\"fields\":{}}\r\nget a:b:1:2\r\ndelete a:b noreply\r\n",
	} {
		f.Add([]byte(s))
	}
	c := openCache(f, f.TempDir())
	o := &MemcachedOptions{MaxItemSize: 4096, MaxDiscard: 1 << 30, MaxPoints: 100}
	o.setDefaults()
	f.Fuzz(func(t *testing.T, in []byte) {
		var out bytes.Buffer
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		serveMemcached(bytes.NewReader(in), &out, c, o)
		runtime.ReadMemStats(&after)
		// Reader and writer buffers, one item and its reply, the cache's
		// slab buffers and the output's growth; never an announced length.
		if alloc, limit := after.TotalAlloc-before.TotalAlloc, uint64(8<<20+4096*len(in)+4*out.Cap()); alloc > limit {
			t.Fatalf("%d bytes allocated for %d bytes of input, more than %d", alloc, len(in), limit)
		}
		if err := checkReplies(out.Bytes()); err != nil {
			t.Fatalf("%v\ninput %q", err, in)
		}
	})
}

// checkReplies checks that out is a sequence of memcached replies: each
// line ends in \r\n and holds no other \r or \n, and VALUE lines carry the
// announced bytes of valid JSON, inside a get's answer ended by END or
// SERVER_ERROR.
func checkReplies(out []byte) error {
	inGet := false
	for len(out) > 0 {
		i := bytes.Index(out, []byte("\r\n"))
		if i < 0 {
			return fmt.Errorf("reply %q does not end in \\r\\n", out)
		}
		line := string(out[:i])
		out = out[i+2:]
		if bytes.ContainsAny([]byte(line), "\r\n") {
			return fmt.Errorf("reply line %q holds \\r or \\n", line)
		}
		verb, rest, _ := bytes.Cut([]byte(line), []byte(" "))
		switch string(verb) {
		case "END":
			inGet = false
		case "STORED", "DELETED", "NOT_FOUND", "ERROR":
			if inGet || len(rest) > 0 {
				return fmt.Errorf("reply %q in a get's answer or with arguments", line)
			}
		case "VERSION", "CLIENT_ERROR", "SERVER_ERROR":
			if len(rest) == 0 || (inGet && string(verb) == "VERSION") {
				return fmt.Errorf("reply %q", line)
			}
			inGet = false
		case "VALUE":
			inGet = true
			args := bytes.Fields(rest)
			if len(args) != 3 && len(args) != 4 {
				return fmt.Errorf("VALUE line %q", line)
			}
			if _, err := strconv.ParseUint(string(args[1]), 10, 32); err != nil {
				return fmt.Errorf("VALUE line %q: flags: %v", line, err)
			}
			n, err := strconv.Atoi(string(args[2]))
			if err != nil || n < 0 || len(out) < n+2 || string(out[n:n+2]) != "\r\n" {
				return fmt.Errorf("VALUE line %q: the data block does not match", line)
			}
			if !json.Valid(out[:n]) {
				return fmt.Errorf("VALUE %q: invalid JSON %q", line, out[:n])
			}
			out = out[n+2:]
		default:
			return fmt.Errorf("unknown reply %q", line)
		}
	}
	if inGet {
		return fmt.Errorf("a get's answer has no END")
	}
	return nil
}
