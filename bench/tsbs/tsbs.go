// Package tsbs holds the TSBS query patterns both benchmarks of queries
// run: the six of Heracles Table 2 and, on TSBS data, four more of TSBS'
// devops suite. It says what a pattern asks (its PromQL in the dialect of
// the engine that runs it) and draws its instances (hosts and start by a
// seeded source); bench runs them on an engine in process, bench/httpbench
// sends them over HTTP.
//
// Invariant: the same seed, data and hosts give the same instances (the
// queries of every committed report; testdata/instances.txt).
package tsbs

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/aerie-db/aerie/bench/workload"
)

// Profile names what the patterns read in a workload.
type Profile struct {
	Host    string   // the label naming a host
	Metric1 string   // "1 CPU metric" of Heracles Table 2
	Metrics []string // the CPU metrics; the first five are Heracles' "5 metrics"
	CPUHour string   // the per-series hourly CPU measure double-groupby-1 averages per host
	TSBS    bool     // TSBS' cpu measurement: the devops patterns apply
}

var (
	// Node is a node_exporter workload's profile.
	Node = Profile{
		Host:    "instance",
		Metric1: "node_load1",
		Metrics: []string{"node_load1", "node_load5", "node_load15", "node_procs_running", "node_memory_MemAvailable_bytes"},
		CPUHour: `rate(node_cpu_seconds_total{mode="user"}[1h])`,
	}
	// CPU is TSBS devops cpu-only's profile.
	CPU = Profile{
		Host:    "hostname",
		Metric1: "cpu_usage_user",
		Metrics: []string{"cpu_usage_user", "cpu_usage_system", "cpu_usage_idle", "cpu_usage_nice", "cpu_usage_iowait",
			"cpu_usage_irq", "cpu_usage_softirq", "cpu_usage_steal", "cpu_usage_guest", "cpu_usage_guest_nice"},
		CPUHour: `avg_over_time(cpu_usage_user[1h])`,
		TSBS:    true,
	}
)

// ProfileOf picks the profile whose five metrics w has.
func ProfileOf(w workload.Workload) (Profile, error) {
	has := map[string]bool{}
	for i := range w.NumTargets() {
		for _, ls := range w.Series(i) {
			has[ls.Get(labels.MetricName)] = true
		}
	}
	for _, p := range []Profile{Node, CPU} {
		if !slices.ContainsFunc(p.Metrics[:5], func(m string) bool { return !has[m] }) {
			return p, nil
		}
	}
	return Profile{}, fmt.Errorf("workload %s has neither node_exporter's %v nor TSBS' %v: the TSBS patterns have nothing to read",
		w.Name(), Node.Metrics[:5], CPU.Metrics[:5])
}

// Hosts returns the host label values of w's targets that have the
// profile's first metric (a real capture also holds, say, Prometheus' own
// target), in the targets' order.
func Hosts(w workload.Workload, p Profile) []string {
	var hs []string
	seen := map[string]bool{}
	for i := range w.NumTargets() {
		for _, ls := range w.Series(i) {
			if h := ls.Get(p.Host); h != "" && !seen[h] && ls.Get(labels.MetricName) == p.Metric1 {
				seen[h] = true
				hs = append(hs, h)
			}
		}
	}
	return hs
}

// Dialect is how a pattern is written for the engine that runs it.
type Dialect int

const (
	// Prometheus is the PromQL of Prometheus' engine (bench, in process).
	// Its functions drop __name__, so a pattern over several metrics
	// copies the name into the label "metric" to group by it.
	Prometheus Dialect = iota
	// VictoriaMetrics is PromQL as TSBS' victoriametrics query generator
	// and VictoriaMetrics users write it (bench/httpbench, against Aerie
	// and VictoriaMetrics): several metrics are selected by
	// __name__=~"cpu_(usage_user|…)" and grouped by (__name__).
	VictoriaMetrics
)

// names is a regexp matching the metric names.
func (d Dialect) names(ms []string) string {
	if d == Prometheus {
		q := make([]string, len(ms))
		for i, m := range ms {
			q[i] = regexp.QuoteMeta(m)
		}
		return strings.Join(q, "|")
	}
	return NameRegexp(ms)
}

// byName aggregates inner, a vector of several metrics, with agg per
// metric name.
func (d Dialect) byName(agg, inner string, by ...string) string {
	if d == Prometheus {
		return fmt.Sprintf(`%s by (%s) (label_replace(%s, "metric", "$1", "__name__", "(.+)"))`,
			agg, strings.Join(append([]string{"metric"}, by...), ", "), inner)
	}
	return fmt.Sprintf(`%s(%s) by (%s)`, agg, inner, strings.Join(append([]string{"__name__"}, by...), ", "))
}

// NameRegexp matches the metric names as TSBS' VictoriaMetrics queries
// write them: a prefix up to the first '_' common to every name is
// factored out, cpu_(usage_user|usage_system|…).
func NameRegexp(names []string) string {
	prefix := names[0][:strings.IndexByte(names[0], '_')+1]
	for _, n := range names {
		if !strings.HasPrefix(n, prefix) {
			prefix = ""
			break
		}
	}
	alts := make([]string, len(names))
	for i, n := range names {
		alts[i] = regexp.QuoteMeta(strings.TrimPrefix(n, prefix))
	}
	if prefix == "" {
		return strings.Join(alts, "|")
	}
	return regexp.QuoteMeta(prefix) + "(" + strings.Join(alts, "|") + ")"
}

// Pattern is one query pattern.
type Pattern struct {
	Name    string
	Comment string
	Hosts   int           // hosts selected (0: all)
	Span    time.Duration // time covered; 0: an instant query at the data's last timestamp
	Step    time.Duration // 0: the data's interval
	// Expr writes the pattern over the hosts that hostMatcher selects
	// ("" for all).
	Expr func(p Profile, d Dialect, hostMatcher string) string
}

// maxOf is the max of several metrics per window, per metric name.
func maxOf(five bool, window string) func(Profile, Dialect, string) string {
	return func(p Profile, d Dialect, hm string) string {
		ms := p.Metrics
		if five {
			ms = ms[:5]
		}
		return d.byName("max", fmt.Sprintf(`max_over_time({__name__=~"%s",%s}[%s])`, d.names(ms), hm, window))
	}
}

// Heracles are the six patterns of Heracles Table 2.
var Heracles = []Pattern{
	{Name: "1-8-1", Hosts: 8, Span: time.Hour, Step: 5 * time.Minute,
		Comment: "max of 1 metric over 8 hosts, per 5 min, 1 h",
		Expr: func(p Profile, _ Dialect, hm string) string {
			return fmt.Sprintf(`max(max_over_time(%s{%s}[5m]))`, p.Metric1, hm)
		}},
	{Name: "5-1-1", Hosts: 1, Span: time.Hour, Step: 5 * time.Minute,
		Comment: "max of 5 metrics of 1 host, per 5 min, 1 h", Expr: maxOf(true, "5m")},
	{Name: "5-1-12", Hosts: 1, Span: 12 * time.Hour, Step: 5 * time.Minute,
		Comment: "max of 5 metrics of 1 host, per 5 min, 12 h", Expr: maxOf(true, "5m")},
	{Name: "5-8-1", Hosts: 8, Span: time.Hour, Step: 5 * time.Minute,
		Comment: "max of 5 metrics over 8 hosts, per 5 min, 1 h", Expr: maxOf(true, "5m")},
	{Name: "double-groupby-1", Span: 12 * time.Hour, Step: time.Hour,
		Comment: "mean of 1 CPU metric per host per hour, 12 h, all hosts",
		Expr: func(p Profile, d Dialect, _ string) string {
			if d == Prometheus {
				return fmt.Sprintf(`avg by (%s) (%s)`, p.Host, p.CPUHour)
			}
			if p.TSBS { // as TSBS writes it; a rate() has no name to keep
				return d.byName("avg", p.CPUHour, p.Host)
			}
			return fmt.Sprintf(`avg(%s) by (%s)`, p.CPUHour, p.Host)
		}},
	{Name: "lastpoint", Hosts: 1,
		Comment: "last reading of 1 metric of 1 host",
		Expr: func(p Profile, _ Dialect, hm string) string {
			return fmt.Sprintf(`%s{%s}`, p.Metric1, hm)
		}},
}

// DevOps are four patterns of TSBS' devops suite, run besides Heracles'
// on TSBS data.
var DevOps = []Pattern{
	{Name: "cpu-max-all-1", Hosts: 1, Span: 8 * time.Hour, Step: time.Hour,
		Comment: "max of all 10 CPU metrics of 1 host, per hour, 8 h", Expr: maxOf(false, "1h")},
	{Name: "double-groupby-all", Span: 12 * time.Hour, Step: time.Hour,
		Comment: "mean of all 10 CPU metrics per host per hour, 12 h, all hosts",
		Expr: func(p Profile, d Dialect, _ string) string {
			return d.byName("avg", fmt.Sprintf(`avg_over_time({__name__=~"%s"}[1h])`, d.names(p.Metrics)), p.Host)
		}},
	{Name: "high-cpu-1", Hosts: 1, Span: 12 * time.Hour,
		Comment: "every reading of 1 host where usage_user > 90, 12 h",
		Expr: func(p Profile, d Dialect, hm string) string {
			return fmt.Sprintf(`{__name__=~"%s",%s} and on (%s) (%s{%s} > 90)`, d.names(p.Metrics), hm, p.Host, p.Metric1, hm)
		}},
	{Name: "lastpoint-all",
		Comment: "last reading of every CPU metric of every host (TSBS lastpoint)",
		Expr: func(p Profile, d Dialect, _ string) string {
			return fmt.Sprintf(`{__name__=~"%s"}`, d.names(p.Metrics))
		}},
}

// Patterns returns Heracles' patterns and, on TSBS data, the devops ones.
func Patterns(p Profile) []Pattern {
	if p.TSBS {
		return slices.Concat(Heracles, DevOps)
	}
	return Heracles
}

// Query is one instance of a pattern.
type Query struct {
	Expr       string
	Start, End int64 // ms; equal for an instant query
	Step       time.Duration
	Instant    bool
}

// Gen draws instances of the patterns over one dataset.
type Gen struct {
	Profile    Profile
	Dialect    Dialect
	Hosts      []string      // the data's hosts (Hosts)
	MinT, MaxT int64         // the data's first and last timestamps, ms
	Interval   time.Duration // the step of a range pattern without one
}

// Rand is the source of a run's instances for purpose (a pattern's name):
// the seed and a hash of purpose.
func Rand(seed int64, purpose string) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(purpose))
	return rand.New(rand.NewPCG(uint64(seed), h.Sum64()))
}

// Instance draws an instance of pt: r picks the hosts and the start, a
// whole step inside the data (VictoriaMetrics with its cache aligns start
// and end to the step; aligned, every engine evaluates at the same
// times). The range ends at the data's end where the data are shorter
// than the span.
func (g Gen) Instance(pt Pattern, r *rand.Rand) Query {
	var hm string
	if pt.Hosts > 0 {
		n := min(pt.Hosts, len(g.Hosts))
		pick := make([]string, 0, n)
		for _, i := range r.Perm(len(g.Hosts))[:n] {
			pick = append(pick, regexp.QuoteMeta(g.Hosts[i]))
		}
		slices.Sort(pick)
		op := "=~"
		if n == 1 && slices.Contains(g.Hosts, pick[0]) {
			op = "=" // a host name without regexp metacharacters
		}
		hm = fmt.Sprintf(`%s%s%q`, g.Profile.Host, op, strings.Join(pick, "|"))
	}
	q := Query{Expr: pt.Expr(g.Profile, g.Dialect, hm), Step: cmp.Or(pt.Step, g.Interval)}
	if pt.Span == 0 {
		q.Instant, q.Start, q.End = true, g.MaxT, g.MaxT
		return q
	}
	span, step := pt.Span.Milliseconds(), q.Step.Milliseconds()
	lo := g.MinT - Mod(g.MinT, step) + step // the first whole step inside the data
	s := g.MaxT - span
	if free := g.MaxT - span - lo; free >= 0 {
		s = lo + r.Int64N(free+1)
	}
	s -= Mod(s, step)
	q.Start, q.End = s+step, s+span
	return q
}

// Mod is a mod b in [0, b).
func Mod(a, b int64) int64 { return ((a % b) + b) % b }

// NearlyEqual tells whether two engines' values agree: equal within 1e-9
// relative (sums may add series in another order), NaN equal to NaN.
func NearlyEqual(a, b float64) bool {
	if a == b || (math.IsNaN(a) && math.IsNaN(b)) {
		return true
	}
	return math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b))
}
