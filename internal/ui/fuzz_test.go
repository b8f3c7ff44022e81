package ui

import (
	"bytes"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzHandler: any path, method and headers (outside input) is answered
// without a panic; a 200 comes only for a route (index.html) or an asset's
// exact name, with that file's bytes (invariants 1 and 2); answers are
// deterministic.
func FuzzHandler(f *testing.F) {
	for _, seed := range [][4]string{
		{"GET", "/", "gzip", ""},
		{"GET", "/query", "br, gzip;q=0", `"x"`},
		{"HEAD", "/assets/../index.html", "*", "*"},
		{"GET", "/assets/%2e%2e/ui.go", "gzip;q=0.5", `W/"abc", "def"`},
		{"POST", "/status", "", ""},
		{"GET", "/api/v1/query", "identity", ""},
	} {
		f.Add(seed[0], seed[1], seed[2], seed[3])
	}
	h, err := load()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, method, path, acceptEncoding, ifNoneMatch string) {
		if !validMethod(method) {
			return
		}
		serve := func() *httptest.ResponseRecorder {
			req, err := http.NewRequest(method, "http://aerie/", nil)
			if err != nil {
				t.Skip()
			}
			req.URL.Path = path // as the mux would hand it over, unescaped
			req.Header.Set("Accept-Encoding", acceptEncoding)
			req.Header.Set("If-None-Match", ifNoneMatch)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			return rec
		}
		a, b := serve(), serve()
		if a.Code != b.Code || !bytes.Equal(a.Body.Bytes(), b.Body.Bytes()) {
			t.Fatalf("%s %q: two answers differ", method, path)
		}
		if a.Code != http.StatusOK || method == http.MethodHead || a.Header().Get("Content-Encoding") == "gzip" {
			return
		}
		name := "dist/index.html"
		if !isRoute(path) {
			asset, ok := strings.CutPrefix(path, assetPrefix)
			if !ok || h.assets[asset] == nil {
				t.Fatalf("%s %q: 200 for a path that is neither a route nor an asset", method, path)
			}
			name = "dist/assets/" + asset
		}
		want, err := fs.ReadFile(dist, name)
		if err != nil || !bytes.Equal(want, a.Body.Bytes()) {
			t.Fatalf("%s %q: body is not %s", method, path, name)
		}
	})
}

func validMethod(m string) bool {
	if m == "" {
		return false
	}
	for _, c := range m {
		if c <= ' ' || c >= 0x7f || strings.ContainsRune("()<>@,;:\\\"/[]?={}", c) {
			return false
		}
	}
	return true
}
