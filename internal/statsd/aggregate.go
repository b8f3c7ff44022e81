package statsd

import (
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
)

// Errors of aggregator.add: a value refused by a limit.
var (
	errSeriesLimit = errors.New("statsd: too many distinct metrics (MaxSeries)")
	errValuesLimit = errors.New("statsd: too many timer values and set members in this flush interval (MaxIntervalValues)")
)

// Timer statistics, by their index in series.out.
const (
	tCount = iota
	tCountPS
	tSum
	tSumSquares
	tMean
	tMedian
	tLower
	tUpper
	tStd
	tBase // first percentile statistic
)

var timerStats = [tBase]string{"count", "count_ps", "sum", "sum_squares", "mean", "median", "lower", "upper", "std"}

// Statistics per percentile threshold, in this order from
// tBase+pctStats*i.
const pctStats = 5

// series is one statsd key: a name and its tags. Its graphite names, by
// statistic, and their storage refs are in out.
type series struct {
	key  string // the aggregator's map key (see appendKey)
	name string
	tags []labels.Label
	// out is guarded by Server.flushMu: only a flush reads or writes it.
	out []outSeries
}

type outSeries struct {
	lset labels.Labels
	ref  storage.SeriesRef
}

// newSeries returns the series of key, which it keeps: the caller clones
// a key that points into a batch.
func newSeries(key string) *series {
	name, tags := splitKey(key)
	return &series{key: key, name: name, tags: tags}
}

type counterEntry struct {
	*series
	v float64
}

type gaugeEntry struct {
	*series
	v float64
}

type timerEntry struct {
	*series
	values []float64
	count  float64 // sum of 1/rate
	hist   int     // index in aggConfig.hists of its histogram bins, -1: none
}

type setEntry struct {
	*series
	members map[string]struct{}
}

// pct is one percentile threshold and the names of its statistics.
type pct struct {
	p     float64
	names [pctStats]string // count_P, mean_P, upper_P (lower_topP), sum_P, sum_squares_P
}

// aggConfig is what the aggregation needs of Config, resolved.
type aggConfig struct {
	intervalSec float64
	pcts        []pct
	hists       []Histogram
	binNames    [][]string // per hists[i], per bin: "histogram.bin_…"
	deleteIdle  bool
	maxSeries   int
	maxValues   int
	internal    bool
	// Graphite name prefixes, each "" or ending in "."; suffix is "" or ".globalSuffix".
	counterNS, timerNS, gaugeNS, setNS, statsNS string
	suffix                                      string
	prefixStats                                 string
}

// Names of statsd's own counters (Config.InternalStats), after PrefixStats.
const (
	statPackets  = "packets_received"
	statMetrics  = "metrics_received"
	statBadLines = "bad_lines_seen"
)

// aggregator holds one flush interval's statsd state.
//
// Locking: mu guards the maps and counts; addBatch and snapshot hold it.
// Snapshots are taken by one flush at a time (Server.flushMu).
type aggregator struct {
	cfg *aggConfig

	mu       sync.Mutex // guards following
	counters map[string]*counterEntry
	gauges   map[string]*gaugeEntry
	timers   map[string]*timerEntry
	sets     map[string]*setEntry
	nvalues  int // timer values and set members held

	// nseries counts the entries of the maps, internal counters left
	// out; written under mu, read without it (a metric scrape does not
	// wait for the aggregator).
	nseries atomic.Int64

	internal [3]*counterEntry // packets, metrics, bad lines (cfg.internal)
	numStats *series
}

func newAggregator(cfg *aggConfig) *aggregator {
	a := &aggregator{
		cfg:      cfg,
		counters: map[string]*counterEntry{},
		gauges:   map[string]*gaugeEntry{},
		timers:   map[string]*timerEntry{},
		sets:     map[string]*setEntry{},
	}
	if cfg.internal {
		for i, n := range []string{statPackets, statMetrics, statBadLines} {
			k := cfg.prefixStats + "." + n
			e := &counterEntry{series: newSeries(k)}
			a.internal[i] = e
			a.counters[k] = e
		}
		a.numStats = &series{name: cfg.prefixStats + ".numStats"}
	}
	return a
}

// seriesLen returns the number of distinct metrics held (internal counters
// left out).
func (a *aggregator) seriesLen() int { return int(a.nseries.Load()) }

// addBatch adds rs in order and returns how many were refused by each
// limit.
func (a *aggregator) addBatch(rs []rec) (seriesRefused, valuesRefused int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for i := range rs {
		switch a.addLocked(&rs[i]) {
		case nil:
		case errSeriesLimit:
			seriesRefused++
		case errValuesLimit:
			valuesRefused++
		}
	}
	return
}

func (a *aggregator) addLocked(r *rec) error {
	switch r.typ {
	case Counter:
		e, err := entryOf(a, a.counters, r.key, func(s *series) *counterEntry { return &counterEntry{series: s} })
		if err != nil {
			return err
		}
		e.v += r.value * (1 / r.rate)
	case Gauge:
		e, err := entryOf(a, a.gauges, r.key, func(s *series) *gaugeEntry { return &gaugeEntry{series: s} })
		if err != nil {
			return err
		}
		// A delta applies to the gauge's last value; a new gauge starts
		// at 0, so "-10" on it is -10 either way.
		if r.delta {
			e.v += r.value
		} else {
			e.v = r.value
		}
	case Timer:
		if a.nvalues >= a.cfg.maxValues {
			return errValuesLimit
		}
		e, err := entryOf(a, a.timers, r.key, func(s *series) *timerEntry {
			return &timerEntry{series: s, hist: a.cfg.histFor(s.name)}
		})
		if err != nil {
			return err
		}
		e.values = append(e.values, r.value)
		e.count += 1 / r.rate
		a.nvalues++
	case Set:
		e, err := entryOf(a, a.sets, r.key, func(s *series) *setEntry {
			return &setEntry{series: s, members: map[string]struct{}{}}
		})
		if err != nil {
			return err
		}
		if _, ok := e.members[r.member]; !ok {
			if a.nvalues >= a.cfg.maxValues {
				return errValuesLimit
			}
			e.members[strings.Clone(r.member)] = struct{}{}
			a.nvalues++
		}
	}
	return nil
}

// entryOf returns the entry of key in m (one of a's maps), made by
// newEntry for a new series unless a holds maxSeries series already.
func entryOf[E any](a *aggregator, m map[string]*E, key string, newEntry func(*series) *E) (*E, error) {
	if e := m[key]; e != nil {
		return e, nil
	}
	if a.nseries.Load() >= int64(a.cfg.maxSeries) {
		return nil, errSeriesLimit
	}
	s := newSeries(strings.Clone(key))
	e := newEntry(s)
	m[s.key] = e
	a.nseries.Add(1)
	return e, nil
}

// snapshot is what one flush sends.
type snapshot struct {
	counters []counterEntry // copies: series and the interval's value
	gauges   []gaugeEntry
	timers   []timerEntry // values (in vals) and count of the interval
	sets     []setSnap
	numStats *series
	vals     []float64 // the timers' values, reused from flush to flush
	cum      []float64 // scratch of computeTimer
	cumSq    []float64
}

type setSnap struct {
	*series
	n int
}

// snapshot takes the interval's values and starts the next interval as
// statsd does: counters, timers and sets restart from zero (or are
// forgotten with deleteIdle), gauges keep their value (or are forgotten
// with deleteIdle). internal holds the interval's packets, metrics and
// bad lines for the internal counters.
func (a *aggregator) snapshot(internal [3]float64, sn *snapshot) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.cfg.internal {
		for i, e := range a.internal {
			e.v += internal[i]
		}
	}
	sn.counters, sn.gauges, sn.timers, sn.sets = sn.counters[:0], sn.gauges[:0], sn.timers[:0], sn.sets[:0]
	sn.numStats = a.numStats
	for _, e := range a.counters {
		sn.counters = append(sn.counters, *e)
		e.v = 0
	}
	for _, e := range a.gauges {
		sn.gauges = append(sn.gauges, *e)
	}
	sn.vals = sn.vals[:0]
	for _, e := range a.timers {
		t := *e
		start := len(sn.vals)
		sn.vals = append(sn.vals, e.values...)
		t.values = sn.vals[start:len(sn.vals):len(sn.vals)]
		sn.timers = append(sn.timers, t)
		// The entry keeps its capacity for the next interval, unless it
		// used little of it (so capacities follow use, not past peaks).
		if cap(e.values) > 1024 && len(e.values) < cap(e.values)/4 {
			e.values = nil
		}
		e.values, e.count = e.values[:0], 0
	}
	for _, e := range a.sets {
		sn.sets = append(sn.sets, setSnap{series: e.series, n: len(e.members)})
		// A cleared map keeps its peak size: a large one is dropped.
		if len(e.members) > 1024 {
			e.members = map[string]struct{}{}
		} else {
			clear(e.members)
		}
	}
	a.nvalues = 0
	if a.cfg.deleteIdle {
		clear(a.counters)
		if a.cfg.internal {
			for _, e := range a.internal {
				a.counters[e.key] = e
			}
		}
		clear(a.gauges)
		clear(a.timers)
		clear(a.sets)
		a.nseries.Store(0)
	}
}

// emitter receives a flush's samples: the value of statistic idx of s,
// whose Graphite name is prefix + s.name + stat + the global suffix.
type emitter interface {
	emit(s *series, idx int, prefix, stat string, v float64)
}

// compute sends the statistics of sn to e, as statsd's process_metrics
// and graphite backend (non-legacy namespace) compute and name them.
func (c *aggConfig) compute(sn *snapshot, e emitter) {
	for i := range sn.counters {
		k := &sn.counters[i]
		e.emit(k.series, 0, c.counterNS, ".rate", k.v/c.intervalSec)
		e.emit(k.series, 1, c.counterNS, ".count", k.v)
	}
	for i := range sn.timers {
		c.computeTimer(sn, &sn.timers[i], e)
	}
	for i := range sn.gauges {
		g := &sn.gauges[i]
		e.emit(g.series, 0, c.gaugeNS, "", g.v)
	}
	for i := range sn.sets {
		s := &sn.sets[i]
		e.emit(s.series, 0, c.setNS, ".count", float64(s.n))
	}
	if sn.numStats != nil {
		n := len(sn.counters) + len(sn.timers) + len(sn.gauges) + len(sn.sets)
		e.emit(sn.numStats, 0, c.statsNS, "", float64(n))
	}
}

// computeTimer follows statsd's lib/process_metrics.js: values sorted
// ascending; for a threshold p > 0 the lowest round(p% of count) values,
// for p < 0 the highest round(|p|% of count); a threshold that rounds to
// no value is left out; with one value every threshold holds it.
func (c *aggConfig) computeTimer(sn *snapshot, t *timerEntry, e emitter) {
	ns := c.timerNS
	n := len(t.values)
	e.emit(t.series, tCount, ns, ".count", t.count)
	e.emit(t.series, tCountPS, ns, ".count_ps", t.count/c.intervalSec)
	if n == 0 {
		return
	}
	v := t.values
	slices.Sort(v)
	// Cumulative sums in ascending order, as statsd adds them.
	sn.cum, sn.cumSq = slices.Grow(sn.cum[:0], n)[:n], slices.Grow(sn.cumSq[:0], n)[:n]
	cum, cumSq := sn.cum, sn.cumSq
	cum[0], cumSq[0] = v[0], v[0]*v[0]
	for i := 1; i < n; i++ {
		cum[i] = cum[i-1] + v[i]
		cumSq[i] = cumSq[i-1] + v[i]*v[i]
	}
	lo, hi := v[0], v[n-1]
	for i, p := range c.pcts {
		k, bound, sum, sumSq, mean := n, hi, lo, lo*lo, lo
		if n > 1 {
			k = int(math.Floor(math.Abs(p.p)/100*float64(n) + 0.5)) // JavaScript Math.round
			if k == 0 {
				continue
			}
			if p.p > 0 {
				bound, sum, sumSq = v[k-1], cum[k-1], cumSq[k-1]
			} else {
				bound = v[n-k]
				sum, sumSq = cum[n-1], cumSq[n-1]
				// statsd reads cum[-1] (undefined: NaN) when the top
				// threshold takes every value; it is 0.
				if n-k-1 >= 0 {
					sum -= cum[n-k-1]
					sumSq -= cumSq[n-k-1]
				}
			}
			mean = sum / float64(k)
		}
		base := tBase + pctStats*i
		e.emit(t.series, base, ns, p.names[0], float64(k))
		e.emit(t.series, base+1, ns, p.names[1], mean)
		e.emit(t.series, base+2, ns, p.names[2], bound)
		e.emit(t.series, base+3, ns, p.names[3], sum)
		e.emit(t.series, base+4, ns, p.names[4], sumSq)
	}
	sum, sumSq := cum[n-1], cumSq[n-1]
	mean := sum / float64(n)
	var diffs float64
	for _, x := range v {
		diffs += (x - mean) * (x - mean)
	}
	median := v[n/2]
	if n%2 == 0 {
		median = (v[n/2-1] + v[n/2]) / 2
	}
	e.emit(t.series, tSum, ns, ".sum", sum)
	e.emit(t.series, tSumSquares, ns, ".sum_squares", sumSq)
	e.emit(t.series, tMean, ns, ".mean", mean)
	e.emit(t.series, tMedian, ns, ".median", median)
	e.emit(t.series, tLower, ns, ".lower", lo)
	e.emit(t.series, tUpper, ns, ".upper", hi)
	e.emit(t.series, tStd, ns, ".std", math.Sqrt(diffs/float64(n)))
	if t.hist >= 0 {
		names := c.binNames[t.hist]
		base := tBase + pctStats*len(c.pcts)
		j := 0 // values below bins[b], sorted, so one pass
		for b, ub := range c.hists[t.hist].Bins {
			freq := 0
			for ; j < n && v[j] < ub; j++ {
				freq++
			}
			e.emit(t.series, base+b, ns, names[b], float64(freq))
		}
	}
}

// histFor returns the index of the first Histogram whose Metric is a
// substring of name (statsd's key.indexOf(metric) > -1), or -1 if there
// is none or it has no bins (statsd's way of exempting metrics).
func (c *aggConfig) histFor(name string) int {
	for i, h := range c.hists {
		if strings.Contains(name, h.Metric) {
			if len(h.Bins) == 0 {
				return -1
			}
			return i
		}
	}
	return -1
}

// pctName is statsd's clean_pct: the threshold as JavaScript prints it,
// "." as "_" and "-" as "top" (90 → "90", 99.9 → "99_9", -10 → "top10").
func pctName(p float64) string {
	s := strconv.FormatFloat(p, 'f', -1, 64)
	s = strings.Replace(s, ".", "_", 1)
	return strings.Replace(s, "-", "top", 1)
}

func newPct(p float64) pct {
	n := pctName(p)
	bound := ".upper_"
	if p < 0 {
		bound = ".lower_"
	}
	return pct{p: p, names: [pctStats]string{".count_" + n, ".mean_" + n, bound + n, ".sum_" + n, ".sum_squares_" + n}}
}

// binName is statsd's histogram bin name: "bin_" + the bound with "." as
// "_", or "bin_inf".
func binName(ub float64) string {
	if math.IsInf(ub, 1) {
		return ".histogram.bin_inf"
	}
	return ".histogram.bin_" + strings.Replace(strconv.FormatFloat(ub, 'f', -1, 64), ".", "_", 1)
}
