package cachebench

import (
	"math"
	"math/rand/v2"
	"time"
)

// ZipfianConstant is YCSB's default skew (theta).
const ZipfianConstant = 0.99

// Zipfian draws integers in [0, n) with P(i) ∝ 1/(i+1)^θ: YCSB's
// ZipfianGenerator (Gray et al., "Quickly generating billion-record
// synthetic databases", SIGMOD 1994), 0 the most likely.
type Zipfian struct {
	n                  uint64
	theta, alpha, eta  float64
	zetaN, halfPowTeta float64
}

// NewZipfian returns a generator over [0, n), n ≥ 1. It takes O(n) to
// compute ζ(n, θ).
func NewZipfian(n uint64, theta float64) *Zipfian {
	z := &Zipfian{n: n, theta: theta, alpha: 1 / (1 - theta), halfPowTeta: 1 + math.Pow(0.5, theta)}
	z.zetaN = zeta(n, theta)
	zeta2 := zeta(2, theta)
	z.eta = (1 - math.Pow(2/float64(n), 1-theta)) / (1 - zeta2/z.zetaN)
	return z
}

func zeta(n uint64, theta float64) float64 {
	var s float64
	for i := uint64(1); i <= n; i++ {
		s += 1 / math.Pow(float64(i), theta)
	}
	return s
}

// Next draws one value with r.
func (z *Zipfian) Next(r *rand.Rand) uint64 {
	if z.n == 1 {
		return 0
	}
	u := r.Float64()
	uz := u * z.zetaN
	if uz < 1 {
		return 0
	}
	if uz < z.halfPowTeta {
		return 1
	}
	v := uint64(float64(z.n) * math.Pow(z.eta*u-z.eta+1, z.alpha))
	return min(v, z.n-1)
}

// Latest draws integers in [0, n) where n-1 (the newest) is the most
// likely: YCSB's SkewedLatestGenerator, n-1 minus a Zipfian draw.
type Latest struct{ z *Zipfian }

// NewLatest returns a generator over [0, n), n ≥ 1.
func NewLatest(n uint64, theta float64) *Latest { return &Latest{NewZipfian(n, theta)} }

// Next draws one value with r.
func (l *Latest) Next(r *rand.Rand) uint64 { return l.z.n - 1 - l.z.Next(r) }

// LenRange bounds a query's time range length (both inclusive).
type LenRange struct{ Min, Max time.Duration }

// Workload is a YCSB-TS-like query mix: each query's length is drawn
// Zipfian between the bounds of one of Ranges (chosen uniformly).
type Workload struct {
	Name   string
	Ranges []LenRange
}

// MaxLen is the longest range a query of w can ask.
func (w Workload) MaxLen() time.Duration {
	var m time.Duration
	for _, r := range w.Ranges {
		m = max(m, r.Max)
	}
	return m
}

const (
	day  = 24 * time.Hour
	week = 7 * day
)

// Workloads are the five query mixes: the paper's Full (1 minute to 1
// week) and its Small, Medium and Large (§5.2), and Mixed, a third of
// the queries from each of Small, Medium and Large (a dashboard's mix of
// panels).
var Workloads = []Workload{
	{Name: "full", Ranges: []LenRange{{time.Minute, week}}},
	{Name: "small", Ranges: []LenRange{{time.Minute, time.Hour}}},
	{Name: "medium", Ranges: []LenRange{{time.Hour, day}}},
	{Name: "large", Ranges: []LenRange{{day, week}}},
	{Name: "mixed", Ranges: []LenRange{{time.Minute, time.Hour}, {time.Hour, day}, {day, week}}},
}

func workloadNamed(name string) (Workload, bool) {
	for _, w := range Workloads {
		if w.Name == name {
			return w, true
		}
	}
	return Workload{}, false
}

// Query is one request: a key (an index into the dataset's Keys) and a
// time range [Start, End] in seconds, both inclusive.
type Query struct {
	Key        int
	Start, End int64
}

// Generate draws n queries of w over d with a fixed seed: the key Zipfian
// over d's keys (in an order shuffled by the seed, so that the hottest
// key is not always the first sensor's first field), the end time Latest
// over the data's steps, the length Zipfian between the bounds of one of
// w's ranges (in steps), the start clipped to the data's first point.
// The same arguments give the same queries.
func Generate(d Dataset, w Workload, n int, seed uint64) []Query {
	r := rand.New(rand.NewPCG(seed, uint64(len(w.Name))<<32|uint64(n)))
	keys := d.Keys()
	perm := r.Perm(len(keys))
	keyGen := NewZipfian(uint64(len(keys)), ZipfianConstant)
	steps := d.Steps()
	endGen := NewLatest(uint64(steps), ZipfianConstant)
	step := int64(d.Interval / time.Second)
	lenGens := make([]*Zipfian, len(w.Ranges))
	for i, lr := range w.Ranges {
		lenGens[i] = NewZipfian(uint64((lr.Max-lr.Min)/d.Interval)+1, ZipfianConstant)
	}
	qs := make([]Query, n)
	for i := range qs {
		k := perm[keyGen.Next(r)]
		end := d.Start + int64(endGen.Next(r))*step
		c := 0
		if len(w.Ranges) > 1 {
			c = r.IntN(len(w.Ranges))
		}
		length := int64(w.Ranges[c].Min/time.Second) + int64(lenGens[c].Next(r))*step
		start := max(end-length+step, d.Start) // length covers whole steps: [end-length+step, end]
		qs[i] = Query{Key: k, Start: start, End: end}
	}
	return qs
}
