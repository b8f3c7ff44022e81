package api

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"testing"

	"github.com/klauspost/compress/snappy"
	"github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
	"github.com/prometheus/prometheus/storage/remote"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/stretchr/testify/require"

	"github.com/aerie-db/aerie/internal/tsdb"
)

type marshaler interface{ Marshal() ([]byte, error) }

// post sends a snappy-compressed protobuf message as Prometheus' remote
// write and read clients do.
func postProto(t testing.TB, h http.Handler, path, contentType, version string, m marshaler) *http.Response {
	t.Helper()
	b, err := m.Marshal()
	require.NoError(t, err)
	req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(snappy.Encode(nil, b)))
	req.Header.Set("Content-Encoding", "snappy")
	req.Header.Set("Content-Type", contentType)
	if path == "/api/v1/write" {
		req.Header.Set("X-Prometheus-Remote-Write-Version", version)
	} else {
		req.Header.Set("X-Prometheus-Remote-Read-Version", version)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Result()
}

func body(t testing.TB, r *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(r.Body)
	require.NoError(t, err)
	return string(b)
}

func writeV1(t testing.TB, h http.Handler, req *prompb.WriteRequest) *http.Response {
	return postProto(t, h, "/api/v1/write", "application/x-protobuf", "0.1.0", req)
}

func writeV2(t testing.TB, h http.Handler, req *writev2.Request) *http.Response {
	return postProto(t, h, "/api/v1/write", "application/x-protobuf;proto=io.prometheus.write.v2.Request", "2.0.0", req)
}

func promLabels(kv ...string) []prompb.Label {
	var out []prompb.Label
	for i := 0; i < len(kv); i += 2 {
		out = append(out, prompb.Label{Name: kv[i], Value: kv[i+1]})
	}
	return out
}

// TestRemoteWriteV1 sends remote write 1.0 requests to Aerie and to
// Prometheus: both answer 204 and store the samples, and, with Aerie's
// backfill off, both answer an out-of-bounds sample with the same 400.
// With the backfill on (the default) Aerie stores it.
func TestRemoteWriteV1(t *testing.T) {
	_, aerie := newAerie(t, Options{}, tsdb.Options{NoBackfill: true})
	_, prom := newProm(t, Options{})
	req := &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{
		{Labels: promLabels("__name__", "rw_total", "job", "edge", "instance", "e1"), Samples: []prompb.Sample{{Value: 1, Timestamp: base}, {Value: 2, Timestamp: base + 15000}}},
		{Labels: promLabels("__name__", "rw_total", "job", "edge", "instance", "e2"), Samples: []prompb.Sample{{Value: 10, Timestamp: base + 15000}}},
	}}
	for name, h := range map[string]http.Handler{"aerie": aerie, "prometheus": prom} {
		resp := writeV1(t, h, req)
		require.Equal(t, http.StatusNoContent, resp.StatusCode, "%s: %s", name, body(t, resp))
	}
	want := `{"status":"success","data":{"resultType":"vector","result":[` +
		`{"metric":{"__name__":"rw_total","instance":"e1","job":"edge"},"value":[1700000015,"2"]},` +
		`{"metric":{"__name__":"rw_total","instance":"e2","job":"edge"},"value":[1700000015,"10"]}]}}`
	_, got := do(t, aerie, http.MethodGet, "/api/v1/query", vals("query", "rw_total", "time", "1700000015"))
	require.Equal(t, want, string(got))
	_, got = do(t, prom, http.MethodGet, "/api/v1/query", vals("query", "rw_total", "time", "1700000015"))
	require.Equal(t, want, string(got))

	// Two hours behind the head: out of bounds, for a new series too.
	oob := &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{
		{Labels: promLabels("__name__", "rw_total", "job", "edge", "instance", "e3"), Samples: []prompb.Sample{{Value: 1, Timestamp: base - 2*3600*1000}}},
	}}
	ar, pr := writeV1(t, aerie, oob), writeV1(t, prom, oob)
	ab, pb := body(t, ar), body(t, pr)
	require.Equal(t, http.StatusBadRequest, pr.StatusCode, pb)
	require.Equal(t, pr.StatusCode, ar.StatusCode, ab)
	require.Equal(t, pb, ab)
	require.Contains(t, ab, "out of bounds")

	_, backfill := newAerie(t, Options{}, tsdb.Options{Retention: 24 * 3600 * 1000})
	require.Equal(t, http.StatusNoContent, writeV1(t, backfill, req).StatusCode)
	resp := writeV1(t, backfill, oob)
	require.Equal(t, http.StatusNoContent, resp.StatusCode, body(t, resp))
	_, got = do(t, backfill, http.MethodGet, "/api/v1/query", vals("query", `rw_total{instance="e3"}`, "time", fmt.Sprint((base-2*3600*1000)/1000)))
	require.Contains(t, string(got), `"value":[1699992800,"1"]`, "backfilled")
	old := &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{
		{Labels: promLabels("__name__", "rw_total", "job", "edge", "instance", "e3"), Samples: []prompb.Sample{{Value: 1, Timestamp: base - 25*3600*1000}}},
	}}
	resp = writeV1(t, backfill, old)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	require.Contains(t, body(t, resp), "too_old_for_retention")

	// Not snappy: 400 too.
	r := httptest.NewRequest(http.MethodPost, "/api/v1/write", bytes.NewReader([]byte("nope")))
	r.Header.Set("Content-Encoding", "snappy")
	r.Header.Set("Content-Type", "application/x-protobuf")
	rec := httptest.NewRecorder()
	aerie.ServeHTTP(rec, r)
	require.Equal(t, http.StatusBadRequest, rec.Code)
}

// TestRemoteWriteV2 sends a remote write 2.0 request with metadata.
func TestRemoteWriteV2(t *testing.T) {
	db, aerie := newAerie(t, Options{}, tsdb.Options{NoBackfill: true})
	_, prom := newProm(t, Options{})
	st := writev2.NewSymbolTable()
	series := func(v float64, ts int64, kv ...string) writev2.TimeSeries {
		return writev2.TimeSeries{
			LabelsRefs: st.SymbolizeLabels(labels.FromStrings(kv...), nil),
			Samples:    []writev2.Sample{{Value: v, Timestamp: ts}},
			Metadata: writev2.Metadata{
				Type:    writev2.Metadata_METRIC_TYPE_COUNTER,
				HelpRef: st.Symbolize("Requests served."),
				UnitRef: st.Symbolize(""),
			},
		}
	}
	req := &writev2.Request{Timeseries: []writev2.TimeSeries{
		series(5, base, "__name__", "v2_requests_total", "job", "edge", "instance", "e1"),
		series(7, base+15000, "__name__", "v2_requests_total", "job", "edge", "instance", "e1"),
		series(3, base+15000, "__name__", "v2_requests_total", "job", "edge", "instance", "e2"),
	}}
	req.Symbols = st.Symbols()
	for name, h := range map[string]http.Handler{"aerie": aerie, "prometheus": prom} {
		resp := writeV2(t, h, req)
		require.Equal(t, http.StatusNoContent, resp.StatusCode, "%s: %s", name, body(t, resp))
		require.Equal(t, "3", resp.Header.Get("X-Prometheus-Remote-Write-Samples-Written"), name)
	}
	want := `{"status":"success","data":{"resultType":"vector","result":[` +
		`{"metric":{"__name__":"v2_requests_total","instance":"e1","job":"edge"},"value":[1700000015,"7"]},` +
		`{"metric":{"__name__":"v2_requests_total","instance":"e2","job":"edge"},"value":[1700000015,"3"]}]}}`
	_, got := do(t, aerie, http.MethodGet, "/api/v1/query", vals("query", "v2_requests_total", "time", "1700000015"))
	require.Equal(t, want, string(got))
	_, got = do(t, prom, http.MethodGet, "/api/v1/query", vals("query", "v2_requests_total", "time", "1700000015"))
	require.Equal(t, want, string(got))

	md, ok := db.Metadata("v2_requests_total")
	require.True(t, ok)
	require.Equal(t, "Requests served.", md.Help)
	_, got = do(t, aerie, http.MethodGet, "/api/v1/metadata", vals("metric", "v2_requests_total"))
	require.Equal(t, `{"status":"success","data":{"v2_requests_total":[{"type":"counter","unit":"","help":"Requests served."}]}}`, string(got))

	// An out-of-bounds sample: 400 as Prometheus, the rest written.
	st.Reset()
	req = &writev2.Request{Timeseries: []writev2.TimeSeries{
		series(1, base-2*3600*1000, "__name__", "v2_requests_total", "job", "edge", "instance", "e9"),
		series(9, base+30000, "__name__", "v2_requests_total", "job", "edge", "instance", "e1"),
	}}
	req.Symbols = st.Symbols()
	ar, pr := writeV2(t, aerie, req), writeV2(t, prom, req)
	ab, pb := body(t, ar), body(t, pr)
	require.Equal(t, http.StatusBadRequest, pr.StatusCode, pb)
	require.Equal(t, pr.StatusCode, ar.StatusCode, ab)
	require.Equal(t, pb, ab)
	require.Equal(t, pr.Header.Get("X-Prometheus-Remote-Write-Samples-Written"), ar.Header.Get("X-Prometheus-Remote-Write-Samples-Written"))
	_, got = do(t, aerie, http.MethodGet, "/api/v1/query", vals("query", "v2_requests_total", "time", "1700000030"))
	require.Contains(t, string(got), `"value":[1700000030,"9"]`)
}

func TestRemoteWriteDisabled(t *testing.T) {
	_, h := newAerie(t, Options{DisableRemoteWrite: true})
	resp := writeV1(t, h, &prompb.WriteRequest{})
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
}

func readRequest(rt prompb.ReadRequest_ResponseType) *prompb.ReadRequest {
	return &prompb.ReadRequest{
		Queries: []*prompb.Query{{
			StartTimestampMs: base,
			EndTimestampMs:   at(steps - 1),
			Matchers: []*prompb.LabelMatcher{
				{Type: prompb.LabelMatcher_EQ, Name: "__name__", Value: "http_requests_total"},
				{Type: prompb.LabelMatcher_EQ, Name: "code", Value: "500"},
			},
		}},
		AcceptedResponseTypes: []prompb.ReadRequest_ResponseType{rt},
	}
}

// TestRemoteRead reads the data set back through remote read, sampled
// and streamed (Aerie's series re-encoded as XOR chunks), and compares
// with Prometheus.
func TestRemoteRead(t *testing.T) {
	ext := func() config.Config {
		c := config.DefaultConfig
		c.GlobalConfig.ExternalLabels = labels.FromStrings("replica", "r1")
		return c
	}
	adb, aerie := newAerie(t, Options{Config: ext})
	pdb, prom := newProm(t, Options{Config: ext})
	ss := dataset()
	write(t, adb, ss)
	write(t, pdb, ss)

	sampled := func(h http.Handler) *prompb.ReadResponse {
		resp := postProto(t, h, "/api/v1/read", "application/x-protobuf", "0.1.0", readRequest(prompb.ReadRequest_SAMPLES))
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Equal(t, "snappy", resp.Header.Get("Content-Encoding"))
		raw, err := snappy.Decode(nil, []byte(body(t, resp)))
		require.NoError(t, err)
		var rr prompb.ReadResponse
		require.NoError(t, rr.Unmarshal(raw))
		return &rr
	}
	// Prometheus selects unsorted for sampled responses (its head answers
	// in series creation order), Aerie sorted: compare series by labels.
	ar, pr := sampled(aerie), sampled(prom)
	require.Len(t, pr.Results, 1)
	less := func(ts []*prompb.TimeSeries) func(i, j int) bool {
		return func(i, j int) bool {
			return labels.Compare(labels.New(prompbLabels(ts[i].Labels)...), labels.New(prompbLabels(ts[j].Labels)...)) < 0
		}
	}
	require.True(t, sort.SliceIsSorted(ar.Results[0].Timeseries, less(ar.Results[0].Timeseries)), "Aerie's series are sorted")
	sort.Slice(pr.Results[0].Timeseries, less(pr.Results[0].Timeseries))
	pb, err := pr.Marshal()
	require.NoError(t, err)
	ab, err := ar.Marshal()
	require.NoError(t, err)
	require.Equal(t, pb, ab, "sampled remote read differs from Prometheus")
	require.Len(t, ar.Results, 1)
	require.Len(t, ar.Results[0].Timeseries, 4)
	for _, ts := range ar.Results[0].Timeseries {
		require.Len(t, ts.Samples, steps)
		require.Contains(t, ts.Labels, prompb.Label{Name: "replica", Value: "r1"})
	}
	first := ar.Results[0].Timeseries[0]
	require.Equal(t, promLabels("__name__", "http_requests_total", "code", "500", "instance", "a:9090", "job", "api", "method", "GET", "replica", "r1"), first.Labels)
	require.Equal(t, prompb.Sample{Value: 239 * 12, Timestamp: at(239)}, first.Samples[239])

	// Streamed: decode the chunks and compare samples with Prometheus'.
	streamed := func(h http.Handler) map[string][]prompb.Sample {
		resp := postProto(t, h, "/api/v1/read", "application/x-protobuf", "0.1.0", readRequest(prompb.ReadRequest_STREAMED_XOR_CHUNKS))
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Equal(t, "application/x-streamed-protobuf; proto=prometheus.ChunkedReadResponse", resp.Header.Get("Content-Type"))
		out := map[string][]prompb.Sample{}
		cr := remote.NewChunkedReader(resp.Body, config.DefaultChunkedReadLimit, nil)
		for {
			var msg prompb.ChunkedReadResponse
			err := cr.NextProto(&msg)
			if err == io.EOF {
				break
			}
			require.NoError(t, err)
			for _, s := range msg.ChunkedSeries {
				key := labels.New(prompbLabels(s.Labels)...).String()
				for _, c := range s.Chunks {
					require.Equal(t, prompb.Chunk_XOR, c.Type)
					ch, err := chunkenc.FromData(chunkenc.EncXOR, c.Data)
					require.NoError(t, err)
					it := ch.Iterator(nil)
					for it.Next() == chunkenc.ValFloat {
						ts, v := it.At()
						out[key] = append(out[key], prompb.Sample{Timestamp: ts, Value: v})
					}
					require.NoError(t, it.Err())
				}
			}
		}
		return out
	}
	as, ps := streamed(aerie), streamed(prom)
	require.Len(t, as, 4)
	require.Equal(t, ps, as)
}

func prompbLabels(ls []prompb.Label) []labels.Label {
	out := make([]labels.Label, len(ls))
	for i, l := range ls {
		out[i] = labels.Label{Name: l.Name, Value: l.Value}
	}
	return out
}

// TestConcurrent runs remote writes (with metadata), queries, metadata
// and TSDB status requests at once, for the race detector.
func TestConcurrent(t *testing.T) {
	_, h := newAerie(t, Options{})
	const writers, rounds = 3, 20
	done := make(chan struct{})
	errs := make(chan string, 64)
	for w := range writers {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range rounds {
				st := writev2.NewSymbolTable()
				req := &writev2.Request{Timeseries: []writev2.TimeSeries{{
					LabelsRefs: st.SymbolizeLabels(labels.FromStrings("__name__", "c_total", "job", "j", "instance", string(rune('a'+w))), nil),
					Samples:    []writev2.Sample{{Value: float64(i), Timestamp: base + int64(i)*1000}},
					Metadata:   writev2.Metadata{Type: writev2.Metadata_METRIC_TYPE_COUNTER, HelpRef: st.Symbolize("help")},
				}}}
				req.Symbols = st.Symbols()
				if r := writeV2(t, h, req); r.StatusCode != http.StatusNoContent {
					errs <- body(t, r)
				}
			}
		}()
	}
	for range 2 {
		go func() {
			defer func() { done <- struct{}{} }()
			for range rounds {
				for _, p := range []string{"/api/v1/query", "/api/v1/metadata", "/api/v1/status/tsdb", "/api/v1/series"} {
					code, b := do(t, h, http.MethodGet, p, vals("query", "sum(c_total)", "time", sec(base+20000), "match[]", "c_total"))
					if code != http.StatusOK {
						errs <- p + ": " + string(b)
					}
				}
			}
		}()
	}
	for range writers + 2 {
		<-done
	}
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	data := ok(t, h, http.MethodGet, "/api/v1/query", vals("query", "count(c_total)", "time", sec(base+20000)))
	require.Contains(t, string(data), `"value":[1700000020,"3"]`)
}
