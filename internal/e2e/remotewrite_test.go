package e2e

import (
	"encoding/json"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
)

// TestRemoteWriteMatchesPrometheus checks that what Prometheus stored and
// what Aerie received from it by remote write agree: the same series for
// jobs node and prometheus, and sample for sample the same timestamps and
// values (bit-exact, as the API's strings) over the settled window.
func TestRemoteWriteMatchesPrometheus(t *testing.T) {
	t.Parallel()
	st, w := sharedStack(t)
	for _, job := range []string{"node", "prometheus"} {
		sel := fmt.Sprintf(`{job=%q}`, job)
		ps, err := seriesSet(st.prom, sel, w.Start, w.T, nil)
		if err != nil {
			t.Fatal(err)
		}
		as, err := seriesSet(st.aerie, sel, w.Start, w.T, nil)
		if err != nil {
			t.Fatal(err)
		}
		onlyP, onlyA := diffSets(ps, as)
		if len(onlyP)+len(onlyA) > 0 {
			t.Errorf("job %s: /api/v1/series: %d series, %d only in Prometheus, %d only in Aerie:\n  only in Prometheus: %s\n  only in Aerie: %s",
				job, len(ps), len(onlyP), len(onlyA), summarize(onlyP, 5), summarize(onlyA, 5))
		}

		pr, err := rawSamples(st.prom, sel, w.Start, w.T)
		if err != nil {
			t.Fatal(err)
		}
		ar, err := rawSamples(st.aerie, sel, w.Start, w.T)
		if err != nil {
			t.Fatal(err)
		}
		var diffs []string
		samples := 0
		keys := make([]string, 0, len(pr))
		for k := range pr {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			samples += len(pr[k])
			a, ok := ar[k]
			if !ok {
				diffs = append(diffs, fmt.Sprintf("%s: %d samples, none in Aerie", k, len(pr[k])))
				continue
			}
			if d := diffPoints(pr[k], a, 0); d != "" {
				diffs = append(diffs, k+": "+d)
			}
		}
		for k, a := range ar {
			if _, ok := pr[k]; !ok {
				diffs = append(diffs, fmt.Sprintf("%s: only in Aerie (%d samples)", k, len(a)))
			}
		}
		if len(diffs) > 0 {
			t.Errorf("job %s: samples in (%s, %s]: %d of %d series differ (Prometheus first):\n  %s",
				job, fmtTime(w.Start), fmtTime(w.T), len(diffs), len(pr), summarize(diffs, 10))
		}
		if samples < len(pr)*30 {
			t.Errorf("job %s: only %d samples in %d series: the window is too short to mean anything", job, samples, len(pr))
		}
		t.Logf("job %s: %d series, %d samples compared", job, len(pr), samples)
	}

	// The label APIs over the same remote-written series.
	match := url.Values{"match[]": {`{job=~"node|prometheus"}`}, "start": {fmtTime(w.Start)}, "end": {fmtTime(w.T)}}
	for _, path := range []string{"/api/v1/labels", "/api/v1/label/__name__/values", "/api/v1/label/job/values", "/api/v1/label/mode/values"} {
		p, err := apiOK(st.prom, path, match)
		if err != nil {
			t.Fatal(err)
		}
		a, err := apiOK(st.aerie, path, match)
		if err != nil {
			t.Fatal(err)
		}
		var pl, al []string
		if err := json.Unmarshal(p.Data, &pl); err != nil {
			t.Fatalf("%s: Prometheus: %v", path, err)
		}
		if err := json.Unmarshal(a.Data, &al); err != nil {
			t.Fatalf("%s: Aerie: %v", path, err)
		}
		onlyP, onlyA := diffSets(toSet(pl), toSet(al))
		if len(onlyP)+len(onlyA) > 0 || len(pl) == 0 {
			t.Errorf("%s?%s: %d values from Prometheus, %d from Aerie; only in Prometheus: %s; only in Aerie: %s",
				path, match.Encode(), len(pl), len(al), summarize(onlyP, 5), summarize(onlyA, 5))
		}
	}
}

func toSet(xs []string) map[string]bool {
	m := make(map[string]bool, len(xs))
	for _, x := range xs {
		m[x] = true
	}
	return m
}

// TestAerieScrapeSeriesSet checks that Aerie's own scrape of node_exporter
// (job node-aerie) yields the series Prometheus' scrape of it does (job
// node), the synthetic scrape series included, and that its target is up.
func TestAerieScrapeSeriesSet(t *testing.T) {
	t.Parallel()
	st, w := sharedStack(t)
	// Allowed difference 8 (see promql_test.go): Prometheus 3.x scraping
	// writes the quantile label of summaries and the le label of classic
	// histograms in OpenMetrics' float format (quantile="1" becomes "1.0");
	// 2.42 keeps the exposition's text. Both sides are put in that format.
	norm := func(ls map[string]string) {
		delete(ls, "job")
		for _, l := range []string{"le", "quantile"} {
			if v, ok := ls[l]; ok {
				if f, err := strconv.ParseFloat(v, 64); err == nil {
					ls[l] = labels.FormatOpenMetricsFloat(f)
				}
			}
		}
	}
	ps, err := seriesSet(st.prom, `{job="node"}`, w.Start, w.T, norm)
	if err != nil {
		t.Fatal(err)
	}
	as, err := seriesSet(st.aerie, `{job="node-aerie"}`, w.Start, w.T, norm)
	if err != nil {
		t.Fatal(err)
	}
	onlyP, onlyA := diffSets(ps, as)
	if len(onlyP)+len(onlyA) > 0 {
		t.Errorf("%d series from Prometheus' scrape, %d from Aerie's; %d only in Prometheus', %d only in Aerie's (job label removed):\n  only in Prometheus': %s\n  only in Aerie's: %s",
			len(ps), len(as), len(onlyP), len(onlyA), summarize(onlyP, 10), summarize(onlyA, 10))
	}
	for _, name := range []string{"up", "scrape_duration_seconds", "scrape_samples_scraped", "scrape_samples_post_metric_relabeling", "scrape_series_added"} {
		v, err := values(st.aerie, name+`{job="node-aerie"}`, w.T)
		if err != nil {
			t.Fatal(err)
		}
		if len(v) != 1 {
			t.Errorf("%s{job=\"node-aerie\"} at T: %d series, want 1", name, len(v))
		}
		if name == "up" {
			for k, x := range v {
				if x != "1" {
					t.Errorf("%s = %s, want 1", k, x)
				}
			}
		}
	}
	t.Logf("%d series from each scrape", len(ps))
}
