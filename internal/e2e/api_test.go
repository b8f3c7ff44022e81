package e2e

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
)

var httpClient = &http.Client{Timeout: 60 * time.Second}

// apiResponse is the envelope of every /api/v1 answer.
type apiResponse struct {
	HTTPStatus int             `json:"-"`
	Status     string          `json:"status"`
	ErrorType  string          `json:"errorType,omitempty"`
	Error      string          `json:"error,omitempty"`
	Data       json.RawMessage `json:"data,omitempty"`
	Warnings   []string        `json:"warnings,omitempty"`
	Infos      []string        `json:"infos,omitempty"`
}

func (r *apiResponse) String() string {
	if r.Status == "error" {
		return fmt.Sprintf("HTTP %d error %s: %s", r.HTTPStatus, r.ErrorType, r.Error)
	}
	d := string(r.Data)
	if len(d) > 300 {
		d = d[:300] + "..."
	}
	return fmt.Sprintf("HTTP %d %s %s", r.HTTPStatus, r.Status, d)
}

// apiGet sends GET base+path?params and decodes the envelope.
func apiGet(base, path string, params url.Values) (*apiResponse, error) {
	u := base + path
	if len(params) > 0 {
		u += "?" + params.Encode()
	}
	status, body, err := getBytes(u)
	if err != nil {
		return nil, err
	}
	var r apiResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("GET %s: HTTP %d, not an API answer (%v): %.300s", u, status, err, body)
	}
	r.HTTPStatus = status
	return &r, nil
}

// apiOK is apiGet that also requires status "success".
func apiOK(base, path string, params url.Values) (*apiResponse, error) {
	r, err := apiGet(base, path, params)
	if err != nil {
		return nil, err
	}
	if r.Status != "success" {
		return nil, fmt.Errorf("GET %s%s?%s: %s", base, path, params.Encode(), r)
	}
	return r, nil
}

// fmtTime renders milliseconds as the API's seconds with 3 decimals.
func fmtTime(ms int64) string {
	return fmt.Sprintf("%d.%03d", ms/1000, ms%1000)
}

// point is one [timestamp, "value"] pair; T is parsed from the JSON number
// text exactly (no float rounding), V kept as the server's string.
type point struct {
	T int64
	V string
}

func (p *point) UnmarshalJSON(b []byte) error {
	var raw []json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	if len(raw) != 2 {
		return fmt.Errorf("point %s: want [t, v]", b)
	}
	t, err := parseJSONSeconds(string(raw[0]))
	if err != nil {
		return err
	}
	p.T = t
	return json.Unmarshal(raw[1], &p.V)
}

func (p point) String() string { return fmtTime(p.T) + ":" + p.V }

// parseJSONSeconds parses "1700000000.123" into 1700000000123 exactly.
func parseJSONSeconds(s string) (int64, error) {
	intPart, frac, _ := strings.Cut(s, ".")
	sec, err := strconv.ParseInt(intPart, 10, 64)
	if err != nil || len(frac) > 3 {
		return 0, fmt.Errorf("timestamp %q: not seconds with at most 3 decimals", s)
	}
	ms := int64(0)
	if frac != "" {
		frac += strings.Repeat("0", 3-len(frac))
		if ms, err = strconv.ParseInt(frac, 10, 64); err != nil {
			return 0, fmt.Errorf("timestamp %q: %v", s, err)
		}
	}
	if strings.HasPrefix(s, "-") {
		return sec*1000 - ms, nil
	}
	return sec*1000 + ms, nil
}

// seriesResult is one element of a vector or matrix result.
type seriesResult struct {
	Metric     map[string]string `json:"metric"`
	Value      *point            `json:"value,omitempty"`
	Values     []point           `json:"values,omitempty"`
	Histogram  json.RawMessage   `json:"histogram,omitempty"`
	Histograms json.RawMessage   `json:"histograms,omitempty"`
}

// queryData is the data of a query or query_range answer. Vector and
// matrix results are sorted by label set; scalars and strings are kept in
// Scalar.
type queryData struct {
	ResultType string
	Series     []seriesResult
	Scalar     *point
}

func parseQueryData(raw json.RawMessage) (*queryData, error) {
	var d struct {
		ResultType string          `json:"resultType"`
		Result     json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		return nil, fmt.Errorf("query data: %v", err)
	}
	q := &queryData{ResultType: d.ResultType}
	switch d.ResultType {
	case "vector", "matrix":
		if err := json.Unmarshal(d.Result, &q.Series); err != nil {
			return nil, fmt.Errorf("%s result: %v", d.ResultType, err)
		}
		sort.Slice(q.Series, func(i, j int) bool {
			return labelString(q.Series[i].Metric) < labelString(q.Series[j].Metric)
		})
	case "scalar", "string":
		q.Scalar = new(point)
		if err := json.Unmarshal(d.Result, q.Scalar); err != nil {
			return nil, fmt.Errorf("%s result: %v", d.ResultType, err)
		}
	default:
		return nil, fmt.Errorf("unknown resultType %q", d.ResultType)
	}
	return q, nil
}

// labelString renders a label set canonically: {a="1", b="2"}, sorted.
func labelString(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s=%q", k, m[k])
	}
	b.WriteByte('}')
	return b.String()
}

// points returns the instant value or the range values of one series.
func (s *seriesResult) points() []point {
	if s.Value != nil {
		return []point{*s.Value}
	}
	return s.Values
}

// diffQueryData compares two results and returns "" when equal, or a
// compact description of the first differences. With tol > 0, values may
// differ by that relative amount (see allowFloatULPs in promql_test.go).
func diffQueryData(want, got *queryData, tol float64) string {
	if want.ResultType != got.ResultType {
		return fmt.Sprintf("resultType %s vs %s", want.ResultType, got.ResultType)
	}
	if want.Scalar != nil || got.Scalar != nil {
		if want.Scalar == nil || got.Scalar == nil || want.Scalar.T != got.Scalar.T || !sameValue(want.Scalar.V, got.Scalar.V, tol) {
			return fmt.Sprintf("%v vs %v", want.Scalar, got.Scalar)
		}
		return ""
	}
	wm := map[string]*seriesResult{}
	for i := range want.Series {
		wm[labelString(want.Series[i].Metric)] = &want.Series[i]
	}
	gm := map[string]*seriesResult{}
	for i := range got.Series {
		gm[labelString(got.Series[i].Metric)] = &got.Series[i]
	}
	var diffs []string
	for _, s := range want.Series {
		k := labelString(s.Metric)
		g, ok := gm[k]
		if !ok {
			diffs = append(diffs, "only in Prometheus: "+k)
			continue
		}
		if d := diffPoints(s.points(), g.points(), tol); d != "" {
			diffs = append(diffs, k+": "+d)
		}
		if string(s.Histogram) != string(g.Histogram) || string(s.Histograms) != string(g.Histograms) {
			diffs = append(diffs, k+": histograms differ")
		}
	}
	for _, s := range got.Series {
		if k := labelString(s.Metric); wm[k] == nil {
			diffs = append(diffs, "only in Aerie: "+k)
		}
	}
	return summarize(diffs, 5)
}

// diffPoints describes how two sample lists differ ("" when they agree).
func diffPoints(want, got []point, tol float64) string {
	n := min(len(want), len(got))
	for i := 0; i < n; i++ {
		if want[i].T != got[i].T || !sameValue(want[i].V, got[i].V, tol) {
			return fmt.Sprintf("%d vs %d samples, first difference at #%d: %v vs %v", len(want), len(got), i, want[i], got[i])
		}
	}
	if len(want) != len(got) {
		var extra point
		if len(want) > n {
			extra = want[n]
		} else {
			extra = got[n]
		}
		return fmt.Sprintf("%d vs %d samples, first unmatched %v", len(want), len(got), extra)
	}
	return ""
}

// sameValue compares two rendered sample values: bit-exact strings, or,
// with tol > 0, floats within a relative tol.
func sameValue(a, b string, tol float64) bool {
	if a == b {
		return true
	}
	if tol == 0 {
		return false
	}
	x, err1 := strconv.ParseFloat(a, 64)
	y, err2 := strconv.ParseFloat(b, 64)
	if err1 != nil || err2 != nil || math.IsNaN(x) || math.IsNaN(y) || math.IsInf(x, 0) || math.IsInf(y, 0) {
		return false
	}
	return math.Abs(x-y) <= tol*math.Max(math.Abs(x), math.Abs(y))
}

// summarize joins the first n lines and counts the rest.
func summarize(lines []string, n int) string {
	if len(lines) == 0 {
		return ""
	}
	if len(lines) > n {
		return strings.Join(lines[:n], "\n  ") + fmt.Sprintf("\n  ... and %d more", len(lines)-n)
	}
	return strings.Join(lines, "\n  ")
}

// query runs an instant query at ms and returns the parsed data.
func query(base, q string, ms int64) (*queryData, error) {
	r, err := apiOK(base, "/api/v1/query", url.Values{"query": {q}, "time": {fmtTime(ms)}})
	if err != nil {
		return nil, err
	}
	return parseQueryData(r.Data)
}

// seriesSet returns /api/v1/series for one matcher over [start, end] as
// canonical label strings, after applying norm to each label set.
func seriesSet(base, match string, start, end int64, norm func(map[string]string)) (map[string]bool, error) {
	r, err := apiOK(base, "/api/v1/series", url.Values{
		"match[]": {match}, "start": {fmtTime(start)}, "end": {fmtTime(end)},
	})
	if err != nil {
		return nil, err
	}
	var sets []map[string]string
	if err := json.Unmarshal(r.Data, &sets); err != nil {
		return nil, fmt.Errorf("series data: %v", err)
	}
	out := make(map[string]bool, len(sets))
	for _, ls := range sets {
		if norm != nil {
			norm(ls)
		}
		out[labelString(ls)] = true
	}
	return out, nil
}

// diffSets lists the keys only in a and only in b.
func diffSets(a, b map[string]bool) (onlyA, onlyB []string) {
	for k := range a {
		if !b[k] {
			onlyA = append(onlyA, k)
		}
	}
	for k := range b {
		if !a[k] {
			onlyB = append(onlyB, k)
		}
	}
	sort.Strings(onlyA)
	sort.Strings(onlyB)
	return onlyA, onlyB
}
