package ui

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/http"
	"path"
	"strconv"
	"strings"
	"sync"
)

//go:embed dist
var dist embed.FS

// routes are the client-side routes: each answers index.html and the
// script picks the page from the path (web/src/main.ts). Kept in step with
// the pages table there; TestUIRoutes checks both.
var routes = []string{"/", "/query", "/explore", "/sensors", "/graphite", "/cache", "/bucket", "/status"}

// assetPrefix is where the bundle's files are served; their names carry a
// content hash (web/build.mjs), so they can be cached for good.
const assetPrefix = "/assets/"

// csp lets the page load and call nothing but its own origin: everything
// is embedded (invariant 3). CodeMirror injects <style> elements, hence
// 'unsafe-inline' for styles only.
const csp = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

type file struct {
	body        []byte
	contentType string
	etag        string // strong, of body
	cache       string // Cache-Control

	gzOnce sync.Once
	gz     []byte // nil when compressing does not pay
}

// gzipped compresses the file once, on first request.
func (f *file) gzipped() []byte {
	f.gzOnce.Do(func() {
		var b bytes.Buffer
		w, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
		w.Write(f.body)
		w.Close()
		if b.Len() < len(f.body) {
			f.gz = b.Bytes()
		}
	})
	return f.gz
}

// handler serves index.html for routes and the files under dist/assets.
type handler struct {
	index  *file
	assets map[string]*file // by name under /assets/
}

var (
	buildOnce sync.Once
	built     *handler
	buildErr  error
)

// load builds the handler from the embedded bundle, once. It answers GET
// and HEAD for routes and /assets/*, and 404 for every other path.
func load() (*handler, error) {
	buildOnce.Do(func() { built, buildErr = newHandler(dist) })
	return built, buildErr
}

// Register mounts the UI on mux: GET (and HEAD) of each of routes and of
// /assets/. Only those patterns: the mux keeps answering its own 404 and
// 405 for every other path and method, as before the UI existed.
func Register(mux *http.ServeMux, wrap func(http.Handler) http.Handler) error {
	h, err := load()
	if err != nil {
		return err
	}
	hh := wrap(h)
	for _, r := range routes {
		if r == "/" {
			r = "/{$}"
		}
		mux.Handle("GET "+r, hh)
	}
	mux.Handle("GET "+assetPrefix, hh)
	return nil
}

func newHandler(fsys fs.FS) (*handler, error) {
	h := &handler{assets: map[string]*file{}}
	body, err := fs.ReadFile(fsys, "dist/index.html")
	if err != nil {
		return nil, fmt.Errorf("ui: the bundle has no index.html (run web/build.mjs): %w", err)
	}
	h.index = newFile("index.html", body, "no-cache")
	entries, err := fs.ReadDir(fsys, "dist/assets")
	if err != nil {
		return nil, fmt.Errorf("ui: read the bundle's assets: %w", err)
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		body, err := fs.ReadFile(fsys, "dist/assets/"+e.Name())
		if err != nil {
			return nil, fmt.Errorf("ui: read asset %s: %w", e.Name(), err)
		}
		h.assets[e.Name()] = newFile(e.Name(), body, "public, max-age=31536000, immutable")
	}
	return h, nil
}

func newFile(name string, body []byte, cache string) *file {
	sum := sha256.Sum256(body)
	return &file{body: body, contentType: contentType(name), etag: `"` + hex.EncodeToString(sum[:12]) + `"`, cache: cache}
}

// contentType is a fixed table rather than mime.TypeByExtension, whose
// answers depend on the host's mime.types files.
func contentType(name string) string {
	switch path.Ext(name) {
	case ".html":
		return "text/html; charset=utf-8"
	case ".js", ".mjs":
		return "text/javascript; charset=utf-8"
	case ".css":
		return "text/css; charset=utf-8"
	case ".json":
		return "application/json"
	case ".svg":
		return "image/svg+xml"
	case ".png":
		return "image/png"
	case ".woff2":
		return "font/woff2"
	case ".txt":
		return "text/plain; charset=utf-8"
	}
	return "application/octet-stream"
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var f *file
	p := r.URL.Path
	switch {
	case isRoute(p):
		f = h.index
	case strings.HasPrefix(p, assetPrefix):
		// A map look-up by exact name: no path is ever joined from the
		// request, so nothing outside the bundle can be named (invariant 2).
		f = h.assets[strings.TrimPrefix(p, assetPrefix)]
	}
	if f == nil {
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	hd := w.Header()
	hd.Set("Content-Type", f.contentType)
	hd.Set("Cache-Control", f.cache)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Vary", "Accept-Encoding")
	if f == h.index {
		hd.Set("Content-Security-Policy", csp)
	}
	body, etag := f.body, f.etag
	if acceptsGzip(r.Header.Get("Accept-Encoding")) {
		if gz := f.gzipped(); gz != nil {
			body, etag = gz, strings.TrimSuffix(f.etag, `"`)+`-gz"`
			hd.Set("Content-Encoding", "gzip")
		}
	}
	hd.Set("ETag", etag)
	if etagMatch(r.Header.Get("If-None-Match"), etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	hd.Set("Content-Length", strconv.Itoa(len(body)))
	if r.Method == http.MethodHead {
		return
	}
	w.Write(body)
}

func isRoute(p string) bool {
	for _, r := range routes {
		if p == r {
			return true
		}
	}
	return false
}

// acceptsGzip reads an Accept-Encoding header: gzip (or *) listed without
// q=0.
func acceptsGzip(h string) bool {
	for _, part := range strings.Split(h, ",") {
		coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		coding = strings.ToLower(strings.TrimSpace(coding))
		if coding != "gzip" && coding != "*" {
			continue
		}
		q := strings.ReplaceAll(strings.ToLower(params), " ", "")
		if q == "q=0" || q == "q=0.0" || q == "q=0.00" || q == "q=0.000" {
			return false
		}
		return true
	}
	return false
}

func etagMatch(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimSpace(t)
		if t == "*" || t == etag || t == "W/"+etag {
			return true
		}
	}
	return false
}
