package api

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/aerie-db/aerie/internal/positive"
	"github.com/aerie-db/aerie/internal/vmformat"
)

// ExportOptions configure the export handlers. Zero values take the
// defaults in brackets.
type ExportOptions struct {
	// MaxRowsPerLine caps the samples of one JSON line [10000]; a longer
	// series goes on over several lines, as VictoriaMetrics splits it by
	// block. A request's max_rows_per_line may ask for fewer.
	MaxRowsPerLine int
	Logger         *slog.Logger // [discard]
}

const defaultMaxRowsPerLine = 10_000

// NewExportHandler serves VictoriaMetrics' /api/v1/export: every sample of
// the series that match[] selects (one or more series selectors, as in
// /api/v1/series) between start and end (RFC 3339 or Unix seconds, both
// inclusive; default: all time), as JSON lines (internal/vmformat), series
// by series in label order. GET or POST (form). The answer is streamed:
// memory holds one line, not the result; gzip if the client accepts it.
// The output depends only on the data, so exports of unchanged data are
// byte-identical. An error after the first bytes were sent aborts the
// connection, so a cut export never looks complete.
func NewExportHandler(q storage.Queryable, opts ExportOptions) http.Handler {
	return &exportHandler{q: q, opts: opts.withDefaults()}
}

// NewCSVExportHandler serves VictoriaMetrics' /api/v1/export/csv: as
// /api/v1/export, one CSV row per sample, with the columns of the format
// parameter (vmformat.ParseCSVExportFormat), e.g.
// format=__name__,__value__,__timestamp__:unix_ms,host.
func NewCSVExportHandler(q storage.Queryable, opts ExportOptions) http.Handler {
	return &exportHandler{q: q, opts: opts.withDefaults(), csv: true}
}

func (o ExportOptions) withDefaults() ExportOptions {
	o.MaxRowsPerLine = positive.Or(o.MaxRowsPerLine, defaultMaxRowsPerLine)
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

type exportHandler struct {
	q    storage.Queryable
	opts ExportOptions
	csv  bool
}

// exportRequest is a parsed request.
type exportRequest struct {
	matchers   [][]*labels.Matcher
	mint, maxt int64
	rows       int                       // samples per JSON line
	csv        *vmformat.CSVExportFormat // CSV export only
}

func (h *exportHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodPost {
		w.Header().Set("Allow", "GET, POST")
		exportError(w, http.StatusMethodNotAllowed, "bad_data", "exports must be GET or POST")
		return
	}
	req, err := h.parse(r)
	if err != nil {
		exportError(w, http.StatusBadRequest, "bad_data", err.Error())
		return
	}
	q, err := h.q.Querier(req.mint, req.maxt)
	if err != nil {
		exportError(w, http.StatusInternalServerError, "internal", err.Error())
		return
	}
	defer q.Close()
	hints := &storage.SelectHints{Start: req.mint, End: req.maxt}
	sets := make([]storage.SeriesSet, 0, len(req.matchers))
	for _, ms := range req.matchers {
		sets = append(sets, q.Select(r.Context(), true, hints, ms...))
	}
	ss := sets[0]
	if len(sets) > 1 {
		ss = storage.NewMergeSeriesSet(sets, 0, storage.ChainedSeriesMerge)
	}

	cw := &countingWriter{w: w}
	var out io.Writer = cw
	if h.csv {
		w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	} else {
		w.Header().Set("Content-Type", "application/stream+json")
	}
	w.Header().Set("Vary", "Accept-Encoding")
	var zw *gzip.Writer
	if acceptsGzip(r.Header.Get("Accept-Encoding")) {
		w.Header().Set("Content-Encoding", "gzip")
		zw, _ = gzip.NewWriterLevel(cw, gzip.BestSpeed) // the level is valid
		out = zw
	}
	bw := bufio.NewWriterSize(out, 64<<10)
	series, samples, err := h.write(bw, ss, req)
	if err == nil {
		err = bw.Flush()
	}
	if err == nil && zw != nil {
		err = zw.Close()
	}
	if err != nil {
		if cw.n == 0 && !cw.failed {
			w.Header().Del("Content-Encoding")
			exportError(w, http.StatusInternalServerError, "internal", err.Error())
			return
		}
		h.opts.Logger.Warn("export aborted", "err", err, "series", series, "samples", samples)
		panic(http.ErrAbortHandler) // the client must not take a cut export for a whole one
	}
}

// write writes every selected sample; it stops at the first error of the
// series set, an iterator, or the writer (a client gone).
func (h *exportHandler) write(w *bufio.Writer, ss storage.SeriesSet, req *exportRequest) (series, samples int, err error) {
	var (
		it  chunkenc.Iterator
		buf []byte
		ts  []int64
		vs  []float64
	)
	flushLine := func(lset labels.Labels) error {
		buf = vmformat.AppendJSONLine(buf[:0], lset, ts, vs)
		ts, vs = ts[:0], vs[:0]
		_, err := w.Write(buf)
		return err
	}
	for ss.Next() {
		s := ss.At()
		lset := s.Labels()
		it = s.Iterator(it)
		n := 0
		for typ := it.Next(); typ != chunkenc.ValNone; typ = it.Next() {
			if typ != chunkenc.ValFloat {
				continue // Aerie stores float samples only
			}
			t, v := it.At()
			if t < req.mint || t > req.maxt {
				continue
			}
			n++
			if req.csv != nil {
				buf = vmformat.AppendCSVRow(buf, req.csv, lset, t, v)
				if len(buf) >= 32<<10 {
					if _, err := w.Write(buf); err != nil {
						return series, samples + n, err
					}
					buf = buf[:0]
				}
				continue
			}
			ts, vs = append(ts, t), append(vs, v)
			if len(ts) == req.rows {
				if err := flushLine(lset); err != nil {
					return series, samples + n, err
				}
			}
		}
		if err := it.Err(); err != nil {
			return series, samples + n, fmt.Errorf("read %s: %w", lset, err)
		}
		if len(ts) > 0 {
			if err := flushLine(lset); err != nil {
				return series, samples + n, err
			}
		}
		if n > 0 {
			series++
			samples += n
		}
	}
	if err := ss.Err(); err != nil {
		return series, samples, err
	}
	if len(buf) > 0 && req.csv != nil {
		if _, err := w.Write(buf); err != nil {
			return series, samples, err
		}
	}
	return series, samples, nil
}

func (h *exportHandler) parse(r *http.Request) (*exportRequest, error) {
	if err := r.ParseForm(); err != nil {
		return nil, fmt.Errorf("parse form: %w", err)
	}
	req := &exportRequest{rows: h.opts.MaxRowsPerLine}
	matches := r.Form["match[]"]
	if len(matches) == 0 {
		return nil, fmt.Errorf("no match[] parameter: give at least one series selector, e.g. match[]={job=\"node\"}")
	}
	for _, m := range matches {
		ms, err := parser.ParseMetricSelector(m)
		if err != nil {
			return nil, fmt.Errorf("match[] %q: %w", m, err)
		}
		if !slices.ContainsFunc(ms, func(m *labels.Matcher) bool { return !m.Matches("") }) {
			return nil, fmt.Errorf("match[] %q: at least one matcher must not match the empty string, e.g. {__name__=~\".+\"}", m)
		}
		req.matchers = append(req.matchers, ms)
	}
	var err error
	if req.mint, err = ParseTimeParam(r.Form.Get("start"), math.MinInt64); err != nil {
		return nil, fmt.Errorf("start: %w", err)
	}
	if req.maxt, err = ParseTimeParam(r.Form.Get("end"), math.MaxInt64); err != nil {
		return nil, fmt.Errorf("end: %w", err)
	}
	if req.mint > req.maxt {
		return nil, fmt.Errorf("end is before start")
	}
	if s := r.Form.Get("max_rows_per_line"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("max_rows_per_line %q: want a number of samples", s)
		}
		if n > 0 && n < req.rows {
			req.rows = n
		}
	}
	if h.csv {
		spec := r.Form.Get("format")
		if spec == "" {
			return nil, fmt.Errorf("no format parameter: give the columns, e.g. format=__name__,__value__,__timestamp__:unix_ms")
		}
		if req.csv, err = vmformat.ParseCSVExportFormat(spec); err != nil {
			return nil, err
		}
	}
	return req, nil
}

// ParseTimeParam reads Unix seconds (fractions to the millisecond) or RFC
// 3339, as Prometheus' API does, into ms; "" gives def.
func ParseTimeParam(s string, def int64) (int64, error) {
	if s == "" {
		return def, nil
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		ms := math.Round(f * 1000)
		switch {
		case math.IsNaN(ms):
			return 0, fmt.Errorf("%q is not a time", s)
		case ms >= math.MaxInt64:
			return math.MaxInt64, nil
		case ms <= math.MinInt64:
			return math.MinInt64, nil
		}
		return int64(ms), nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0, fmt.Errorf("%q is neither Unix seconds nor RFC 3339", s)
	}
	return t.UnixMilli(), nil
}

// acceptsGzip reports whether an Accept-Encoding header allows gzip.
func acceptsGzip(h string) bool {
	for _, part := range strings.Split(h, ",") {
		coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if !strings.EqualFold(strings.TrimSpace(coding), "gzip") && strings.TrimSpace(coding) != "*" {
			continue
		}
		if q, ok := strings.CutPrefix(strings.ReplaceAll(params, " ", ""), "q="); ok {
			if v, err := strconv.ParseFloat(q, 64); err == nil && v == 0 {
				continue
			}
		}
		return true
	}
	return false
}

// countingWriter counts the bytes that reached the client, so that an
// error before the first one can still be an error status.
type countingWriter struct {
	w      io.Writer
	n      int64
	failed bool
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	if err != nil {
		c.failed = true
	}
	return n, err
}

// exportError answers in the Prometheus API's error shape.
func exportError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(struct {
		Status    string `json:"status"`
		ErrorType string `json:"errorType"`
		Error     string `json:"error"`
	}{"error", typ, msg})
}
