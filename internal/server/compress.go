package server

import (
	"net/http"

	"github.com/klauspost/compress/gzhttp"
	"github.com/klauspost/compress/gzip"
)

// gzipAnswers is the wrapper that compresses the query API's answers:
// klauspost's gzhttp, whose compressors are pooled, at BestSpeed. The
// API's own compression (Prometheus' httputil.CompressionHandler, which
// makes a new compressor at its default level for every answer, a quarter
// of a cached dashboard panel's CPU; bench/NOTES.md) is left nothing to
// do: compressAnswers hands the request on without Accept-Encoding.
var gzipAnswers = func() func(http.Handler) http.HandlerFunc {
	w, err := gzhttp.NewWrapper(gzhttp.CompressionLevel(gzip.BestSpeed))
	if err != nil { // the options are constant
		panic(err)
	}
	return w
}()

// compressAnswers gzips h's answers for clients that accept gzip (those
// under 1 KiB, gzhttp's minimum, go out as they are).
func compressAnswers(h http.Handler) http.Handler {
	return gzipAnswers(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Accept-Encoding") != "" {
			r = r.Clone(r.Context())
			r.Header.Del("Accept-Encoding")
		}
		h.ServeHTTP(w, r)
	}))
}
