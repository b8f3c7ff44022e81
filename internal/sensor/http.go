package sensor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/aerie-db/aerie/internal/api"
	"github.com/aerie-db/aerie/internal/sensor/cond"
	"github.com/aerie-db/aerie/internal/sensor/extract"
	"github.com/aerie-db/aerie/internal/sensor/pointio"
	"github.com/aerie-db/aerie/internal/tsdb"
)

// Register adds Peregreen's endpoints and the native ones to mux:
//
//	POST   /upload/{sensor}/{reader}/{format}/{type}
//	POST   /search/{sensor}/{from}-{to}/{writer}          (condition in the body)
//	GET    /extract/{sensor}/{from}-{to}/{interval}/{func}/{writer}
//	DELETE /delete/{sensor}/{from}-{to}
//	GET    /list
//	GET    /meta/{sensor}
//	GET|POST /api/v1/sensor/search, /api/v1/sensor/extract
//
// wrap, if not nil, wraps each handler (instrumentation, write limits).
func (s *Service) Register(mux *http.ServeMux, wrap func(name string, h http.Handler) http.Handler) {
	if wrap == nil {
		wrap = func(_ string, h http.Handler) http.Handler { return h }
	}
	mux.Handle("POST /upload/{sensor}/{reader}/{format}/{type}", wrap("sensor_upload", http.HandlerFunc(s.handleUpload)))
	mux.Handle("POST /search/{sensor}/{range}/{writer}", wrap("sensor_search", http.HandlerFunc(s.handleSearch)))
	mux.Handle("GET /extract/{sensor}/{range}/{interval}/{func}/{writer}", wrap("sensor_extract", http.HandlerFunc(s.handleExtract)))
	mux.Handle("DELETE /delete/{sensor}/{range}", wrap("sensor_delete", http.HandlerFunc(s.handleDelete)))
	mux.Handle("GET /list", wrap("sensor_list", http.HandlerFunc(s.handleList)))
	mux.Handle("GET /meta/{sensor}", wrap("sensor_meta", http.HandlerFunc(s.handleMeta)))
	mux.Handle("/api/v1/sensor/search", wrap("sensor_native_search", http.HandlerFunc(s.handleNativeSearch)))
	mux.Handle("/api/v1/sensor/extract", wrap("sensor_native_extract", http.HandlerFunc(s.handleNativeExtract)))
}

// parseRange parses Peregreen's `{from}-{to}` path segment: two integer
// millisecond timestamps, either of which may be negative, from ≤ to.
func parseRange(seg string) (from, to int64, err error) {
	// The separator is the first '-' after the first byte: from may be
	// negative, and to's own sign follows the separator.
	i := -1
	if len(seg) > 1 {
		if j := strings.IndexByte(seg[1:], '-'); j >= 0 {
			i = j + 1
		}
	}
	if i < 0 {
		return 0, 0, fmt.Errorf("time range %q: want {from}-{to} in milliseconds", seg)
	}
	fs, ts := seg[:i], seg[i+1:]
	if from, err = strconv.ParseInt(fs, 10, 64); err != nil {
		return 0, 0, fmt.Errorf("time range %q: from %q is not an integer number of milliseconds", seg, fs)
	}
	if to, err = strconv.ParseInt(ts, 10, 64); err != nil {
		return 0, 0, fmt.Errorf("time range %q: to %q is not an integer number of milliseconds", seg, ts)
	}
	if to < from {
		return 0, 0, fmt.Errorf("time range %q: to %d is before from %d", seg, to, from)
	}
	return from, to, nil
}

// httpError answers err as text with the status its kind calls for.
func httpError(w http.ResponseWriter, err error, status int) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	fmt.Fprintln(w, err.Error())
}

// statusOf maps service errors to HTTP statuses.
func statusOf(err error) int {
	var ue *UploadError
	var ie *pointio.InputError
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe), errors.Is(err, pointio.ErrLimit):
		return http.StatusRequestEntityTooLarge
	case errors.Is(err, ErrTypeConflict):
		return http.StatusConflict
	case errors.As(err, &ue) && ue.Input, errors.As(err, &ie):
		return http.StatusBadRequest
	case errors.Is(err, ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, ErrBadRequest), errors.Is(err, ErrAmbiguous), errors.Is(err, tsdb.ErrTooOldForRetention), errors.Is(err, tsdb.ErrTooFarInFuture):
		return http.StatusBadRequest
	}
	return http.StatusInternalServerError
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	_ = enc.Encode(v)
}

func (s *Service) handleUpload(w http.ResponseWriter, r *http.Request) {
	sensor := r.PathValue("sensor")
	typ, err := pointio.ParseType(r.PathValue("type"))
	if err != nil {
		httpError(w, fmt.Errorf("nothing stored: %w", err), http.StatusBadRequest)
		return
	}
	if r.ContentLength > s.opts.MaxUploadBytes {
		httpError(w, fmt.Errorf("nothing stored: body of %d bytes is more than the upload limit of %d", r.ContentLength, s.opts.MaxUploadBytes), http.StatusRequestEntityTooLarge)
		return
	}
	body := http.MaxBytesReader(w, r.Body, s.opts.MaxUploadBytes)
	rd, err := pointio.NewReader(r.PathValue("reader"), r.PathValue("format"), typ, body, pointio.Limits{})
	if err != nil {
		httpError(w, fmt.Errorf("nothing stored: %w", err), http.StatusBadRequest)
		return
	}
	res, err := s.Upload(r.Context(), sensor, typ, rd)
	if err != nil {
		st := statusOf(err)
		if st == http.StatusInternalServerError {
			s.opts.Logger.Error("upload failed", "sensor", sensor, "err", err)
		}
		httpError(w, err, st)
		return
	}
	writeJSON(w, res)
}

func (s *Service) handleDelete(w http.ResponseWriter, r *http.Request) {
	from, to, err := parseRange(r.PathValue("range"))
	if err != nil {
		httpError(w, err, http.StatusBadRequest)
		return
	}
	if err := s.Delete(r.Context(), r.PathValue("sensor"), from, to); err != nil {
		httpError(w, err, http.StatusBadRequest)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Service) handleList(w http.ResponseWriter, r *http.Request) {
	names, err := s.List(r.Context())
	if err != nil {
		httpError(w, err, http.StatusInternalServerError)
		return
	}
	if names == nil {
		names = []string{}
	}
	writeJSON(w, names)
}

func (s *Service) handleMeta(w http.ResponseWriter, r *http.Request) {
	m, err := s.Meta(r.Context(), r.PathValue("sensor"))
	if err != nil {
		httpError(w, err, statusOf(err))
		return
	}
	writeJSON(w, m)
}

// maxConditionBytes bounds a /search body: a condition and some slack for
// whitespace (cond.MaxLen is checked by the parser).
const maxConditionBytes = 64 << 10

// emitter passes an operator's output to an answer's writer.
type emitter struct{ w pointio.Writer }

func (e emitter) Point(t int64, v float64) error    { return e.w.Point(t, v) }
func (e emitter) Row(t int64, vals []float64) error { return e.w.Row(t, vals) }

func (s *Service) handleSearch(w http.ResponseWriter, r *http.Request) {
	from, to, err := parseRange(r.PathValue("range"))
	if err != nil {
		httpError(w, err, http.StatusBadRequest)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxConditionBytes))
	if err != nil {
		httpError(w, fmt.Errorf("condition body: %w", err), statusOf(err))
		return
	}
	ex, err := cond.Parse(strings.TrimSpace(string(body)))
	if err != nil {
		httpError(w, err, http.StatusBadRequest)
		return
	}
	name := r.PathValue("sensor")
	q := s.querier()
	defer q.Close()
	if _, err := s.series(r.Context(), q, name, math.MinInt64, math.MaxInt64); err != nil {
		httpError(w, err, statusOf(err))
		return
	}
	res, _, err := s.search(r.Context(), q, Matchers(name), from, to, 0, ex)
	if err != nil {
		httpError(w, err, statusOf(err))
		return
	}
	pw, err := pointio.NewWriter(r.PathValue("writer"), w)
	if err != nil {
		httpError(w, err, http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", pw.ContentType())
	err = pw.Begin(pointio.Layout{Shape: pointio.Intervals})
	for _, sr := range res {
		for _, iv := range sr.Intervals {
			if err == nil {
				err = pw.Interval(iv.From, iv.To)
			}
		}
	}
	if err == nil {
		err = pw.Close()
	}
	if err != nil {
		s.opts.Logger.Warn("search answer not sent", "sensor", name, "err", err)
	}
}

func (s *Service) handleExtract(w http.ResponseWriter, r *http.Request) {
	from, to, err := parseRange(r.PathValue("range"))
	if err != nil {
		httpError(w, err, http.StatusBadRequest)
		return
	}
	interval, err := strconv.ParseInt(r.PathValue("interval"), 10, 64)
	if err != nil || interval < 0 {
		httpError(w, fmt.Errorf("interval %q: want a non-negative number of milliseconds", r.PathValue("interval")), http.StatusBadRequest)
		return
	}
	fn, err := extract.ParseFunc(r.PathValue("func"))
	if err != nil {
		httpError(w, err, http.StatusBadRequest)
		return
	}
	p := extract.Params{From: from, To: to, Interval: interval, Func: fn}
	if err := p.Validate(); err != nil {
		httpError(w, err, http.StatusBadRequest)
		return
	}
	pw, err := pointio.NewWriter(r.PathValue("writer"), w)
	if err != nil {
		httpError(w, err, http.StatusBadRequest)
		return
	}
	name := r.PathValue("sensor")
	q := s.querier()
	defer q.Close()
	lset, err := s.series(r.Context(), q, name, math.MinInt64, math.MaxInt64)
	if err != nil {
		httpError(w, err, statusOf(err))
		return
	}
	w.Header().Set("Content-Type", pw.ContentType())
	if err := pw.Begin(layoutOf(fn, false)); err != nil {
		httpError(w, err, http.StatusInternalServerError)
		return
	}
	var st ExtractStats
	defer func() { s.m.extractPoints.Add(float64(st.Points)); s.m.extractIndex.Add(float64(st.IndexIntervals)) }()
	if err := s.extractSeries(r.Context(), q, lset, p, emitter{pw}, &st); err != nil {
		// The answer has begun: it is left unclosed, so a client sees it
		// is incomplete.
		s.opts.Logger.Warn("extraction stopped", "sensor", name, "err", err)
		_ = pw.Flush()
		return
	}
	if err := pw.Close(); err != nil {
		s.opts.Logger.Warn("extraction answer not sent", "sensor", name, "err", err)
	}
}

// layoutOf returns the answer layout of an extraction with fn.
func layoutOf(fn extract.Func, series bool) pointio.Layout {
	if fn.Kind() == extract.FuncAggregate {
		return pointio.Layout{Shape: pointio.Rows, Columns: fn.Columns(), Series: series}
	}
	return pointio.Layout{Shape: pointio.Points, Series: series}
}

// apiError answers a native endpoint's error as Prometheus' API does.
func apiError(w http.ResponseWriter, err error, status int) {
	typ := "bad_data"
	if status >= 500 {
		typ = "internal"
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"status": "error", "errorType": typ, "error": err.Error()})
}

// nativeRequest is the parameters of /api/v1/sensor/search and extract.
type nativeRequest struct {
	matchers   [][]*labels.Matcher
	start, end int64
	resolution int64 // ms; 0 if absent
	format     string
}

func (s *Service) parseNative(r *http.Request) (nativeRequest, error) {
	var nr nativeRequest
	if err := r.ParseForm(); err != nil {
		return nr, fmt.Errorf("%w: parse form: %w", ErrBadRequest, err)
	}
	sels := r.Form["match[]"]
	if len(sels) == 0 {
		return nr, fmt.Errorf("%w: no match[] parameter: give at least one series selector", ErrBadRequest)
	}
	for _, sel := range sels {
		ms, err := parser.ParseMetricSelector(sel)
		if err != nil {
			return nr, fmt.Errorf("%w: match[] %q: %w", ErrBadRequest, sel, err)
		}
		nr.matchers = append(nr.matchers, ms)
	}
	var err error
	if nr.start, err = api.ParseTimeParam(r.Form.Get("start"), math.MinInt64/2); err != nil {
		return nr, fmt.Errorf("%w: start: %w", ErrBadRequest, err)
	}
	if nr.end, err = api.ParseTimeParam(r.Form.Get("end"), time.Now().UnixMilli()); err != nil {
		return nr, fmt.Errorf("%w: end: %w", ErrBadRequest, err)
	}
	if nr.end < nr.start {
		return nr, fmt.Errorf("%w: end %d is before start %d", ErrBadRequest, nr.end, nr.start)
	}
	if res := r.Form.Get("resolution"); res != "" {
		if f, err := strconv.ParseFloat(res, 64); err == nil && f >= 0 && f < math.MaxInt64/1000 {
			nr.resolution = int64(math.Round(f * 1000))
		} else if d, err := model.ParseDuration(res); err == nil {
			nr.resolution = time.Duration(d).Milliseconds()
		} else {
			return nr, fmt.Errorf("%w: resolution %q: want seconds or a duration such as 1h", ErrBadRequest, res)
		}
	}
	nr.format = r.Form.Get("format")
	if nr.format == "" {
		nr.format = pointio.FormatJSON
	}
	return nr, nil
}

// seriesOf returns the series matching any of the selectors in [mint,
// maxt], from the indexes, sorted, at most MaxSeries.
func (s *Service) seriesOf(ctx context.Context, q *tsdb.Querier, sels [][]*labels.Matcher, mint, maxt int64) ([]labels.Labels, error) {
	var out []labels.Labels
	for _, ms := range sels {
		ls, err := q.SeriesSets(ctx, mint, maxt, ms...)
		if err != nil {
			return nil, err
		}
		out = append(out, ls...)
		if len(out) > s.opts.MaxSeries {
			return nil, fmt.Errorf("%w: more than %d series match (sensor.max_series)", ErrBadRequest, s.opts.MaxSeries)
		}
	}
	slices.SortFunc(out, labels.Compare)
	return slices.CompactFunc(out, labels.Equal), nil
}

func (s *Service) handleNativeSearch(w http.ResponseWriter, r *http.Request) {
	nr, err := s.parseNative(r)
	if err != nil {
		apiError(w, err, http.StatusBadRequest)
		return
	}
	ex, err := cond.Parse(r.Form.Get("cond"))
	if err != nil {
		apiError(w, fmt.Errorf("cond: %w", err), http.StatusBadRequest)
		return
	}
	q := s.querier()
	defer q.Close()
	var all []SearchResult
	for _, ms := range nr.matchers {
		res, _, err := s.search(r.Context(), q, ms, nr.start, nr.end, nr.resolution, ex)
		if err != nil {
			apiError(w, err, statusOf(err))
			return
		}
		all = append(all, res...)
	}
	slices.SortFunc(all, func(a, b SearchResult) int { return labels.Compare(a.Labels, b.Labels) })
	all = slices.CompactFunc(all, func(a, b SearchResult) bool { return labels.Equal(a.Labels, b.Labels) })
	pw, err := pointio.NewWriter(nr.format, w)
	if err != nil {
		apiError(w, fmt.Errorf("%w: format: %w", ErrBadRequest, err), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", pw.ContentType())
	err = writeSeriesList(pw, pointio.Layout{Shape: pointio.Intervals, Series: true}, len(all),
		func(i int) labels.Labels { return all[i].Labels },
		func(i int) error {
			for _, iv := range all[i].Intervals {
				if err := pw.Interval(iv.From, iv.To); err != nil {
					return err
				}
			}
			return nil
		})
	if err != nil {
		s.opts.Logger.Warn("search answer not sent", "err", err)
	}
}

func (s *Service) handleNativeExtract(w http.ResponseWriter, r *http.Request) {
	nr, err := s.parseNative(r)
	if err != nil {
		apiError(w, err, http.StatusBadRequest)
		return
	}
	fs := r.Form.Get("func")
	if fs == "" {
		fs = "none"
	}
	fn, err := extract.ParseFunc(fs)
	if err != nil {
		apiError(w, fmt.Errorf("func: %w", err), http.StatusBadRequest)
		return
	}
	p := extract.Params{From: nr.start, To: nr.end, Interval: nr.resolution, Func: fn}
	if err := p.Validate(); err != nil {
		apiError(w, err, http.StatusBadRequest)
		return
	}
	pw, err := pointio.NewWriter(nr.format, w)
	if err != nil {
		apiError(w, fmt.Errorf("format: %w", err), http.StatusBadRequest)
		return
	}
	q := s.querier()
	defer q.Close()
	series, err := s.seriesOf(r.Context(), q, nr.matchers, nr.start, nr.end)
	if err != nil {
		apiError(w, err, statusOf(err))
		return
	}
	w.Header().Set("Content-Type", pw.ContentType())
	var st ExtractStats
	defer func() { s.m.extractPoints.Add(float64(st.Points)); s.m.extractIndex.Add(float64(st.IndexIntervals)) }()
	err = writeSeriesList(pw, layoutOf(fn, true), len(series),
		func(i int) labels.Labels { return series[i] },
		func(i int) error { return s.extractSeries(r.Context(), q, series[i], p, emitter{pw}, &st) })
	if err != nil {
		s.opts.Logger.Warn("extraction stopped", "err", err)
		_ = pw.Flush()
	}
}

// writeSeriesList answers n series through pw in layout: series i between
// BeginSeries(labelsOf(i)) and EndSeries, its body written by body(i),
// then Close. It stops at the first error.
func writeSeriesList(pw pointio.Writer, layout pointio.Layout, n int, labelsOf func(i int) labels.Labels, body func(i int) error) error {
	err := pw.Begin(layout)
	for i := 0; i < n && err == nil; i++ {
		if err = pw.BeginSeries(labelsOf(i)); err == nil {
			err = body(i)
		}
		if err == nil {
			err = pw.EndSeries()
		}
	}
	if err == nil {
		err = pw.Close()
	}
	return err
}
