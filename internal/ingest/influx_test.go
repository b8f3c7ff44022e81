package ingest

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aerie-db/aerie/internal/tsdb"
)

const tMS = int64(1_700_000_000_123) // a timestamp in ms

func TestInfluxPrecision(t *testing.T) {
	for _, tc := range []struct {
		name string
		url  string
		ts   string
		want int64 // ms
	}{
		{"v1 default ns", "/write?db=x", "1700000000123456789", tMS},
		{"v1 ns", "/write?precision=ns", "1700000000123456789", tMS},
		{"v1 n", "/write?precision=n", "1700000000123456789", tMS},
		{"v1 u", "/write?precision=u", "1700000000123456", tMS},
		{"v1 us", "/write?precision=us", "1700000000123456", tMS},
		{"v1 ms", "/write?precision=ms", "1700000000123", tMS},
		{"v1 s", "/write?precision=s", "1700000000", 1_700_000_000_000},
		{"v1 m", "/write?precision=m", "28333333", 28_333_333 * 60_000},
		{"v1 h", "/write?precision=h", "472222", 472_222 * 3_600_000},
		{"v1 negative ns rounds down", "/write?precision=ns", "-1500000", -2},
		{"v2 default ns", "/api/v2/write?org=o&bucket=b", "1700000000123456789", tMS},
		{"v2 ns", "/api/v2/write?precision=ns", "1700000000123456789", tMS},
		{"v2 us", "/api/v2/write?precision=us", "1700000000123456", tMS},
		{"v2 ms", "/api/v2/write?precision=ms", "1700000000123", tMS},
		{"v2 s", "/api/v2/write?precision=s", "1700000000", 1_700_000_000_000},
		{"prefix mount", "/influx/api/v2/write?precision=ms", "1700000000123", tMS},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := openDB(t, nil)
			h := NewInfluxHandler(db, Options{})
			rec := serve(t, h, request{url: tc.url, body: []byte("cpu,host=a usage=1.5,idle=2 " + tc.ts + "\n")})
			require.Equal(t, http.StatusNoContent, rec.Code, rec.Body.String())
			require.Equal(t, map[string][]sample{
				`{__name__="cpu_idle", host="a"}`:  {{tc.want, 2}},
				`{__name__="cpu_usage", host="a"}`: {{tc.want, 1.5}},
			}, dump(t, db))
		})
	}
}

func TestInfluxBadPrecision(t *testing.T) {
	for _, url := range []string{"/write?precision=x", "/api/v2/write?precision=u", "/api/v2/write?precision=h"} {
		h := NewInfluxHandler(openDB(t, nil), Options{})
		rec := serve(t, h, request{url: url, body: []byte("m f=1\n")})
		require.Equal(t, http.StatusBadRequest, rec.Code, url)
		require.Contains(t, rec.Body.String(), `"code":"invalid"`)
		require.Contains(t, rec.Body.String(), "invalid precision")
	}
}

// TestInflux checks bodies against the answer and the stored data.
func TestInflux(t *testing.T) {
	for _, tc := range []struct {
		name      string
		url       string // [/api/v2/write?precision=ms]
		body      string
		gzip      bool
		status    int
		msg       []string // substrings of the answer
		want      map[string][]sample
		wantHook  map[string]int
		dbOptions *tsdb.Options
	}{
		{
			name:   "field types",
			body:   "m,host=a i=-42i,u=42u,b=true,b2=F,f=1.5,value=3,e=1e3 1700000000123\n",
			status: http.StatusNoContent,
			want: map[string][]sample{
				`{__name__="m_b", host="a"}`:     {{tMS, 1}},
				`{__name__="m_b2", host="a"}`:    {{tMS, 0}},
				`{__name__="m_e", host="a"}`:     {{tMS, 1000}},
				`{__name__="m_f", host="a"}`:     {{tMS, 1.5}},
				`{__name__="m_i", host="a"}`:     {{tMS, -42}},
				`{__name__="m_u", host="a"}`:     {{tMS, 42}},
				`{__name__="m_value", host="a"}`: {{tMS, 3}},
			},
			wantHook: map[string]int{ReasonOK: 7},
		},
		{
			name:   "2^53 is exact",
			body:   "m i=9007199254740992i,u=9007199254740992u,n=-9007199254740992i 1700000000123\n",
			status: http.StatusNoContent,
			want: map[string][]sample{
				`{__name__="m_i"}`: {{tMS, 1 << 53}},
				`{__name__="m_n"}`: {{tMS, -(1 << 53)}},
				`{__name__="m_u"}`: {{tMS, 1 << 53}},
			},
		},
		{
			name:   "escaped and sanitized names",
			body:   "my\\ meas,ho\\,st=a\\ b\\=c,dash-key=v fi\\=eld=1,sp\\ ace=2 1700000000123\n1m,température=x f=3 1700000000123\n",
			status: http.StatusNoContent,
			want: map[string][]sample{
				`{__name__="my_meas_fi_eld", dash_key="v", ho_st="a b=c"}`: {{tMS, 1}},
				`{__name__="my_meas_sp_ace", dash_key="v", ho_st="a b=c"}`: {{tMS, 2}},
				`{__name__="_1m_f", temp_rature="x"}`:                      {{tMS, 3}},
			},
		},
		{
			name:   "comments, blank lines, CRLF, no final newline",
			body:   "# a comment\r\n\r\n   \nm f=1 1700000000123\r\nm f=2 1700000000124",
			status: http.StatusNoContent,
			want:   map[string][]sample{`{__name__="m_f"}`: {{tMS, 1}, {tMS + 1, 2}}},
		},
		{
			name:   "gzip",
			body:   "m,host=a f=1 1700000000123\nm,host=b f=2 1700000000123\n",
			gzip:   true,
			status: http.StatusNoContent,
			want: map[string][]sample{
				`{__name__="m_f", host="a"}`: {{tMS, 1}},
				`{__name__="m_f", host="b"}`: {{tMS, 2}},
			},
		},
		{name: "empty body", body: "", status: http.StatusNoContent, want: map[string][]sample{}},
		{name: "empty gzip body", body: "", gzip: true, status: http.StatusNoContent, want: map[string][]sample{}},
		{
			name: "good and bad lines",
			body: "cpu,host=a usage=1 1700000000123\n" + // 1
				"cpu,host=a usage= 1700000000123\n" + // 2: no value
				"cpu,host=b usage=2,idle=3 1700000000123\n" + // 3
				"just words\n" + // 4: no fields
				"cpu,host=c usage=\"str\",n=5 1700000000123\n" + // 5: string field
				"cpu,host=d big=9007199254740993u 1700000000123\n" + // 6: not exact
				"cpu,host=d ok=9007199254740992u,bigi=-9007199254740993i 1700000000123\n" + // 7
				"cpu,host=e f=1 17000000001x3\n", // 8: bad timestamp
			status: http.StatusBadRequest,
			msg: []string{
				`"code":"invalid"`,
				"stored 5 samples, rejected 5 (parse_error: 3, inexact_integer: 2)",
				"line 2 col 18 (byte 50): ",
				"line 4 col 11 (byte 115): ",
				`line 6: field \"big\" of \"cpu\": unsigned 9007199254740993u is not exactly representable as float64`,
				`line 7: field \"bigi\"`,
				"line 8 col 16 (byte 289): invalid timestamp",
			},
			want: map[string][]sample{
				`{__name__="cpu_idle", host="b"}`:  {{tMS, 3}},
				`{__name__="cpu_n", host="c"}`:     {{tMS, 5}},
				`{__name__="cpu_ok", host="d"}`:    {{tMS, 1 << 53}},
				`{__name__="cpu_usage", host="a"}`: {{tMS, 1}},
				`{__name__="cpu_usage", host="b"}`: {{tMS, 2}},
			},
			wantHook: map[string]int{ReasonOK: 5, ReasonParse: 3, ReasonStringField: 1, ReasonInexact: 2},
		},
		{
			name:   "duplicates within a body",
			body:   "m f=1 1700000000123\nm f=1 1700000000123\nm f=2 1700000000123\n",
			status: http.StatusBadRequest,
			msg:    []string{"stored 2 samples, rejected 1 (duplicate: 1)", `line 3: {__name__=\"m_f\"} @1700000000123: duplicate sample for timestamp`},
			want:   map[string][]sample{`{__name__="m_f"}`: {{tMS, 1}}},
		},
		{
			name:   "tags that clash",
			body:   "m,a-b=1,a_b=2 f=1 1700000000123\nm,__name__=x f=1 1700000000123\n",
			status: http.StatusBadRequest,
			msg:    []string{"stored 0 samples, rejected 2", `line 1: two tags map to the label name \"a_b\"`, `line 2: tag \"__name__\" is reserved`},
			want:   map[string][]sample{},
		},
		{
			name:   "timestamp out of range",
			url:    "/write?precision=s",
			body:   "m f=1 9223372036854775807\nm f=1 99999999999999999999\n",
			status: http.StatusBadRequest,
			msg:    []string{"line 1: timestamp 9223372036854775807 out of range", "line 2: invalid timestamp"},
			want:   map[string][]sample{},
		},
		{
			name:   "many bad lines are summarized",
			body:   strings.Repeat("bad\n", 25) + "m f=1 1700000000123\n",
			status: http.StatusBadRequest,
			msg:    []string{"stored 1 samples, rejected 25 (parse_error: 25)", "line 10 col 4", "; and 15 more"},
			want:   map[string][]sample{`{__name__="m_f"}`: {{tMS, 1}}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := openDB(t, tc.dbOptions)
			var hk hook
			h := NewInfluxHandler(db, Options{Metrics: hk.fn, Now: func() time.Time { return testNow }})
			url := tc.url
			if url == "" {
				url = "/api/v2/write?precision=ms"
			}
			rec := serve(t, h, request{url: url, body: []byte(tc.body), gzip: tc.gzip})
			require.Equal(t, tc.status, rec.Code, rec.Body.String())
			for _, m := range tc.msg {
				require.Contains(t, rec.Body.String(), m)
			}
			if tc.status == http.StatusBadRequest {
				require.Equal(t, "application/json; charset=utf-8", rec.Header().Get("Content-Type"))
				stored, _ := storedRejected(t, rec.Body.String())
				require.Equal(t, hk.n[ReasonOK], stored)
			}
			require.Equal(t, tc.want, dump(t, db))
			if tc.wantHook != nil {
				require.Equal(t, tc.wantHook, hk.n)
			}
		})
	}
}

func TestInfluxReceiptTime(t *testing.T) {
	for _, tc := range []struct {
		url  string
		want int64
	}{
		{"/write", testNow.UnixMilli()},
		{"/write?precision=ms", testNow.UnixMilli()},
		{"/write?precision=s", 1_700_000_000_000},
		{"/api/v2/write?precision=s", 1_700_000_000_000},
	} {
		db := openDB(t, nil)
		h := NewInfluxHandler(db, Options{Now: func() time.Time { return testNow }})
		rec := serve(t, h, request{url: tc.url, body: []byte("m,h=a f=1,g=2\n")})
		require.Equal(t, http.StatusNoContent, rec.Code, rec.Body.String())
		require.Equal(t, map[string][]sample{
			`{__name__="m_f", h="a"}`: {{tc.want, 1}},
			`{__name__="m_g", h="a"}`: {{tc.want, 2}},
		}, dump(t, db), tc.url)
	}
}

func TestInfluxLimits(t *testing.T) {
	line := "m,host=a f=1 1700000000123\n"
	big := []byte(strings.Repeat(line, 100)) // 2700 bytes, 100 samples of one series: duplicates
	for _, tc := range []struct {
		name string
		req  request
		max  int64
		msg  string
	}{
		{"Content-Length over the limit", request{body: big}, 1000, "exceeds the limit of 1000 bytes"},
		{"chunked body over the limit", request{body: big, chunked: true}, 1000, "stored 0 samples"},
		{"gzip over the limit after decompression", request{body: big, gzip: true}, 1000, "body_too_large"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := openDB(t, nil)
			h := NewInfluxHandler(db, Options{MaxBodyBytes: tc.max})
			tc.req.url = "/api/v2/write?precision=ms"
			rec := serve(t, h, tc.req)
			require.Equal(t, http.StatusRequestEntityTooLarge, rec.Code, rec.Body.String())
			require.Contains(t, rec.Body.String(), `"code":"request too large"`)
			require.Contains(t, rec.Body.String(), tc.msg)
			require.Empty(t, dump(t, db), "a truncated body stores nothing after its last commit")
		})
	}
	t.Run("exactly at the limit", func(t *testing.T) {
		for _, chunked := range []bool{false, true} {
			h := NewInfluxHandler(openDB(t, nil), Options{MaxBodyBytes: int64(len(line))})
			rec := serve(t, h, request{url: "/api/v2/write?precision=ms", body: []byte(line), chunked: chunked})
			require.Equal(t, http.StatusNoContent, rec.Code, rec.Body.String())
		}
	})
}

func TestInfluxOutOfBounds(t *testing.T) {
	db := openDB(t, &tsdb.Options{NoOOO: true, NoBackfill: true})
	h := NewInfluxHandler(db, Options{})
	rec := serve(t, h, request{url: "/write?precision=ms", body: []byte("m,host=a f=1 10000000000000\n")})
	require.Equal(t, http.StatusNoContent, rec.Code, rec.Body.String())
	// Two hours older than the head: below its in-order window.
	rec = serve(t, h, request{url: "/write?precision=ms", body: []byte("m,host=a f=2 9999992800000\nm,host=a f=3 10000000060000\n")})
	require.Equal(t, http.StatusBadRequest, rec.Code)
	require.Contains(t, rec.Body.String(), "stored 1 samples, rejected 1 (out_of_bounds: 1)")
	require.Contains(t, rec.Body.String(), `line 1: {__name__=\"m_f\", host=\"a\"} @9999992800000: out of bounds`)
	require.Equal(t, map[string][]sample{`{__name__="m_f", host="a"}`: {{10000000000000, 1}, {10000000060000, 3}}}, dump(t, db))
}

// TestInfluxBackfill: with the backfill on (the default) a sample of any
// age inside the retention is stored; one older than the retention gets a
// 400 naming the reason and the line, and the rest is stored.
func TestInfluxBackfill(t *testing.T) {
	var hk hook
	db := openDB(t, &tsdb.Options{NoOOO: true, Retention: 24 * 3600 * 1000})
	h := NewInfluxHandler(db, Options{Metrics: hk.fn})
	rec := serve(t, h, request{url: "/write?precision=ms", body: []byte("m,host=a f=1 10000000000000\n")})
	require.Equal(t, http.StatusNoContent, rec.Code, rec.Body.String())
	rec = serve(t, h, request{url: "/write?precision=ms", body: []byte("m,host=a f=2 9999992800000\nm,host=a f=3 10000000060000\n")})
	require.Equal(t, http.StatusNoContent, rec.Code, rec.Body.String())
	rec = serve(t, h, request{url: "/write?precision=ms", body: []byte("m,host=a f=4 9999900000000\nm,host=a f=5 9999992900000\n")})
	require.Equal(t, http.StatusBadRequest, rec.Code)
	require.Contains(t, rec.Body.String(), "stored 1 samples, rejected 1 (too_old_for_retention: 1)")
	require.Contains(t, rec.Body.String(), "line 1:")
	require.Equal(t, map[string][]sample{`{__name__="m_f", host="a"}`: {{9999992800000, 2}, {9999992900000, 5}, {10000000000000, 1}, {10000000060000, 3}}}, dump(t, db))
}

func TestInfluxStorageFailure(t *testing.T) {
	db := openDB(t, nil)
	var hk hook
	// Batches of 2 samples: the first commit succeeds, the second fails.
	h := NewInfluxHandler(&failingAppendable{Appendable: db, ok: 1}, Options{BatchSamples: 2, Metrics: hk.fn})
	rec := serve(t, h, request{url: "/write?precision=ms", body: []byte("m f=1,g=2 1000\nm f=3,g=4 2000\nm f=5 3000\n")})
	require.Equal(t, http.StatusServiceUnavailable, rec.Code)
	require.Equal(t, "1", rec.Header().Get("Retry-After"))
	require.Contains(t, rec.Body.String(), `"code":"unavailable"`)
	require.Contains(t, rec.Body.String(), "no space left on device")
	require.Contains(t, rec.Body.String(), "stored 2 samples, rejected 2 (storage_error: 2)")
	require.Equal(t, map[string][]sample{
		`{__name__="m_f"}`: {{1000, 1}},
		`{__name__="m_g"}`: {{1000, 2}},
	}, dump(t, db))
	require.Equal(t, map[string]int{ReasonOK: 2, ReasonStorage: 2}, hk.n)
}

func TestInfluxBatches(t *testing.T) {
	db := openDB(t, nil)
	var b strings.Builder
	for i := range 1000 {
		fmt.Fprintf(&b, "m,host=a f=1,g=2,h=3 %d\n", 1_000_000+i)
	}
	h := NewInfluxHandler(db, Options{BatchSamples: 100})
	rec := serve(t, h, request{url: "/write?precision=ms", body: []byte(b.String())})
	require.Equal(t, http.StatusNoContent, rec.Code, rec.Body.String())
	got := dump(t, db)
	require.Equal(t, 3000, countSamples(got))
	for _, s := range got {
		require.Len(t, s, 1000)
	}
}

func TestInfluxRouting(t *testing.T) {
	h := NewInfluxHandler(openDB(t, nil), Options{})
	for _, tc := range []struct {
		method, url string
		status      int
	}{
		{http.MethodGet, "/write", http.StatusMethodNotAllowed},
		{http.MethodGet, "/ping", http.StatusNoContent},
		{http.MethodPost, "/query", http.StatusNotFound},
	} {
		rec := serve(t, h, request{method: tc.method, url: tc.url})
		require.Equal(t, tc.status, rec.Code, tc.url)
	}
	rec := serve(t, h, request{url: "/write", body: []byte("m f=1"), header: map[string]string{"Content-Encoding": "br"}})
	require.Equal(t, http.StatusUnsupportedMediaType, rec.Code)
	rec = serve(t, h, request{url: "/write", body: []byte("not gzip"), header: map[string]string{"Content-Encoding": "gzip"}})
	require.Equal(t, http.StatusBadRequest, rec.Code)
	require.Contains(t, rec.Body.String(), "invalid gzip body")
}
