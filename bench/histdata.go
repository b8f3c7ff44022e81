package bench

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/aerie-db/aerie/bench/workload"
)

// historyWorkload is the --workload that runs the history phases instead
// of the insert, flush and tuple phases.
const historyWorkload = "history"

const day = 24 * time.Hour

// historyScale sizes a history run. Hosts carry every node series for Span
// before the head's data; LongHosts (further node targets) carry only
// node_cpu_seconds_total of their first LongCPUs cpus and
// node_memory_MemAvailable_bytes, for LongSpan: the 30-day queries read
// them without making every host's 30 days part of the run.
type historyScale struct {
	Name      string
	Hosts     int
	Span      time.Duration
	LongHosts int
	LongCPUs  int
	LongSpan  time.Duration
	QueryRuns int // runs of each long-range query
	// QueryLoop is how long the query loop runs without a compaction, the
	// baseline of the loop during the compaction.
	QueryLoop time.Duration
}

// historyScales are the predefined sizes of --workload=history (the
// --scale names of the other workloads, other sizes).
var historyScales = map[string]historyScale{
	"small":  {Name: "small", Hosts: 1, Span: 2 * day, LongHosts: 1, LongCPUs: 1, LongSpan: 7 * day, QueryRuns: 3, QueryLoop: time.Second},
	"medium": {Name: "medium", Hosts: 2, Span: 4 * day, LongHosts: 1, LongCPUs: 4, LongSpan: 30 * day, QueryRuns: 5, QueryLoop: 3 * time.Second},
	"large":  {Name: "large", Hosts: 4, Span: 7 * day, LongHosts: 2, LongCPUs: 8, LongSpan: 30 * day, QueryRuns: 10, QueryLoop: 5 * time.Second},
}

// headSpan is the current data the head holds when the history is written.
const headSpan = 2 * time.Hour

// historyHost is one host of the history dataset.
type historyHost struct {
	target int             // in the day workloads and in current
	series []labels.Labels // what is written: every series, or a long host's subset
	keep   []int           // for a long host, the indices of series in the target's rows
	first  int             // first day (index into historyData.days) it has history for
}

// historyData is the history dataset: one node workload per day, every
// host's rows of a day coming from that day's workload (so any day of any
// host can be generated without generating the days before it; counters
// restart at day boundaries, as after a reboot), and the current data the
// head holds before the history is written.
type historyData struct {
	now     int64               // ms: the history ends and the head's data start here (a day boundary)
	days    []workload.Workload // days[k] covers [now-(len-k)·24h, now-(len-k-1)·24h)
	hosts   []historyHost       // Hosts full hosts, then LongHosts long ones
	full    int                 // hosts with every series
	current workload.Workload   // every host, headSpan from now
	samples int64               // history samples
	series  int                 // distinct series of the history
}

func newHistoryData(hs historyScale, interval time.Duration, seed int64) (*historyData, error) {
	if hs.Hosts < 1 || hs.Span < day || hs.LongSpan < hs.Span {
		return nil, fmt.Errorf("history scale %s: want at least one host, a span of at least a day and a long span at least as long (%+v)", hs.Name, hs)
	}
	targets := hs.Hosts + hs.LongHosts
	now := workload.DefaultStart - workload.DefaultStart%day.Milliseconds()
	ndays := int(hs.LongSpan / day)
	d := &historyData{now: now, full: hs.Hosts}
	for k := range ndays {
		start := now - int64(ndays-k)*day.Milliseconds()
		w, err := workload.New("node", workload.Spec{Targets: targets, Interval: interval, Duration: day, Start: start, Seed: seed*1000 + int64(k)})
		if err != nil {
			return nil, err
		}
		d.days = append(d.days, w)
	}
	var err error
	if d.current, err = workload.New("node", workload.Spec{Targets: targets, Interval: interval, Duration: headSpan, Start: now, Seed: seed*1000 + int64(ndays)}); err != nil {
		return nil, err
	}
	ticks := d.days[0].Samples() / int64(targets*len(d.days[0].Series(0)))
	for t := range targets {
		h := historyHost{target: t, series: d.days[0].Series(t)}
		if t < hs.Hosts {
			h.first = ndays - int(hs.Span/day)
		} else {
			h.series, h.keep = nil, nil
			for i, ls := range d.days[0].Series(t) {
				if keepLong(ls, hs.LongCPUs) {
					h.series = append(h.series, ls)
					h.keep = append(h.keep, i)
				}
			}
		}
		d.hosts = append(d.hosts, h)
		d.samples += ticks * int64(len(h.series)) * int64(ndays-h.first)
		d.series += len(h.series)
	}
	return d, nil
}

// keepLong selects a long host's series.
func keepLong(ls labels.Labels, cpus int) bool {
	switch ls.Get(labels.MetricName) {
	case "node_memory_MemAvailable_bytes":
		return true
	case "node_cpu_seconds_total":
		c, err := strconv.Atoi(ls.Get("cpu"))
		return err == nil && c < cpus
	}
	return false
}

func (d *historyData) minTime() int64 { return d.now - int64(len(d.days))*day.Milliseconds() }

// histUnit is one host's rows of one day, written in time order.
type histUnit struct{ host, day int }

// byHost is the importer's and the agent's order: host after host, each
// host's whole range in time order.
func (d *historyData) byHost() []histUnit {
	var us []histUnit
	for h, hh := range d.hosts {
		for k := hh.first; k < len(d.days); k++ {
			us = append(us, histUnit{h, k})
		}
	}
	return us
}

// perHost is one import per host, host after host, each host's range in
// time order.
func (d *historyData) perHost() [][]histUnit {
	var is [][]histUnit
	for h, hh := range d.hosts {
		var us []histUnit
		for k := hh.first; k < len(d.days); k++ {
			us = append(us, histUnit{h, k})
		}
		is = append(is, us)
	}
	return is
}

// shuffledDays is every host-day in a random order (daily files imported
// in no particular order), each in time order.
func (d *historyData) shuffledDays(rnd *rand.Rand) []histUnit {
	us := d.byHost()
	rnd.Shuffle(len(us), func(i, j int) { us[i], us[j] = us[j], us[i] })
	return us
}
