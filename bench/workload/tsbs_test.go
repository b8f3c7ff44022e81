package workload

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
)

func TestTSBS(t *testing.T) {
	w := mustNew(t, "tsbs", Spec{Targets: 50, Duration: 2 * time.Hour, Seed: 3})
	if w.Interval() != 10*time.Second {
		t.Errorf("Interval %v, want TSBS's 10s", w.Interval())
	}
	tags := []string{"arch", "datacenter", "hostname", "os", "rack", "region", "service", "service_environment", "service_version", "team"}
	inRange := func(s string, n int) bool { i, err := strconv.Atoi(s); return err == nil && i >= 0 && i < n }
	seen := map[string]map[string]bool{}
	for i := range w.NumTargets() {
		ls := w.Series(i)
		if len(ls) != 10 {
			t.Fatalf("host %d: %d series, want 10", i, len(ls))
		}
		checkSeries(t, "tsbs", i, ls)
		var names []string
		for _, l := range ls {
			names = append(names, l.Get(labels.MetricName))
			var got []string
			l.Range(func(l labels.Label) {
				if l.Name != labels.MetricName {
					got = append(got, l.Name)
				}
			})
			if !slices.Equal(got, tags) {
				t.Fatalf("host %d: series %s, want the tags %v", i, l, tags)
			}
			if !labels.Equal(l.DropMetricName(), ls[0].DropMetricName()) {
				t.Fatalf("host %d: tags differ between %s and %s", i, l, ls[0])
			}
		}
		for _, f := range tsbsFields {
			if !slices.Contains(names, "cpu_"+f) {
				t.Errorf("host %d: no cpu_%s", i, f)
			}
		}
		l := ls[0]
		region := slices.IndexFunc(tsbsRegions, func(r tsbsRegion) bool { return r.name == l.Get("region") })
		switch {
		case l.Get("hostname") != fmt.Sprintf("host_%d", i):
			t.Errorf("host %d: hostname %q", i, l.Get("hostname"))
		case region < 0:
			t.Errorf("host %d: region %q", i, l.Get("region"))
		case !slices.Contains(tsbsRegions[region].datacenters, l.Get("datacenter")):
			t.Errorf("host %d: datacenter %q in region %q", i, l.Get("datacenter"), l.Get("region"))
		case !inRange(l.Get("rack"), 100), !inRange(l.Get("service"), 20), !inRange(l.Get("service_version"), 2):
			t.Errorf("host %d: rack, service, version %q %q %q", i, l.Get("rack"), l.Get("service"), l.Get("service_version"))
		case !slices.Contains(tsbsOSes, l.Get("os")), !slices.Contains(tsbsArches, l.Get("arch")),
			!slices.Contains(tsbsTeams, l.Get("team")), !slices.Contains(tsbsEnvironments, l.Get("service_environment")):
			t.Errorf("host %d: tags %s", i, l)
		}
		for _, tag := range tags {
			if seen[tag] == nil {
				seen[tag] = map[string]bool{}
			}
			seen[tag][l.Get(tag)] = true
		}

		// The clamped random walk, truncated to integers.
		rows := collect(t, w, i)
		for j := range ls {
			v := column(rows, j)
			var sq float64
			for k, x := range v {
				if x < 0 || x > 100 || x != math.Trunc(x) {
					t.Fatalf("host %d %s row %d: %v, want an integer in [0, 100]", i, ls[j], k, x)
				}
				if k > 0 {
					d := x - v[k-1]
					sq += d * d
					if math.Abs(d) > 7 {
						t.Fatalf("host %d %s row %d: step %v", i, ls[j], k, d)
					}
				}
			}
			// Steps of a normal(0, 1) walk, truncated: RMS a little above 1.
			if rms := math.Sqrt(sq / float64(len(v)-1)); rms < 0.7 || rms > 1.5 {
				t.Errorf("host %d %s: step RMS %v", i, ls[j], rms)
			}
		}
	}
	// 50 hosts cover the small tag sets.
	for tag, n := range map[string]int{"os": 3, "arch": 2, "team": 4, "service_environment": 3, "region": 9} {
		if len(seen[tag]) != n {
			t.Errorf("50 hosts have %d values of %s, want %d", len(seen[tag]), tag, n)
		}
	}
}
