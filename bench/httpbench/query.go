package httpbench

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// profile names what the query patterns read in a workload.
type profile struct {
	host    string   // the label naming a host
	metric1 string   // "1 CPU metric" of Heracles Table 2
	metrics []string // every CPU metric; the first five are Heracles' "5 metrics"
	// cpuHour is double-groupby-1's per-host hourly measure.
	cpuHour string
	tsbs    bool // the TSBS-only patterns apply
}

var (
	tsbsProfile = profile{
		host:    "hostname",
		metric1: "cpu_usage_user",
		metrics: []string{"cpu_usage_user", "cpu_usage_system", "cpu_usage_idle", "cpu_usage_nice", "cpu_usage_iowait",
			"cpu_usage_irq", "cpu_usage_softirq", "cpu_usage_steal", "cpu_usage_guest", "cpu_usage_guest_nice"},
		cpuHour: "avg(avg_over_time(cpu_usage_user[1h])) by (__name__, hostname)",
		tsbs:    true,
	}
	nodeProfile = profile{
		host:    "instance",
		metric1: "node_load1",
		metrics: []string{"node_load1", "node_load5", "node_load15", "node_procs_running", "node_memory_MemAvailable_bytes"},
		cpuHour: `avg(rate(node_cpu_seconds_total{mode="user"}[1h])) by (instance)`,
	}
)

// nameRegexp matches the metric names: TSBS' VictoriaMetrics queries
// write cpu_(usage_user|usage_system|…).
func nameRegexp(names []string) string {
	prefix := names[0][:strings.IndexByte(names[0], '_')+1]
	var alts []string
	for _, n := range names {
		if !strings.HasPrefix(n, prefix) {
			prefix = ""
			break
		}
	}
	for _, n := range names {
		alts = append(alts, regexp.QuoteMeta(strings.TrimPrefix(n, prefix)))
	}
	if prefix == "" {
		return strings.Join(alts, "|")
	}
	return regexp.QuoteMeta(prefix) + "(" + strings.Join(alts, "|") + ")"
}

// pattern is one query pattern, written as VictoriaMetrics users and
// TSBS' victoriametrics query generator write it: several metrics are
// selected by a __name__ regexp and grouped by (__name__).
type pattern struct {
	name    string
	comment string
	hosts   int           // hosts selected (0: all)
	span    time.Duration // 0: an instant query at the data's last timestamp
	step    time.Duration // 0: the workload's interval
	tsbs    bool          // TSBS only (the CPU fields of the cpu measurement)
	expr    func(p profile, hostMatcher string) string
}

func maxOf(names []string, window string) func(profile, string) string {
	return func(p profile, hm string) string {
		return fmt.Sprintf(`max(max_over_time({__name__=~"%s",%s}[%s])) by (__name__)`, nameRegexp(names), hm, window)
	}
}

// patternsFor returns the patterns of a profile: Heracles Table 2's six
// (bench/patterns.go) and, on TSBS data, four more of TSBS' devops suite.
func patternsFor(p profile) []pattern {
	five := p.metrics[:5]
	ps := []pattern{
		{name: "1-8-1", hosts: 8, span: time.Hour, step: 5 * time.Minute,
			comment: "max of 1 metric over 8 hosts, per 5 min, 1 h",
			expr: func(p profile, hm string) string {
				return fmt.Sprintf(`max(max_over_time(%s{%s}[5m]))`, p.metric1, hm)
			}},
		{name: "5-1-1", hosts: 1, span: time.Hour, step: 5 * time.Minute,
			comment: "max of 5 metrics of 1 host, per 5 min, 1 h", expr: maxOf(five, "5m")},
		{name: "5-1-12", hosts: 1, span: 12 * time.Hour, step: 5 * time.Minute,
			comment: "max of 5 metrics of 1 host, per 5 min, 12 h", expr: maxOf(five, "5m")},
		{name: "5-8-1", hosts: 8, span: time.Hour, step: 5 * time.Minute,
			comment: "max of 5 metrics over 8 hosts, per 5 min, 1 h", expr: maxOf(five, "5m")},
		{name: "double-groupby-1", span: 12 * time.Hour, step: time.Hour,
			comment: "mean of 1 CPU metric per host per hour, 12 h, all hosts",
			expr:    func(p profile, _ string) string { return p.cpuHour }},
		{name: "lastpoint", hosts: 1,
			comment: "last reading of 1 metric of 1 host",
			expr:    func(p profile, hm string) string { return fmt.Sprintf(`%s{%s}`, p.metric1, hm) }},
		{name: "cpu-max-all-1", hosts: 1, span: 8 * time.Hour, step: time.Hour, tsbs: true,
			comment: "max of all 10 CPU metrics of 1 host, per hour, 8 h", expr: maxOf(p.metrics, "1h")},
		{name: "double-groupby-all", span: 12 * time.Hour, step: time.Hour, tsbs: true,
			comment: "mean of all 10 CPU metrics per host per hour, 12 h, all hosts",
			expr: func(p profile, _ string) string {
				return fmt.Sprintf(`avg(avg_over_time({__name__=~"%s"}[1h])) by (__name__, %s)`, nameRegexp(p.metrics), p.host)
			}},
		{name: "high-cpu-1", hosts: 1, span: 12 * time.Hour, tsbs: true,
			comment: "every reading of 1 host where usage_user > 90, 12 h",
			expr: func(p profile, hm string) string {
				return fmt.Sprintf(`{__name__=~"%s",%s} and on (%s) (%s{%s} > 90)`, nameRegexp(p.metrics), hm, p.host, p.metric1, hm)
			}},
		{name: "lastpoint-all", tsbs: true,
			comment: "last reading of every CPU metric of every host (TSBS lastpoint)",
			expr: func(p profile, _ string) string {
				return fmt.Sprintf(`{__name__=~"%s"}`, nameRegexp(p.metrics))
			}},
	}
	if !p.tsbs {
		ps = slices.DeleteFunc(ps, func(pt pattern) bool { return pt.tsbs })
	}
	return ps
}

// query is one instance of a pattern.
type query struct {
	expr       string
	start, end int64 // ms; equal for an instant query
	step       time.Duration
	instant    bool
	// nocache asks VictoriaMetrics not to use or fill its rollup result
	// cache (nocache=1; Aerie ignores it): counts taken while data arrive.
	nocache bool
	// gzip asks for a compressed answer (Accept-Encoding: gzip), as a
	// browser does; promQuery returns it decompressed.
	gzip bool
}

// instance draws an instance of pt over data in [mint, maxt] written
// every interval: r picks the hosts and the start, which is a whole step
// inside the data (VictoriaMetrics with its cache aligns start and end to
// the step; aligned, both engines evaluate at the same times).
func (pt pattern) instance(r *rand.Rand, p profile, hosts []string, mint, maxt int64, interval time.Duration) query {
	var hm string
	if pt.hosts > 0 {
		n := min(pt.hosts, len(hosts))
		pick := make([]string, 0, n)
		for _, i := range r.Perm(len(hosts))[:n] {
			pick = append(pick, regexp.QuoteMeta(hosts[i]))
		}
		slices.Sort(pick)
		op := "=~"
		if n == 1 && slices.Contains(hosts, pick[0]) {
			op = "=" // a host name without regexp metacharacters
		}
		hm = fmt.Sprintf(`%s%s%q`, p.host, op, strings.Join(pick, "|"))
	}
	q := query{expr: pt.expr(p, hm), step: pt.step}
	if q.step == 0 {
		q.step = interval
	}
	if pt.span == 0 {
		q.instant = true
		q.start, q.end = maxt, maxt
		return q
	}
	span, step := pt.span.Milliseconds(), q.step.Milliseconds()
	lo := mint - mod(mint, step) + step // the first whole step inside the data
	s := maxt - span                    // data shorter than the span: end at maxt
	if free := maxt - span - lo; free >= 0 {
		s = lo + r.Int64N(free+1)
	}
	s -= mod(s, step)
	q.start, q.end = s+step, s+span
	return q
}

func mod(a, b int64) int64 { return ((a % b) + b) % b }

// result is a parsed answer of the query API.
type result struct {
	typ    string // matrix or vector
	series []series
}

type series struct {
	labels map[string]string
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
		s := series{labels: r.Metric}
		if s.labels == nil {
			s.labels = map[string]string{}
		}
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
			if q := y.points[j]; p.t != q.t || !nearlyEqual(p.v, q.v) {
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
		ks := keyedSeries{full: labelString(s.labels, ""), points: s.points}
		ks.key = ks.full
		if dropName {
			ks.key = labelString(s.labels, "__name__")
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

// labelString formats labels as {a="x",b="y"}, sorted, without skip.
func labelString(ls map[string]string, skip string) string {
	names := make([]string, 0, len(ls))
	for n := range ls {
		if n != skip {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	var sb strings.Builder
	sb.WriteByte('{')
	for i, n := range names {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, "%s=%q", n, ls[n])
	}
	sb.WriteByte('}')
	return sb.String()
}

func nearlyEqual(a, b float64) bool {
	if a == b || (math.IsNaN(a) && math.IsNaN(b)) {
		return true
	}
	return math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b))
}

// points returns the number of points of r.
func (r result) points() int {
	n := 0
	for _, s := range r.series {
		n += len(s.points)
	}
	return n
}
