package ui

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"io/fs"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func serve(t *testing.T, method, path string, hdr map[string]string) *http.Response {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/api/v1/", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("api")) })
	require.NoError(t, Register(mux, func(h http.Handler) http.Handler { return h }))
	req := httptest.NewRequest(method, path, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, req)
	return rec.Result()
}

func body(t *testing.T, r *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(r.Body)
	require.NoError(t, err)
	return string(b)
}

// The assets index.html loads.
func indexAssets(t *testing.T) []string {
	t.Helper()
	index, err := fs.ReadFile(dist, "dist/index.html")
	require.NoError(t, err)
	m := regexp.MustCompile(`(?:src|href)="(/assets/[^"]+)"`).FindAllStringSubmatch(string(index), -1)
	require.Len(t, m, 2, "index.html loads one script and one stylesheet")
	return []string{m[0][1], m[1][1]}
}

// TestUIRoutes checks invariant 1 (only the UI's own paths), 2 (nothing
// outside the bundle) and 4 (caching).
func TestUIRoutes(t *testing.T) {
	for _, p := range routes {
		r := serve(t, "GET", p, nil)
		require.Equal(t, 200, r.StatusCode, p)
		require.Equal(t, "text/html; charset=utf-8", r.Header.Get("Content-Type"))
		require.Equal(t, "no-cache", r.Header.Get("Cache-Control"))
		require.Contains(t, r.Header.Get("Content-Security-Policy"), "connect-src 'self'")
		require.Contains(t, body(t, r), `<script type="module" src="/assets/app-`)
	}
	// The router in web/src/main.ts knows the same pages.
	mainTS, err := os.ReadFile("../../web/src/main.ts")
	require.NoError(t, err)
	for _, p := range routes[1:] {
		require.Contains(t, string(mainTS), `'`+p+`': {`, "route %s in main.ts", p)
	}

	for _, a := range indexAssets(t) {
		r := serve(t, "GET", a, nil)
		require.Equal(t, 200, r.StatusCode, a)
		want := map[bool]string{true: "text/javascript; charset=utf-8", false: "text/css; charset=utf-8"}[strings.HasSuffix(a, ".js")]
		require.Equal(t, want, r.Header.Get("Content-Type"), a)
		require.Equal(t, "public, max-age=31536000, immutable", r.Header.Get("Cache-Control"))
		plain := body(t, r)
		etag := r.Header.Get("ETag")
		require.NotEmpty(t, etag)

		r = serve(t, "GET", a, map[string]string{"Accept-Encoding": "br, gzip;q=0.8"})
		require.Equal(t, "gzip", r.Header.Get("Content-Encoding"), a)
		require.NotEqual(t, etag, r.Header.Get("ETag"), "the gzipped body has its own ETag")
		zr, err := gzip.NewReader(r.Body)
		require.NoError(t, err)
		unzipped, err := io.ReadAll(zr)
		require.NoError(t, err)
		require.Equal(t, plain, string(unzipped))

		r = serve(t, "GET", a, map[string]string{"Accept-Encoding": "gzip;q=0"})
		require.Empty(t, r.Header.Get("Content-Encoding"))
		r = serve(t, "GET", a, map[string]string{"If-None-Match": etag})
		require.Equal(t, http.StatusNotModified, r.StatusCode)
		require.Empty(t, body(t, r))
		r = serve(t, "HEAD", a, nil)
		require.Equal(t, 200, r.StatusCode)
		require.Empty(t, body(t, r))
	}

	for _, p := range []string{
		"/api/v2/nothing", "/api/nothing", "/assets/", "/assets/nope.js", "/assets/../index.html",
		"/assets/..%2findex.html", "/assets/%2e%2e/ui.go", "/query/x", "/index.html", "/pages.json",
		"/assets//etc/passwd", "/dist/index.html", "/ui.go",
	} {
		r := serve(t, "GET", p, nil)
		require.Contains(t, []int{404, 301, 307}, r.StatusCode, p)
		require.NotContains(t, body(t, r), "<html", p)
	}
	require.Equal(t, "api", body(t, serve(t, "GET", "/api/v1/query", nil)), "the API keeps its paths")
	require.Equal(t, http.StatusMethodNotAllowed, serve(t, "POST", "/query", nil).StatusCode)
}

func TestAcceptsGzip(t *testing.T) {
	for h, want := range map[string]bool{
		"": false, "gzip": true, "GZIP": true, "br, gzip": true, "gzip;q=0": false, "gzip; q=0.000": false,
		"gzip;q=0.5": true, "*": true, "deflate": false, "x-gzip2": false,
	} {
		require.Equal(t, want, acceptsGzip(h), h)
	}
}

// TestBundleSize checks invariant 5 and logs every page's size, raw and
// gzipped as served (docs/ui.md quotes these numbers).
func TestBundleSize(t *testing.T) {
	const limit = 300 << 10
	raw, err := fs.ReadFile(dist, "dist/pages.json")
	require.NoError(t, err)
	var pages map[string][]string
	require.NoError(t, json.Unmarshal(raw, &pages))
	require.Contains(t, pages, "query")
	for _, name := range slices.Sorted(maps.Keys(pages)) {
		var rawSum, gzSum int
		for _, f := range pages[name] {
			b, err := fs.ReadFile(dist, "dist/"+f)
			require.NoError(t, err, f)
			rawSum += len(b)
			var zb bytes.Buffer
			zw, _ := gzip.NewWriterLevel(&zb, gzip.BestCompression)
			zw.Write(b)
			zw.Close()
			gzSum += min(zb.Len(), len(b))
		}
		t.Logf("page %-8s %4d files  %7d B raw  %7d B gzipped", name, len(pages[name]), rawSum, gzSum)
		require.Less(t, gzSum, limit, "page %s over 300 KB gzipped", name)
	}
}
