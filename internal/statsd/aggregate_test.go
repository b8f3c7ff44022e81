package statsd

import (
	"math"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/stretchr/testify/require"
)

// collector gathers a flush's samples by series: the Graphite path, then
// the tags as labels in braces if any.
type collector struct {
	acfg *aggConfig
	got  map[string]float64
}

func (c *collector) emit(sr *series, idx int, prefix, stat string, v float64) {
	name := c.acfg.name(sr, prefix, stat)
	if len(sr.tags) > 0 {
		name += labels.New(sr.tags...).String()
	}
	if _, dup := c.got[name]; dup {
		panic("series emitted twice in one flush: " + name)
	}
	c.got[name] = v
}

// testAgg is an aggregator fed by the parser, as the listeners feed it.
type testAgg struct {
	t    *testing.T
	acfg *aggConfig
	agg  *aggregator
	p    *Parser
	b    batcher
}

func newTestAgg(t *testing.T, cfg Config) *testAgg {
	t.Helper()
	cfg.fill()
	require.NoError(t, cfg.validate())
	a := &testAgg{t: t, acfg: cfg.aggConfig(), p: NewParser(cfg.Limits, cfg.KeepNames)}
	a.agg = newAggregator(a.acfg)
	return a
}

// feed parses packet, which must be well-formed, and aggregates it; it
// returns how many values the limits refused.
func (a *testAgg) feed(packet string) (seriesRefused, valuesRefused int) {
	a.t.Helper()
	_, skipped := a.p.ParsePacket([]byte(packet), a.b.add, func(e *ParseError) { a.t.Fatalf("packet %q: %v", packet, e) })
	require.Zero(a.t, skipped)
	return a.agg.addBatch(a.b.take())
}

func (a *testAgg) flush(internal [3]float64) map[string]float64 {
	var sn snapshot
	a.agg.snapshot(internal, &sn)
	c := &collector{acfg: a.acfg, got: map[string]float64{}}
	a.acfg.compute(&sn, c)
	return c.got
}

// interval is what arrives during one flush interval and what the flush
// at its end must send: every sample, nothing else.
type interval struct {
	packets []string
	want    map[string]float64
}

// timer1 is the flush of a timer that got the single value v with count c
// in a 10 s interval, with the default percentile 90.
func timer1(name string, v, c float64) map[string]float64 {
	p := "stats.timers." + name + "."
	return map[string]float64{
		p + "count": c, p + "count_ps": c / 10, p + "sum": v, p + "sum_squares": v * v, p + "mean": v,
		p + "median": v, p + "lower": v, p + "upper": v, p + "std": 0,
		p + "count_90": 1, p + "mean_90": v, p + "upper_90": v, p + "sum_90": v, p + "sum_squares_90": v * v,
	}
}

func merge(ms ...map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

// TestAggregateSpec runs the examples of statsd's docs/metric_types.md
// (and the cases around them) through parser and aggregator; expected
// values are computed by hand.
func TestAggregateSpec(t *testing.T) {
	oneToTen := "t:7|ms\nt:3|ms\nt:10|ms\nt:1|ms\nt:5|ms\nt:2|ms\nt:9|ms\nt:4|ms\nt:8|ms\nt:6|ms"
	cases := []struct {
		name      string
		cfg       Config
		only      string // compare only series containing this
		intervals []interval
	}{
		{name: "counter", intervals: []interval{
			{[]string{"gorets:1|c"}, map[string]float64{"stats.counters.gorets.rate": 0.1, "stats.counters.gorets.count": 1}},
			// Sampled every 1/10th of the time: counts 10.
			{[]string{"gorets:1|c|@0.1", "gorets:1|c"}, map[string]float64{"stats.counters.gorets.rate": 1.1, "stats.counters.gorets.count": 11}},
			// Idle: statsd sends 0 (deleteCounters false).
			{nil, map[string]float64{"stats.counters.gorets.rate": 0, "stats.counters.gorets.count": 0}},
			{[]string{"gorets:-3|c\ngorets:+1.5|c\ngorets:2e1|c"}, map[string]float64{"stats.counters.gorets.rate": 1.85, "stats.counters.gorets.count": 18.5}},
		}},
		{name: "gauge", intervals: []interval{
			{[]string{"gaugor:333|g"}, map[string]float64{"stats.gauges.gaugor": 333}},
			// 333 - 10 + 4, in one interval.
			{[]string{"gaugor:-10|g\ngaugor:+4|g"}, map[string]float64{"stats.gauges.gaugor": 327}},
			// Kept and sent again (deleteGauges false).
			{nil, map[string]float64{"stats.gauges.gaugor": 327}},
			// A delta applies to the value of the previous interval.
			{[]string{"gaugor:-27|g"}, map[string]float64{"stats.gauges.gaugor": 300}},
			// A negative gauge: set to 0 first, then the delta.
			{[]string{"gaugor:0|g\ngaugor:-5|g"}, map[string]float64{"stats.gauges.gaugor": -5}},
			// A plain value sets; a delta on a new gauge starts from 0.
			{[]string{"gaugor:7|g\nnewg:-2|g\nnewg:+0.5|g"}, map[string]float64{"stats.gauges.gaugor": 7, "stats.gauges.newg": -1.5}},
		}},
		{name: "set", intervals: []interval{
			{[]string{"uniques:765|s\nuniques:765|s", "uniques:766|s\nuniques:abc|s"}, map[string]float64{"stats.sets.uniques.count": 3}},
			// Counted per flush: 765 again is new in this interval.
			{[]string{"uniques:765|s"}, map[string]float64{"stats.sets.uniques.count": 1}},
			{nil, map[string]float64{"stats.sets.uniques.count": 0}},
		}},
		{name: "timer sampled", intervals: []interval{
			// One value sent at sample rate 0.1: count 10, count_ps 1.
			{[]string{"glork:320|ms|@0.1"}, timer1("glork", 320, 10)},
			// Idle: count and count_ps 0 only.
			{nil, map[string]float64{"stats.timers.glork.count": 0, "stats.timers.glork.count_ps": 0}},
			// h is a timer too.
			{[]string{"glork:100|h|@0.5\nglork:200|ms"}, map[string]float64{
				"stats.timers.glork.count": 3, "stats.timers.glork.count_ps": 0.3, "stats.timers.glork.sum": 300,
				"stats.timers.glork.sum_squares": 50000, "stats.timers.glork.mean": 150, "stats.timers.glork.median": 150,
				"stats.timers.glork.lower": 100, "stats.timers.glork.upper": 200, "stats.timers.glork.std": 50,
				// round(0.9*2) = 2 values.
				"stats.timers.glork.count_90": 2, "stats.timers.glork.mean_90": 150, "stats.timers.glork.upper_90": 200,
				"stats.timers.glork.sum_90": 300, "stats.timers.glork.sum_squares_90": 50000,
			}},
		}},
		{name: "timer percentiles", cfg: Config{Percentiles: []float64{90, -10, 50, 99.9, 4, -100}}, intervals: []interval{
			{[]string{oneToTen}, map[string]float64{
				"stats.timers.t.count": 10, "stats.timers.t.count_ps": 1, "stats.timers.t.sum": 55, "stats.timers.t.sum_squares": 385,
				"stats.timers.t.mean": 5.5, "stats.timers.t.median": 5.5, "stats.timers.t.lower": 1, "stats.timers.t.upper": 10,
				// Σ(x-5.5)² = 82.5 over 10 values.
				"stats.timers.t.std": math.Sqrt(8.25),
				// 90: the lowest round(9) values, 1..9.
				"stats.timers.t.count_90": 9, "stats.timers.t.mean_90": 5, "stats.timers.t.upper_90": 9,
				"stats.timers.t.sum_90": 45, "stats.timers.t.sum_squares_90": 285,
				// -10: the highest round(1) value, 10.
				"stats.timers.t.count_top10": 1, "stats.timers.t.mean_top10": 10, "stats.timers.t.lower_top10": 10,
				"stats.timers.t.sum_top10": 10, "stats.timers.t.sum_squares_top10": 100,
				// 50: 1..5.
				"stats.timers.t.count_50": 5, "stats.timers.t.mean_50": 3, "stats.timers.t.upper_50": 5,
				"stats.timers.t.sum_50": 15, "stats.timers.t.sum_squares_50": 55,
				// 99.9: round(9.99) = 10 values.
				"stats.timers.t.count_99_9": 10, "stats.timers.t.mean_99_9": 5.5, "stats.timers.t.upper_99_9": 10,
				"stats.timers.t.sum_99_9": 55, "stats.timers.t.sum_squares_99_9": 385,
				// 4: round(0.4) = 0 values, left out.
				// -100: every value (statsd's NaN here is a bug).
				"stats.timers.t.count_top100": 10, "stats.timers.t.mean_top100": 5.5, "stats.timers.t.lower_top100": 1,
				"stats.timers.t.sum_top100": 55, "stats.timers.t.sum_squares_top100": 385,
			}},
			// One value: every threshold, even 4, holds it.
			{[]string{"t:2|ms"}, map[string]float64{
				"stats.timers.t.count": 1, "stats.timers.t.count_ps": 0.1, "stats.timers.t.sum": 2, "stats.timers.t.sum_squares": 4,
				"stats.timers.t.mean": 2, "stats.timers.t.median": 2, "stats.timers.t.lower": 2, "stats.timers.t.upper": 2, "stats.timers.t.std": 0,
				"stats.timers.t.count_90": 1, "stats.timers.t.mean_90": 2, "stats.timers.t.upper_90": 2, "stats.timers.t.sum_90": 2, "stats.timers.t.sum_squares_90": 4,
				"stats.timers.t.count_top10": 1, "stats.timers.t.mean_top10": 2, "stats.timers.t.lower_top10": 2, "stats.timers.t.sum_top10": 2, "stats.timers.t.sum_squares_top10": 4,
				"stats.timers.t.count_50": 1, "stats.timers.t.mean_50": 2, "stats.timers.t.upper_50": 2, "stats.timers.t.sum_50": 2, "stats.timers.t.sum_squares_50": 4,
				"stats.timers.t.count_99_9": 1, "stats.timers.t.mean_99_9": 2, "stats.timers.t.upper_99_9": 2, "stats.timers.t.sum_99_9": 2, "stats.timers.t.sum_squares_99_9": 4,
				"stats.timers.t.count_4": 1, "stats.timers.t.mean_4": 2, "stats.timers.t.upper_4": 2, "stats.timers.t.sum_4": 2, "stats.timers.t.sum_squares_4": 4,
				"stats.timers.t.count_top100": 1, "stats.timers.t.mean_top100": 2, "stats.timers.t.lower_top100": 2, "stats.timers.t.sum_top100": 2, "stats.timers.t.sum_squares_top100": 4,
			}},
		}},
		{name: "no percentiles", cfg: Config{Percentiles: []float64{}}, intervals: []interval{
			{[]string{"t:3|ms\nt:1|ms"}, map[string]float64{
				"stats.timers.t.count": 2, "stats.timers.t.count_ps": 0.2, "stats.timers.t.sum": 4, "stats.timers.t.sum_squares": 10,
				"stats.timers.t.mean": 2, "stats.timers.t.median": 2, "stats.timers.t.lower": 1, "stats.timers.t.upper": 3, "stats.timers.t.std": 1,
			}},
		}},
		{name: "histogram", only: ".histogram.", cfg: Config{Histograms: []Histogram{
			{Metric: "foo"}, // exempt
			{Metric: "render", Bins: []float64{0.01, 0.1, 1, 10, math.Inf(1)}},
			{Metric: "", Bins: []float64{50, 100, 150, 200, math.Inf(1)}},
		}}, intervals: []interval{
			{[]string{"render_time:0.005|ms\nrender_time:0.05|ms\nrender_time:0.5|ms\nrender_time:5|ms\nrender_time:50|ms\nrender_time:0.1|ms",
				"foo_time:10|ms", "other:10|ms\nother:60|ms\nother:60|ms\nother:250|ms\nother:100|ms"}, map[string]float64{
				// Bounds are exclusive: 0.1 counts in bin_1.
				"stats.timers.render_time.histogram.bin_0_01": 1, "stats.timers.render_time.histogram.bin_0_1": 1,
				"stats.timers.render_time.histogram.bin_1": 2, "stats.timers.render_time.histogram.bin_10": 1,
				"stats.timers.render_time.histogram.bin_inf": 1,
				"stats.timers.other.histogram.bin_50":        1, "stats.timers.other.histogram.bin_100": 2,
				"stats.timers.other.histogram.bin_150": 1, "stats.timers.other.histogram.bin_200": 0,
				"stats.timers.other.histogram.bin_inf": 1,
			}},
		}},
		{name: "multi-metric packet", intervals: []interval{
			{[]string{"gorets:1|c\nglork:320|ms\ngaugor:333|g\nuniques:765|s"}, merge(
				map[string]float64{"stats.counters.gorets.rate": 0.1, "stats.counters.gorets.count": 1,
					"stats.gauges.gaugor": 333, "stats.sets.uniques.count": 1},
				timer1("glork", 320, 1))},
		}},
		{name: "multi-value line", intervals: []interval{
			// statsd's stats.js splits a line's values at ":".
			{[]string{"a:1|c:2|c|@0.5\nm:1|c:5|g"}, map[string]float64{
				"stats.counters.a.rate": 0.5, "stats.counters.a.count": 5,
				"stats.counters.m.rate": 0.1, "stats.counters.m.count": 1, "stats.gauges.m": 5}},
		}},
		{name: "tags", intervals: []interval{
			{[]string{"req:1|c|#env:prod,az:b\nreq:2|c|#az:b,env:prod\nreq:1|c\nreq:4|c|@0.5|#env:dev"}, map[string]float64{
				`stats.counters.req.count{az="b", env="prod"}`: 3, `stats.counters.req.rate{az="b", env="prod"}`: 0.3,
				`stats.counters.req.count{env="dev"}`: 8, `stats.counters.req.rate{env="dev"}`: 0.8,
				"stats.counters.req.count": 1, "stats.counters.req.rate": 0.1,
			}},
		}},
		{name: "sanitized names", intervals: []interval{
			{[]string{"my  key/with\tbits:1|c\na$b%c:2|c"}, map[string]float64{
				"stats.counters.my_key-with_bits.count": 1, "stats.counters.my_key-with_bits.rate": 0.1,
				"stats.counters.abc.count": 2, "stats.counters.abc.rate": 0.2,
			}},
		}},
		{name: "kept names", cfg: Config{KeepNames: true}, intervals: []interval{
			{[]string{"my key/é:1|c"}, map[string]float64{"stats.counters.my key/é.count": 1, "stats.counters.my key/é.rate": 0.1}},
		}},
		{name: "namespace", cfg: Config{Namespace: Namespace{Counter: "c", Timer: "t", Gauge: "g", Set: "s", GlobalSuffix: "host1"}, Percentiles: []float64{}}, intervals: []interval{
			{[]string{"gorets:1|c\ngaugor:2|g\nuniques:x|s\nglork:3|ms"}, map[string]float64{
				"c.gorets.rate.host1": 0.1, "c.gorets.count.host1": 1, "g.gaugor.host1": 2, "s.uniques.count.host1": 1,
				"t.glork.count.host1": 1, "t.glork.count_ps.host1": 0.1, "t.glork.sum.host1": 3, "t.glork.sum_squares.host1": 9,
				"t.glork.mean.host1": 3, "t.glork.median.host1": 3, "t.glork.lower.host1": 3, "t.glork.upper.host1": 3, "t.glork.std.host1": 0,
			}},
		}},
		{name: "flush interval", cfg: Config{FlushInterval: 60_000_000_000}, intervals: []interval{
			{[]string{"gorets:30|c"}, map[string]float64{"stats.counters.gorets.rate": 0.5, "stats.counters.gorets.count": 30}},
		}},
		{name: "delete idle stats", cfg: Config{DeleteIdleStats: true, Percentiles: []float64{}}, intervals: []interval{
			{[]string{"gorets:1|c\ngaugor:3|g\nuniques:1|s\nglork:1|ms"}, map[string]float64{
				"stats.counters.gorets.rate": 0.1, "stats.counters.gorets.count": 1, "stats.gauges.gaugor": 3, "stats.sets.uniques.count": 1,
				"stats.timers.glork.count": 1, "stats.timers.glork.count_ps": 0.1, "stats.timers.glork.sum": 1, "stats.timers.glork.sum_squares": 1,
				"stats.timers.glork.mean": 1, "stats.timers.glork.median": 1, "stats.timers.glork.lower": 1, "stats.timers.glork.upper": 1, "stats.timers.glork.std": 0,
			}},
			{nil, map[string]float64{}},
			// The gauge was forgotten: the delta starts from 0.
			{[]string{"gaugor:+2|g"}, map[string]float64{"stats.gauges.gaugor": 2}},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := newTestAgg(t, tc.cfg)
			for i, iv := range tc.intervals {
				for _, p := range iv.packets {
					sr, vr := a.feed(p)
					require.Zero(t, sr+vr)
				}
				got := a.flush([3]float64{})
				if tc.only != "" {
					for k := range got {
						if !strings.Contains(k, tc.only) {
							delete(got, k)
						}
					}
				}
				require.Equal(t, iv.want, got, "interval %d", i)
			}
		})
	}
}

func TestAggregateInternalStats(t *testing.T) {
	a := newTestAgg(t, Config{InternalStats: true, DeleteIdleStats: true})
	a.feed("gorets:1|c\ngaugor:1|g")
	got := a.flush([3]float64{2, 5, 1})
	require.Equal(t, map[string]float64{
		"stats.counters.gorets.rate": 0.1, "stats.counters.gorets.count": 1, "stats.gauges.gaugor": 1,
		"stats.counters.statsd.packets_received.count": 2, "stats.counters.statsd.packets_received.rate": 0.2,
		"stats.counters.statsd.metrics_received.count": 5, "stats.counters.statsd.metrics_received.rate": 0.5,
		"stats.counters.statsd.bad_lines_seen.count": 1, "stats.counters.statsd.bad_lines_seen.rate": 0.1,
		// 3 internal counters, a counter and a gauge.
		"stats.statsd.numStats": 5,
	}, got)
	// With deleteIdleStats the internal counters stay, at 0.
	got = a.flush([3]float64{})
	require.Equal(t, map[string]float64{
		"stats.counters.statsd.packets_received.count": 0, "stats.counters.statsd.packets_received.rate": 0,
		"stats.counters.statsd.metrics_received.count": 0, "stats.counters.statsd.metrics_received.rate": 0,
		"stats.counters.statsd.bad_lines_seen.count": 0, "stats.counters.statsd.bad_lines_seen.rate": 0,
		"stats.statsd.numStats": 3,
	}, got)
}

func TestAggregateLimits(t *testing.T) {
	a := newTestAgg(t, Config{MaxSeries: 2, MaxIntervalValues: 3, Percentiles: []float64{}})
	sr, vr := a.feed("a:1|c\nb:1|g\nc:1|c\na:2|c")
	require.Equal(t, [2]int{1, 0}, [2]int{sr, vr}, "the third series is refused, known ones go on")
	require.Equal(t, 2, a.agg.seriesLen())

	b := newTestAgg(t, Config{MaxIntervalValues: 3, Percentiles: []float64{}})
	sr, vr = b.feed("t:1|ms\nt:2|ms\nu:x|s\nu:x|s\nt:3|ms\nu:y|s")
	require.Equal(t, [2]int{0, 2}, [2]int{sr, vr}, "a known set member costs nothing")
	got := b.flush([3]float64{})
	require.Equal(t, 2.0, got["stats.timers.t.count"])
	require.Equal(t, 1.0, got["stats.sets.u.count"])
	// A new interval has room again.
	sr, vr = b.feed("t:1|ms\nt:2|ms\nu:x|s")
	require.Zero(t, sr+vr)
}
