package httpbench

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/aerie-db/aerie/bench/tsbs"
	"github.com/prometheus/prometheus/model/labels"
)

// query is one request to the query API: an instance of a pattern, a
// count, or a dashboard panel's.
type query struct {
	tsbs.Query
	// nocache asks VictoriaMetrics not to use or fill its rollup result
	// cache (nocache=1; Aerie ignores it): counts taken while data arrive.
	nocache bool
	// gzip asks for a compressed answer (Accept-Encoding: gzip), as a
	// browser does; promQuery returns it decompressed.
	gzip bool
}

// notes are distinct remarks, in the order first made.
type notes []string

func (n *notes) add(s string) {
	if !slices.Contains(*n, s) {
		*n = append(*n, s)
	}
}

// result is a parsed answer of the query API.
type result struct {
	typ    string // matrix or vector
	series []series
}

type series struct {
	labels labels.Labels
	points []point
}

type point struct {
	t int64 // ms
	v float64
}

// apiError is an answer with status "error" (or no JSON at all).
type apiError struct{ msg string }

func (e *apiError) Error() string { return e.msg }

// parseResult parses a /api/v1/query{,_range} answer. An answer with
// status "error" gives an *apiError.
func parseResult(b []byte) (result, error) {
	var resp struct {
		Status    string `json:"status"`
		ErrorType string `json:"errorType"`
		Error     string `json:"error"`
		Data      struct {
			ResultType string `json:"resultType"`
			Result     []struct {
				Metric map[string]string `json:"metric"`
				Values [][2]any          `json:"values"`
				Value  *[2]any           `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(b, &resp); err != nil {
		return result{}, &apiError{msg: fmt.Sprintf("not a query API answer (%v): %.200s", err, b)}
	}
	if resp.Status != "success" {
		return result{}, &apiError{msg: fmt.Sprintf("%s: %s", resp.ErrorType, resp.Error)}
	}
	res := result{typ: resp.Data.ResultType}
	if res.typ != "matrix" && res.typ != "vector" {
		return result{}, fmt.Errorf("result type %q, want matrix or vector", res.typ)
	}
	for _, r := range resp.Data.Result {
		s := series{labels: labels.FromMap(r.Metric)}
		vals := r.Values
		if r.Value != nil {
			vals = append(vals, *r.Value)
		}
		for _, tv := range vals {
			p, err := parsePoint(tv)
			if err != nil {
				return result{}, fmt.Errorf("series %v: %w", s.labels, err)
			}
			s.points = append(s.points, p)
		}
		res.series = append(res.series, s)
	}
	return res, nil
}

func parsePoint(tv [2]any) (point, error) {
	t, ok := tv[0].(float64)
	if !ok {
		return point{}, fmt.Errorf("timestamp %v is not a number", tv[0])
	}
	vs, ok := tv[1].(string)
	if !ok {
		return point{}, fmt.Errorf("value %v is not a string", tv[1])
	}
	v, err := strconv.ParseFloat(vs, 64)
	if err != nil {
		return point{}, fmt.Errorf("value %q: %w", vs, err)
	}
	return point{t: int64(math.Round(t * 1000)), v: v}, nil
}

// Verdicts of comparing two answers.
const (
	agree     = "agree"
	agreeName = "agree except __name__" // one engine keeps __name__ where the other drops it
	differ    = "differ"
)

// compare tells whether a and b hold the same series (by labels) with the
// same points, values within 1e-9 relative. If they do only once
// __name__ is dropped from both, the verdict is agreeName: Aerie drops
// the name of `avg(avg_over_time(m[1h])) by (__name__, host)` over a
// single metric (Prometheus semantics), VictoriaMetrics keeps it.
func compare(a, b result) (string, string) {
	if msg := diff(a, b, false); msg == "" {
		return agree, ""
	}
	msg := diff(a, b, true)
	if msg == "" {
		return agreeName, ""
	}
	return differ, msg
}

func diff(a, b result, dropName bool) string {
	if a.typ != b.typ {
		return fmt.Sprintf("%s vs %s", a.typ, b.typ)
	}
	as, bs := keyed(a, dropName), keyed(b, dropName)
	if len(as) != len(bs) {
		return fmt.Sprintf("%d series vs %d", len(as), len(bs))
	}
	for i := range as {
		x, y := as[i], bs[i]
		if x.key != y.key {
			return fmt.Sprintf("series %d: %s vs %s", i, x.key, y.key)
		}
		if len(x.points) != len(y.points) {
			return fmt.Sprintf("%s: %d points vs %d", x.key, len(x.points), len(y.points))
		}
		for j, p := range x.points {
			if q := y.points[j]; p.t != q.t || !tsbs.NearlyEqual(p.v, q.v) {
				return fmt.Sprintf("%s point %d: %v@%d vs %v@%d", x.key, j, p.v, p.t, q.v, q.t)
			}
		}
	}
	return ""
}

type keyedSeries struct {
	key, full string // labels without (if dropName) and with __name__
	points    []point
}

// keyed returns the series of r keyed by their label sets (without
// __name__ if dropName), sorted by key and then by the whole label set.
func keyed(r result, dropName bool) []keyedSeries {
	out := make([]keyedSeries, 0, len(r.series))
	for _, s := range r.series {
		ks := keyedSeries{full: s.labels.StringNoSpace(), points: s.points}
		ks.key = ks.full
		if dropName {
			ks.key = s.labels.DropReserved(func(n string) bool { return n == labels.MetricName }).StringNoSpace()
		}
		out = append(out, ks)
	}
	slices.SortFunc(out, func(x, y keyedSeries) int {
		if c := strings.Compare(x.key, y.key); c != 0 {
			return c
		}
		return strings.Compare(x.full, y.full)
	})
	return out
}

// points returns the number of points of r.
func (r result) points() int {
	n := 0
	for _, s := range r.series {
		n += len(s.points)
	}
	return n
}
