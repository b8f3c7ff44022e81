package api

import (
	"bytes"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/stretchr/testify/require"

	"github.com/aerie-db/aerie/internal/ingest"
	"github.com/aerie-db/aerie/internal/tsdb"
	"github.com/aerie-db/aerie/internal/vmformat"
)

func TestExport(t *testing.T) {
	db := openAerie(t)
	stale := math.Float64frombits(value.StaleNaN)
	write(t, db, []sample{
		{labels.FromStrings("__name__", "up", "job", "a", "instance", "x,y"), 1000, 1},
		{labels.FromStrings("__name__", "up", "job", "b"), 1000, 0},
		{labels.FromStrings("__name__", "up", "job", "a", "instance", "x,y"), 2000, stale},
		{labels.FromStrings("__name__", "up", "job", "b"), 2000, math.Inf(-1)},
		{labels.FromStrings("__name__", "up", "job", "b"), 3000, math.NaN()},
		{labels.FromStrings("__name__", "temp", "job", "b"), 3000, -0.5},
	})
	json := NewExportHandler(db, ExportOptions{})
	csv := NewCSVExportHandler(db, ExportOptions{})
	const (
		upA  = `{"metric":{"__name__":"up","instance":"x,y","job":"a"},"values":[1,"StaleNaN"],"timestamps":[1000,2000]}` + "\n"
		upB  = `{"metric":{"__name__":"up","job":"b"},"values":[0,"-Infinity",null],"timestamps":[1000,2000,3000]}` + "\n"
		temp = `{"metric":{"__name__":"temp","job":"b"},"values":[-0.5],"timestamps":[3000]}` + "\n"
	)
	for _, tc := range []struct {
		name   string
		h      http.Handler
		method string // [GET]
		params url.Values
		status int
		want   string
	}{
		{"one selector", json, "", vals("match[]", "up"), http.StatusOK, upA + upB},
		{"two selectors, overlapping, by POST", json, http.MethodPost, vals("match[]", `{job="b"}`, "match[]", `up{job="b"}`), http.StatusOK, temp + upB},
		{"start and end", json, "", vals("match[]", "up", "start", "1.5", "end", "1970-01-01T00:00:02Z"), http.StatusOK,
			`{"metric":{"__name__":"up","instance":"x,y","job":"a"},"values":["StaleNaN"],"timestamps":[2000]}` + "\n" +
				`{"metric":{"__name__":"up","job":"b"},"values":["-Infinity"],"timestamps":[2000]}` + "\n"},
		{"max_rows_per_line", json, "", vals("match[]", `up{job="b"}`, "max_rows_per_line", "2"), http.StatusOK,
			`{"metric":{"__name__":"up","job":"b"},"values":[0,"-Infinity"],"timestamps":[1000,2000]}` + "\n" +
				`{"metric":{"__name__":"up","job":"b"},"values":[null],"timestamps":[3000]}` + "\n"},
		{"nothing matches", json, "", vals("match[]", "nope"), http.StatusOK, ""},
		{"CSV", csv, "", vals("match[]", "up", "format", "__name__,__value__,__timestamp__:unix_s,instance,job"), http.StatusOK,
			"up,1,1,\"x,y\",a\nup,StaleNaN,2,\"x,y\",a\nup,0,1,,b\nup,-Inf,2,,b\nup,NaN,3,,b\n"},
		{"no match[]", json, "", nil, http.StatusBadRequest, `{"status":"error","errorType":"bad_data","error":"no match[] parameter: give at least one series selector, e.g. match[]={job=\"node\"}"}` + "\n"},
		{"bad selector", json, "", vals("match[]", "{}"), http.StatusBadRequest, ""},
		{"bad start", json, "", vals("match[]", "up", "start", "yesterday"), http.StatusBadRequest,
			`{"status":"error","errorType":"bad_data","error":"start: \"yesterday\" is neither Unix seconds nor RFC 3339"}` + "\n"},
		{"end before start", json, "", vals("match[]", "up", "start", "2", "end", "1"), http.StatusBadRequest, ""},
		{"CSV without format", csv, "", vals("match[]", "up"), http.StatusBadRequest, ""},
		{"CSV with a bad format", csv, "", vals("match[]", "up", "format", "__timestamp__:x"), http.StatusBadRequest, ""},
		{"method", json, http.MethodPut, vals("match[]", "up"), http.StatusMethodNotAllowed, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			method := tc.method
			if method == "" {
				method = http.MethodGet
			}
			code, body := do(t, tc.h, method, "/api/v1/export", tc.params)
			require.Equal(t, tc.status, code, "%s", body)
			if tc.want != "" || code == http.StatusOK {
				require.Equal(t, tc.want, string(body))
			}
		})
	}
}

func TestExportGzip(t *testing.T) {
	db := openAerie(t)
	write(t, db, dataset())
	h := NewExportHandler(db, ExportOptions{})
	_, plain := do(t, h, http.MethodGet, "/api/v1/export", vals("match[]", `{__name__=~".+"}`))
	require.Greater(t, len(plain), 64<<10, "the export spans several buffer flushes")
	for _, ae := range []string{"gzip", "br, gzip;q=0.5", "*"} {
		req := httptest.NewRequest(http.MethodGet, "/api/v1/export?match[]="+url.QueryEscape(`{__name__=~".+"}`), nil)
		req.Header.Set("Accept-Encoding", ae)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		require.Equal(t, http.StatusOK, rec.Code)
		require.Equal(t, "gzip", rec.Header().Get("Content-Encoding"), ae)
		zr, err := gzip.NewReader(rec.Body)
		require.NoError(t, err)
		got, err := io.ReadAll(zr)
		require.NoError(t, err)
		require.Equal(t, string(plain), string(got))
	}
	for _, ae := range []string{"", "identity", "gzip;q=0", "br"} {
		require.False(t, acceptsGzip(ae), ae)
	}
}

// exportAll exports every series of h as JSON lines.
func exportAll(t *testing.T, h http.Handler) []byte {
	t.Helper()
	code, body := do(t, h, http.MethodGet, "/api/v1/export", vals("match[]", `{__name__=~".+"}`))
	require.Equal(t, http.StatusOK, code, "%s", body)
	return body
}

// importBody posts a body to an import handler and wants a 204.
func importBody(t *testing.T, h http.Handler, url string, body []byte) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, url, bytes.NewReader(body)))
	require.Equal(t, http.StatusNoContent, rec.Code, "%s", rec.Body.String())
}

// roundTripData is an hour of dataset() plus values only a bit-exact
// store keeps: NaN payloads, stale markers in the middle of a series, -0,
// ±Inf and the extremes of float64.
func roundTripData() []sample {
	ss := dataset()
	specials := []float64{
		math.Float64frombits(value.StaleNaN), math.Float64frombits(0x7ff8000000000abc), math.Float64frombits(0xfff8000000000001),
		math.NaN(), math.Copysign(0, -1), math.Inf(1), math.Inf(-1), math.MaxFloat64, math.SmallestNonzeroFloat64, 1e21, 1e-7,
	}
	for i := range steps {
		ss = append(ss, sample{labels.FromStrings("__name__", "special", "job", "x", "quote", "a\"b,c\nd"), at(i), specials[i%len(specials)]})
	}
	slices.SortStableFunc(ss, func(a, b sample) int { return int(a.t - b.t) })
	return ss
}

// Data written into Aerie (half flushed to a block, half in the head),
// exported, imported into an empty Aerie and exported again gives the
// same bytes: every value, NaN payloads and stale markers included, is
// kept bit for bit. The same through CSV.
func TestExportImportRoundTrip(t *testing.T) {
	// Partitions of 30 min; the data before a partition boundary go into
	// blocks, the rest stays in the head (appends below the newest block
	// are refused by an engine without backfill).
	const partition = int64(30 * 60_000)
	src, err := tsdb.Open(t.TempDir(), &tsdb.Options{FlushCheckInterval: -1, PartitionRange: partition})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, src.Close()) })
	data := roundTripData()
	boundary := (at(steps/2)/partition + 1) * partition
	half := slices.IndexFunc(data, func(s sample) bool { return s.t >= boundary })
	write(t, src, data[:half])
	require.NoError(t, src.FlushHead())
	write(t, src, data[half:])
	require.NotEmpty(t, src.Blocks())
	require.Positive(t, src.Head().NumSeries())
	srcExport := NewExportHandler(src, ExportOptions{})
	first := exportAll(t, srcExport)
	require.Equal(t, first, exportAll(t, srcExport), "export is not deterministic")
	require.Contains(t, string(first), `"StaleNaN"`)
	require.Contains(t, string(first), `"NaN:0x7ff8000000000abc"`)
	require.Equal(t, len(data), countExported(t, first), "every sample is in the export")

	t.Run("JSON lines", func(t *testing.T) {
		dst := openAerie(t)
		importBody(t, ingest.NewVMImportHandler(dst, ingest.Options{}, vmformat.Limits{}), "/api/v1/import", first)
		second := exportAll(t, NewExportHandler(dst, ExportOptions{}))
		require.Equal(t, string(first), string(second))
	})

	t.Run("CSV", func(t *testing.T) {
		names := map[string]bool{}
		for _, s := range data {
			s.l.Range(func(l labels.Label) { names[l.Name] = true })
		}
		delete(names, labels.MetricName)
		fields := []string{"__name__", "__value__", "__timestamp__:unix_ms"}
		spec := []string{"1:label:__name__", "2:metric:unnamed", "3:time:unix_ms"}
		for _, n := range slices.Sorted(func(yield func(string) bool) {
			for n := range names {
				if !yield(n) {
					return
				}
			}
		}) {
			fields = append(fields, n)
			spec = append(spec, strconv.Itoa(len(fields))+":label:"+n)
		}
		code, csvBody := do(t, NewCSVExportHandler(src, ExportOptions{}), http.MethodGet, "/api/v1/export/csv",
			vals("match[]", `{__name__=~".+"}`, "format", strings.Join(fields, ",")))
		require.Equal(t, http.StatusOK, code, "%s", csvBody)

		dst := openAerie(t)
		importBody(t, ingest.NewCSVImportHandler(dst, ingest.Options{}, vmformat.Limits{}),
			"/api/v1/import/csv?format="+url.QueryEscape(strings.Join(spec, ",")), csvBody)
		require.Equal(t, string(first), string(exportAll(t, NewExportHandler(dst, ExportOptions{}))))
	})
}

// countExported counts the samples of a JSON lines export.
func countExported(t *testing.T, body []byte) int {
	t.Helper()
	d := vmformat.NewJSONDecoder(bytes.NewReader(body), vmformat.Limits{})
	n := 0
	for d.Next() {
		require.NoError(t, d.LineErr())
		n += len(d.Series().Timestamps)
	}
	require.NoError(t, d.Err())
	return n
}
