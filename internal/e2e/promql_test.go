package e2e

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
)

// Allowed differences between the answers of Debian's Prometheus 2.42 and
// Aerie, which runs the PromQL engine and HTTP API of Prometheus 3.x
// (github.com/prometheus/prometheus v0.310.0), over the same samples. Any
// other difference fails TestPromQLTable.
//
//  1. Error text. When both answer an error of the same errorType, the
//     "error" strings are not compared: 3.x rewords parser and engine
//     messages (positions, quoting, "function not enabled" for what 2.42
//     calls an unknown function). Status and errorType must agree.
//
//  2. Annotations. Only "status", "errorType" and "data" are compared:
//     3.x adds "infos" (e.g. "metric might not be a counter, name does not
//     end in _total" for rate() on a gauge) and words "warnings"
//     differently; 2.42 has no "infos".
//
//  3. allowFloatULPs, per case: values may differ by a relative 1e-12
//     where 3.x changed floating-point evaluation order: Kahan summation in
//     sum, avg, sum_over_time, avg_over_time, stddev(_over_time) and the
//     linear regression of deriv and predict_linear, and a sum-then-divide
//     mean instead of 2.42's incremental one. Labels, timestamps, the
//     number of samples and non-finite values must still agree.
//
//  4. allowHoltWinters, one case: 3.0 renamed holt_winters to
//     double_exponential_smoothing (behind a feature flag), so 2.42
//     answers and Aerie must answer bad_data.
//
//  5. allowNewFunction, one case: sort_by_label is new in 3.x (an
//     experimental function): 2.42 says bad_data (unknown function); Aerie
//     says bad_data (not enabled) or, if it enables experimental functions,
//     success.
//
//  6. allowLeftOpenRange, one case: 3.0 made range selectors left-open:
//     x[5s] at t selects (t-5s, t], where 2.42 selects [t-5s, t]. The case
//     puts a sample exactly on the boundary, so Prometheus counts exactly
//     one sample more. (Every other case evaluates at times where no sample
//     is on a boundary; see window.)
//
//  7. allowDeadline, the two timeout cases (timeout=0.000001, a deadline
//     that has passed when the query starts): Aerie may answer bad_data or
//     execution with "context deadline exceeded" instead of timeout. Which
//     errorType a 3.x server gives depends on where the expired context is
//     noticed first: the active query tracker in NewInstantQuery (a plain
//     context error, which the API reports as an invalid "query"
//     parameter: bad_data), the storage's Select (execution), or the
//     evaluator (timeout); Prometheus 3.x with its own active query
//     tracker picks at random between the first and the last. 2.42 checked
//     in one place and always says timeout.
//
// TestAerieScrapeSeriesSet has one more (8, see there): 3.x scraping
// normalises quantile="0" to quantile="0.0" and le="1" to le="1.0".
var (
	allowHoltWinters = &allowance{
		reason: "holt_winters was renamed in Prometheus 3.0: 2.42 answers, Aerie says bad_data",
		ok: func(p, a *apiResponse) bool {
			return p.Status == "success" && a.Status == "error" && a.ErrorType == "bad_data"
		},
	}
	allowNewFunction = &allowance{
		reason: "sort_by_label is a 3.x experimental function: 2.42 says bad_data, Aerie bad_data or success",
		ok: func(p, a *apiResponse) bool {
			return p.Status == "error" && p.ErrorType == "bad_data" &&
				(a.Status == "success" || a.ErrorType == "bad_data")
		},
	}
	allowDeadline = &allowance{
		reason: "past deadline: the 3.x engine or the storage noticed it before the evaluator (see 7 above)",
		ok: func(p, a *apiResponse) bool {
			return p.Status == "error" && p.ErrorType == "timeout" && a.Status == "error" &&
				(a.ErrorType == "bad_data" || a.ErrorType == "execution") &&
				strings.Contains(a.Error, context.DeadlineExceeded.Error())
		},
	}
	allowLeftOpenRange = &allowance{
		reason: "range selectors are left-open in 3.x: Prometheus 2.42 counts the sample on the boundary",
		ok: func(p, a *apiResponse) bool {
			pd, err1 := parseQueryData(p.Data)
			ad, err2 := parseQueryData(a.Data)
			if err1 != nil || err2 != nil || len(pd.Series) != 1 || len(ad.Series) != 1 ||
				labelString(pd.Series[0].Metric) != labelString(ad.Series[0].Metric) ||
				pd.Series[0].Value == nil || ad.Series[0].Value == nil {
				return false
			}
			var pc, ac int
			fmt.Sscan(pd.Series[0].Value.V, &pc)
			fmt.Sscan(ad.Series[0].Value.V, &ac)
			return pc == ac+1
		},
	}
)

const floatULPTolerance = 1e-12

// allowance is one allowed difference for one case: ok tells whether the
// two answers differ in exactly the allowed way.
type allowance struct {
	reason string
	ok     func(prom, aerie *apiResponse) bool
}

// promqlCase is one query and what Prometheus 2.42 answers to it.
type promqlCase struct {
	name  string
	query string
	// rng: a range query over [T-20s, T] at a 5 s step; otherwise an
	// instant query at T.
	rng    bool
	params url.Values // set (or, with an empty value, delete) parameters

	wantErr string // Prometheus' errorType; "" for success
	empty   bool   // success with an empty result

	ulps  bool       // allowFloatULPs
	allow *allowance // one of the per-case allowances above
}

// promqlCases returns the table for a window: $T20 is T-20s as an @
// timestamp, $R10 a 10 s range (plus ms, see window.subRange) for ranges
// evaluated at subquery steps, $UP5 the timestamp 5 s after a sample of
// up{job="node"}. Only jobs node and prometheus (remote-written from
// Prometheus) are read: Aerie's own scrape (node-aerie) has other values.
// Ranges reach at most 40 s before T, inside the settled window.
func promqlCases(w window) []promqlCase {
	r := strings.NewReplacer(
		"$T20", fmtTime(w.T-20_000),
		"$T10", fmtTime(w.T-10_000),
		"$R10", w.subRange(10),
		"$UP5", fmtTime(w.UpTS+5000),
	)
	rangeStart := fmtTime(w.T - 20_000)
	cs := []promqlCase{
		// Selectors and arithmetic.
		{name: "up", query: `up{job="node"}`},
		{name: "up filter", query: `up{job=~"node|prometheus"} == 1`},
		{name: "gauge", query: `node_load1{job="node"}`},
		{name: "counter", query: `node_cpu_seconds_total{job="node",mode="idle"}`},
		{name: "regex name", query: `{__name__=~"scrape_.*",job="node"}`},
		{name: "memory used", query: `node_memory_MemTotal_bytes{job="node"} - node_memory_MemAvailable_bytes{job="node"}`},
		{name: "memory percent", query: `100 * (1 - node_memory_MemAvailable_bytes{job="node"} / node_memory_MemTotal_bytes{job="node"})`},
		{name: "filesystem ratio", query: `node_filesystem_avail_bytes{job="node"} / on (instance, device, mountpoint) node_filesystem_size_bytes{job="node"}`},
		{name: "group_left", query: `up{job="node"} * on (instance) group_left (nodename) node_uname_info{job="node"}`},
		{name: "comparison", query: `scrape_duration_seconds{job=~"node|prometheus"} > 0`},
		{name: "bool", query: `scrape_samples_scraped{job="node"} > bool 100`},
		{name: "clamp", query: `clamp_max(node_load1{job="node"}, 0.5)`},
		{name: "round", query: `round(node_memory_MemFree_bytes{job="node"} / 1e6, 0.1)`},
		{name: "timestamp", query: `timestamp(up{job="node"})`},
		{name: "time", query: `time()`},
		{name: "scalar", query: `scalar(up{job="node"})`},
		{name: "vector", query: `vector(1)`},
		{name: "literal", query: `1 + 1`},
		{name: "string", query: `"hello"`},
		// Rates.
		{name: "rate", query: `rate(node_cpu_seconds_total{job="node"}[30s])`},
		{name: "irate", query: `irate(node_cpu_seconds_total{job="node"}[10s])`},
		{name: "increase", query: `increase(node_network_receive_bytes_total{job="node"}[30s])`},
		{name: "rate ratio", query: `rate(prometheus_http_request_duration_seconds_sum{job="prometheus"}[30s]) / rate(prometheus_http_request_duration_seconds_count{job="prometheus"}[30s])`},
		{name: "delta", query: `delta(node_load1{job="node"}[30s])`},
		{name: "deriv", query: `deriv(node_memory_MemFree_bytes{job="node"}[30s])`, ulps: true},
		{name: "predict_linear", query: `predict_linear(node_memory_MemFree_bytes{job="node"}[30s], 60)`, ulps: true},
		{name: "changes", query: `changes(node_load1{job="node"}[30s])`},
		{name: "resets", query: `resets(node_cpu_seconds_total{job="node"}[30s])`},
		// Aggregations.
		{name: "sum by", query: `sum by (mode) (rate(node_cpu_seconds_total{job="node"}[30s]))`, ulps: true},
		{name: "avg by", query: `avg by (cpu) (rate(node_cpu_seconds_total{job="node"}[20s]))`, ulps: true},
		{name: "max by", query: `max by (mode) (node_cpu_seconds_total{job="node"})`},
		{name: "min without", query: `min without (cpu) (node_cpu_seconds_total{job="node"})`},
		{name: "count by name", query: `count by (__name__) ({job="node",__name__=~"node_memory_.*"})`},
		{name: "stddev", query: `stddev by (mode) (node_cpu_seconds_total{job="node"})`, ulps: true},
		{name: "sum by handler", query: `sum by (handler) (rate(prometheus_http_requests_total{job="prometheus"}[30s]))`, ulps: true},
		{name: "sum by job", query: `sum by (job) (scrape_series_added{job=~"node|prometheus"})`},
		{name: "topk", query: `topk(3, node_cpu_seconds_total{job="node"})`},
		{name: "bottomk", query: `bottomk(1, node_memory_MemFree_bytes{job="node"} or node_memory_MemAvailable_bytes{job="node"})`},
		{name: "quantile", query: `quantile(0.5, rate(node_cpu_seconds_total{job="node"}[30s]))`},
		{name: "count_values", query: `count_values("value", up{job=~"node|prometheus"})`},
		{name: "count_values nested", query: `count_values("cpus", count by (mode) (node_cpu_seconds_total{job="node"}))`},
		{name: "sort_desc", query: `sort_desc(sum by (mode) (node_cpu_seconds_total{job="node"}))`, ulps: true},
		// Over time.
		{name: "quantile_over_time", query: `quantile_over_time(0.9, scrape_duration_seconds{job="node"}[30s])`},
		{name: "count_over_time", query: `count_over_time(up{job="node"}[30s])`},
		{name: "last_over_time", query: `last_over_time(node_load1{job="node"}[20s])`},
		{name: "stddev_over_time", query: `stddev_over_time(node_load1{job="node"}[30s])`, ulps: true},
		{name: "present_over_time", query: `present_over_time(up{job="node"}[10s])`},
		{name: "absent_over_time present", query: `absent_over_time(up{job="node"}[10s])`, empty: true},
		// Histograms (Prometheus' own, remote-written from its self-scrape).
		{name: "histogram_quantile sum", query: `histogram_quantile(0.9, sum by (le) (rate(prometheus_http_request_duration_seconds_bucket{job="prometheus"}[30s])))`, ulps: true},
		{name: "histogram_quantile handler", query: `histogram_quantile(0.5, rate(prometheus_http_request_duration_seconds_bucket{job="prometheus",handler="/metrics"}[30s]))`},
		{name: "histogram_quantile size", query: `histogram_quantile(0.99, rate(prometheus_http_response_size_bytes_bucket{job="prometheus",handler="/metrics"}[30s]))`},
		// offset, @, subqueries.
		{name: "offset", query: `node_load1{job="node"} offset 10s`},
		{name: "rate offset", query: `rate(node_context_switches_total{job="node"}[20s] offset 10s)`},
		{name: "at", query: `node_load1{job="node"} @ $T20`},
		{name: "sum_over_time at", query: `sum_over_time(scrape_samples_scraped{job="node"}[20s] @ $T10)`, ulps: true},
		{name: "subquery rate", query: `max_over_time(rate(node_cpu_seconds_total{job="node",mode="idle"}[$R10])[30s:5s])`},
		{name: "subquery gauge", query: `avg_over_time(node_load1{job="node"}[30s:2s])`, ulps: true},
		// Labels and absence.
		{name: "label_replace", query: `label_replace(up{job="node"}, "host", "$1", "instance", "(.*):.*")`},
		{name: "label_replace no match", query: `label_replace(node_load1{job="node"}, "x", "y", "nope", "")`},
		{name: "label_join", query: `label_join(up{job="node"}, "joined", "-", "job", "instance")`},
		{name: "absent missing", query: `absent(nonexistent_metric{job="node"})`},
		{name: "absent present", query: `absent(up{job="node"})`, empty: true},
		{name: "no such series", query: `nonexistent_metric{job="node"}`, empty: true},
		// Known 2.42 / 3.x differences (see the list above).
		{name: "holt_winters", query: `holt_winters(node_load1{job="node"}[30s], 0.5, 0.5)`, allow: allowHoltWinters},
		{name: "sort_by_label", query: `sort_by_label(up{job=~"node|prometheus"}, "job")`, wantErr: "bad_data", allow: allowNewFunction},
		{name: "left-open range", query: `count_over_time(up{job="node"}[5s] @ $UP5)`, allow: allowLeftOpenRange},

		// Range queries over [T-20s, T], step 5s unless set.
		{name: "range up", rng: true, query: `up{job="node"}`},
		{name: "range rate", rng: true, query: `rate(node_cpu_seconds_total{job="node",mode="idle"}[10s])`},
		{name: "range sum irate", rng: true, query: `sum by (mode) (irate(node_cpu_seconds_total{job="node"}[5s]))`, ulps: true},
		{name: "range increase", rng: true, query: `increase(node_network_transmit_bytes_total{job="node"}[10s])`},
		{name: "range histogram_quantile", rng: true, query: `histogram_quantile(0.9, sum by (le) (rate(prometheus_http_request_duration_seconds_bucket{job="prometheus"}[10s])))`, ulps: true},
		{name: "range offset 1s step", rng: true, query: `node_load1{job="node"} offset 5s`, params: url.Values{"step": {"1"}}},
		{name: "range at end", rng: true, query: `node_load1{job="node"} @ end()`},
		{name: "range at start", rng: true, query: `scrape_duration_seconds{job="node"} @ start()`},
		{name: "range subquery", rng: true, query: `max_over_time(node_load1{job="node"}[10s:2s])`},
		{name: "range topk", rng: true, query: `topk(2, node_cpu_seconds_total{job="node",mode=~"idle|user|system"})`}, // counters: no ties
		{name: "range quantile_over_time", rng: true, query: `quantile_over_time(0.5, scrape_duration_seconds{job=~"node|prometheus"}[10s])`},
		{name: "range absent", rng: true, query: `absent(nonexistent_metric{job="node"})`},
		{name: "range label_replace", rng: true, query: `label_replace(rate(node_network_receive_packets_total{job="node"}[10s]), "dev", "$1", "device", "(.+)")`},
		{name: "range time", rng: true, query: `time() - timestamp(up{job="node"})`},

		// Errors.
		{name: "parse error", query: `sum(up{job="node"}`, wantErr: "bad_data"},
		{name: "unknown function", query: `no_such_function(up{job="node"})`, wantErr: "bad_data"},
		{name: "type error", query: `rate(up{job="node"})`, wantErr: "bad_data"},
		{name: "bad topk parameter", query: `topk("a", up{job="node"})`, wantErr: "bad_data"},
		{name: "bad time", query: `up{job="node"}`, params: url.Values{"time": {"yesterday"}}, wantErr: "bad_data"},
		{name: "timeout", query: `sum(rate(node_cpu_seconds_total{job="node"}[30s]))`, params: url.Values{"timeout": {"0.000001"}}, wantErr: "timeout", allow: allowDeadline},
		{name: "many-to-many", query: `node_cpu_seconds_total{job="node"} * on (job) node_cpu_seconds_total{job="node"}`, wantErr: "execution"},
		{name: "bad regex", query: `label_replace(up{job="node"}, "a", "b", "instance", "(")`, wantErr: "execution"},
		{name: "range zero step", rng: true, query: `up{job="node"}`, params: url.Values{"step": {"0"}}, wantErr: "bad_data"},
		{name: "range negative step", rng: true, query: `up{job="node"}`, params: url.Values{"step": {"-5"}}, wantErr: "bad_data"},
		{name: "range too many points", rng: true, query: `up{job="node"}`, params: url.Values{"start": {fmtTime(w.T - 3_600_000)}, "step": {"0.1"}}, wantErr: "bad_data"},
		{name: "range end before start", rng: true, query: `up{job="node"}`, params: url.Values{"start": {fmtTime(w.T + 1000)}}, wantErr: "bad_data"},
		{name: "range no step", rng: true, query: `up{job="node"}`, params: url.Values{"step": {""}}, wantErr: "bad_data"},
		{name: "range timeout", rng: true, query: `sum(rate(node_cpu_seconds_total{job="node"}[10s]))`, params: url.Values{"timeout": {"0.000001"}}, wantErr: "timeout", allow: allowDeadline},
	}
	for i := range cs {
		cs[i].query = r.Replace(cs[i].query)
		if cs[i].rng {
			p := url.Values{"start": {rangeStart}, "end": {fmtTime(w.T)}, "step": {"5"}}
			for k, v := range cs[i].params {
				p[k] = v
			}
			cs[i].params = p
		} else {
			p := url.Values{"time": {fmtTime(w.T)}}
			for k, v := range cs[i].params {
				p[k] = v
			}
			cs[i].params = p
		}
	}
	return cs
}

func (c promqlCase) run(base string) (*apiResponse, error) {
	p := url.Values{"query": {c.query}}
	for k, v := range c.params {
		if len(v) == 1 && v[0] == "" {
			continue // an empty value deletes the parameter
		}
		p[k] = v
	}
	path := "/api/v1/query"
	if c.rng {
		path = "/api/v1/query_range"
	}
	return apiGet(base, path, p)
}

// checkPrometheus returns what is wrong with Prometheus' own answer ("" if
// it is what the case says).
func (c promqlCase) checkPrometheus(r *apiResponse) string {
	if c.wantErr != "" {
		if r.Status != "error" || r.ErrorType != c.wantErr {
			return fmt.Sprintf("Prometheus: want error %s, got %s", c.wantErr, r)
		}
		return ""
	}
	if r.Status != "success" {
		return fmt.Sprintf("Prometheus: want success, got %s", r)
	}
	d, err := parseQueryData(r.Data)
	if err != nil {
		return fmt.Sprintf("Prometheus: %v", err)
	}
	if d.Scalar != nil {
		return ""
	}
	if c.empty != (len(d.Series) == 0) {
		return fmt.Sprintf("Prometheus: want empty=%v, got %d series", c.empty, len(d.Series))
	}
	return ""
}

// compare returns the difference between the two answers that no
// allowance covers (diff), or the allowance used (allowed).
func (c promqlCase) compare(p, a *apiResponse) (diff, allowed string) {
	d := strictDiff(p, a, 0)
	if d == "" {
		return "", ""
	}
	if c.ulps && strictDiff(p, a, floatULPTolerance) == "" {
		return "", "float ULPs (Kahan summation in 3.x)"
	}
	if c.allow != nil && c.allow.ok(p, a) {
		return "", c.allow.reason
	}
	return d, ""
}

// strictDiff compares status, errorType and data (not error texts: both
// failing with the same errorType is agreement).
func strictDiff(p, a *apiResponse, tol float64) string {
	if p.Status != a.Status {
		return fmt.Sprintf("Prometheus: %s\n  Aerie:      %s", p, a)
	}
	if p.Status == "error" {
		if p.ErrorType != a.ErrorType {
			return fmt.Sprintf("errorType: Prometheus: %s\n  Aerie:      %s", p, a)
		}
		return ""
	}
	pd, err := parseQueryData(p.Data)
	if err != nil {
		return "Prometheus data: " + err.Error()
	}
	ad, err := parseQueryData(a.Data)
	if err != nil {
		return "Aerie data: " + err.Error()
	}
	return diffQueryData(pd, ad, tol)
}

// TestPromQLTable sends every case to Prometheus 2.42 and to Aerie, which
// holds the same samples through remote write, and compares the answers.
func TestPromQLTable(t *testing.T) {
	t.Parallel()
	st, w := sharedStack(t)
	cases := promqlCases(w)
	t.Logf("%d cases, window (%s, %s], T's milliseconds %d", len(cases), fmtTime(w.Start), fmtTime(w.T), w.Delta)
	var failed, allowedN int
	for _, c := range cases {
		p, err := c.run(st.prom)
		if err != nil {
			t.Errorf("%s: Prometheus: %v", c.name, err)
			continue
		}
		if msg := c.checkPrometheus(p); msg != "" {
			// The table is wrong, not Aerie: fix the case.
			t.Errorf("%s: %s\n  query: %s", c.name, msg, c.query)
			continue
		}
		a, err := c.run(st.aerie)
		if err != nil {
			t.Errorf("%s: Aerie: %v", c.name, err)
			failed++
			continue
		}
		diff, allowed := c.compare(p, a)
		switch {
		case diff != "":
			failed++
			t.Errorf("%s: %s\n  query: %s %s\n  %s", c.name, map[bool]string{true: "range", false: "instant"}[c.rng], c.query, c.params.Encode(), diff)
		case allowed != "":
			allowedN++
			t.Logf("%s: allowed difference: %s", c.name, allowed)
		}
	}
	t.Logf("%d cases: %d differ, %d differ in an allowed way", len(cases), failed, allowedN)
}
