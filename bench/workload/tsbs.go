package workload

import (
	"math"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/prometheus/model/labels"
)

// TSBS devops cpu-only (github.com/timescale/tsbs, pkg/data/usecases/devops):
// the fields of its cpu measurement, in its order.
var tsbsFields = []string{
	"usage_user", "usage_system", "usage_idle", "usage_nice", "usage_iowait",
	"usage_irq", "usage_softirq", "usage_steal", "usage_guest", "usage_guest_nice",
}

// tsbsOrder[i] is the slot of tsbsFields[i]: series sort by metric name.
var tsbsOrder = func() []int32 {
	idx := make([]int, len(tsbsFields))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return labels.Compare(tsbsLabels(a, nil), tsbsLabels(b, nil)) })
	slot := make([]int32, len(idx))
	for pos, i := range idx {
		slot[i] = int32(pos)
	}
	return slot
}()

type tsbsRegion struct {
	name        string
	datacenters []string
}

var (
	tsbsRegions = []tsbsRegion{
		{"us-east-1", []string{"us-east-1a", "us-east-1b", "us-east-1c", "us-east-1e"}},
		{"us-west-1", []string{"us-west-1a", "us-west-1b"}},
		{"us-west-2", []string{"us-west-2a", "us-west-2b", "us-west-2c"}},
		{"eu-west-1", []string{"eu-west-1a", "eu-west-1b", "eu-west-1c"}},
		{"eu-central-1", []string{"eu-central-1a", "eu-central-1b"}},
		{"ap-southeast-1", []string{"ap-southeast-1a", "ap-southeast-1b"}},
		{"ap-southeast-2", []string{"ap-southeast-2a", "ap-southeast-2b"}},
		{"ap-northeast-1", []string{"ap-northeast-1a", "ap-northeast-1c"}},
		{"sa-east-1", []string{"sa-east-1a", "sa-east-1b", "sa-east-1c"}},
	}
	tsbsTeams        = []string{"SF", "NYC", "LON", "CHI"}
	tsbsOSes         = []string{"Ubuntu16.10", "Ubuntu16.04LTS", "Ubuntu15.10"}
	tsbsArches       = []string{"x64", "x86"}
	tsbsEnvironments = []string{"production", "staging", "test"}
)

// tsbsHost is a host's tags, label name and value pairs in sorted order.
type tsbsHost [10][2]string

// tsbsLabels returns field i's series for host h (nil: no tags).
func tsbsLabels(i int, h *tsbsHost) labels.Labels {
	b := labels.NewScratchBuilder(11)
	b.Add(labels.MetricName, "cpu_"+tsbsFields[i])
	if h != nil {
		for _, t := range h {
			b.Add(t[0], t[1])
		}
	}
	b.Sort()
	return b.Labels()
}

type tsbsWorkload struct {
	c      *clock
	series []atomic.Pointer[[]labels.Labels]
}

func newTSBS(c *clock) *tsbsWorkload {
	return &tsbsWorkload{c: c, series: make([]atomic.Pointer[[]labels.Labels], c.targets)}
}

func (w *tsbsWorkload) Name() string            { return "tsbs" }
func (w *tsbsWorkload) NumTargets() int         { return w.c.targets }
func (w *tsbsWorkload) MinTime() int64          { return w.c.minT }
func (w *tsbsWorkload) MaxTime() int64          { return w.c.maxT }
func (w *tsbsWorkload) Interval() time.Duration { return w.c.spec.Interval }
func (w *tsbsWorkload) Samples() int64 {
	return w.c.ticks * int64(len(tsbsFields)) * int64(w.c.targets)
}

// tsbsTags draws host i's tags as TSBS's NewHost does, in its order, and
// leaves r where the field values start.
func tsbsTags(r *rng, i int) *tsbsHost {
	region := &tsbsRegions[r.intn(len(tsbsRegions))]
	datacenter := region.datacenters[r.intn(len(region.datacenters))]
	rack := strconv.Itoa(r.intn(100))
	arch := tsbsArches[r.intn(len(tsbsArches))]
	os := tsbsOSes[r.intn(len(tsbsOSes))]
	service := strconv.Itoa(r.intn(20))
	version := strconv.Itoa(r.intn(2))
	env := tsbsEnvironments[r.intn(len(tsbsEnvironments))]
	team := tsbsTeams[r.intn(len(tsbsTeams))]
	return &tsbsHost{
		{"arch", arch},
		{"datacenter", datacenter},
		{"hostname", "host_" + strconv.Itoa(i)},
		{"os", os},
		{"rack", rack},
		{"region", region.name},
		{"service", service},
		{"service_environment", env},
		{"service_version", version},
		{"team", team},
	}
}

func (w *tsbsWorkload) Series(target int) []labels.Labels {
	if p := w.series[target].Load(); p != nil {
		return *p
	}
	r := w.c.rng(target, streamInit)
	h := tsbsTags(&r, target)
	ls := make([]labels.Labels, len(tsbsFields))
	for i := range tsbsFields {
		ls[tsbsOrder[i]] = tsbsLabels(i, h)
	}
	if w.series[target].CompareAndSwap(nil, &ls) {
		return ls
	}
	return *w.series[target].Load()
}

func (w *tsbsWorkload) Scraper(target int) Scraper {
	s := &tsbsScraper{c: w.c, target: target, r: w.c.rng(target, streamValues)}
	ir := w.c.rng(target, streamInit)
	tsbsTags(&ir, target)
	for i := range s.state {
		s.state[i] = 100 * ir.float()
	}
	return s
}

// tsbsScraper is TSBS's ClampedRandomWalkDistribution per field: a
// normal(0, 1) step per row, clamped to [0, 100], written truncated to an
// integer (TSBS's ToPointAllInt64).
type tsbsScraper struct {
	c      *clock
	target int
	k      int64
	r      rng
	state  [10]float64
	spare  float64
	spared bool
}

func (s *tsbsScraper) Next(row *Row) bool {
	if s.k >= s.c.ticks {
		return false
	}
	s.c.stampRow(row, s.target, s.k, len(tsbsFields))
	for i := range s.state {
		row.Values[tsbsOrder[i]] = math.Trunc(s.state[i])
		s.state[i] = min(max(s.state[i]+s.norm(), 0), 100)
	}
	s.k++
	return true
}

// norm is Box–Muller, both values of a pair used.
func (s *tsbsScraper) norm() float64 {
	if s.spared {
		s.spared = false
		return s.spare
	}
	u := 1 - s.r.float()
	m := math.Sqrt(-2 * math.Log(u))
	sin, cos := math.Sincos(2 * math.Pi * s.r.float())
	s.spare, s.spared = m*sin, true
	return m * cos
}
