package server

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	config_util "github.com/prometheus/common/config"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/storage/remote"
	"github.com/stretchr/testify/require"
)

// TestAnswersCompressedOnce: the query API's answers, through the results
// cache or not, are gzipped once for a client that accepts gzip and are
// the same answer as for one that does not.
func TestAnswersCompressedOnce(t *testing.T) {
	_, srv := serveForTest(t, Options{DataDir: t.TempDir(), Logger: slog.New(slog.DiscardHandler)})
	now := time.Now().Add(-time.Minute).Truncate(time.Second).UnixMilli()
	var sb strings.Builder
	for h := range 5 {
		for i := range 120 {
			fmt.Fprintf(&sb, "cpu,hostname=host_%d usage_user=%d %d\n", h, i*h, now-int64(119-i)*10_000)
		}
	}
	postInflux(t, srv.URL, "ms", sb.String())

	fetch := func(path string, q url.Values, enc string) (*http.Response, []byte) {
		req, err := http.NewRequest(http.MethodGet, srv.URL+path+"?"+q.Encode(), nil)
		require.NoError(t, err)
		req.Header.Set("Accept-Encoding", enc) // set by hand: the client leaves the body as sent
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
		return resp, b
	}
	rng := url.Values{"query": {"cpu_usage_user"}, "start": {fmt.Sprint(now/1000 - 1200)}, "end": {fmt.Sprint(now / 1000)}, "step": {"10"}}
	inst := url.Values{"query": {"sum(cpu_usage_user)"}, "time": {fmt.Sprint(now / 1000)}}
	for _, tc := range []struct {
		path string
		q    url.Values
	}{{"/api/v1/query_range", rng}, {"/api/v1/query_range", rng}, {"/api/v1/query", inst}, {"/api/v1/labels", url.Values{}}} {
		resp, plain := fetch(tc.path, tc.q, "identity")
		require.Empty(t, resp.Header.Get("Content-Encoding"))
		require.Contains(t, string(plain), `"status":"success"`)
		resp, zipped := fetch(tc.path, tc.q, "gzip")
		if tc.path == "/api/v1/query_range" {
			require.Greater(t, len(plain), 1024)
		}
		if len(plain) < 1024 { // gzhttp's minimum
			require.Equal(t, plain, zipped, tc.path)
			continue
		}
		require.Equal(t, "gzip", resp.Header.Get("Content-Encoding"), tc.path)
		zr, err := gzip.NewReader(bytes.NewReader(zipped))
		require.NoError(t, err)
		got, err := io.ReadAll(zr)
		require.NoError(t, err)
		require.Equal(t, string(plain), string(got), "%s: gunzipped once, the same answer", tc.path)
	}

	// Remote read, streamed chunks (compressed) as Prometheus' client asks.
	u, err := url.Parse(srv.URL + "/api/v1/read")
	require.NoError(t, err)
	for _, rt := range []prompb.ReadRequest_ResponseType{prompb.ReadRequest_STREAMED_XOR_CHUNKS, prompb.ReadRequest_SAMPLES} {
		readRemote(t, u, rt, now)
	}
}

// readRemote reads what TestAnswersCompressedOnce wrote over remote read,
// as Prometheus' client does.
func readRemote(t *testing.T, u *url.URL, rt prompb.ReadRequest_ResponseType, now int64) {
	rc, err := remote.NewReadClient("test", &remote.ClientConfig{
		URL: &config_util.URL{URL: u}, Timeout: model.Duration(10 * time.Second),
		ChunkedReadLimit: 1 << 20, AcceptedResponseTypes: []prompb.ReadRequest_ResponseType{rt},
	})
	require.NoError(t, err)
	ss, err := rc.Read(t.Context(), &prompb.Query{
		StartTimestampMs: now - 1_200_000, EndTimestampMs: now,
		Matchers: []*prompb.LabelMatcher{{Type: prompb.LabelMatcher_EQ, Name: "__name__", Value: "cpu_usage_user"}},
	}, true)
	require.NoError(t, err, rt)
	series, samples := 0, 0
	for ss.Next() {
		series++
		it := ss.At().Iterator(nil)
		for it.Next() != 0 {
			samples++
		}
		require.NoError(t, it.Err())
	}
	require.NoError(t, ss.Err())
	require.Equal(t, 5, series, rt)
	require.Equal(t, 5*120, samples, rt)
}
