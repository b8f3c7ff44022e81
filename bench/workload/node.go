package workload

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/prometheus/model/labels"
)

// Random streams of one target; see clock.rng.
const (
	streamInit   = 1 // per-target parameters and initial values
	streamValues = 2 // per-row draws
	streamReset  = 3 // reboot times
)

// defaultResetEvery is the mean time between reboots of a node target.
const defaultResetEvery = 100 * time.Hour

// seriesTmpl is one series of a target, less job and instance.
type seriesTmpl struct {
	name   string
	labels []string // name, value pairs
}

// unit is a run of consecutive series (cells) that evolve together.
type unit struct {
	kind  kind
	first int // first cell
	n     int // cells
	m     *model
	scale float64 // the member's scale
	aux   float64 // kFS: reserved fraction of the size
	q     quantum // of m.q
}

// nodeWorkload is the "node" and "random" workloads: the same series and
// timestamps, realistic or uniform values.
type nodeWorkload struct {
	name       string
	c          *clock
	tmpl       []seriesTmpl // in generation (cell) order
	units      []unit
	resetEvery int64 // ms, mean; 0: never
	layouts    []atomic.Pointer[layout]
}

// layout is a target's series in slot order and where each cell goes.
type layout struct {
	series []labels.Labels
	slot   []int32 // cell → slot
}

func newNode(name string, c *clock, resetEvery time.Duration) *nodeWorkload {
	w := &nodeWorkload{name: name, c: c, resetEvery: resetEvery.Milliseconds()}
	w.layouts = make([]atomic.Pointer[layout], c.targets)
	fams := nodeFamilies()
	for fi := range fams {
		f := &fams[fi]
		ms := f.members
		if ms == nil {
			ms = []member{{}}
		}
		for _, mb := range ms {
			u := unit{kind: f.m.kind, first: len(w.tmpl), m: &f.m, scale: mb.scale, q: newQuantum(f.m.q)}
			if u.scale == 0 && f.m.kind != kFS {
				u.scale = 1
			}
			add := func(name string, extra ...string) {
				w.tmpl = append(w.tmpl, seriesTmpl{name: name, labels: append(slices.Clip(mb.labels), extra...)})
			}
			switch f.m.kind {
			case kCPU:
				for _, mode := range cpuModes {
					add(f.name, "mode", mode)
				}
			case kLoad:
				add("node_load1")
				add("node_load15")
				add("node_load5")
			case kFS:
				for _, s := range []string{"avail_bytes", "device_error", "files", "files_free", "free_bytes", "readonly", "size_bytes"} {
					add(f.name + "_" + s)
				}
				if slices.Contains(mb.labels, "ext4") {
					u.aux = 0.05
				}
			case kHist:
				for _, le := range f.m.les {
					add(f.name+"_bucket", "le", strconv.FormatFloat(le, 'f', -1, 64))
				}
				add(f.name+"_bucket", "le", "+Inf")
				add(f.name + "_sum")
				add(f.name + "_count")
			case kSummary:
				for _, q := range []string{"0", "0.25", "0.5", "0.75", "1"} {
					add(f.name, "quantile", q)
				}
				add(f.name + "_sum")
				add(f.name + "_count")
			default:
				add(f.name)
			}
			u.n = len(w.tmpl) - u.first
			w.units = append(w.units, u)
		}
	}
	return w
}

func (w *nodeWorkload) Name() string            { return w.name }
func (w *nodeWorkload) NumTargets() int         { return w.c.targets }
func (w *nodeWorkload) MinTime() int64          { return w.c.minT }
func (w *nodeWorkload) MaxTime() int64          { return w.c.maxT }
func (w *nodeWorkload) Interval() time.Duration { return w.c.spec.Interval }
func (w *nodeWorkload) Samples() int64 {
	return w.c.ticks * int64(len(w.tmpl)) * int64(w.c.targets)
}

func (w *nodeWorkload) Series(target int) []labels.Labels { return w.layout(target).series }

// layout builds target's series once; concurrent first calls may both
// build it, and one result wins.
func (w *nodeWorkload) layout(target int) *layout {
	if l := w.layouts[target].Load(); l != nil {
		return l
	}
	host := fmt.Sprintf("host-%03d", target)
	instance := host + ":9100"
	b := labels.NewScratchBuilder(12)
	ls := make([]labels.Labels, len(w.tmpl))
	for i, s := range w.tmpl {
		b.Reset()
		b.Add(labels.MetricName, s.name)
		b.Add("job", "node")
		b.Add("instance", instance)
		for j := 0; j < len(s.labels); j += 2 {
			v := s.labels[j+1]
			if strings.Contains(v, "{") {
				h := w.c.hash(target, -2-int64(i))
				v = strings.ReplaceAll(v, "{host}", host)
				v = strings.ReplaceAll(v, "{mac}", fmt.Sprintf("52:54:00:%02x:%02x:%02x", byte(h), byte(h>>8), byte(h>>16)))
			}
			b.Add(s.labels[j], v)
		}
		b.Sort()
		ls[i] = b.Labels()
	}
	order := make([]int32, len(ls))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int { return labels.Compare(ls[a], ls[b]) })
	l := &layout{series: make([]labels.Labels, len(ls)), slot: make([]int32, len(ls))}
	for pos, i := range order {
		l.series[pos] = ls[i]
		l.slot[i] = int32(pos)
	}
	if w.layouts[target].CompareAndSwap(nil, l) {
		return l
	}
	return w.layouts[target].Load()
}

func (w *nodeWorkload) Scraper(target int) Scraper {
	if w.name == "random" {
		return &randomScraper{c: w.c, target: target, n: len(w.tmpl), r: w.c.rng(target, streamValues)}
	}
	s := &nodeScraper{
		w:      w,
		target: target,
		slot:   w.layout(target).slot,
		cells:  make([]cell, len(w.tmpl)),
		r:      w.c.rng(target, streamValues),
		rr:     w.c.rng(target, streamReset),
	}
	s.init()
	return s
}

// randomScraper is Heracles' random dataset: node's series and
// timestamps, values uniform in [0, 1).
type randomScraper struct {
	c      *clock
	target int
	n      int
	k      int64
	r      rng
}

func (s *randomScraper) Next(row *Row) bool {
	if s.k >= s.c.ticks {
		return false
	}
	s.c.stampRow(row, s.target, s.k, s.n)
	for i := range row.Values {
		row.Values[i] = s.r.float()
	}
	s.k++
	return true
}

// cell is the state of one series. The meaning of a, p, lo and hi depends
// on the unit's kind.
type cell struct {
	v      float64 // current level or accumulator
	out    float64 // kCounter, kGauge: v quantized, as last written
	a      float64 // rate, step or median
	p      float64 // probability that the series changes in a row
	lo, hi float64
}

type nodeScraper struct {
	w         *nodeWorkload
	target    int
	slot      []int32
	cells     []cell
	r         rng // per-row draws
	rr        rng // reboot times
	k         int64
	prevT     int64
	boot      float64 // s, node_boot_time_seconds
	nextReset int64   // ms
	e1        float64 // load average decay per row: 1, 15, 5 minutes
	e15       float64
	e5        float64
}

// Target-level choices.
var memSizes = []float64{4 * giB, 8 * giB, 16 * giB, 32 * giB, 64 * giB, 128 * giB, 256 * giB}

func (s *nodeScraper) init() {
	c := s.w.c
	r := c.rng(s.target, streamInit)
	iv := float64(c.interval) / 1000
	startS := float64(c.start) / 1000
	s.boot = math.Floor(startS - r.logUniform(3600, 90*86400))
	uptime := startS - s.boot
	act := r.logUniform(0.3, 3) // the target's traffic, relative
	memTotal := quantRound(memSizes[r.intn(len(memSizes))]*(0.96+0.03*r.float()), page)
	busy := r.logUniform(0.02, 0.5) // fraction of cpu time not idle
	vm := r.float() < 0.7           // steal, no irq
	niced := r.float() < 0.3
	s.e1, s.e15, s.e5 = math.Exp(-iv/60), math.Exp(-iv/900), math.Exp(-iv/300)
	s.nextReset = math.MaxInt64
	if s.w.resetEvery > 0 {
		s.nextReset = c.start + s.w.nextGap(&s.rr)
	}
	series := float64(len(s.cells))
	for _, u := range s.w.units {
		m := u.m
		cs := s.cells[u.first : u.first+u.n]
		lo, hi := m.lo, m.hi
		if m.rel == relMem {
			lo, hi = lo*memTotal, hi*memTotal
		}
		dead := m.dead > 0 && r.float() < m.dead
		p := 1.0
		if m.ev > 0 {
			p = -math.Expm1(-m.ev * iv)
		}
		switch m.kind {
		case kConst:
			v := quantRound(lo+(hi-lo)*r.float(), m.q)
			if dead {
				v = 0
			}
			cs[0].v = v
		case kCounter:
			rate := r.logUniform(lo, hi) * u.scale * act
			if dead {
				rate = 0
			}
			cs[0] = cell{v: rate * uptime * (0.8 + 0.4*r.float()), a: rate, p: p}
		case kGauge:
			// Steps are calibrated for 1 s scrapes; a walk's spread grows
			// with the square root of time.
			cs[0] = cell{v: lo + (hi-lo)*r.float(), a: (hi - lo) * m.step * math.Sqrt(max(iv, 1)), p: p, lo: lo, hi: hi}
			if dead {
				cs[0] = cell{}
			}
		case kLevel:
			cs[0] = cell{v: lo + float64(r.intn(int(hi-lo)+1)), p: p, lo: lo, hi: hi}
		case kNoise:
			cs[0].a = r.logUniform(lo, hi)
		case kStamp:
			cs[0] = cell{v: startS - iv*r.float(), p: p}
		case kStart:
			cs[0].v = math.Round((s.boot+2+6*r.float())*100) / 100
		case kScraped, kFirst:
			cs[0].v = series - 5
		case kPerScrape:
			cs[0].v = math.Floor(uptime / iv)
		case kCPU:
			b := min(0.95, busy*(0.5+r.float()))
			var sh [8]float64             // in cpuModes order
			sh[1] = 0.01 + 0.05*r.float() // iowait
			if !vm {
				sh[2] = 0.005 + 0.01*r.float() // irq
			}
			if niced {
				sh[3] = 0.02 * r.float() // nice
			}
			sh[4] = 0.01 + 0.04*r.float() // softirq
			if vm {
				sh[5] = 0.01 + 0.05*r.float() // steal
			}
			sh[6] = 0.15 + 0.2*r.float() // system
			sh[7] = 1 - (sh[1] + sh[2] + sh[3] + sh[4] + sh[5] + sh[6])
			cs[0].a = b
			var used float64
			for i := 1; i < 8; i++ {
				cs[i].a = sh[i]
				cs[i].v = uptime * b * sh[i] * (0.9 + 0.2*r.float())
				used += cs[i].v
			}
			cs[0].v = max(0, uptime-used)
		case kLoad:
			a := busy * nodeCPUs * (0.3 + 1.4*r.float())
			cs[0].a = a
			for i := range cs {
				cs[i].v = a
			}
		case kFS:
			size := quantRound(r.logUniform(lo, hi), page)
			free := quantRound(size*(0.1+0.8*r.float()), page)
			files := math.Floor(size / 16384)
			fp := 0.0
			if u.scale > 0 {
				fp = -math.Expm1(-2 * u.scale * iv)
			}
			cs[0].a = quantRound(size*u.aux, page)
			cs[2].v = files
			cs[3] = cell{v: math.Floor(files * (0.5 + 0.49*r.float())), p: fp, lo: 0, hi: files}
			cs[4] = cell{v: free, a: size * 5e-7 * u.scale * act * math.Sqrt(max(iv, 1)), p: fp, lo: size * 0.02, hi: size * 0.98}
			cs[6].v = size
		case kHist:
			nb := len(m.les) + 1
			med := r.logUniform(lo, hi)
			cs[nb+1].a = med
			count := math.Floor(uptime / iv)
			// Fill the buckets with the shape of the distribution.
			const draws = 256
			var sum float64
			for range draws {
				d := med * skew(r.float())
				sum += d
				for i, le := range m.les {
					if d <= le {
						cs[i].v++
					}
				}
			}
			for i := range m.les {
				cs[i].v = math.Floor(cs[i].v / draws * count)
			}
			cs[nb-1].v = count
			cs[nb].v = sum / draws * count
			cs[nb+1].v = count
		case kSummary:
			med := r.logUniform(lo, hi)
			count := math.Floor(uptime * m.ev * (0.8 + 0.4*r.float()))
			cs[6] = cell{v: count, a: med}
			cs[5].v = quantRound(count*med*1.2, nano)
			s.quantiles(cs[:5], med, &r)
		}
	}
}

// nextGap draws the time to the next reboot, at least one minute.
func (w *nodeWorkload) nextGap(r *rng) int64 {
	return max(60_000, int64(-math.Log(1-r.float())*float64(w.resetEvery)))
}

// skew maps a uniform u to a right-skewed positive factor with median ~1.
func skew(u float64) float64 {
	u2 := u * u
	return 0.5 + u + 2*u2*u2
}

// quantiles sets summary quantiles 0, .25, .5, .75, 1 from 8 draws.
func (s *nodeScraper) quantiles(cs []cell, med float64, r *rng) {
	var d [8]float64
	for i := range d {
		d[i] = med * skew(r.float())
	}
	slices.Sort(d[:])
	cs[0].v, cs[1].v, cs[2].v, cs[3].v, cs[4].v = d[0], d[2], d[4], d[6], d[7]*(1+3*r.float()*r.float())
}

func (s *nodeScraper) reboot(at, now int64) {
	r := &s.r
	s.boot = math.Floor(float64(at) / 1000)
	since := float64(now-at) / 1000
	for _, u := range s.w.units {
		cs := s.cells[u.first : u.first+u.n]
		switch u.kind {
		case kCounter:
			cs[0].v = cs[0].a * since * r.float()
		case kPerScrape:
			cs[0].v = 0
		case kStart:
			cs[0].v = math.Round((float64(at)/1000+min(since/2, 2+6*r.float()))*100) / 100
		case kStamp:
			cs[0].v = 0
		case kCPU:
			var used float64
			for i := 1; i < 8; i++ {
				cs[i].v = since * cs[0].a * cs[i].a * r.float()
				used += cs[i].v
			}
			cs[0].v = max(0, since-used)
		case kHist, kSummary:
			for i := range cs {
				cs[i].v = 0
			}
		}
	}
}

func (s *nodeScraper) Next(row *Row) bool {
	c := s.w.c
	if s.k >= c.ticks {
		return false
	}
	c.stampRow(row, s.target, s.k, len(s.cells))
	t := row.T
	dt := float64(c.interval) / 1000
	if s.k > 0 {
		dt = float64(t-s.prevT) / 1000
	}
	if s.nextReset <= t {
		at := s.nextReset
		for s.nextReset <= t {
			at = s.nextReset
			s.nextReset += s.w.nextGap(&s.rr)
		}
		s.reboot(at, t)
		dt = 0 // reboot set the counters for the time since
	}
	vals, slot, r := row.Values, s.slot, &s.r
	for ui := range s.w.units {
		u := &s.w.units[ui]
		cs := s.cells[u.first : u.first+u.n]
		sl := slot[u.first : u.first+u.n]
		q := u.q
		switch u.kind {
		case kConst, kStart, kScraped:
			vals[sl[0]] = cs[0].v
		case kCounter:
			cl := &cs[0]
			if cl.a > 0 && (cl.p >= 1 || r.float() < cl.p) {
				cl.v += cl.a * dt / cl.p * (0.5 + r.float())
				cl.out = q.floor(cl.v)
			} else if s.k == 0 || dt == 0 {
				cl.out = q.floor(cl.v)
			}
			vals[sl[0]] = cl.out
		case kGauge:
			cl := &cs[0]
			if cl.p >= 1 || (cl.p > 0 && r.float() < cl.p) {
				cl.v = reflect(cl.v+cl.a*r.tri(), cl.lo, cl.hi)
				cl.out = q.round(cl.v)
			} else if s.k == 0 {
				cl.out = q.round(cl.v)
			}
			vals[sl[0]] = cl.out
		case kLevel:
			cl := &cs[0]
			if r.float() < cl.p {
				cl.v = reflect(cl.v+float64(int(r.Uint64()&2)-1), cl.lo, cl.hi)
			}
			vals[sl[0]] = cl.v
		case kNoise:
			vals[sl[0]] = q.round(cs[0].a * skew(r.float()))
		case kClock:
			vals[sl[0]] = float64(t)/1000 + 0.0005 + 0.003*r.float()
		case kStamp:
			cl := &cs[0]
			if r.float() < cl.p {
				cl.v = max(cl.v, float64(t)/1000-dt*r.float())
			}
			vals[sl[0]] = cl.v
		case kBoot:
			vals[sl[0]] = s.boot
		case kFirst:
			if s.k == 0 {
				vals[sl[0]] = cs[0].v
			} else {
				vals[sl[0]] = 0
			}
		case kPerScrape:
			cs[0].v++
			vals[sl[0]] = cs[0].v
		case kCPU:
			s.stepCPU(cs, dt)
			for i := range cs {
				vals[sl[i]] = q.floor(cs[i].v)
			}
		case kLoad:
			a := cs[0].a * (0.2 + 1.6*r.float())
			if r.float() < 0.01 {
				a += cs[0].a * 5 // a burst of work
			}
			cs[0].v = cs[0].v*s.e1 + a*(1-s.e1)
			cs[1].v = cs[1].v*s.e15 + a*(1-s.e15)
			cs[2].v = cs[2].v*s.e5 + a*(1-s.e5)
			for i := range cs {
				vals[sl[i]] = q.round(cs[i].v)
			}
		case kFS:
			free, ff := &cs[4], &cs[3]
			if free.p > 0 && r.float() < free.p {
				// Filesystems fill slowly and are cleaned up now and then.
				free.v = reflect(free.v+free.a*(r.tri()-0.05), free.lo, free.hi)
				ff.v = reflect(ff.v+float64(r.intn(5)-2), ff.lo, ff.hi)
			}
			fb := quantRound(free.v, page)
			vals[sl[0]] = max(0, fb-cs[0].a)
			vals[sl[1]] = 0
			vals[sl[2]] = cs[2].v
			vals[sl[3]] = ff.v
			vals[sl[4]] = fb
			vals[sl[5]] = 0
			vals[sl[6]] = cs[6].v
		case kHist:
			// One observation per row: the scrape's own request.
			nb := len(u.m.les) + 1
			d := cs[nb+1].a * skew(r.float())
			for i, le := range u.m.les {
				if d <= le {
					cs[i].v++
				}
			}
			cs[nb-1].v++
			cs[nb].v += d
			cs[nb+1].v++
			for i := range cs {
				vals[sl[i]] = cs[i].v
			}
		case kSummary:
			if gcs := math.Floor(u.m.ev*dt + r.float()); gcs > 0 {
				med := cs[6].a
				cs[6].v += gcs
				cs[5].v = quantRound(cs[5].v+gcs*med*skew(r.float()), nano)
				s.quantiles(cs[:5], med, r)
			}
			for i := range cs {
				vals[sl[i]] = quantRound(cs[i].v, nano)
			}
		}
	}
	s.prevT = t
	s.k++
	return true
}

// stepCPU advances one cpu's modes (cpuModes order) by dt seconds in total.
func (s *nodeScraper) stepCPU(cs []cell, dt float64) {
	r := &s.r
	busy := min(0.98, cs[0].a*(0.5+r.float()))
	var inc [8]float64
	var used float64
	for i := 1; i < 8; i++ {
		if sh := cs[i].a; sh > 0 {
			inc[i] = dt * busy * sh * (0.5 + r.float())
			used += inc[i]
		}
	}
	if used > dt {
		for i := range inc {
			inc[i] *= dt / used
		}
		used = dt
	}
	inc[0] = dt - used
	for i := range inc {
		cs[i].v += inc[i]
	}
}

// reflect folds v back into [lo, hi].
func reflect(v, lo, hi float64) float64 {
	if v < lo {
		v = 2*lo - v
	}
	if v > hi {
		v = 2*hi - v
	}
	return min(max(v, lo), hi)
}

// quantum is how an exporter prints a value: q < 1 is a decimal fraction
// (ticks/100 for q = 0.01: k = 100), q ≥ 1 a multiple, 0 full precision.
type quantum struct {
	k float64 // > 0: values are multiples of 1/k, computed as n/k like /proc readers do
	q float64 // > 0: values are multiples of q
}

func newQuantum(q float64) quantum {
	switch {
	case q == 0:
		return quantum{}
	case q < 1:
		return quantum{k: math.Round(1 / q)}
	default:
		return quantum{q: q}
	}
}

// floor truncates v to the quantum, as counters are.
func (z quantum) floor(v float64) float64 {
	switch {
	case z.k > 0:
		return math.Floor(v*z.k) / z.k
	case z.q > 0:
		return math.Floor(v/z.q) * z.q
	}
	return v
}

// round rounds v to the quantum, as gauges are.
func (z quantum) round(v float64) float64 {
	switch {
	case z.k > 0:
		return math.Round(v*z.k) / z.k
	case z.q > 0:
		return math.Round(v/z.q) * z.q
	}
	return v
}

// quantRound rounds v to the quantum q.
func quantRound(v, q float64) float64 { return newQuantum(q).round(v) }
