package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

const (
	// stackRunDuration is how long the long tests let the servers collect
	// data before comparing them (all the long tests share one stack, so
	// this is paid once; see TestPromQLTableOnPrometheus for the other).
	stackRunDuration = 75 * time.Second
	// settleMargin is cut from both ends of the run: at the start, the
	// servers are still coming up; at the end, remote write lags (batches
	// go out every second).
	settleMargin = 10 * time.Second
)

// window is the settled part of a run: the comparisons read samples in
// (Start, T] only. T is the evaluation time of instant queries and the end
// of range queries: a second mark plus Delta ms, where no scrape timestamp
// has Delta as its millisecond part, so no range selector boundary falls on
// a sample (Prometheus 2.x selects [T-r, T], 3.x (T-r, T]).
type window struct {
	Start, T, Delta int64 // milliseconds
	// UpTS is the timestamp of a sample of up{job="node"} about 10 s
	// before T, for the case that shows the range boundary change.
	UpTS int64
}

// subRange returns a range of whole seconds plus ms such that a range
// selector evaluated at a whole second (a subquery step) starts at Delta
// ms past a second, where no sample is.
func (w window) subRange(seconds int) string {
	return fmt.Sprintf("%ds%dms", seconds, 1000-w.Delta)
}

// stack is node_exporter, Aerie scraping it as job node-aerie, and
// Prometheus scraping it as job node (and itself as job prometheus) and
// remote-writing everything to Aerie.
type stack struct {
	g           *group
	prom, aerie string // base URLs
	t0          int64  // ms: when both servers were ready

	winOnce sync.Once
	win     window
	winErr  error
}

var shared struct {
	once sync.Once
	st   *stack
	err  error
}

// stopShared stops the shared stack, if one was started.
func stopShared() []error {
	if shared.st == nil {
		return nil
	}
	return shared.st.g.stopAll()
}

// sharedStack starts the stack for the first long test that asks, waits
// until it has run stackRunDuration, and returns it with its settled
// window (the same for every test).
func sharedStack(t *testing.T) (*stack, window) {
	t.Helper()
	requireLong(t)
	requireDebian(t)
	bin := requireAerieServe(t)
	shared.once.Do(func() {
		shared.st, shared.err = startStack(bin)
	})
	st := shared.st
	if st != nil {
		t.Cleanup(func() {
			if t.Failed() {
				st.g.dumpLogs(t)
			}
		})
	}
	if shared.err != nil {
		t.Fatalf("starting node_exporter, Aerie and Prometheus: %v", shared.err)
	}
	waitRun(t, st.t0)
	st.winOnce.Do(func() {
		st.win, st.winErr = settledWindow(st.prom, st.t0, time.Now().UnixMilli())
	})
	if st.winErr != nil {
		t.Fatal(st.winErr)
	}
	return st, st.win
}

// waitRun sleeps until stackRunDuration after t0.
func waitRun(t *testing.T, t0 int64) {
	t.Helper()
	if d := time.Until(time.UnixMilli(t0).Add(stackRunDuration)); d > 0 {
		t.Logf("letting the servers collect data for %s", d.Round(time.Second))
		time.Sleep(d)
	}
}

func startStack(bin string) (*stack, error) {
	dir := filepath.Join(tmpRoot, "stack")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	st := &stack{g: &group{logDir: dir}}
	shared.st = st // so that TestMain stops whatever started
	nodePort, err := startNodeExporter(st.g, "node_exporter")
	if err != nil {
		return st, err
	}
	aeriePort, err := freePort()
	if err != nil {
		return st, err
	}
	if _, err := startAerie(st.g, "aerie", bin, filepath.Join(dir, "aerie-data"), aeriePort, aerieScrapeConfig(nodePort)); err != nil {
		return st, err
	}
	st.aerie = fmt.Sprintf("http://127.0.0.1:%d", aeriePort)
	promPort, err := freePort()
	if err != nil {
		return st, err
	}
	if _, err := startPrometheus(st.g, "prometheus", dir, promPort, prometheusConfig(nodePort, promPort, aeriePort)); err != nil {
		return st, err
	}
	st.prom = fmt.Sprintf("http://127.0.0.1:%d", promPort)
	st.t0 = time.Now().UnixMilli()
	if err := waitQuery(st.prom, `count(up{job=~"node|prometheus"} == 1)`, "2", 30*time.Second); err != nil {
		return st, fmt.Errorf("prometheus: %v", err)
	}
	if err := waitQuery(st.aerie, `count(up{job=~"node|prometheus|node-aerie"} == 1)`, "3", 30*time.Second); err != nil {
		return st, fmt.Errorf("aerie: %v", err)
	}
	return st, nil
}

// waitQuery polls an instant query at the current time until its only
// result has the value want.
func waitQuery(base, q, want string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		d, err := query(base, q, time.Now().UnixMilli())
		last := fmt.Sprint(err)
		if err == nil {
			if len(d.Series) == 1 && d.Series[0].Value != nil && d.Series[0].Value.V == want {
				return nil
			}
			last = fmt.Sprintf("%d series %+v", len(d.Series), d.Series)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: %s did not become %s within %s (last: %s)", base, q, want, timeout, last)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// settledWindow picks the window of a run that started at t0 and ended at
// end, reading Prometheus' scrape timestamps to choose T's milliseconds.
func settledWindow(prom string, t0, end int64) (window, error) {
	start := t0 + settleMargin.Milliseconds()
	last := end - settleMargin.Milliseconds()
	if last-start < 30_000 {
		return window{}, fmt.Errorf("settled window (%s, %s] shorter than 30s", fmtTime(start), fmtTime(last))
	}
	// All samples of one scrape share its timestamp, so up's timestamps are
	// every sample's.
	d, err := query(prom, fmt.Sprintf("up[%dms]", end-t0+1000), end)
	if err != nil {
		return window{}, err
	}
	used := map[int64]bool{0: true} // subquery steps fall on whole seconds
	var nodeUp []point
	for _, s := range d.Series {
		for _, p := range s.Values {
			used[((p.T%1000)+1000)%1000] = true
		}
		if s.Metric["job"] == "node" {
			nodeUp = s.Values
		}
	}
	delta, best := int64(0), int64(-1)
	for c := int64(1); c < 1000; c++ {
		dist := int64(1000)
		for u := range used {
			dd := (c - u + 1000) % 1000
			dist = min(dist, dd, 1000-dd)
		}
		if dist > best {
			delta, best = c, dist
		}
	}
	t := last - last%1000 - 1000 + delta
	w := window{Start: start, T: t, Delta: delta}
	for _, p := range nodeUp {
		if p.T <= t-10_000 {
			w.UpTS = p.T
		}
	}
	if w.UpTS <= start {
		return window{}, fmt.Errorf("no sample of up{job=\"node\"} in (%s, %s]", fmtTime(start), fmtTime(t-10_000))
	}
	return w, nil
}

// rawSamples returns every sample of the series matching sel in (from, to],
// keyed by label set, read with a range selector so the raw samples come
// back, not evaluated ones.
func rawSamples(base, sel string, from, to int64) (map[string][]point, error) {
	d, err := query(base, fmt.Sprintf("%s[%dms]", sel, to-from+1000), to)
	if err != nil {
		return nil, err
	}
	out := make(map[string][]point, len(d.Series))
	for _, s := range d.Series {
		var ps []point
		for _, p := range s.Values {
			if p.T > from && p.T <= to {
				ps = append(ps, p)
			}
		}
		out[labelString(s.Metric)] = ps
	}
	return out, nil
}

// values returns the query's result values by label set.
func values(base, q string, at int64) (map[string]string, error) {
	d, err := query(base, q, at)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, s := range d.Series {
		if s.Value != nil {
			out[labelString(s.Metric)] = s.Value.V
		}
	}
	return out, nil
}
