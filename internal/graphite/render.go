package graphite

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aerie-db/aerie/internal/graphite/expr"
)

// RenderRequest is a parsed /render request.
type RenderRequest struct {
	Targets       []string
	Format        string // json, csv, raw or pickle
	JSONP         string // callback, json only
	From, Until   int64  // Unix seconds, From < Until
	Now           int64
	Location      *time.Location
	MaxDataPoints int // 0: none
	NoNullPoints  bool
	XFilesFactor  float64 // the request's, or Options.XFilesFactor
}

// renderFormats are the formats answered; graphite-web's default is a
// PNG, which this API does not draw.
var renderFormats = []string{"json", "csv", "raw", "pickle"}

// ParseRenderRequest parses /render's parameters as graphite-web's
// parseOptions does. Errors name the parameter.
func (a *API) ParseRenderRequest(q url.Values) (*RenderRequest, error) {
	rr := &RenderRequest{}
	rr.Targets = q["target"]
	if len(rr.Targets) == 0 {
		rr.Targets = q["target[]"]
	}
	if len(rr.Targets) > a.opts.MaxTargets {
		return nil, badParam("target", "%d targets: at most %d", len(rr.Targets), a.opts.MaxTargets)
	}
	for i, t := range rr.Targets {
		if len(t) > a.opts.MaxTargetLen {
			return nil, badParam("target", "target %d (%.32q…) is %d bytes: at most %d", i+1, t, len(t), a.opts.MaxTargetLen)
		}
	}
	if _, ok := q["pickle"]; ok {
		rr.Format = "pickle"
	}
	if _, ok := q["rawData"]; ok {
		rr.Format = "raw"
	}
	if _, ok := q["format"]; ok {
		rr.Format = q.Get("format")
		cb, err := checkJSONP(q)
		if err != nil {
			return nil, err
		}
		rr.JSONP = cb
	}
	switch {
	case rr.Format == "":
		return nil, badParam("format", "missing: this server does not draw images (graphite-web's default, PNG); use format=json, csv, raw or pickle")
	case !slices.Contains(renderFormats, rr.Format):
		return nil, badParam("format", "%.32q is not supported (want json, csv, raw or pickle)", rr.Format)
	}
	if s := q.Get("maxDataPoints"); s != "" && strings.TrimLeft(s, "0123456789") == "" {
		n, err := strconv.Atoi(s)
		if err != nil || (a.opts.MaxDataPoints > 0 && n > a.opts.MaxDataPoints) {
			n = a.opts.MaxDataPoints
		}
		rr.MaxDataPoints = n
	}
	_, rr.NoNullPoints = q["noNullPoints"]
	rr.Location = a.location(q)
	var err error
	if rr.From, rr.Until, rr.Now, err = a.timeRange(q, rr.Location, "-1d"); err != nil {
		return nil, err
	}
	rr.XFilesFactor = a.opts.XFilesFactor
	if s := q.Get("xFilesFactor"); s != "" {
		x, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(x) || x < 0 || x > 1 {
			return nil, badParam("xFilesFactor", "%.32q is not a number in [0, 1]", s)
		}
		rr.XFilesFactor = x
	}
	return rr, nil
}

// Render evaluates the request's targets in order.
func (a *API) Render(ctx context.Context, rr *RenderRequest) ([]*expr.Series, error) {
	f := NewFetcher(a.store, rr.Now, a.opts.MaxSeries, a.opts.MaxPoints)
	eo := expr.Options{XFilesFactor: rr.XFilesFactor, Location: rr.Location}
	var out []*expr.Series
	points := 0
	for i, t := range rr.Targets {
		ss, err := evalTarget(ctx, t, rr.From, rr.Until, rr.Now, f, eo)
		if err != nil {
			return nil, targetError(i, t, err)
		}
		for _, s := range ss {
			points += len(s.Values)
		}
		if points > a.opts.MaxPoints {
			return nil, &LimitError{What: "points", Limit: a.opts.MaxPoints}
		}
		out = append(out, ss...)
	}
	return out, nil
}

// targetError names the target in err; errors of the target (parse,
// function, argument, pattern) are the request's fault.
func targetError(i int, t string, err error) error {
	var le *LimitError
	if errors.As(err, &le) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var pe *PatternError
	if expr.IsBadRequest(err) || errors.As(err, &pe) {
		return &paramError{param: "target", err: fmt.Errorf("target %d %q: %w", i+1, t, err)}
	}
	return fmt.Errorf("target %d %q: %w", i+1, t, err)
}

func (a *API) handleRender(w http.ResponseWriter, r *http.Request) {
	q, err := a.params(w, r)
	if err != nil {
		writeError(w, err)
		return
	}
	rr, err := a.ParseRenderRequest(q)
	if err != nil {
		writeError(w, err)
		return
	}
	series, err := a.Render(r.Context(), rr)
	if err != nil {
		if r.Context().Err() != nil {
			err = fmt.Errorf("%w: %w", errClientGone, err)
		}
		writeError(w, err)
		return
	}
	var b []byte
	contentType := ""
	switch rr.Format {
	case "json":
		b, contentType = AppendRenderJSON(nil, series, rr.MaxDataPoints, rr.NoNullPoints), "application/json"
	case "csv":
		b, contentType = appendRenderCSV(nil, series, rr.Location), "text/csv"
	case "raw":
		b, contentType = AppendRenderRaw(nil, series), "text/plain"
	case "pickle":
		b, contentType = AppendRenderPickle(nil, series), "application/pickle"
	}
	w.Header().Set("Cache-Control", "no-cache")
	jsonp := rr.JSONP
	if rr.Format != "json" {
		jsonp = "" // graphite-web wraps json answers only
	}
	writeBody(w, jsonp, contentType, b)
}

// Consolidate applies maxDataPoints to s as graphite-web's renderViewJson
// does, given timeRange (the span from the earliest start to the latest
// end of all series answered): when the series has more than
// maxDataPoints values over timeRange, valuesPerPoint = ⌈values /
// maxDataPoints⌉ consecutive values become one, by the series'
// consolidation function and xFilesFactor. The first point moves to the
// next multiple of the new step ("nudge") and, as graphite-web does, the
// values before it except the last are dropped. maxDataPoints = 1 makes
// one point of all values. It returns the first timestamp, the new step
// and the values.
func Consolidate(s *expr.Series, maxDataPoints int, timeRange int64) (start, step int64, values []float64) {
	start, step, values = s.Start, s.Step, s.Values
	if maxDataPoints <= 0 || step <= 0 {
		return start, step, values
	}
	vpp := 0
	if maxDataPoints == 1 {
		vpp = max(len(values), 1)
	} else {
		n := float64(timeRange) / float64(step)
		if float64(maxDataPoints) >= n {
			return start, step, values
		}
		vpp = int(math.Ceil(n / float64(maxDataPoints)))
		spp := int64(vpp) * step
		nudge := spp + mod(start, step) - mod(start, spp)
		start += nudge
		lose := int(nudge/step) - 1
		if lose > 0 {
			values = values[min(lose, len(values)):]
		}
	}
	if vpp <= 1 {
		return start, step, values
	}
	return start, step * int64(vpp), consolidateValues(values, vpp, s.ConsolidationFunc, s.XFilesFactor)
}

// mod is Python's %: the result has the sign of m.
func mod(a, m int64) int64 {
	r := a % m
	if r != 0 && (r < 0) != (m < 0) {
		r += m
	}
	return r
}

// consolidateValues is graphite-web's TimeSeries.__consolidatingGenerator:
// each run of vpp values becomes one, null unless its non-null count over
// vpp (also for the last, shorter run) reaches xff.
func consolidateValues(vals []float64, vpp int, fn string, xff float64) []float64 {
	out := make([]float64, 0, (len(vals)+vpp-1)/vpp)
	for i := 0; i < len(vals); i += vpp {
		run := vals[i:min(i+vpp, len(vals))]
		nonNull := 0
		var acc float64
		first, last := math.NaN(), math.NaN()
		for _, v := range run {
			if isNull(v) {
				continue
			}
			if nonNull == 0 {
				first = v
				acc = v
			} else {
				switch fn {
				case "max":
					acc = max(acc, v)
				case "min":
					acc = min(acc, v)
				default:
					acc += v
				}
			}
			last = v
			nonNull++
		}
		if nonNull == 0 || float64(nonNull)/float64(vpp) < xff {
			out = append(out, math.NaN())
			continue
		}
		switch fn {
		case "sum", "max", "min":
			out = append(out, acc)
		case "first":
			out = append(out, first)
		case "last":
			out = append(out, last)
		case "avg_zero":
			out = append(out, acc/float64(len(run)))
		default: // average, avg
			out = append(out, acc/float64(nonNull))
		}
	}
	return out
}

// AppendRenderJSON appends graphite-web's JSON answer:
// [{"target": name, "tags": {…}, "datapoints": [[value, ts], …]}, …],
// with its separators, null for None and ±1e9999 for infinities,
// consolidated to maxDataPoints (0: none), null points left out with
// noNullPoints (and series left with none dropped).
func AppendRenderJSON(dst []byte, series []*expr.Series, maxDataPoints int, noNullPoints bool) []byte {
	dst = append(dst, '[')
	// graphite-web answers [] unless some series holds a value
	if !slices.ContainsFunc(series, func(s *expr.Series) bool { return len(s.Values) > 0 }) {
		return append(dst, ']')
	}
	startTime, endTime := int64(math.MaxInt64), int64(math.MinInt64)
	for _, s := range series {
		startTime = min(startTime, s.Start)
		endTime = max(endTime, s.End)
	}
	first := true
	for _, s := range series {
		start, step, vals := Consolidate(s, maxDataPoints, endTime-startTime)
		// timestamps run from start to End inclusive (graphite-web's
		// range(start, end+1, step) zipped with the values)
		n := len(vals)
		if step > 0 && start <= s.End {
			n = min(n, int((s.End-start)/step)+1)
		} else {
			n = 0
		}
		if noNullPoints && !slices.ContainsFunc(vals[:n], func(v float64) bool { return !isNull(v) }) {
			continue
		}
		if !first {
			dst = append(dst, ", "...)
		}
		first = false
		dst = append(dst, `{"target": `...)
		dst = appendPyJSONString(dst, s.Name)
		dst = append(dst, `, "tags": {`...)
		keys := make([]string, 0, len(s.Tags))
		for k := range s.Tags {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ", "...)
			}
			dst = appendPyJSONString(dst, k)
			dst = append(dst, ": "...)
			dst = appendPyJSONString(dst, s.Tags[k])
		}
		dst = append(dst, `}, "datapoints": [`...)
		firstPoint := true
		for i, v := range vals[:n] {
			if noNullPoints && isNull(v) {
				continue
			}
			if !firstPoint {
				dst = append(dst, ", "...)
			}
			firstPoint = false
			dst = append(dst, '[')
			dst = appendJSONValue(dst, v)
			dst = append(dst, ", "...)
			dst = strconv.AppendInt(dst, start+int64(i)*step, 10)
			dst = append(dst, ']')
		}
		dst = append(dst, "]}"...)
	}
	return append(dst, ']')
}

// appendRenderCSV appends graphite-web's CSV answer: one row per value,
// name, "YYYY-MM-DD HH:MM:SS" in loc, and the value (empty for None),
// CRLF line ends (Python's excel dialect).
func appendRenderCSV(dst []byte, series []*expr.Series, loc *time.Location) []byte {
	var sb strings.Builder
	cw := csv.NewWriter(&sb)
	cw.UseCRLF = true
	var num []byte
	for _, s := range series {
		for i, v := range s.Values {
			ts := time.Unix(s.Start+int64(i)*s.Step, 0).In(loc).Format("2006-01-02 15:04:05")
			val := ""
			if !isNull(v) {
				num = AppendPyFloat(num[:0], v)
				val = string(num)
			}
			cw.Write([]string{s.Name, ts, val})
		}
	}
	cw.Flush()
	return append(dst, sb.String()...)
}

// AppendRenderRaw appends graphite-web's raw answer: per series
// "name,start,end,step|v1,v2,…\n", values as Python's repr, None for
// nulls.
func AppendRenderRaw(dst []byte, series []*expr.Series) []byte {
	for _, s := range series {
		dst = append(dst, s.Name...)
		dst = append(dst, ',')
		dst = strconv.AppendInt(dst, s.Start, 10)
		dst = append(dst, ',')
		dst = strconv.AppendInt(dst, s.End, 10)
		dst = append(dst, ',')
		dst = strconv.AppendInt(dst, s.Step, 10)
		dst = append(dst, '|')
		for i, v := range s.Values {
			if i > 0 {
				dst = append(dst, ',')
			}
			if isNull(v) {
				dst = append(dst, "None"...)
			} else {
				dst = AppendPyFloat(dst, v)
			}
		}
		dst = append(dst, '\n')
	}
	return dst
}

var pickleSeriesKeys = []string{"name", "start", "end", "step", "values", "pathExpression", "valuesPerPoint", "consolidationFunc", "xFilesFactor"}

// AppendRenderPickle appends graphite-web's pickle answer: a list of
// TimeSeries.getInfo() dicts, as a protocol-2 pickle.
func AppendRenderPickle(dst []byte, series []*expr.Series) []byte {
	dst = AppendPickleHeader(dst)
	dst = AppendPickleList(dst, len(series), func(dst []byte, i int) []byte {
		s := series[i]
		return AppendPickleDict(dst, pickleSeriesKeys, func(dst []byte, k int) []byte {
			switch k {
			case 0:
				return AppendPickleString(dst, s.Name)
			case 1:
				return AppendPickleInt(dst, s.Start)
			case 2:
				return AppendPickleInt(dst, s.End)
			case 3:
				return AppendPickleInt(dst, s.Step)
			case 4:
				return AppendPickleList(dst, len(s.Values), func(dst []byte, j int) []byte {
					return AppendPickleValue(dst, s.Values[j])
				})
			case 5:
				pe := s.PathExpression
				if pe == "" {
					pe = s.Name
				}
				return AppendPickleString(dst, pe)
			case 6:
				return AppendPickleInt(dst, 1)
			case 7:
				cf := s.ConsolidationFunc
				if cf == "" {
					cf = "average"
				}
				return AppendPickleString(dst, cf)
			default:
				return AppendPickleFloat(dst, s.XFilesFactor)
			}
		})
	})
	return AppendPickleStop(dst)
}
