package graphitebench

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/aerie-db/aerie/bench/harness"
)

// Panel is one Grafana panel: a render target over a range.
type Panel struct {
	Name   string
	Target string
	Range  time.Duration
}

// MaxDataPoints is what Grafana sends for a panel about 1000 pixels wide.
const MaxDataPoints = 1000

// Panels are 20 typical Grafana panels of node-like hosts: Grafana's
// Graphite editor's first functions over one host, ten hosts (host0000?)
// and a hundred (host000??), over 1 h, 6 h and 24 h.
var Panels = []Panel{
	{"cpu user by core, one host", "aliasByNode(bench.host00000.cpu.*.user,1,3)", time.Hour},
	{"cpu user, 10 hosts summed", "sumSeries(bench.host0000?.cpu.*.user)", time.Hour},
	{"memory used, mean of 100 hosts", "averageSeries(bench.host000??.mem.used)", 6 * time.Hour},
	{"load 1m smoothed, 10 hosts", "aliasByNode(movingAverage(bench.host0000?.load.1,6),1)", time.Hour},
	{"top 5 hosts by cpu0 user", "highestCurrent(bench.host000??.cpu.0.user,5)", 6 * time.Hour},
	{"rx bytes per 5 min, one host", "summarize(bench.host00001.net.eth0.rx_bytes,'5min','max')", 6 * time.Hour},
	{"rx bytes rate, 10 hosts", "nonNegativeDerivative(bench.host0000?.net.eth0.rx_bytes)", time.Hour},
	{"disk reads per second, 10 hosts", "perSecond(bench.host0000?.disk.sda.reads)", time.Hour},
	{"cpu system by core, 100 hosts", "groupByNode(bench.host000??.cpu.*.system,3,'sumSeries')", 6 * time.Hour},
	{"memory used percent, one host", "asPercent(bench.host00000.mem.used,sumSeries(bench.host00000.mem.*))", time.Hour},
	{"tx bytes rate, 100 hosts", "sumSeries(nonNegativeDerivative(bench.host000??.net.*.tx_bytes))", 24 * time.Hour},
	{"load 15m max, 10 hosts", "maxSeries(bench.host0000?.load.15)", 24 * time.Hour},
	{"cpu idle ratio, 100 hosts", "scale(averageSeries(bench.host000??.cpu.*.idle),0.01)", 24 * time.Hour},
	{"write bytes per host", "groupByNode(perSecond(bench.host0000?.disk.*.write_bytes),1,'sum')", 6 * time.Hour},
	{"top 3 hosts by load 5m", "aliasByNode(highestAverage(bench.host000??.load.5,3),1)", 24 * time.Hour},
	{"requests per hour", "summarize(sumSeries(bench.host000??.app.requests),'1h','sum')", 24 * time.Hour},
	{"latency smoothed", "movingAverage(sumSeries(bench.host0000?.app.latency),'5min')", 6 * time.Hour},
	{"error percent per host", "aliasByNode(asPercent(bench.host0000?.app.errors,bench.host0000?.app.requests),1)", 6 * time.Hour},
	{"5 hosts with the most memory", "aliasByNode(limit(sortByMaxima(bench.host000??.mem.used),5),1)", time.Hour},
	{"error ratio, 100 hosts", "divideSeries(sumSeries(bench.host000??.app.errors),sumSeries(bench.host000??.app.requests))", 24 * time.Hour},
}

// renderSeries is one series of a /render?format=json answer.
type renderSeries struct {
	Target     string        `json:"target"`
	Datapoints [][2]*float64 `json:"datapoints"`
}

// renderQuery is the query string of panel p until end (epoch seconds).
func renderQuery(p Panel, end int64) string {
	return url.Values{
		"target":        {p.Target},
		"from":          {strconv.FormatInt(end-int64(p.Range.Seconds()), 10)},
		"until":         {strconv.FormatInt(end, 10)},
		"maxDataPoints": {strconv.Itoa(MaxDataPoints)},
		"format":        {"json"},
	}.Encode()
}

// render fetches base+/render?q and returns the body and the latency
// from sending the request to reading the last byte.
func render(ctx context.Context, c *http.Client, base, q string) ([]byte, time.Duration, error) {
	start := time.Now()
	b, err := get(ctx, c, base+"/render?"+q)
	el := time.Since(start)
	if err != nil {
		return b, el, fmt.Errorf("/render?%s: %w", q, err)
	}
	return b, el, nil
}

// answer is a decoded /render answer with its totals.
type answer struct {
	series  []renderSeries
	points  int // non-null
	nulls   int
	decoded error
}

func decodeAnswer(b []byte) answer {
	var a answer
	if a.decoded = json.Unmarshal(b, &a.series); a.decoded != nil {
		return a
	}
	for _, s := range a.series {
		for _, p := range s.Datapoints {
			if p[0] == nil {
				a.nulls++
			} else {
				a.points++
			}
		}
	}
	return a
}

// relTol is the relative difference two values may have and count as
// equal: the peers sum in other orders.
const relTol = 1e-9

// compareAnswers lists how Aerie's answer a differs from graphite-web's
// g: series, targets, timestamps, nulls and values; it returns the
// number of differing points (a missing or extra series counts all its
// points) and up to three examples.
func compareAnswers(a, g answer) (diffs int, examples []string) {
	note := func(format string, args ...any) {
		if len(examples) < 3 {
			examples = append(examples, fmt.Sprintf(format, args...))
		}
	}
	if a.decoded != nil || g.decoded != nil {
		note("undecodable answer: aerie %v, graphite-web %v", a.decoded, g.decoded)
		return max(a.points+a.nulls, g.points+g.nulls, 1), examples
	}
	if len(a.series) != len(g.series) {
		note("%d series, graphite-web %d", len(a.series), len(g.series))
	}
	for i := range max(len(a.series), len(g.series)) {
		if i >= len(a.series) {
			diffs += len(g.series[i].Datapoints)
			note("missing series %q", g.series[i].Target)
			continue
		}
		if i >= len(g.series) {
			diffs += len(a.series[i].Datapoints)
			note("extra series %q", a.series[i].Target)
			continue
		}
		as, gs := a.series[i], g.series[i]
		if as.Target != gs.Target {
			note("series %d: target %q, graphite-web %q", i, as.Target, gs.Target)
		}
		if len(as.Datapoints) != len(gs.Datapoints) {
			note("%s: %d points, graphite-web %d", gs.Target, len(as.Datapoints), len(gs.Datapoints))
		}
		for j := range max(len(as.Datapoints), len(gs.Datapoints)) {
			if j >= len(as.Datapoints) || j >= len(gs.Datapoints) {
				diffs++
				continue
			}
			ap, gp := as.Datapoints[j], gs.Datapoints[j]
			if !sameFloat(ap[1], gp[1]) {
				diffs++
				note("%s point %d: time %s, graphite-web %s", gs.Target, j, fstr(ap[1]), fstr(gp[1]))
				continue
			}
			if !sameFloat(ap[0], gp[0]) {
				diffs++
				note("%s at %s: %s, graphite-web %s", gs.Target, fstr(gp[1]), fstr(ap[0]), fstr(gp[0]))
			}
		}
	}
	return diffs, examples
}

func sameFloat(a, b *float64) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	if *a == *b {
		return true
	}
	return math.Abs(*a-*b) <= relTol*max(math.Abs(*a), math.Abs(*b))
}

func fstr(p *float64) string {
	if p == nil {
		return "null"
	}
	return strconv.FormatFloat(*p, 'g', -1, 64)
}

// latency is the median and 90th percentile of samples, in ms (to the µs).
func latency(samples []time.Duration) Latency {
	ms := func(q float64) float64 { return float64(harness.Percentile(samples, q).Microseconds()) / 1000 }
	return Latency{P50Ms: ms(0.5), P90Ms: ms(0.9)}
}
