package difftest

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/storage"
)

// NewPromQLEngine returns the PromQL engine used by CompareQueries: delayed
// name removal on, as aerie serve by default.
func NewPromQLEngine() *promql.Engine { return promql.NewEngine(engineOpts(true)) }

// engineOpts are the options of the PromQL engines of the comparisons.
func engineOpts(delayedNameRemoval bool) promql.EngineOpts {
	return promql.EngineOpts{
		MaxSamples:               50e6,
		Timeout:                  time.Minute,
		LookbackDelta:            5 * time.Minute,
		NoStepSubqueryIntervalFn: func(int64) int64 { return 60_000 },
		EnableAtModifier:         true,
		EnableNegativeOffset:     true,
		EnableDelayedNameRemoval: delayedNameRemoval,
	}
}

// promTime formats a ms timestamp for PromQL (seconds with ms).
func promTime(ms int64) string {
	return fmt.Sprintf("%d.%03d", ms/1000, ms%1000)
}

// Expressions returns the PromQL expressions CompareQueries evaluates,
// generated from templates × metric names × ranges.
func Expressions(w *Workload) []string {
	counters := []string{
		`node_cpu_seconds_total{mode=~"user|idle"}`,
		`node_network_receive_bytes_total`, // includes churning veth devices
		"node_disk_written_bytes_total",
		"node_network_receive_errs_total", // every 2nd scrape
		"http_requests_total",             // app, sparse code="500"
		"process_cpu_seconds_total",       // restarts
		"http_request_duration_seconds_count",
	}
	gauges := []string{
		"node_load1",
		"node_memory_MemAvailable_bytes",
		"node_filesystem_avail_bytes",
		"node_hwmon_temp_celsius", // NaN
		"node_timex_offset_seconds",
		"node_textfile_scrape_error", // every 3rd scrape
		"node_systemd_unit_state",    // stale markers, churn, flapping
		"go_goroutines",
		"node_weird_value", // NaN, ±Inf, ±0
		"app_sessions_active",
	}
	ranges := []string{"90s", "5m", "1h"}
	var ex []string
	add := func(format string, args ...any) { ex = append(ex, fmt.Sprintf(format, args...)) }

	// Templates: per metric and range, then per metric.
	counterRanged := []string{"rate(%s[%s])", "increase(%s[%s])", "sum by (job) (rate(%s[%s]))"}
	counterOnce := []string{
		"irate(%s[5m])", "resets(%s[1h])", "changes(%s[30m])", "sum without (instance) (rate(%s[5m]))",
		"topk(3, rate(%s[5m]))", "bottomk(2, irate(%s[10m])) by (job)", "max by (instance) (increase(%s[15m]))", "%s",
	}
	gaugeRanged := []string{"delta(%s[%s])", "deriv(%s[%s])", "avg_over_time(%s[%s])"}
	gaugeOnce := []string{
		"quantile_over_time(0.9, %s[10m])", "%s", "changes(%s[30m])", "idelta(%s[5m])", "predict_linear(%s[30m], 3600)",
		"min_over_time(%s[10m])", "max_over_time(%s[10m])", "stddev_over_time(%s[20m])", "last_over_time(%s[10m])",
		"count_over_time(%s[10m])", "sum_over_time(%s[5m])", "absent_over_time(%s[5m])", "present_over_time(%s[5m])",
		"timestamp(%s)", "sum by (job) (%s)", "avg(%s)", "max by (instance) (%s)", "min(%s)", "count by (job) (%s)",
		"stddev(%s)", "quantile(0.75, %s)", "clamp(%s, 0, 2)", "%s > bool 1", "%s > 1", "topk(5, %s)", "sort_desc(%s)",
		"max_over_time(%s[30m:1m])",
		// Aggregations of range functions by labels: what Aerie's
		// evaluator (internal/queryeval) runs over arrays.
		"avg by (job) (avg_over_time(%s[1h]))",
		"max by (instance) (max_over_time(%[1]s[5m])) - min by (instance) (min_over_time(%[1]s[5m]))",
		"sum(sum_over_time(%s[10m]))", "count by (job) (count_over_time(%s[90s]))",
		"stddev by (job) (stddev_over_time(%s[20m]))",
		`max by (metric, job) (label_replace(last_over_time(%s[10m]), "metric", "$1", "__name__", "(.+)"))`,
	}
	expand := func(metrics, ranges, ranged, once []string) {
		for _, m := range metrics {
			for _, r := range ranges {
				for _, f := range ranged {
					add(f, m, r)
				}
			}
			for _, f := range once {
				add(f, m)
			}
		}
	}
	expand(counters, ranges, counterRanged, counterOnce)
	expand(gauges, []string{"5m", "1h"}, gaugeRanged, gaugeOnce)
	add(`avg by (instance) (avg_over_time({__name__=~"node_load1|node_memory_MemAvailable_bytes|go_goroutines"}[1h]))`)
	add(`max by (metric, instance) (label_replace(max_over_time({__name__=~"node_load1|go_goroutines"}[30m]), "metric", "$1", "__name__", "(.+)"))`)
	add(`group by (job) (present_over_time(node_systemd_unit_state[5m]))`)
	add(`sum by (job) (increase(node_load1[5m]))`)
	for _, q := range []string{"0", "0.5", "0.9", "0.99", "1", "1.5", "-1"} {
		add("histogram_quantile(%s, sum by (le) (rate(http_request_duration_seconds_bucket[5m])))", q)
	}
	t1, t2, t3 := w.MinT+(w.MaxT-w.MinT)/3, w.MinT+(w.MaxT-w.MinT)/2+12_345, w.MaxT-7*60_000
	T1, T2, T3 := promTime(t1), promTime(t2), promTime(t3)
	ex = append(ex,
		// Histograms.
		`histogram_quantile(0.9, sum by (le, job) (rate(http_request_duration_seconds_bucket[5m])))`,
		`histogram_quantile(0.5, sum by (le, handler) (rate(http_request_duration_seconds_bucket{job="app"}[10m])))`,
		`histogram_quantile(0.99, rate(http_request_duration_seconds_bucket[5m]))`,
		`histogram_quantile(0.9, sum by (le, instance) (increase(http_request_duration_seconds_bucket[1h])))`,
		`histogram_quantile(0.9, http_request_duration_seconds_bucket)`,
		`rate(http_request_duration_seconds_sum[5m]) / rate(http_request_duration_seconds_count[5m])`,
		`rate(node_cpu_seconds_total[5m])`,
		`increase(node_cpu_seconds_total[1h])`,
		`sum by (job) (rate(node_cpu_seconds_total[5m]))`,
		`resets(node_cpu_seconds_total[1h])`,
		`sum by (job) (rate(http_request_duration_seconds_sum[5m])) / sum by (job) (rate(http_request_duration_seconds_count[5m]))`,
		`sum by (le) (http_request_duration_seconds_bucket{handler="/metrics"})`,
		// Subqueries.
		`max_over_time(rate(node_cpu_seconds_total{mode="system"}[5m])[30m:1m])`,
		`avg_over_time(node_load1[1h:5m])`,
		`min_over_time(deriv(node_memory_MemAvailable_bytes[10m])[1h:])`,
		`sum_over_time(increase(http_requests_total[5m])[20m:2m] offset 10m)`,
		`max_over_time(sum by (job) (rate(node_network_receive_bytes_total[5m]))[30m:30s])`,
		`rate(sum by (instance) (node_cpu_seconds_total{cpu="0"})[10m:1m])`,
		`quantile_over_time(0.5, node_load1[1h:1m] @ end())`,
		`max_over_time(node_systemd_unit_state[2h:7m])`,
		`count_over_time(node_weird_value[10m:1m])`,
		// Offset and @.
		`rate(node_cpu_seconds_total{cpu="0"}[5m] offset 10m)`,
		`node_load1 offset 1h`,
		`node_load1 offset -5m`,
		`sum(node_memory_MemAvailable_bytes offset 2h)`,
		`node_load1 @ start()`,
		`node_load1 @ end()`,
		`rate(node_cpu_seconds_total{mode="user"}[5m] @ end())`,
		`sum(rate(node_cpu_seconds_total{mode="idle"}[10m] @ start()))`,
		`node_load1 @ `+T1,
		`sum by (job) (rate(http_requests_total[5m] @ `+T2+`))`,
		`node_load1 @ `+T1+` offset 5m`,
		`max_over_time(node_load1[10m] @ `+T3+`)`,
		`node_systemd_unit_state @ `+T2,
		`increase(node_network_receive_bytes_total{device=~"veth.*"}[1h] @ `+T2+`)`,
		`node_load1 - node_load1 @ `+T1,
		// absent.
		`absent(nonexistent_metric)`,
		`absent(node_load1)`,
		`absent(node_load1{instance="nope"})`,
		`absent(node_systemd_unit_state{name="backup.service"})`,
		`absent(node_systemd_unit_state{name="deploy.service", job="node"})`,
		`absent_over_time(node_systemd_unit_state{name="backup.service"}[10m])`,
		`absent_over_time(nonexistent_metric{job="x"}[5m])`,
		`absent(up{job="node"} == 0)`,
		// Label manipulation.
		`label_replace(node_load1, "host", "$1", "instance", "([^:]+):.*")`,
		`label_replace(up, "port", "$2", "instance", "(.*):(.*)")`,
		`label_replace(rate(node_cpu_seconds_total{cpu="0"}[5m]), "mode", "x", "mode", "idle|user")`,
		`label_replace(node_load1, "instance", "", "instance", ".*")`,
		`label_join(node_filesystem_avail_bytes, "path", ":", "device", "mountpoint")`,
		`label_join(up, "x", "-", "job", "instance", "nonexistent")`,
		// Comparisons.
		`node_load1 > 1`,
		`node_load1 > bool 1`,
		`node_memory_MemAvailable_bytes < 1e10`,
		`up == 1`,
		`node_weird_value == node_weird_value`,
		`node_weird_value > bool 0`,
		`node_weird_value != 0`,
		`app_weird_value <= bool 0`,
		`node_hwmon_temp_celsius >= 40`,
		`rate(node_cpu_seconds_total{cpu="0"}[5m]) > bool 0.5`,
		`1 < bool 2`,
		// Vector matching.
		`node_filesystem_avail_bytes / node_filesystem_size_bytes`,
		`node_filesystem_avail_bytes / on(instance, mountpoint) node_filesystem_size_bytes`,
		`node_memory_MemAvailable_bytes / on(instance, job) node_memory_MemTotal_bytes`,
		`node_load1 / ignoring(job) node_load5`,
		`rate(node_cpu_seconds_total{mode="user"}[5m]) * on(instance) group_left(nodename) node_uname_info`,
		`node_load1 * on(instance) group_right rate(node_cpu_seconds_total{mode="nice"}[5m])`,
		`sum by (instance) (rate(node_cpu_seconds_total{mode!~"idle|iowait|steal"}[5m])) / on(instance) count by (instance) (node_cpu_seconds_total{mode="idle"})`,
		`up and on(instance) node_load1 > 1`,
		`node_load1 or node_load5`,
		`up unless on(instance) node_load1 > 2`,
		`node_systemd_unit_state unless node_systemd_unit_state{name="flappy.service"}`,
		`http_requests_total{code="500"} / ignoring(code) group_left http_requests_total{code="200"}`,
		`node_cpu_seconds_total{mode="user"} / on(instance) node_load1`,            // error: many-to-one without group_left
		`rate({__name__=~"node_network_(receive|transmit)_bytes_total"}[5m])`,      // error: duplicate label set
		`{__name__=~"node_network_(receive|transmit)_bytes_total", device="eth0"}`, // keeps names
		// VictoriaMetrics/TSBS style: names kept through functions (see
		// NameRemovalChanges and internal/api/namecompat.go).
		`max(max_over_time({__name__=~"node_load(1|5|15)", instance="host-01:9100"}[1m])) by (__name__)`,
		`max_over_time({__name__=~"node_load(1|5|15)"}[5m])`,
		`avg by (__name__) (rate({__name__=~"node_network_(receive|transmit)_bytes_total"}[5m]))`,
		`label_replace(rate(node_cpu_seconds_total{mode="user"}[5m]), "name", "$1", "__name__", "(.+)")`,
		// The same as the name compatibility asks them (the name restored
		// by label_replace), which internal/queryeval evaluates itself.
		`max by (__name__) (label_replace(max_over_time({__name__=~"node_load(1|5|15)", instance="host-01:9100"}[1m]), "__name__", "$1", "__name__", "(.+)"))`,
		`avg by (__name__, instance) (label_replace(avg_over_time({__name__=~"node_load1|go_goroutines|node_weird_value"}[1h]), "__name__", "$1", "__name__", "(.+)"))`,
		`sum by (__name__, job) (label_replace(rate({__name__=~"http_requests_total|process_cpu_seconds_total"}[5m]), "__name__", "$1", "__name__", "(.+)"))`,
		`max by (__name__) (label_replace(max_over_time({__name__=~"node_load(1|5)"}[5m]), "__name__", "$1", "__name__", "(node_load1)"))`,
		`label_replace(max_over_time({__name__=~"node_load(1|5|15)"}[5m]), "__name__", "$1", "__name__", "(.+)")`,
		`label_replace((min_over_time({__name__=~"node_load(1|5)"}[10m])), "__name__", "$1", "__name__", "(.+)") * 2`,
		`count by (__name__) (count_over_time({__name__=~"node_load1|node_systemd_unit_state"}[10m]))`,
		`avg by (__name__, instance) (avg_over_time(node_load1[1h]))`,
		`sum by (__name__, job) (rate(http_requests_total[5m]))`,
		`max by (__name__) (last_over_time(node_systemd_unit_state[10m]))`,
		`sum by (__name__, job) (rate(http_requests_total[5m])) * 2`,
		`abs({__name__=~"node_load1|node_load5"}) > 0`,
		// Arithmetic with a number over a range function (Grafana's
		// `rate(x[5m]) * 8`), which internal/queryeval evaluates itself.
		`rate(node_network_receive_bytes_total[5m]) * 8`,
		`100 - avg_over_time(node_load1[10m]) * 100`,
		`(irate(node_cpu_seconds_total{mode="user"}[5m]) * 8) / 1024`,
		`2 ^ deriv(node_weird_value[10m])`,
		`last_over_time(node_systemd_unit_state[10m]) * 2`,
		`rate({__name__=~"node_network_(receive|transmit)_bytes_total"}[5m]) * 8`,
		// count_values, sort, timestamp.
		`count_values("value", round(node_load1))`,
		`count_values("v", node_textfile_scrape_error > 0)`,
		`count_values("release", node_uname_info)`,
		`count_values("x", node_weird_value)`,
		`sort(node_load1)`,
		`sort_desc(sum by (instance) (rate(node_cpu_seconds_total{mode="idle"}[5m])))`,
		`sort(node_weird_value)`,
		`sort(app_weird_value)`,
		`timestamp(node_load1)`,
		`timestamp(node_systemd_unit_state)`,
		`time() - timestamp(up)`,
		`timestamp(node_textfile_scrape_error)`,
		`timestamp(rate(node_cpu_seconds_total{cpu="0"}[5m]))`,
		// Clamp and math.
		`clamp(node_timex_offset_seconds, -0.001, 0.001)`,
		`clamp_min(node_load1, 0.5)`,
		`clamp_max(node_load1, 0.5)`,
		`clamp(node_weird_value, -1, 1)`,
		`clamp(node_load1, 2, 1)`,
		`abs(node_timex_offset_seconds)`,
		`sqrt(node_weird_value)`,
		`ln(node_load1)`,
		`exp(node_weird_value)`,
		`round(node_load1, 0.1)`,
		`ceil(node_load1) + floor(node_load5)`,
		`sgn(node_timex_offset_seconds)`,
		`-node_load1`,
		`node_load1 ^ 2`,
		`node_load1 % 0.3`,
		`node_load1 atan2 node_load5`,
		`node_weird_value * 0`,
		`1 / node_weird_value`,
		// Scalars and time.
		`scalar(sum(up))`,
		`node_load1 * scalar(count(up))`,
		`scalar(node_load1)`,
		`vector(1)`,
		`time()`,
		`vector(time())`,
		`hour(timestamp(node_load1))`,
		`minute(timestamp(up))`,
		`day_of_week()`,
		`days_in_month(timestamp(node_load5))`,
		// Aggregations over several metrics.
		`count by (__name__) ({__name__=~"node_memory_.*"})`,
		`sum by (job) (up)`,
		`group by (job) (up)`,
		`count({job="app"})`,
		`count by (job, __name__) ({__name__=~"node_(load|memory_|filesystem_).*|up|go_.*"})`,
		`quantile by (job) (0.5, rate(node_cpu_seconds_total{mode="softirq"}[5m]))`,
		`stddev by (job) (node_load1)`,
		`stdvar(node_load15)`,
		`topk by (job) (2, rate(http_requests_total[5m]))`,
		`bottomk(3, node_weird_value)`,
		`topk(2, app_weird_value)`,
		`sum(node_weird_value)`,
		`avg by (kind) (node_weird_value)`,
		`max(node_weird_value)`,
		`min by (kind) (app_weird_value)`,
		`sum(rate(node_cpu_seconds_total[5m])) by (mode)`,
		`avg without (cpu) (rate(node_cpu_seconds_total{mode=~"i.*"}[5m]))`,
		`count without (le) (http_request_duration_seconds_bucket)`,
		// Selector edge cases.
		`{__name__="node_load1", instance=~"host-0.*"}`,
		`node_load1{instance!~"host-0.*"}`,
		`node_filesystem_avail_bytes{fstype=""}`,
		`node_filesystem_avail_bytes{fstype!=""}`,
		`node_network_receive_bytes_total{device=~"veth.*"}`,
		`node_network_receive_bytes_total{device!~"veth.*|lo"}`,
		`up{instance=~"host-5.*"}`,
		`node_cpu_seconds_total{mode=~"(?i)USER|system", cpu!="0"}`,
		`{job="node", __name__=~"node_load.*"}`,
		`app_build_info`,
		`last_over_time(app_build_info[1h])`,
		`app_weird_value`,
		`scrape_series_added`,
		`rate(node_vmstat_pgfault[5m]) + on(instance) group_left node_load1`,
		`sum(increase(promhttp_metric_handler_requests_total{code="500"}[1h]))`,
		`increase(go_gc_duration_seconds_count[10m])`,
		`go_gc_duration_seconds{quantile="1"} / on(instance) group_left go_gc_duration_seconds{quantile="0.5"}`,
	)
	// Drop duplicates, keeping the first occurrence.
	seen := map[string]bool{}
	out := ex[:0]
	for _, e := range ex {
		if !seen[e] {
			seen[e] = true
			out = append(out, e)
		}
	}
	return out
}

// queryTimes returns the instant-query evaluation times (ms).
func (w *Workload) queryTimes() []int64 {
	ts := []int64{
		w.MinT - 60_000,
		w.MinT + 10*60_000,
		w.MinT + (w.MaxT-w.MinT)/3 + 7_000,
		w.MinT + (w.MaxT-w.MinT)/2,
		w.MaxT,
		w.MaxT + 4*60_000,
		w.MaxT + 20*60_000,
	}
	// Exactly on a row, and just after a late row.
	for _, b := range w.Batches {
		if b.Group == 0 && b.Tick == w.Ticks/2 && !b.Rollback {
			ts = append(ts, b.T)
			break
		}
	}
	if len(w.lateTimes) > 0 {
		ts = append(ts, w.lateTimes[0]+1)
	}
	return ts
}

type rangeSpec struct{ start, end, step int64 }

func (w *Workload) queryRanges() []rangeSpec {
	mid := w.MinT + (w.MaxT-w.MinT)/2
	return []rangeSpec{
		{w.MinT - 5*60_000, w.MaxT + 5*60_000, 5 * 60_000},
		{mid - 20*60_000, mid + 20*60_000, 15_000},
		{w.MaxT - 30*60_000, w.MaxT + 10*60_000, 60_000},
	}
}

// QueryStats summarises CompareQueries.
type QueryStats struct {
	Expressions, Queries int
	Failed               int // expressions with at least one difference
	Errors               int // queries that failed on both sides (same error)
	EmptyExpressions     int // expressions with no data in any result on the want side
	// Unstable counts expressions whose want side answered differently
	// when run again (Prometheus' range evaluation hands a function's
	// series on in map order, so ties in topk and float sums may vary):
	// they are not compared.
	Unstable int
}

// CompareQueries evaluates every expression of Expressions(w) with one PromQL
// engine against want and got, as instant queries at several times and as
// range queries, and requires identical results: the same label sets, the
// same timestamps, values equal bit for bit (math.Float64bits), the same
// annotations and the same error. Both Queryables are wrapped so that Select
// always sorts, so PromQL sees series in the same order on both sides.
// The first difference of each failing expression is reported.
func CompareQueries(t testing.TB, w *Workload, want, got storage.Queryable) QueryStats {
	t.Helper()
	exprs := Expressions(w)
	ng := NewPromQLEngine()
	defer ng.Close()
	return report(t, w, exprs, compareExpressions(w, exprs, ng, ng, sortedQueryable{want}, sortedQueryable{got}))
}

// CompareEngines is CompareQueries of one storage through two engines:
// Prometheus' (NewPromQLEngine, or with delayed name removal off if
// delayed is false) and what wrap makes of it.
func CompareEngines(t testing.TB, w *Workload, q storage.Queryable, delayed bool, wrap func(*promql.Engine) promql.QueryEngine) QueryStats {
	t.Helper()
	return CompareEngineExprs(t, w, Expressions(w), q, delayed, wrap)
}

// CompareEngineExprs is CompareEngines over the given expressions (for
// example generated ones) instead of Expressions(w).
func CompareEngineExprs(t testing.TB, w *Workload, exprs []string, q storage.Queryable, delayed bool, wrap func(*promql.Engine) promql.QueryEngine) QueryStats {
	t.Helper()
	ng := promql.NewEngine(engineOpts(delayed))
	defer ng.Close()
	sq := sortedQueryable{q}
	return report(t, w, exprs, compareExpressions(w, exprs, ng, wrap(ng), sq, sq))
}

// report counts and reports the differences of results.
func report(t testing.TB, w *Workload, exprs []string, results []exprResult) QueryStats {
	t.Helper()
	st := QueryStats{Expressions: len(exprs), Queries: len(exprs) * (len(w.queryTimes()) + len(w.queryRanges())) * 2}
	for i, r := range results {
		st.Errors += r.errs
		if !r.nonEmpty {
			st.EmptyExpressions++
		}
		if r.unstable {
			st.Unstable++
			t.Logf("difftest: not compared, want's answer varies between runs: %s", exprs[i])
		}
		if r.diff != "" {
			st.Failed++
			if st.Failed <= maxReported {
				t.Errorf("difftest: %s\n\t%s", exprs[i], r.diff)
			}
		}
	}
	if st.Failed > 0 {
		t.Errorf("difftest: CompareQueries: %d of %d expressions differ", st.Failed, st.Expressions)
	} else {
		t.Logf("difftest: CompareQueries: %d expressions agree (%d queries; %d errored on both sides, %d expressions always empty, %d unstable)", st.Expressions-st.Unstable, st.Queries, st.Errors, st.EmptyExpressions, st.Unstable)
	}
	return st
}

// NameRemovalChanges evaluates every expression of Expressions(w) over q
// through got (what aerie serve queries with) and through Prometheus 3's
// engine with its defaults (delayed name removal off), and returns, per
// expression whose answer differs, the first difference ("want" is
// Prometheus').
func NameRemovalChanges(w *Workload, q storage.Queryable, got promql.QueryEngine) map[string]string {
	exprs := Expressions(w)
	off := promql.NewEngine(engineOpts(false))
	defer off.Close()
	sq := sortedQueryable{q}
	out := map[string]string{}
	for i, r := range compareExpressions(w, exprs, off, got, sq, sq) {
		if r.diff != "" {
			out[exprs[i]] = r.diff
		}
	}
	return out
}

type exprResult struct {
	diff     string // the first difference, "" if none
	errs     int    // queries that errored (on want's side)
	nonEmpty bool   // some query answered a non-empty value
	unstable bool   // want's own answer varied between runs
}

// compareExpressions runs every expression as instant queries at
// w.queryTimes() and range queries over w.queryRanges(), through wantEng
// over want and gotEng over got, on up to 4 goroutines.
func compareExpressions(w *Workload, exprs []string, wantEng, gotEng promql.QueryEngine, want, got storage.Queryable) []exprResult {
	times := w.queryTimes()
	ranges := w.queryRanges()
	results := make([]exprResult, len(exprs))
	var wg sync.WaitGroup
	next := make(chan int)
	workers := min(runtime.GOMAXPROCS(0), 4)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				r := &results[i]
				run := func(what string, mk func(ng promql.QueryEngine, q storage.Queryable) (promql.Query, error)) {
					if r.diff != "" || r.unstable {
						return
					}
					wqry, werr := mk(wantEng, want)
					gqry, gerr := mk(gotEng, got)
					if werr != nil || gerr != nil {
						if (werr == nil) != (gerr == nil) || werr.Error() != gerr.Error() {
							r.diff = fmt.Sprintf("%s: creating query: want %v, got %v", what, werr, gerr)
						}
						for _, q := range []promql.Query{wqry, gqry} {
							if q != nil {
								q.Close()
							}
						}
						return
					}
					ctx := context.Background()
					wres := wqry.Exec(ctx)
					gres := gqry.Exec(ctx)
					if d := diffResult(wres, gres, isSorted(exprs[i])); d != "" {
						r.diff = what + ": " + d
						if varies(wres, isSorted(exprs[i]), func() (promql.Query, error) { return mk(wantEng, want) }) {
							r.diff, r.unstable = "", true
						}
					}
					if wres.Err != nil {
						r.errs++
					} else if !emptyValue(wres.Value) {
						r.nonEmpty = true
					}
					wqry.Close()
					gqry.Close()
				}
				for _, ts := range times {
					tt := time.UnixMilli(ts)
					run("instant @"+promTime(ts), func(ng promql.QueryEngine, q storage.Queryable) (promql.Query, error) {
						return ng.NewInstantQuery(context.Background(), q, nil, exprs[i], tt)
					})
				}
				for _, rs := range ranges {
					run(fmt.Sprintf("range [%s,%s] step %ds", promTime(rs.start), promTime(rs.end), rs.step/1000), func(ng promql.QueryEngine, q storage.Queryable) (promql.Query, error) {
						return ng.NewRangeQuery(context.Background(), q, nil, exprs[i], time.UnixMilli(rs.start), time.UnixMilli(rs.end), time.Duration(rs.step)*time.Millisecond)
					})
				}
			}
		}()
	}
	for i := range exprs {
		next <- i
	}
	close(next)
	wg.Wait()
	return results
}

// varies tells whether running the want side's query again (three times)
// gives an answer other than first.
func varies(first *promql.Result, ordered bool, mk func() (promql.Query, error)) bool {
	for range 3 {
		q, err := mk()
		if err != nil {
			return true
		}
		res := q.Exec(context.Background())
		d := diffResult(first, res, ordered)
		q.Close()
		if d != "" {
			return true
		}
	}
	return false
}

// isSorted tells whether the order of the expression's instant vector is
// meaningful.
func isSorted(expr string) bool {
	return strings.HasPrefix(expr, "sort(") || strings.HasPrefix(expr, "sort_desc(")
}

func emptyValue(v parser.Value) bool {
	switch v := v.(type) {
	case promql.Vector:
		return len(v) == 0
	case promql.Matrix:
		return len(v) == 0
	case nil:
		return true
	}
	return false
}

func fmtF(f float64) string { return fmt.Sprintf("%g(%#x)", f, math.Float64bits(f)) }

func annotationStrings(r *promql.Result) []string {
	var out []string
	for _, e := range r.Warnings.AsErrors() {
		out = append(out, e.Error())
	}
	slices.Sort(out)
	return out
}

func diffResult(want, got *promql.Result, ordered bool) string {
	if (want.Err == nil) != (got.Err == nil) || (want.Err != nil && want.Err.Error() != got.Err.Error()) {
		return fmt.Sprintf("error: want %v, got %v", want.Err, got.Err)
	}
	if want.Err != nil {
		return ""
	}
	if wa, ga := annotationStrings(want), annotationStrings(got); !slices.Equal(wa, ga) {
		return fmt.Sprintf("annotations: want %q, got %q", wa, ga)
	}
	if want.Value.Type() != got.Value.Type() {
		return fmt.Sprintf("value type: want %s, got %s", want.Value.Type(), got.Value.Type())
	}
	switch wv := want.Value.(type) {
	case promql.Vector:
		return diffVector(wv, got.Value.(promql.Vector), ordered)
	case promql.Matrix:
		return diffMatrix(wv, got.Value.(promql.Matrix))
	case promql.Scalar:
		gv := got.Value.(promql.Scalar)
		if wv.T != gv.T || math.Float64bits(wv.V) != math.Float64bits(gv.V) {
			return fmt.Sprintf("scalar: want %s@%d, got %s@%d", fmtF(wv.V), wv.T, fmtF(gv.V), gv.T)
		}
	case promql.String:
		if gv := got.Value.(promql.String); wv != gv {
			return fmt.Sprintf("string: want %v, got %v", wv, gv)
		}
	default:
		return fmt.Sprintf("unexpected value type %T", wv)
	}
	return ""
}

func diffVector(want, got promql.Vector, ordered bool) string {
	if ordered {
		// The order of values is meaningful; label sets are compared below.
		for i := 0; i < len(want) && i < len(got); i++ {
			if math.Float64bits(want[i].F) != math.Float64bits(got[i].F) {
				return fmt.Sprintf("sorted value %d: want %s, got %s", i, fmtF(want[i].F), fmtF(got[i].F))
			}
		}
	}
	return diffByMetric(want, got, "sample", "samples",
		func(s promql.Sample) labels.Labels { return s.Metric },
		func(s promql.Sample) string { return s.Metric.String() + " " + fmtF(s.F) },
		func(w, g promql.Sample) string {
			if w.T != g.T || math.Float64bits(w.F) != math.Float64bits(g.F) {
				return fmt.Sprintf("%s: want %s@%d, got %s@%d", w.Metric, fmtF(w.F), w.T, fmtF(g.F), g.T)
			}
			if (w.H == nil) != (g.H == nil) || (w.H != nil && !w.H.Equals(g.H)) {
				return fmt.Sprintf("%s: histogram: want %v, got %v", w.Metric, w.H, g.H)
			}
			return ""
		})
}

func diffMatrix(want, got promql.Matrix) string {
	return diffByMetric(want, got, "series", "series",
		func(s promql.Series) labels.Labels { return s.Metric },
		func(s promql.Series) string { return fmt.Sprintf("%s (%d points)", s.Metric, len(s.Floats)) },
		func(w, g promql.Series) string {
			for j := 0; j < len(w.Floats) || j < len(g.Floats); j++ {
				switch {
				case j >= len(w.Floats):
					return fmt.Sprintf("%s: extra point %s@%d", w.Metric, fmtF(g.Floats[j].F), g.Floats[j].T)
				case j >= len(g.Floats):
					return fmt.Sprintf("%s: missing point %s@%d", w.Metric, fmtF(w.Floats[j].F), w.Floats[j].T)
				}
				wp, gp := w.Floats[j], g.Floats[j]
				if wp.T != gp.T || math.Float64bits(wp.F) != math.Float64bits(gp.F) {
					return fmt.Sprintf("%s: point %d: want %s@%d, got %s@%d", w.Metric, j, fmtF(wp.F), wp.T, fmtF(gp.F), gp.T)
				}
			}
			if len(w.Histograms) != len(g.Histograms) {
				return fmt.Sprintf("%s: %d histogram points, want %d", w.Metric, len(g.Histograms), len(w.Histograms))
			}
			return ""
		})
}

// diffByMetric sorts copies of want and got by label set and describes
// the first difference: an extra or missing element (what, shown by
// show), a label set other than want's, or what diff says of two elements
// with the same label set ("" for none).
func diffByMetric[T any](want, got []T, what, whats string, metric func(T) labels.Labels, show func(T) string, diff func(w, g T) string) string {
	cmp := func(a, b T) int { return labels.Compare(metric(a), metric(b)) }
	want, got = slices.Clone(want), slices.Clone(got)
	slices.SortStableFunc(want, cmp)
	slices.SortStableFunc(got, cmp)
	for i := 0; i < len(want) || i < len(got); i++ {
		switch {
		case i >= len(want):
			return fmt.Sprintf("extra %s %s; %d %s, want %d", what, show(got[i]), len(got), whats, len(want))
		case i >= len(got):
			return fmt.Sprintf("missing %s %s; %d %s, want %d", what, show(want[i]), len(got), whats, len(want))
		}
		if w, g := metric(want[i]), metric(got[i]); !labels.Equal(w, g) {
			return fmt.Sprintf("%s %d: want %s, got %s", what, i, w, g)
		}
		if d := diff(want[i], got[i]); d != "" {
			return d
		}
	}
	return ""
}
