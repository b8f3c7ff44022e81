package ingest

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/metadata"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/stretchr/testify/require"

	"github.com/aerie-db/aerie/internal/vmformat"
)

func TestVMImport(t *testing.T) {
	now := testNow.UnixMilli()
	for _, tc := range []struct {
		name    string
		url     string // [/api/v1/import]
		csv     bool
		body    string
		gzip    bool
		chunked bool
		method  string
		opts    Options
		lim     vmformat.Limits
		status  int
		msg     []string
		want    map[string][]sample
		metrics map[string]int
	}{
		{
			name: "JSON lines",
			body: `{"metric":{"__name__":"up","job":"a"},"values":[1,0,null,"Infinity"],"timestamps":[1000,2000,3000,4000]}` + "\n" +
				`{"metric":{"__name__":"up","job":"b"},"values":[5],"timestamps":[1000]}`,
			status: http.StatusNoContent,
			want: map[string][]sample{
				`{__name__="up", job="a"}`: {{1000, 1}, {2000, 0}, {3000, nan}, {4000, inf}},
				`{__name__="up", job="b"}`: {{1000, 5}},
			},
			metrics: map[string]int{ReasonOK: 5},
		},
		{
			name: "bad lines are named, good ones stored",
			body: `{"metric":{"__name__":"a"},"values":[1],"timestamps":[1000]}` + "\n" +
				`{"metric":{"__name__":"b"},"values":[x],"timestamps":[1000]}` + "\n" +
				"\n" +
				`{"metric":{"__name__":"c"},"values":[1,2],"timestamps":[1000]}` + "\n" +
				`{"metric":{"__name__":"d"},"values":[4],"timestamps":[1000]}` + "\n",
			status: http.StatusBadRequest,
			msg: []string{`"code":"invalid"`, `stored 2 samples, rejected 2 (parse_error: 2): ` +
				`line 2 col 38 (byte 98): values[0]: invalid value \"x\"; ` +
				`line 4 col 56 (byte 178): timestamps: 1 timestamps for 2 values`},
			want: map[string][]sample{
				`{__name__="a"}`: {{1000, 1}},
				`{__name__="d"}`: {{1000, 4}},
			},
			metrics: map[string]int{ReasonOK: 2, ReasonParse: 2},
		},
		{
			name:   "gzip and extra_label",
			url:    "/api/v1/import?extra_label=job=imported&extra_label=env=prod",
			body:   `{"metric":{"__name__":"m","job":"orig"},"values":[1],"timestamps":[1000]}` + "\r\n",
			gzip:   true,
			status: http.StatusNoContent,
			want:   map[string][]sample{`{__name__="m", env="prod", job="imported"}`: {{1000, 1}}},
		},
		{
			name: "duplicates in one body",
			body: `{"metric":{"__name__":"m"},"values":[1,1,2],"timestamps":[10000000,10000000,10000000]}` + "\n" +
				`{"metric":{"__name__":"m"},"values":[3],"timestamps":[10000000]}` + "\n",
			status: http.StatusBadRequest,
			msg:    []string{"stored 2 samples, rejected 2 (duplicate: 2): line 1: {__name__=\\\"m\\\"} @10000000: duplicate sample for timestamp (earlier in this body); line 2: "},
			want:   map[string][]sample{`{__name__="m"}`: {{10000000, 1}}},
		},
		{
			name:   "limits",
			lim:    vmformat.Limits{MaxLabelValueBytes: 3},
			body:   `{"metric":{"__name__":"long"},"values":[1],"timestamps":[1000]}` + "\n" + `{"metric":{"__name__":"ok"},"values":[1],"timestamps":[1000]}`,
			status: http.StatusBadRequest,
			msg:    []string{`stored 1 samples, rejected 1 (parse_error: 1): line 1 col 23 (byte 22): metric[\"__name__\"]: label value of 4 bytes is longer than the limit of 3`},
			want:   map[string][]sample{`{__name__="ok"}`: {{1000, 1}}},
		},
		{
			name:    "a body over the limit keeps the whole lines before it",
			opts:    Options{MaxBodyBytes: 100},
			chunked: true,
			body:    strings.Repeat(`{"metric":{"__name__":"m"},"values":[1],"timestamps":[1000]}`+"\n", 3),
			status:  http.StatusRequestEntityTooLarge,
			msg:     []string{"stored 1 samples, rejected 1 (body_too_large: 1): line 2 (byte 61): the line was cut off and dropped"},
			want:    map[string][]sample{`{__name__="m"}`: {{1000, 1}}},
			metrics: map[string]int{ReasonOK: 1, ReasonBodyTooLarge: 1},
		},
		{
			name:   "not POST",
			method: http.MethodGet,
			status: http.StatusMethodNotAllowed,
			want:   map[string][]sample{},
		},
		{
			name:   "CSV",
			url:    "/api/v1/import/csv?format=1:time:unix_s,2:label:host,3:metric:cpu_user,4:metric:cpu_system",
			csv:    true,
			body:   "1700000000,a,1.5,0.5\n1700000015,\"b,c\",2,\n1700000030,a,StaleNaN,-Inf\n",
			status: http.StatusNoContent,
			want: map[string][]sample{
				`{__name__="cpu_user", host="a"}`:   {{1700000000000, 1.5}, {1700000030000, nan}},
				`{__name__="cpu_system", host="a"}`: {{1700000000000, 0.5}, {1700000030000, math.Inf(-1)}},
				`{__name__="cpu_user", host="b,c"}`: {{1700000015000, 2}},
			},
			metrics: map[string]int{ReasonOK: 5},
		},
		{
			name:   "CSV without a time column, with a bad row",
			url:    "/api/v1/import/csv?format=2:metric:ask,3:metric:bid,1:label:ticker",
			csv:    true,
			body:   "GOOG,1.23,4.56\nMSFT,x,1\nAAPL,,2\n",
			status: http.StatusBadRequest,
			msg:    []string{`stored 3 samples, rejected 1 (parse_error: 1): line 2 col 6 (byte 20): column 2 (metric \"ask\"): invalid value \"x\"`},
			want: map[string][]sample{
				`{__name__="ask", ticker="GOOG"}`: {{now, 1.23}},
				`{__name__="bid", ticker="GOOG"}`: {{now, 4.56}},
				`{__name__="bid", ticker="AAPL"}`: {{now, 2}},
			},
			metrics: map[string]int{ReasonOK: 3, ReasonParse: 1},
		},
		{
			name:   "CSV without format",
			url:    "/api/v1/import/csv",
			csv:    true,
			body:   "1,2\n",
			status: http.StatusBadRequest,
			msg:    []string{"missing format parameter"},
			want:   map[string][]sample{},
		},
		{
			name:   "CSV with a bad format",
			url:    "/api/v1/import/csv?format=1:label:a",
			csv:    true,
			body:   "1,2\n",
			status: http.StatusBadRequest,
			msg:    []string{`csv format \"1:label:a\" has no metric column`},
			want:   map[string][]sample{},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := openDB(t, nil)
			var hk hook
			protocols := map[string]bool{}
			tc.opts.Metrics = func(p, reason string, n int) { protocols[p] = true; hk.fn(p, reason, n) }
			tc.opts.Now = func() time.Time { return testNow }
			h, protocol := NewVMImportHandler(db, tc.opts, tc.lim), ProtocolImportJSON
			if tc.csv {
				h, protocol = NewCSVImportHandler(db, tc.opts, tc.lim), ProtocolImportCSV
			}
			url := tc.url
			if url == "" {
				url = "/api/v1/import"
			}
			rec := serve(t, h, request{method: tc.method, url: url, body: []byte(tc.body), gzip: tc.gzip, chunked: tc.chunked})
			require.Equal(t, tc.status, rec.Code, rec.Body.String())
			for _, m := range tc.msg {
				require.Contains(t, rec.Body.String(), m)
			}
			if strings.Contains(rec.Body.String(), "stored ") {
				stored, _ := storedRejected(t, rec.Body.String())
				require.Equal(t, hk.n[ReasonOK], stored)
			}
			requireSamples(t, tc.want, dump(t, db))
			if tc.metrics != nil {
				require.Equal(t, tc.metrics, hk.n)
				require.Equal(t, map[string]bool{protocol: true}, protocols)
			}
		})
	}
}

// The stale marker and NaN payloads are stored bit for bit.
func TestVMImportSpecialValues(t *testing.T) {
	db := openDB(t, nil)
	var got []string
	h := NewVMImportHandler(db, Options{Metrics: func(p, _ string, _ int) { got = append(got, p) }}, vmformat.Limits{})
	body := `{"metric":{"__name__":"m"},"values":["StaleNaN","NaN:0x7ff8000000000abc",null,-0,"-Infinity"],"timestamps":[1000,2000,3000,4000,5000]}`
	rec := serve(t, h, request{url: "/api/v1/import", body: []byte(body)})
	require.Equal(t, http.StatusNoContent, rec.Code, rec.Body.String())
	require.Equal(t, []string{ProtocolImportJSON}, got)

	q, err := db.Querier(math.MinInt64, math.MaxInt64)
	require.NoError(t, err)
	defer q.Close()
	ss := q.Select(context.Background(), true, nil, labels.MustNewMatcher(labels.MatchEqual, labels.MetricName, "m"))
	require.True(t, ss.Next())
	it := ss.At().Iterator(nil)
	var bits []uint64
	for it.Next() == chunkenc.ValFloat {
		_, v := it.At()
		bits = append(bits, math.Float64bits(v))
	}
	require.NoError(t, it.Err())
	require.Equal(t, []uint64{vmformat.StaleNaNBits, 0x7ff8000000000abc, vmformat.NormalNaNBits, 1 << 63, math.Float64bits(math.Inf(-1))}, bits)
}

func TestVMImportStorageFailure(t *testing.T) {
	db := openDB(t, nil)
	h := NewVMImportHandler(&failingAppendable{Appendable: db}, Options{}, vmformat.Limits{})
	rec := serve(t, h, request{url: "/api/v1/import", body: []byte(`{"metric":{"a":"1"},"values":[1],"timestamps":[1]}`)})
	require.Equal(t, http.StatusServiceUnavailable, rec.Code)
	require.Contains(t, rec.Body.String(), "stored 0 samples, rejected 1 (storage_error: 1)")
}

// recordingAppendable keeps what was committed, by series and time, in
// place of an engine: the fuzz targets below run thousands of bodies, and
// opening a DB for each would take minutes.
type recordingAppendable struct {
	committed map[string]uint64 // "labels t" → value bits
}

func (r *recordingAppendable) Appender(context.Context) storage.Appender {
	return &recordingAppender{r: r}
}

type recordingAppender struct {
	storage.Appender // never called
	r                *recordingAppendable
	pending          []sinkSample
}

func (a *recordingAppender) Append(_ storage.SeriesRef, l labels.Labels, t int64, v float64) (storage.SeriesRef, error) {
	a.pending = append(a.pending, sinkSample{l, t, v})
	return 0, nil
}

func (a *recordingAppender) Commit() error {
	if a.r.committed == nil {
		a.r.committed = map[string]uint64{}
	}
	for _, s := range a.pending {
		a.r.committed[fmt.Sprintf("%s %d", s.l, s.t)] = math.Float64bits(s.v)
	}
	a.pending = nil
	return nil
}

func (a *recordingAppender) Rollback() error { a.pending = nil; return nil }

func (a *recordingAppender) UpdateMetadata(storage.SeriesRef, labels.Labels, metadata.Metadata) (storage.SeriesRef, error) {
	return 0, nil
}

// checkVMImport sends a body twice and checks the contract of the import
// handlers: 204, 400 or 413; the stored count of the answer is what was
// committed and what the metrics hook got; the answer is deterministic.
func checkVMImport(t *testing.T, newHandler func(storage.Appendable, Options) http.Handler, r request) {
	var answers [2]string
	for i := range answers {
		ra := &recordingAppendable{}
		var hk hook
		rec := serve(t, newHandler(ra, Options{Metrics: hk.fn, Now: func() time.Time { return testNow }, MaxBodyBytes: 1 << 16}), r)
		answers[i] = rec.Body.String()
		switch rec.Code {
		case http.StatusNoContent:
			require.Len(t, hk.n, min(len(ra.committed), 1), "204 with rejections: %v", hk.n)
		case http.StatusBadRequest, http.StatusRequestEntityTooLarge:
			stored, rejected := storedRejected(t, rec.Body.String())
			require.Positive(t, rejected, rec.Body.String())
			require.Equal(t, hk.n[ReasonOK], stored)
		default:
			t.Fatalf("status %d for %q: %s", rec.Code, r.body, rec.Body.String())
		}
		// Identical duplicates count as stored but are one sample.
		require.LessOrEqual(t, len(ra.committed), hk.n[ReasonOK])
		require.Equal(t, hk.n[ReasonOK] > 0, len(ra.committed) > 0)
	}
	require.Equal(t, answers[0], answers[1], "answers differ for one body")
}

// The handlers over bodies the vmformat decoders see first (their own
// round trips are fuzzed in internal/vmformat).
func FuzzVMImportHandler(f *testing.F) {
	f.Add([]byte(`{"metric":{"__name__":"up","job":"a"},"values":[1,null,"StaleNaN"],"timestamps":[1000,2000,3000]}`+"\n"), false)
	f.Fuzz(func(t *testing.T, body []byte, gz bool) {
		checkVMImport(t, func(a storage.Appendable, o Options) http.Handler {
			return NewVMImportHandler(a, o, vmformat.Limits{MaxLineBytes: 1 << 12})
		}, request{url: "/api/v1/import?extra_label=src=fuzz", body: body, gzip: gz, chunked: gz})
	})
}

func FuzzCSVImportHandler(f *testing.F) {
	f.Add([]byte("1700000000,a,1.5,0.5\n1700000015,\"b,c\",2,\n"), uint8(0))
	formats := []string{
		"1:time:unix_s,2:label:host,3:metric:cpu_user,4:metric:cpu_system",
		"1:label:__name__,2:metric:m,3:time:unix_ms,4:label:job",
		"2:metric:ask,3:metric:bid,1:label:ticker",
	}
	f.Fuzz(func(t *testing.T, body []byte, format uint8) {
		url := "/api/v1/import/csv?format=" + formats[int(format)%len(formats)]
		checkVMImport(t, func(a storage.Appendable, o Options) http.Handler {
			return NewCSVImportHandler(a, o, vmformat.Limits{MaxLineBytes: 1 << 12})
		}, request{url: url, body: body})
	})
}

// TestVMImportRuns: lines of history (a series' samples in time order,
// enough of them, older than the head's partitions) go into blocks as
// history runs; the rest, and later lines of a series already written,
// through the appender; every sample reads back, counted once.
func TestVMImportRuns(t *testing.T) {
	db := openDB(t, nil)
	h := NewVMImportHandler(db, Options{Now: func() time.Time { return testNow }}, vmformat.Limits{})
	line := func(name string, t0, step int64, n int, v float64) string {
		ts, vs := make([]string, n), make([]string, n)
		for i := range n {
			ts[i] = fmt.Sprint(t0 + int64(i)*step)
			vs[i] = fmt.Sprint(v + float64(i))
		}
		return fmt.Sprintf(`{"metric":{"__name__":%q},"values":[%s],"timestamps":[%s]}`+"\n", name, strings.Join(vs, ","), strings.Join(ts, ","))
	}
	old := db.RunBound() - 30*24*3600_000
	body := line("hist", old, 1000, 500, 0) + // a run
		line("hist", old+500_000, 1000, 10, 500) + // its next line, after it: the run goes on
		line("other", old, 1000, 100, 0) + // another run
		line("hist", old+510_000, 1000, 90, 510) + // the first series again: the appender
		line("short", old, 1000, 10, 0) + // too short: the appender
		line("unsorted", old+1000, -1000, 100, 0) + // not in order: the appender
		line("recent", time.Now().UnixMilli()-100_000, 1000, 100, 0) // not history: the appender
	rec := serve(t, h, request{url: "/api/v1/import", body: []byte(body)})
	require.Equal(t, http.StatusNoContent, rec.Code, rec.Body.String())
	require.EqualValues(t, 610, db.BackfillStats().RunSamples)
	got := dump(t, db)
	require.Len(t, got[`{__name__="hist"}`], 600)
	require.Len(t, got[`{__name__="other"}`], 100)
	require.Len(t, got[`{__name__="short"}`], 10)
	require.Len(t, got[`{__name__="unsorted"}`], 100)
	require.Len(t, got[`{__name__="recent"}`], 100)
	for i, s := range got[`{__name__="hist"}`] {
		require.Equal(t, sample{old + int64(i)*1000, float64(i)}, s)
	}

	// A request cut short by a bad body stores its whole lines, runs too.
	body = line("hist2", old, 1000, 100, 0) + `{"metric":{"__name__":"x"},"values":[1],"timestamps":[`
	rec = serve(t, h, request{url: "/api/v1/import", body: []byte(body)})
	require.Equal(t, http.StatusBadRequest, rec.Code, rec.Body.String())
	require.Len(t, dump(t, db)[`{__name__="hist2"}`], 100)
}
