package ingest

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/metadata"
	"github.com/stretchr/testify/require"
)

const omType = "application/openmetrics-text; version=1.0.0; charset=utf-8"

func TestPromImport(t *testing.T) {
	now := testNow.UnixMilli()
	for _, tc := range []struct {
		name   string
		url    string // [/api/v1/import/prometheus]
		ct     string // Content-Type
		body   string
		gzip   bool
		status int
		msg    []string
		want   map[string][]sample
		meta   map[string]metadata.Metadata
	}{
		{
			name:   "without timestamps",
			body:   "up{job=\"a\"} 1\nup{job=\"b\"} 0\n",
			status: http.StatusNoContent,
			want: map[string][]sample{
				`{__name__="up", job="a"}`: {{now, 1}},
				`{__name__="up", job="b"}`: {{now, 0}},
			},
		},
		{
			name:   "with timestamps, no final newline",
			body:   "m{a=\"x\"} 1.5 1700000000123\nm{a=\"x\"} 2 1700000000124\nm{a=\"y\"} NaN\nm{a=\"z\"} +Inf 5",
			status: http.StatusNoContent,
			want: map[string][]sample{
				`{__name__="m", a="x"}`: {{tMS, 1.5}, {tMS + 1, 2}},
				`{__name__="m", a="y"}`: {{now, nan}},
				`{__name__="m", a="z"}`: {{5, inf}},
			},
		},
		{
			name: "metadata and histogram buckets",
			body: "# HELP http_requests_total Requests served.\n# TYPE http_requests_total counter\n" +
				"http_requests_total{code=\"200\"} 5 1000\n" +
				"# TYPE rt histogram\n# HELP rt Response time.\n" +
				"rt_bucket{le=\"0.1\"} 1 1000\nrt_bucket{le=\"1\"} 2 1000\nrt_bucket{le=\"+Inf\"} 3 1000\nrt_sum 2.5 1000\nrt_count 3 1000\n",
			status: http.StatusNoContent,
			want: map[string][]sample{
				`{__name__="http_requests_total", code="200"}`: {{1000, 5}},
				`{__name__="rt_bucket", le="+Inf"}`:            {{1000, 3}},
				`{__name__="rt_bucket", le="0.1"}`:             {{1000, 1}},
				`{__name__="rt_bucket", le="1.0"}`:             {{1000, 2}},
				`{__name__="rt_count"}`:                        {{1000, 3}},
				`{__name__="rt_sum"}`:                          {{1000, 2.5}},
			},
			meta: map[string]metadata.Metadata{
				"http_requests_total": {Type: model.MetricTypeCounter, Help: "Requests served."},
				"rt":                  {Type: model.MetricTypeHistogram, Help: "Response time."},
			},
		},
		{
			name: "OpenMetrics",
			ct:   omType,
			body: "# TYPE foo_seconds gauge\n# UNIT foo_seconds seconds\n# HELP foo_seconds Foo.\nfoo_seconds{a=\"b\"} 1.5 1700000000.123\n" +
				"# TYPE c counter\nc_total 7 1 # {trace_id=\"x\"} 1 1700000000\nc_total 8\n# EOF\n",
			status: http.StatusNoContent,
			want: map[string][]sample{
				`{__name__="c_total"}`:            {{1000, 7}, {now, 8}},
				`{__name__="foo_seconds", a="b"}`: {{tMS, 1.5}},
			},
			meta: map[string]metadata.Metadata{
				"foo_seconds": {Type: model.MetricTypeGauge, Unit: "seconds", Help: "Foo."},
				"c":           {Type: model.MetricTypeCounter},
			},
		},
		{
			name:   "OpenMetrics without # EOF",
			ct:     omType,
			body:   "a 1 1\nb 2 1\n",
			status: http.StatusBadRequest,
			msg:    []string{"stored 2 samples, rejected 1 (parse_error: 1): line 3 (end of body): data does not end with # EOF"},
			want: map[string][]sample{
				`{__name__="a"}`: {{1000, 1}},
				`{__name__="b"}`: {{1000, 2}},
			},
		},
		{
			name:   "OpenMetrics data after # EOF",
			ct:     omType,
			body:   "a 1 1\n# EOF\nb 2 1\n",
			status: http.StatusBadRequest,
			msg:    []string{"stored 1 samples, rejected 1 (parse_error: 1): line 2: unexpected data after # EOF"},
			want:   map[string][]sample{`{__name__="a"}`: {{1000, 1}}},
		},
		{
			name:   "OpenMetrics bad and blank lines",
			ct:     omType,
			body:   "a 1 1\n\nb{ 2 1\nc 3 1\n# EOF",
			status: http.StatusBadRequest,
			msg:    []string{"stored 2 samples, rejected 2 (parse_error: 2): line 2: ", "; line 3: "},
			want: map[string][]sample{
				`{__name__="a"}`: {{1000, 1}},
				`{__name__="c"}`: {{1000, 3}},
			},
		},
		{
			name:   "extra_label",
			url:    "/api/v1/import/prometheus?extra_label=job=imported&extra_label=env=prod",
			body:   "m{job=\"orig\",a=\"1\"} 1 1000\nn 2 1000\n",
			status: http.StatusNoContent,
			want: map[string][]sample{
				`{__name__="m", a="1", env="prod", job="imported"}`: {{1000, 1}},
				`{__name__="n", env="prod", job="imported"}`:        {{1000, 2}},
			},
		},
		{
			name:   "malformed lines among good ones",
			body:   "a 1 1000\nb{ 2\n\n# just a comment\n   \nc 3 1000\nthis is bad\nd 4 1000 extra\ne 5 1000\n",
			status: http.StatusBadRequest,
			msg: []string{
				`"code":"invalid"`,
				"stored 3 samples, rejected 3 (parse_error: 3)",
				"line 2: ", "; line 7: ", "; line 8: ",
			},
			want: map[string][]sample{
				`{__name__="a"}`: {{1000, 1}},
				`{__name__="c"}`: {{1000, 3}},
				`{__name__="e"}`: {{1000, 5}},
			},
		},
		{
			name:   "a quoted label spans lines",
			body:   "a{x=\"1\n2\"} 1 1000\nbad\nc 3 1000\n",
			status: http.StatusBadRequest,
			msg:    []string{"stored 2 samples, rejected 1 (parse_error: 1): line 3: "},
			want: map[string][]sample{
				"{__name__=\"a\", x=\"1\\n2\"}": {{1000, 1}},
				`{__name__="c"}`:                {{1000, 3}},
			},
		},
		{
			name:   "NUL byte",
			body:   "a 1 1000\nb\x00 2 1000\nc 3 1000\n",
			status: http.StatusBadRequest,
			msg:    []string{"stored 2 samples, rejected 1 (parse_error: 1): line 2 col 2 (byte 10): line holds a NUL byte"},
			want: map[string][]sample{
				`{__name__="a"}`: {{1000, 1}},
				`{__name__="c"}`: {{1000, 3}},
			},
		},
		{
			name:   "CRLF and gzip",
			body:   "a 1 1000\r\nb 2 1000\r\n",
			gzip:   true,
			status: http.StatusNoContent,
			want: map[string][]sample{
				`{__name__="a"}`: {{1000, 1}},
				`{__name__="b"}`: {{1000, 2}},
			},
		},
		{name: "empty body", body: "", status: http.StatusNoContent, want: map[string][]sample{}},
		{
			name:   "bad extra_label",
			url:    "/api/v1/import/prometheus?extra_label=novalue",
			body:   "a 1 1000\n",
			status: http.StatusBadRequest,
			msg:    []string{`invalid extra_label \"novalue\"`},
			want:   map[string][]sample{},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := openDB(t, nil)
			var hk hook
			h := NewPromImportHandler(db, Options{Metrics: hk.fn, Now: func() time.Time { return testNow }})
			url := tc.url
			if url == "" {
				url = "/api/v1/import/prometheus"
			}
			hdr := map[string]string{}
			if tc.ct != "" {
				hdr["Content-Type"] = tc.ct
			}
			rec := serve(t, h, request{url: url, body: []byte(tc.body), gzip: tc.gzip, header: hdr})
			require.Equal(t, tc.status, rec.Code, rec.Body.String())
			for _, m := range tc.msg {
				require.Contains(t, rec.Body.String(), m)
			}
			if tc.status == http.StatusBadRequest && strings.Contains(rec.Body.String(), "stored ") {
				stored, _ := storedRejected(t, rec.Body.String())
				require.Equal(t, hk.n[ReasonOK], stored)
			}
			requireSamples(t, tc.want, dump(t, db))
			for name, want := range tc.meta {
				got, ok := db.Metadata(name)
				require.True(t, ok, name)
				require.Equal(t, want, got, name)
			}
		})
	}
}

func TestPromImportLimits(t *testing.T) {
	body := []byte(strings.Repeat("some_metric{label=\"value\"} 1 1000\n", 100))
	for _, gz := range []bool{false, true} {
		db := openDB(t, nil)
		h := NewPromImportHandler(db, Options{MaxBodyBytes: 1000})
		rec := serve(t, h, request{url: "/api/v1/import/prometheus", body: body, gzip: gz})
		require.Equal(t, http.StatusRequestEntityTooLarge, rec.Code, rec.Body.String())
		require.Empty(t, dump(t, db))
	}
}

func TestPromImportStorageFailure(t *testing.T) {
	db := openDB(t, nil)
	h := NewPromImportHandler(&failingAppendable{Appendable: db}, Options{})
	rec := serve(t, h, request{url: "/api/v1/import/prometheus", body: []byte("a 1 1000\n")})
	require.Equal(t, http.StatusServiceUnavailable, rec.Code)
	require.Equal(t, "1", rec.Header().Get("Retry-After"))
	require.Contains(t, rec.Body.String(), "stored 0 samples, rejected 1 (storage_error: 1)")
}
