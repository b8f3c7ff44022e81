package cacheserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"

	"github.com/aerie-db/aerie/internal/cache"
)

// DefaultMaxBodyBytes is the default of Options.MaxBodyBytes.
const DefaultMaxBodyBytes = 64 << 20

// Options configure the HTTP handler.
type Options struct {
	// MaxBodyBytes bounds a PUT body (default DefaultMaxBodyBytes); a
	// longer one is answered 413.
	MaxBodyBytes int64
	// MaxPoints bounds the points of one PUT body (default
	// DefaultMaxPoints); more are answered 413.
	MaxPoints int
	// Logger logs server-side failures (nil: discarded).
	Logger *slog.Logger
}

func (o *Options) setDefaults() {
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.MaxPoints <= 0 {
		o.MaxPoints = DefaultMaxPoints
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// NewHandler serves c over HTTP:
//
//	PUT    /cache/{key}?start=S&end=E            body {"fields":{...}}  → 204
//	GET    /cache/{key}?start=S&end=E[&field=F…] → 200 hit, 206 partial, 404 miss
//	DELETE /cache/{key}                          → 204, 404 if the key was not cached
//	GET    /stats                                → cache.Stats as JSON
//
// docs/cache-api.md describes the bodies.
func NewHandler(c *cache.Cache, o Options) http.Handler {
	o.setDefaults()
	h := &handler{c: c, o: o}
	mux := http.NewServeMux()
	mux.HandleFunc("PUT /cache/{key}", h.put)
	mux.HandleFunc("GET /cache/{key}", h.get)
	mux.HandleFunc("DELETE /cache/{key}", h.delete)
	mux.HandleFunc("GET /stats", h.stats)
	return mux
}

type handler struct {
	c *cache.Cache
	o Options
}

func (h *handler) put(w http.ResponseWriter, r *http.Request) {
	keyText := r.PathValue("key")
	key, ierr := resolveKey(keyText)
	if ierr != nil {
		writeError(w, ierr)
		return
	}
	start, end, _, ierr := rangeParams(r.URL.RawQuery, false)
	if ierr != nil {
		writeError(w, ierr)
		return
	}
	if r.ContentLength > h.o.MaxBodyBytes {
		writeError(w, tooLarge("body of %d bytes exceeds the limit of %d bytes", r.ContentLength, h.o.MaxBodyBytes))
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.o.MaxBodyBytes))
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		writeError(w, tooLarge("body exceeds the limit of %d bytes", h.o.MaxBodyBytes))
		return
	case err != nil:
		writeError(w, badInput("reading the body: %v", err))
		return
	}
	fields, ierr := parseBody(body, start, end, h.o.MaxPoints)
	if ierr != nil {
		writeError(w, ierr)
		return
	}
	if err := h.c.Set(key, start, end, fields); err != nil {
		writeError(w, setError(h.o.Logger, keyText, start, end, err))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// setError classifies a failed Set. The body was checked against the range
// already, so what is left is a size (413), a closed cache (503) or the
// cache's own failure (500, logged).
func setError(log *slog.Logger, key string, start, end int64, err error) *inputError {
	e := &inputError{http.StatusInternalServerError, fmt.Sprintf("set %s [%d, %d]: %v", quote(key), start, end, err)}
	switch {
	case errors.Is(err, cache.ErrTooLarge):
		e.status = http.StatusRequestEntityTooLarge
	case errors.Is(err, cache.ErrClosed):
		e.status = http.StatusServiceUnavailable
	default:
		log.Error("cache set failed", "key", key, "start", start, "end", end, "err", err)
	}
	return e
}

func (h *handler) get(w http.ResponseWriter, r *http.Request) {
	keyText := r.PathValue("key")
	key, ierr := resolveKey(keyText)
	if ierr != nil {
		writeError(w, ierr)
		return
	}
	start, end, fields, ierr := rangeParams(r.URL.RawQuery, true)
	if ierr != nil {
		writeError(w, ierr)
		return
	}
	res, err := h.c.Get(key, start, end, fields)
	if err != nil {
		status := http.StatusServiceUnavailable
		if !errors.Is(err, cache.ErrClosed) {
			status = http.StatusInternalServerError
			h.o.Logger.Error("cache get failed", "key", keyText, "start", start, "end", end, "err", err)
		}
		writeJSON(w, status, errorBody(fmt.Sprintf("get %s [%d, %d]: %v", quote(keyText), start, end, err)))
		return
	}
	switch res.Status {
	case cache.Hit:
		writeJSON(w, http.StatusOK, appendResult(nil, res))
	case cache.Partial:
		w.Header().Set("X-Cache-Range", fmt.Sprintf("%d-%d", res.Start, res.End))
		writeJSON(w, http.StatusPartialContent, appendResult(nil, res))
	default:
		writeJSON(w, http.StatusNotFound, []byte(`{"status":"miss"}`))
	}
}

func (h *handler) delete(w http.ResponseWriter, r *http.Request) {
	key, ierr := resolveKey(r.PathValue("key"))
	if ierr != nil {
		writeError(w, ierr)
		return
	}
	if !h.c.Delete(key) {
		writeJSON(w, http.StatusNotFound, []byte(`{"status":"miss"}`))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (h *handler) stats(w http.ResponseWriter, _ *http.Request) {
	b, err := json.Marshal(h.c.Stats())
	if err != nil { // a struct of numbers always marshals
		panic(err)
	}
	writeJSON(w, http.StatusOK, b)
}

// rangeParams reads the query's start and end (required, int64, start <=
// end) and, if withFields, its field parameters (none: nil, all fields).
// Any other parameter is an error, so that a misspelt one is not ignored.
func rangeParams(rawQuery string, withFields bool) (start, end int64, fields []string, _ *inputError) {
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return 0, 0, nil, badInput("query string: %v", err)
	}
	parse := func(name string) (int64, *inputError) {
		vs := q[name]
		switch {
		case len(vs) == 0:
			return 0, badInput("query parameter %s is missing", name)
		case len(vs) > 1:
			return 0, badInput("query parameter %s is given %d times", name, len(vs))
		}
		v, err := strconv.ParseInt(vs[0], 10, 64)
		if err != nil {
			return 0, badInput("query parameter %s=%s: not an int64 integer", name, quote(vs[0]))
		}
		return v, nil
	}
	var ierr *inputError
	if start, ierr = parse("start"); ierr != nil {
		return 0, 0, nil, ierr
	}
	if end, ierr = parse("end"); ierr != nil {
		return 0, 0, nil, ierr
	}
	if start > end {
		return 0, 0, nil, badInput("query parameters: start=%d is after end=%d", start, end)
	}
	for _, name := range slices.Sorted(maps.Keys(q)) {
		vs := q[name]
		switch {
		case name == "start" || name == "end":
		case name == "field" && withFields:
			if len(vs) > MaxFields {
				return 0, 0, nil, badInput("query parameter field is given %d times, more than %d", len(vs), MaxFields)
			}
			seen := make(map[string]bool, len(vs))
			for _, f := range vs {
				if len(f) > MaxFieldNameLen {
					return 0, 0, nil, badInput("query parameter field: name of %d bytes is longer than %d", len(f), MaxFieldNameLen)
				}
				if !seen[f] {
					seen[f] = true
					fields = append(fields, f)
				}
			}
		default:
			return 0, 0, nil, badInput("unknown query parameter %s", quote(name))
		}
	}
	return start, end, fields, nil
}

func writeJSON(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	w.Write(body)
}

func errorBody(msg string) []byte {
	b := append([]byte(`{"status":"error","error":`), appendString(nil, msg)...)
	return append(b, '}')
}

func writeError(w http.ResponseWriter, e *inputError) {
	writeJSON(w, e.status, errorBody(e.msg))
}
