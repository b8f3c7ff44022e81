package workload

import (
	"fmt"
	"math"
	"math/bits"
	"time"

	"github.com/prometheus/prometheus/model/labels"
)

// Spec sizes a generated workload.
type Spec struct {
	Targets  int           // scrape targets (node/random) or hosts (tsbs)
	Interval time.Duration // between scrapes of one target (node: 5/15/30 s typical; tsbs 10 s); 0 → 15 s (tsbs: 10 s)
	Duration time.Duration // span covered
	Start    int64         // ms of the first tick (0 → DefaultStart)
	Jitter   time.Duration // each scrape's timestamp is tick + phase(target) + uniform[0,Jitter); 0 → 100ms (Interval/2 if that is not less than Interval), negative → none; must be less than Interval
	Seed     int64
}

// Workload is a deterministic dataset: every call of Scraper(i) yields the same rows.
type Workload interface {
	Name() string                      // "node", "random", "tsbs", or "file:<base name>"
	NumTargets() int                   // targets, numbered 0..NumTargets()-1
	Series(target int) []labels.Labels // the target's series, in slot order; fixed for the run; the slice must not be modified by callers
	Scraper(target int) Scraper        // a fresh generator of the target's rows, in time order, independent of other targets, safe to use concurrently with other Scrapers
	MinTime() int64                    // least timestamp of any row
	MaxTime() int64                    // greatest timestamp of any row
	Samples() int64                    // total samples over all targets (present values), exact
	Interval() time.Duration           // nominal scrape interval
}

// Row is one scrape of one target: every present value shares T.
type Row struct {
	T       int64
	Values  []float64 // indexed like Series(target)
	Present []bool    // nil: every value present; else false marks a series absent from this scrape
}

// Scraper yields one target's rows in strictly increasing T.
type Scraper interface {
	// Next fills row (reusing its slices) with the next scrape and reports false at the end.
	Next(row *Row) bool
}

// DefaultStart is the first tick when Spec.Start is 0: 1_700_000_000_000 ms
// aligned down to a 2 h block boundary.
const DefaultStart = 1_700_000_000_000 - 1_700_000_000_000%(2*3600*1000)

const (
	defaultInterval     = 15 * time.Second
	defaultTSBSInterval = 10 * time.Second
	defaultJitter       = 100 * time.Millisecond
)

// New returns the generated workload kind ("node", "random" or "tsbs") sized
// by spec. Zero fields of spec take their documented defaults; an error
// names the bad kind or Spec field.
func New(kind string, spec Spec) (Workload, error) {
	switch kind {
	case "node", "random":
		c, err := newClock(spec, defaultInterval, true)
		if err != nil {
			return nil, fmt.Errorf("workload %s: %w", kind, err)
		}
		return newNode(kind, c, defaultResetEvery), nil
	case "tsbs":
		c, err := newClock(spec, defaultTSBSInterval, false)
		if err != nil {
			return nil, fmt.Errorf("workload %s: %w", kind, err)
		}
		return newTSBS(c), nil
	default:
		return nil, fmt.Errorf("workload: unknown kind %q (want node, random or tsbs)", kind)
	}
}

// clock is a validated Spec in milliseconds: the timestamps of every
// generated row. Target i's k-th row is at
//
//	start + k*interval + phase(i) + jitter(i, k)
//
// with phase in [0, interval-jitter) and jitter in [0, jitter), so the row
// of tick k lies in [start+k*interval, start+(k+1)*interval): rows of one
// target are strictly increasing and every row lies in
// [start, start+ticks*interval). phase and jitter are hashes of (seed,
// target, k), so any row's time is known without generating the rows
// before it.
type clock struct {
	spec     Spec // as given, defaults applied
	targets  int
	start    int64 // ms
	interval int64 // ms
	jitter   int64 // ms, ≥ 0
	ticks    int64 // rows per target
	phased   bool  // targets get a phase; else all share the ticks
	seed     uint64
	minT     int64
	maxT     int64
}

func newClock(spec Spec, defInterval time.Duration, phased bool) (*clock, error) {
	if spec.Targets <= 0 {
		return nil, fmt.Errorf("Spec.Targets = %d, must be positive", spec.Targets)
	}
	if spec.Interval == 0 {
		spec.Interval = defInterval
	}
	if spec.Interval < time.Millisecond || spec.Interval%time.Millisecond != 0 {
		return nil, fmt.Errorf("Spec.Interval = %v, must be a positive whole number of milliseconds", spec.Interval)
	}
	if spec.Duration < spec.Interval {
		return nil, fmt.Errorf("Spec.Duration = %v, must be at least Spec.Interval (%v)", spec.Duration, spec.Interval)
	}
	if spec.Start == 0 {
		spec.Start = DefaultStart
	}
	switch {
	case spec.Jitter == 0:
		spec.Jitter = defaultJitter
		if spec.Jitter >= spec.Interval {
			spec.Jitter = spec.Interval / 2
		}
	case spec.Jitter < 0:
		spec.Jitter = -1
	case spec.Jitter >= spec.Interval:
		return nil, fmt.Errorf("Spec.Jitter = %v, must be less than Spec.Interval (%v)", spec.Jitter, spec.Interval)
	}
	c := &clock{
		spec:     spec,
		targets:  spec.Targets,
		start:    spec.Start,
		interval: spec.Interval.Milliseconds(),
		jitter:   max(0, spec.Jitter.Milliseconds()),
		ticks:    int64(spec.Duration / spec.Interval),
		phased:   phased,
		seed:     mix64(uint64(spec.Seed) ^ 0x6a09e667f3bcc909),
	}
	if c.ticks > (math.MaxInt64-max(c.start, 0))/c.interval-1 {
		return nil, fmt.Errorf("Spec.Duration = %v overflows int64 milliseconds from Start %d", spec.Duration, spec.Start)
	}
	c.minT, c.maxT = math.MaxInt64, math.MinInt64
	for i := range c.targets {
		c.minT = min(c.minT, c.at(i, 0))
		c.maxT = max(c.maxT, c.at(i, c.ticks-1))
	}
	return c, nil
}

// at returns the timestamp of target's k-th row.
func (c *clock) at(target int, k int64) int64 {
	t := c.start + k*c.interval
	if c.phased {
		t += int64(c.hash(target, -1) % uint64(c.interval-c.jitter))
	}
	if c.jitter > 0 {
		t += int64(c.hash(target, k) % uint64(c.jitter))
	}
	return t
}

func (c *clock) hash(target int, k int64) uint64 {
	return mix64(c.seed + uint64(target)*0x9e3779b97f4a7c15 + uint64(k)*0xbf58476d1ce4e5b9)
}

// rng returns target's random stream number stream: streams of one
// (seed, target) are independent of each other and of other targets.
func (c *clock) rng(target int, stream uint64) rng {
	return rng{s: mix64(c.seed ^ mix64(uint64(target)+stream<<40+0x3c6ef372fe94f82b))}
}

// stampRow sets row.T and sizes row.Values for the k-th row of target.
func (c *clock) stampRow(row *Row, target int, k int64, n int) {
	row.T = c.at(target, k)
	if cap(row.Values) < n {
		row.Values = make([]float64, n)
	}
	row.Values = row.Values[:n]
	row.Present = nil
}

// mix64 is the splitmix64 finalizer: a bijective, well-mixing hash.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// rng is wyrand: a fast 64-bit generator, good enough for synthetic data
// and fully specified here, so streams never change with the Go release.
type rng struct{ s uint64 }

// Uint64 makes rng a math/rand/v2 Source.
func (r *rng) Uint64() uint64 {
	r.s += 0xa0761d6478bd642f
	hi, lo := bits.Mul64(r.s, r.s^0xe7037ed1a0b428db)
	return hi ^ lo
}

// float returns a uniform value in [0, 1).
func (r *rng) float() float64 { return float64(r.Uint64()>>11) * 0x1p-53 }

// intn returns a uniform value in [0, n) for 0 < n < 2³².
func (r *rng) intn(n int) int { return int((r.Uint64() >> 32) * uint64(n) >> 32) }

// tri returns a triangular value in (-1, 1) with mean 0 and stddev ≈ 0.41.
func (r *rng) tri() float64 {
	x := r.Uint64()
	return (float64(x>>32) - float64(x&0xffffffff)) * 0x1p-32
}

// logUniform returns a value in [lo, hi) whose logarithm is uniform.
func (r *rng) logUniform(lo, hi float64) float64 {
	if lo <= 0 || hi <= lo {
		return lo + (hi-lo)*r.float()
	}
	return lo * math.Pow(hi/lo, r.float())
}
