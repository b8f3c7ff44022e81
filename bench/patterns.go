package bench

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/storage"

	"github.com/aerie-db/aerie/bench/workload"
)

// profile names what the TSBS patterns read in a workload: the label that
// names a host, one gauge ("1 CPU metric" of Heracles Table 2), five
// gauges, and the per-host CPU measure of double-groupby-1.
type profile struct {
	host     string
	metric1  string
	metrics5 []string
	// cpuHour is the per-series hourly CPU measure that double-groupby-1
	// averages per host.
	cpuHour string
}

var (
	nodeProfile = profile{
		host:     "instance",
		metric1:  "node_load1",
		metrics5: []string{"node_load1", "node_load5", "node_load15", "node_procs_running", "node_memory_MemAvailable_bytes"},
		cpuHour:  `rate(node_cpu_seconds_total{mode="user"}[1h])`,
	}
	tsbsProfile = profile{
		host:     "hostname",
		metric1:  "cpu_usage_user",
		metrics5: []string{"cpu_usage_user", "cpu_usage_system", "cpu_usage_idle", "cpu_usage_nice", "cpu_usage_iowait"},
		cpuHour:  `avg_over_time(cpu_usage_user[1h])`,
	}
)

// profileOf picks the profile whose metrics the workload has.
func profileOf(w workload.Workload) (profile, error) {
	has := map[string]bool{}
	for i := 0; i < w.NumTargets(); i++ {
		for _, ls := range w.Series(i) {
			has[ls.Get(labels.MetricName)] = true
		}
	}
	for _, p := range []profile{nodeProfile, tsbsProfile} {
		ok := true
		for _, m := range p.metrics5 {
			ok = ok && has[m]
		}
		if ok {
			return p, nil
		}
	}
	return profile{}, fmt.Errorf("workload %s has neither node_exporter's %v nor TSBS' %v: the TSBS patterns have nothing to read",
		w.Name(), nodeProfile.metrics5, tsbsProfile.metrics5)
}

// pattern is one TSBS query pattern of Heracles Table 2.
type pattern struct {
	name    string
	hosts   int           // hosts selected (0: all)
	span    time.Duration // time covered; 0 for an instant query
	step    time.Duration
	expr    func(p profile, hostMatcher string) string
	comment string
}

var patterns = []pattern{
	{name: "1-8-1", hosts: 8, span: time.Hour, step: 5 * time.Minute,
		comment: "max of 1 metric over 8 hosts, per 5 min, 1 h",
		expr: func(p profile, hm string) string {
			return fmt.Sprintf(`max(max_over_time(%s{%s}[5m]))`, p.metric1, hm)
		}},
	{name: "5-1-1", hosts: 1, span: time.Hour, step: 5 * time.Minute,
		comment: "max of 5 metrics of 1 host, per 5 min, 1 h",
		expr:    maxOf5},
	{name: "5-1-12", hosts: 1, span: 12 * time.Hour, step: 5 * time.Minute,
		comment: "max of 5 metrics of 1 host, per 5 min, 12 h",
		expr:    maxOf5},
	{name: "5-8-1", hosts: 8, span: time.Hour, step: 5 * time.Minute,
		comment: "max of 5 metrics over 8 hosts, per 5 min, 1 h",
		expr:    maxOf5},
	{name: "double-groupby-1", hosts: 0, span: 12 * time.Hour, step: time.Hour,
		comment: "mean of 1 CPU metric per host per hour, 12 h, all hosts",
		expr: func(p profile, _ string) string {
			return fmt.Sprintf(`avg by (%s) (%s)`, p.host, p.cpuHour)
		}},
	{name: "lastpoint", hosts: 1,
		comment: "last reading of 1 metric of 1 host",
		expr: func(p profile, hm string) string {
			return fmt.Sprintf(`%s{%s}`, p.metric1, hm)
		}},
}

func maxOf5(p profile, hm string) string {
	names := make([]string, len(p.metrics5))
	for i, m := range p.metrics5 {
		names[i] = regexp.QuoteMeta(m)
	}
	return fmt.Sprintf(`max by (metric) (label_replace(max_over_time({__name__=~"%s",%s}[5m]), "metric", "$1", "__name__", "(.+)"))`,
		strings.Join(names, "|"), hm)
}

// query is one instance of a pattern: an expression and its time range.
type query struct {
	expr        string
	start, end  time.Time
	step        time.Duration
	instant     bool
	description string
}

// instance draws an instance of pt over the data [mint, maxt] for the
// given hosts, with r choosing hosts and the start time.
func (pt pattern) instance(r *rand.Rand, p profile, hosts []string, mint, maxt int64) query {
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
	if pt.span == 0 {
		q.instant = true
		q.start = time.UnixMilli(maxt)
		q.end = q.start
		return q
	}
	span := pt.span.Milliseconds()
	step := pt.step.Milliseconds()
	lo := mint - mod(mint, step) + step // the first whole step inside the data
	s := maxt - span                    // data shorter than the span: end at maxt
	if free := maxt - span - lo; free >= 0 {
		s = lo + r.Int64N(free+1)
	}
	s -= mod(s, step)
	q.start = time.UnixMilli(s + step)
	q.end = time.UnixMilli(s + span)
	return q
}

func (q query) run(eng *promql.Engine, st storage.Queryable) (promql.Result, time.Duration, error) {
	ctx := context.Background()
	var (
		pq  promql.Query
		err error
	)
	if q.instant {
		pq, err = eng.NewInstantQuery(ctx, st, nil, q.expr, q.start)
	} else {
		pq, err = eng.NewRangeQuery(ctx, st, nil, q.expr, q.start, q.end, q.step)
	}
	if err != nil {
		return promql.Result{}, 0, fmt.Errorf("%s: %w", q.expr, err)
	}
	defer pq.Close()
	t0 := time.Now()
	res := pq.Exec(ctx)
	d := time.Since(t0)
	if res.Err != nil {
		return promql.Result{}, d, fmt.Errorf("%s: %w", q.expr, res.Err)
	}
	return promql.Result{Value: copyValue(res.Value)}, d, nil
}

func copyValue(v parser.Value) parser.Value {
	switch v := v.(type) {
	case promql.Vector:
		return slices.Clone(v)
	case promql.Matrix:
		m := make(promql.Matrix, len(v))
		for i, s := range v {
			m[i] = promql.Series{Metric: s.Metric, Floats: slices.Clone(s.Floats)}
		}
		return m
	}
	return v
}

// sameResult reports how a and b differ, with a relative float tolerance
// because sums may add series in a different order.
func sameResult(a, b promql.Result) error {
	switch av := a.Value.(type) {
	case promql.Vector:
		bv, ok := b.Value.(promql.Vector)
		if !ok || len(av) != len(bv) {
			return fmt.Errorf("vector of %d samples vs %v", len(av), b.Value.Type())
		}
		as, bs := slices.Clone(av), slices.Clone(bv)
		for _, v := range [][]promql.Sample{as, bs} {
			slices.SortFunc(v, func(x, y promql.Sample) int { return labels.Compare(x.Metric, y.Metric) })
		}
		for i := range as {
			if !labels.Equal(as[i].Metric, bs[i].Metric) || as[i].T != bs[i].T || !nearlyEqual(as[i].F, bs[i].F) {
				return fmt.Errorf("sample %d: %s %v@%d vs %s %v@%d", i, as[i].Metric, as[i].F, as[i].T, bs[i].Metric, bs[i].F, bs[i].T)
			}
		}
	case promql.Matrix:
		bm, ok := b.Value.(promql.Matrix)
		if !ok || len(av) != len(bm) {
			return fmt.Errorf("matrix of %d series vs %d", len(av), len(bm))
		}
		as, bs := slices.Clone(av), slices.Clone(bm)
		for _, m := range []promql.Matrix{as, bs} {
			slices.SortFunc(m, func(x, y promql.Series) int { return labels.Compare(x.Metric, y.Metric) })
		}
		for i := range as {
			if !labels.Equal(as[i].Metric, bs[i].Metric) || len(as[i].Floats) != len(bs[i].Floats) {
				return fmt.Errorf("series %d: %s (%d points) vs %s (%d points)", i, as[i].Metric, len(as[i].Floats), bs[i].Metric, len(bs[i].Floats))
			}
			for j, p := range as[i].Floats {
				if q := bs[i].Floats[j]; p.T != q.T || !nearlyEqual(p.F, q.F) {
					return fmt.Errorf("series %s point %d: %v@%d vs %v@%d", as[i].Metric, j, p.F, p.T, q.F, q.T)
				}
			}
		}
	default:
		return fmt.Errorf("unexpected result type %v", a.Value.Type())
	}
	return nil
}

func nearlyEqual(a, b float64) bool {
	if a == b || (math.IsNaN(a) && math.IsNaN(b)) {
		return true
	}
	return math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b))
}
