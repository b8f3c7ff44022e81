package workload

import (
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	promodel "github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
)

// collect returns all rows of target, copied.
func collect(t testing.TB, w Workload, target int) []Row {
	t.Helper()
	var rows []Row
	var r Row
	s := w.Scraper(target)
	for s.Next(&r) {
		if len(r.Values) != len(w.Series(target)) {
			t.Fatalf("%s target %d row %d: %d values for %d series", w.Name(), target, len(rows), len(r.Values), len(w.Series(target)))
		}
		rows = append(rows, Row{T: r.T, Values: slices.Clone(r.Values), Present: slices.Clone(r.Present)})
	}
	return rows
}

// column returns series j's values over rows.
func column(rows []Row, j int) []float64 {
	c := make([]float64, len(rows))
	for i, r := range rows {
		c[i] = r.Values[j]
	}
	return c
}

// seriesIndex returns the slot of the series with metric name and the
// given extra label pairs, or fails.
func seriesIndex(t testing.TB, ls []labels.Labels, name string, pairs ...string) int {
	t.Helper()
next:
	for i, l := range ls {
		if l.Get(labels.MetricName) != name {
			continue
		}
		for j := 0; j < len(pairs); j += 2 {
			if l.Get(pairs[j]) != pairs[j+1] {
				continue next
			}
		}
		return i
	}
	t.Fatalf("no series %s%v", name, pairs)
	return -1
}

func mustNew(t testing.TB, kind string, spec Spec) Workload {
	t.Helper()
	w, err := New(kind, spec)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func TestNewErrors(t *testing.T) {
	ok := Spec{Targets: 1, Interval: 15 * time.Second, Duration: time.Hour}
	for _, tc := range []struct {
		kind string
		edit func(*Spec)
		want string
	}{
		{"nodes", func(*Spec) {}, `unknown kind "nodes"`},
		{"node", func(s *Spec) { s.Targets = 0 }, "Spec.Targets"},
		{"tsbs", func(s *Spec) { s.Targets = -3 }, "Spec.Targets"},
		{"node", func(s *Spec) { s.Interval = -time.Second }, "Spec.Interval"},
		{"node", func(s *Spec) { s.Interval = 1500 * time.Microsecond }, "Spec.Interval"},
		{"random", func(s *Spec) { s.Duration = 0 }, "Spec.Duration"},
		{"node", func(s *Spec) { s.Duration = 10 * time.Second }, "Spec.Duration"},
		{"node", func(s *Spec) { s.Jitter = 15 * time.Second }, "Spec.Jitter"},
		{"tsbs", func(s *Spec) { s.Start = math.MaxInt64 - 1000 }, "overflows"},
	} {
		spec := ok
		tc.edit(&spec)
		_, err := New(tc.kind, spec)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%q, %+v) = %v, want an error naming %q", tc.kind, spec, err, tc.want)
		}
	}
}

// specs are small workloads of every kind, with and without jitter.
var specs = []struct {
	kind string
	spec Spec
}{
	{"node", Spec{Targets: 3, Interval: 15 * time.Second, Duration: 30 * time.Minute, Seed: 1}},
	{"node", Spec{Targets: 2, Interval: time.Second, Duration: 3 * time.Minute, Jitter: 900 * time.Millisecond, Seed: 2}},
	{"node", Spec{Targets: 2, Interval: 30 * time.Second, Duration: 30 * time.Minute, Jitter: -1, Start: 1000, Seed: 3}},
	{"random", Spec{Targets: 2, Interval: 5 * time.Second, Duration: 10 * time.Minute, Seed: 4}},
	{"tsbs", Spec{Targets: 4, Duration: 20 * time.Minute, Seed: 5}},
	{"tsbs", Spec{Targets: 2, Interval: 10 * time.Millisecond, Duration: time.Second, Jitter: -1, Seed: 6}},
}

func TestDeterminism(t *testing.T) {
	for _, tc := range specs {
		w1, w2 := mustNew(t, tc.kind, tc.spec), mustNew(t, tc.kind, tc.spec)
		other := tc.spec
		other.Seed++
		w3 := mustNew(t, tc.kind, other)
		for i := range w1.NumTargets() {
			// A second Scraper from the same workload, one from an equal
			// workload, and one made after other targets' rows were read.
			a, b := collect(t, w1, i), collect(t, w2, i)
			_ = collect(t, w1, (i+1)%w1.NumTargets())
			c := collect(t, w1, i)
			for _, r := range [][]Row{b, c} {
				if !rowsEqual(a, r) {
					t.Fatalf("%s %+v target %d: two Scrapers differ", tc.kind, tc.spec, i)
				}
			}
			if !slices.EqualFunc(w1.Series(i), w2.Series(i), labels.Equal) {
				t.Fatalf("%s target %d: Series differ between equal workloads", tc.kind, i)
			}
			if rowsEqual(a, collect(t, w3, i)) {
				t.Fatalf("%s target %d: seeds %d and %d give the same rows", tc.kind, i, tc.spec.Seed, other.Seed)
			}
		}
	}
}

func rowsEqual(a, b []Row) bool {
	return slices.EqualFunc(a, b, func(x, y Row) bool {
		return x.T == y.T && slices.Equal(x.Present, y.Present) &&
			slices.EqualFunc(x.Values, y.Values, func(u, v float64) bool { return math.Float64bits(u) == math.Float64bits(v) })
	})
}

// TestRowsAndTimes checks invariants 2–6 on every kind.
func TestRowsAndTimes(t *testing.T) {
	for _, tc := range specs {
		w := mustNew(t, tc.kind, tc.spec)
		spec := tc.spec
		start := spec.Start
		if start == 0 {
			start = DefaultStart
		}
		iv := w.Interval().Milliseconds()
		jitter := spec.Jitter.Milliseconds()
		if spec.Jitter == 0 {
			jitter = defaultJitter.Milliseconds()
		}
		var samples int64
		minT, maxT := int64(math.MaxInt64), int64(math.MinInt64)
		for i := range w.NumTargets() {
			ls := w.Series(i)
			checkSeries(t, w.Name(), i, ls)
			if &w.Series(i)[0] != &ls[0] {
				t.Errorf("%s target %d: Series returns a new slice on every call", w.Name(), i)
			}
			rows := collect(t, w, i)
			if want := int(spec.Duration / w.Interval()); len(rows) != want {
				t.Errorf("%s target %d: %d rows, want %d", w.Name(), i, len(rows), want)
			}
			lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
			for k, r := range rows {
				if r.Present != nil {
					t.Fatalf("%s target %d row %d: generated row with Present", w.Name(), i, k)
				}
				off := r.T - (start + int64(k)*iv)
				if off < 0 || off >= iv {
					t.Fatalf("%s target %d row %d: T %d is %d ms past its tick", w.Name(), i, k, r.T, off)
				}
				lo, hi = min(lo, off), max(hi, off)
				if k > 0 && r.T <= rows[k-1].T {
					t.Fatalf("%s target %d row %d: T %d after %d", w.Name(), i, k, r.T, rows[k-1].T)
				}
				minT, maxT = min(minT, r.T), max(maxT, r.T)
				samples += int64(len(r.Values))
			}
			switch {
			case jitter <= 0 && hi != lo:
				t.Errorf("%s target %d: offsets from ticks vary by %d ms without jitter", w.Name(), i, hi-lo)
			case jitter > 0 && hi-lo >= jitter:
				t.Errorf("%s target %d: offsets from ticks vary by %d ms, jitter %d ms", w.Name(), i, hi-lo, jitter)
			case jitter > 1 && hi == lo:
				t.Errorf("%s target %d: no jitter", w.Name(), i)
			case tc.kind == "tsbs" && lo >= max(jitter, 1):
				t.Errorf("%s target %d: tsbs rows %d ms after the tick", w.Name(), i, lo)
			}
		}
		if samples != w.Samples() {
			t.Errorf("%s: Samples() = %d, rows hold %d", w.Name(), w.Samples(), samples)
		}
		if minT != w.MinTime() || maxT != w.MaxTime() {
			t.Errorf("%s: MinTime, MaxTime = %d, %d; rows span %d, %d", w.Name(), w.MinTime(), w.MaxTime(), minT, maxT)
		}
	}
}

// checkSeries checks invariant 5.
func checkSeries(t testing.TB, name string, target int, ls []labels.Labels) {
	t.Helper()
	for j, l := range ls {
		if !l.IsValid(promodel.UTF8Validation) || !l.IsValid(promodel.LegacyValidation) {
			t.Errorf("%s target %d: invalid series %s", name, target, l)
		}
		if n, dup := l.HasDuplicateLabelNames(); dup {
			t.Errorf("%s target %d: series %s repeats label %s", name, target, l, n)
		}
		if j > 0 && labels.Compare(ls[j-1], l) >= 0 {
			t.Errorf("%s target %d: series %d %s not after %s", name, target, j, l, ls[j-1])
		}
	}
}

func TestConcurrentScrapers(t *testing.T) {
	w := mustNew(t, "node", Spec{Targets: 8, Interval: 30 * time.Second, Duration: 10 * time.Minute, Seed: 7})
	want := make([][]Row, w.NumTargets())
	for i := range want {
		want[i] = collect(t, mustNew(t, "node", Spec{Targets: 8, Interval: 30 * time.Second, Duration: 10 * time.Minute, Seed: 7}), i)
	}
	var wg sync.WaitGroup
	for i := range w.NumTargets() {
		wg.Go(func() {
			if got := collect(t, w, i); !rowsEqual(got, want[i]) {
				t.Errorf("target %d: concurrent Scraper differs", i)
			}
		})
	}
	wg.Wait()
}

func TestDefaults(t *testing.T) {
	for _, tc := range []struct {
		kind     string
		interval time.Duration
	}{{"node", 15 * time.Second}, {"random", 15 * time.Second}, {"tsbs", 10 * time.Second}} {
		w := mustNew(t, tc.kind, Spec{Targets: 1, Duration: time.Hour})
		if w.Interval() != tc.interval {
			t.Errorf("%s: default Interval %v, want %v", tc.kind, w.Interval(), tc.interval)
		}
		if w.MinTime() < DefaultStart || w.MinTime() >= DefaultStart+tc.interval.Milliseconds() {
			t.Errorf("%s: MinTime %d, want the first tick at %d", tc.kind, w.MinTime(), DefaultStart)
		}
		if w.Name() != tc.kind {
			t.Errorf("Name() = %q, want %q", w.Name(), tc.kind)
		}
	}
	if DefaultStart%(2*3600*1000) != 0 {
		t.Errorf("DefaultStart %d is not on a 2 h boundary", DefaultStart)
	}
}
