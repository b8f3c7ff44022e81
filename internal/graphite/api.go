package graphite

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/aerie-db/aerie/internal/graphite/attime"
)

// Version is what /version answers: the graphite-web release whose API
// this package follows (Grafana reads it to pick its function set).
const Version = "1.1.8"

// Options configure the API. Zero values take the defaults named.
type Options struct {
	// Now returns the current time (default time.Now); tests inject a
	// clock.
	Now func() time.Time
	// Location is the time zone of day and time-of-day references and of
	// CSV timestamps (graphite-web's TIME_ZONE; default UTC); a request's
	// tz parameter overrides it.
	Location *time.Location
	// XFilesFactor is the default xFilesFactor of a request
	// (graphite-web's DEFAULT_XFILES_FACTOR, default 0).
	XFilesFactor float64

	MaxTargets       int // targets per render request (default 100)
	MaxTargetLen     int // bytes per target (default 8192)
	MaxSeries        int // series read per request (default 10000)
	MaxPoints        int // values read per request, and series×points rendered (default 10,000,000)
	MaxDataPoints    int // cap on a request's maxDataPoints (default 0: none); without maxDataPoints a request is not consolidated
	MaxFindResults   int // nodes per find/expand/index.json answer, values per tags answer (default 100000)
	MaxRequestBytes  int64
	AutoCompleteSize int // default limit of /tags/autoComplete (graphite-web's TAGDB_AUTOCOMPLETE_LIMIT, 100)
}

func (o *Options) setDefaults() {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Location == nil {
		o.Location = time.UTC
	}
	if o.MaxTargets <= 0 {
		o.MaxTargets = 100
	}
	if o.MaxTargetLen <= 0 {
		o.MaxTargetLen = 8192
	}
	if o.MaxSeries <= 0 {
		o.MaxSeries = 10000
	}
	if o.MaxPoints <= 0 {
		o.MaxPoints = 10_000_000
	}
	if o.MaxFindResults <= 0 {
		o.MaxFindResults = 100_000
	}
	if o.MaxRequestBytes <= 0 {
		o.MaxRequestBytes = 1 << 20
	}
	if o.AutoCompleteSize <= 0 {
		o.AutoCompleteSize = 100
	}
}

// API serves graphite-web's HTTP API over a Store. It holds no mutable
// state: handlers may run concurrently.
type API struct {
	store Store
	opts  Options
}

// New returns the API over store.
func New(store Store, opts Options) *API {
	opts.setDefaults()
	return &API{store: store, opts: opts}
}

// Register adds the API's endpoints to mux:
//
//	GET|POST /render
//	GET|POST /metrics/find, /metrics/expand, /metrics/index.json (also without /metrics)
//	GET      /functions, /functions/{name}
//	GET      /version
//	POST     /tags/tagSeries, /tags/tagMultiSeries
//	GET      /tags, /tags/{tag}
//	GET|POST /tags/findSeries, /tags/autoComplete/tags, /tags/autoComplete/values
//
// wrap, if not nil, wraps each handler (instrumentation, limits); name is
// "graphite_" and the endpoint.
func (a *API) Register(mux *http.ServeMux, wrap func(name string, h http.Handler) http.Handler) {
	if wrap == nil {
		wrap = func(_ string, h http.Handler) http.Handler { return h }
	}
	h := func(name string, f http.HandlerFunc) http.Handler { return wrap("graphite_"+name, f) }
	both := func(path, name string, f http.HandlerFunc) {
		mux.Handle("GET "+path, h(name, f))
		mux.Handle("POST "+path, h(name, f))
	}
	both("/render", "render", a.handleRender)
	both("/render/{$}", "render", a.handleRender)
	both("/metrics", "find", a.handleFind)
	both("/metrics/{$}", "find", a.handleFind)
	both("/metrics/find", "find", a.handleFind)
	both("/metrics/find/{$}", "find", a.handleFind)
	both("/metrics/expand", "expand", a.handleExpand)
	both("/metrics/expand/{$}", "expand", a.handleExpand)
	both("/metrics/index.json", "index", a.handleIndex)
	mux.Handle("GET /functions", h("functions", a.handleFunctions))
	mux.Handle("GET /functions/{$}", h("functions", a.handleFunctions))
	mux.Handle("GET /functions/{name}", h("functions", a.handleFunction))
	mux.Handle("GET /version", h("version", a.handleVersion))
	mux.Handle("GET /version/{$}", h("version", a.handleVersion))
	mux.Handle("POST /tags/tagSeries", h("tags_tag_series", a.jsonHandler(a.tagSeries)))
	mux.Handle("POST /tags/tagMultiSeries", h("tags_tag_multi_series", a.jsonHandler(a.tagMultiSeries)))
	// GET would reach /tags/{tag}; graphite-web answers 405
	mux.Handle("GET /tags/tagSeries", h("tags_tag_series", methodNotAllowed))
	mux.Handle("GET /tags/tagMultiSeries", h("tags_tag_multi_series", methodNotAllowed))
	both("/tags/findSeries", "tags_find_series", a.jsonHandler(a.findSeries))
	both("/tags/autoComplete/tags", "tags_autocomplete_tags", a.jsonHandler(a.autoCompleteTags))
	both("/tags/autoComplete/values", "tags_autocomplete_values", a.jsonHandler(a.autoCompleteValues))
	mux.Handle("GET /tags", h("tags_list", a.jsonHandler(a.tagList)))
	mux.Handle("GET /tags/{$}", h("tags_list", a.jsonHandler(a.tagList)))
	mux.Handle("GET /tags/{tag}", h("tags_tag", a.jsonHandler(a.tag)))
}

// params parses a request's query and form (a POST body, URL-encoded or
// multipart) into one set, the form's values after the query's, as
// graphite-web's request.GET.copy().update(request.POST). Only '&'
// separates parameters: a ';' is data (Django's rule, and Graphite's
// tagged paths hold semicolons), where Go's url.ParseQuery rejects it.
func (a *API) params(w http.ResponseWriter, r *http.Request) (url.Values, error) {
	q, err := parseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, &paramError{param: "query string", err: err}
	}
	if r.Method != http.MethodPost {
		return q, nil
	}
	r.Body = http.MaxBytesReader(w, r.Body, a.opts.MaxRequestBytes)
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch ct {
	case "multipart/form-data":
		if err := r.ParseMultipartForm(a.opts.MaxRequestBytes); err != nil {
			return nil, &paramError{param: "body", err: err}
		}
		for k, vs := range r.MultipartForm.Value {
			q[k] = append(q[k], vs...)
		}
	case "application/x-www-form-urlencoded", "":
		b, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, &paramError{param: "body", err: err}
		}
		f, err := parseQuery(string(b))
		if err != nil {
			return nil, &paramError{param: "body", err: err}
		}
		for k, vs := range f {
			q[k] = append(q[k], vs...)
		}
	}
	return q, nil
}

// maxParams bounds the parameters of one request.
const maxParams = 10000

// parseQuery parses "k=v&k2=v2" with '&' as the only separator.
func parseQuery(s string) (url.Values, error) {
	q := url.Values{}
	n := 0
	for s != "" {
		var kv string
		kv, s, _ = strings.Cut(s, "&")
		if kv == "" {
			continue
		}
		if n++; n > maxParams {
			return nil, fmt.Errorf("more than %d parameters", maxParams)
		}
		k, v, _ := strings.Cut(kv, "=")
		k, err := url.QueryUnescape(k)
		if err != nil {
			return nil, fmt.Errorf("parameter name %.32q: %v", kv, err)
		}
		v, err = url.QueryUnescape(v)
		if err != nil {
			return nil, fmt.Errorf("parameter %s: %v", k, err)
		}
		q[k] = append(q[k], v)
	}
	return q, nil
}

// paramError is a bad request parameter: answered 400, naming it.
type paramError struct {
	param string
	err   error
}

func (e *paramError) Error() string { return fmt.Sprintf("parameter %s: %v", e.param, e.err) }
func (e *paramError) Unwrap() error { return e.err }

func badParam(param, format string, args ...any) error {
	return &paramError{param: param, err: fmt.Errorf(format, args...)}
}

// status is the HTTP status of an error.
func status(err error) int {
	var pe *paramError
	var le *LimitError
	var mbe *http.MaxBytesError
	var pat *PatternError
	switch {
	case errors.As(err, &pat):
		return http.StatusBadRequest
	case errors.As(err, &mbe):
		return http.StatusRequestEntityTooLarge
	case errors.As(err, &le):
		return http.StatusUnprocessableEntity
	case errors.As(err, &pe):
		return http.StatusBadRequest
	case errors.Is(err, errClientGone):
		return 499
	}
	return http.StatusInternalServerError
}

var errClientGone = errors.New("client went away")

// writeError answers err as text (graphite-web answers render and find
// errors as text; the tags API answers {"error": …} JSON, see
// writeJSONError).
func writeError(w http.ResponseWriter, err error) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status(err))
	fmt.Fprintln(w, err.Error())
}

// writeJSONError answers err as graphite-web's jsonResponse does.
func writeJSONError(w http.ResponseWriter, err error) {
	b, _ := json.Marshal(map[string]string{"error": err.Error()})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status(err))
	w.Write(b)
}

// jsonpName allows JavaScript identifiers and dotted paths only: the
// callback name is echoed into a script.
var jsonpName = regexp.MustCompile(`^[A-Za-z_$][A-Za-z0-9_$]*(?:\.[A-Za-z_$][A-Za-z0-9_$]*)*$`)

func checkJSONP(q url.Values) (string, error) {
	cb := q.Get("jsonp")
	if cb == "" {
		return "", nil
	}
	if len(cb) > 256 || !jsonpName.MatchString(cb) {
		return "", badParam("jsonp", "%.64q is not a JavaScript identifier", cb)
	}
	return cb, nil
}

// writeJSON answers v as JSON, wrapped in the jsonp callback if any, as
// graphite-web's json_response_for (pretty=1 indents).
func writeJSON(w http.ResponseWriter, q url.Values, v any) {
	cb, err := checkJSONP(q)
	if err != nil {
		writeJSONError(w, err)
		return
	}
	var b []byte
	if q.Get("pretty") != "" {
		b, err = json.MarshalIndent(v, "", "  ")
	} else {
		b, err = json.Marshal(v)
	}
	if err != nil {
		writeJSONError(w, fmt.Errorf("encode answer: %w", err))
		return
	}
	writeBody(w, cb, "application/json", b)
}

func writeBody(w http.ResponseWriter, jsonp, contentType string, b []byte) {
	if jsonp != "" {
		w.Header().Set("Content-Type", "text/javascript")
		var buf bytes.Buffer
		buf.Grow(len(b) + len(jsonp) + 2)
		buf.WriteString(jsonp)
		buf.WriteByte('(')
		buf.Write(b)
		buf.WriteByte(')')
		b = buf.Bytes()
	} else {
		w.Header().Set("Content-Type", contentType)
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.Write(b)
}

// intParam parses an integer parameter, def when absent.
func intParam(q url.Values, name string, def int) (int, error) {
	s := q.Get(name)
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, badParam(name, "%.32q is not an integer", s)
	}
	return n, nil
}

// location is the request's time zone: tz if it names one (graphite-web
// ignores unknown zones; so does this), else the default.
func (a *API) location(q url.Values) *time.Location {
	if tz := q.Get("tz"); tz != "" && len(tz) < 128 {
		if loc, err := time.LoadLocation(tz); err == nil {
			return loc
		}
	}
	return a.opts.Location
}

// timeRange parses now, from and until as graphite-web's render view:
// from defaults to -1d and until to now; they are swapped if reversed
// and may not be equal.
func (a *API) timeRange(q url.Values, loc *time.Location, defFrom string) (from, until, now int64, err error) {
	nowT := a.opts.Now()
	if s := q.Get("now"); s != "" {
		n, err := attime.Parse(s, nowT, loc)
		if err != nil {
			return 0, 0, 0, &paramError{param: "now", err: err}
		}
		nowT = time.Unix(n, 0)
	}
	now = nowT.Unix()
	until = now
	if s := q.Get("until"); s != "" {
		if until, err = attime.Parse(s, nowT, loc); err != nil {
			return 0, 0, 0, &paramError{param: "until", err: err}
		}
	}
	if defFrom == "" {
		return 0, until, now, nil
	}
	s := q.Get("from")
	if s == "" {
		s = defFrom
	}
	if from, err = attime.Parse(s, nowT, loc); err != nil {
		return 0, 0, 0, &paramError{param: "from", err: err}
	}
	if from > until {
		from, until = until, from
	}
	if from == until {
		return 0, 0, 0, badParam("from", "invalid empty time range: from and until are both %d", from)
	}
	return from, until, now, nil
}

func methodNotAllowed(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Allow", http.MethodPost)
	http.Error(w, r.Method+" not allowed: use POST", http.StatusMethodNotAllowed)
}

func (a *API) handleVersion(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprint(w, Version)
}

// isNull reports a Graphite null.
func isNull(v float64) bool { return math.IsNaN(v) }
