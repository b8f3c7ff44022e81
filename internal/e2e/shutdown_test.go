package e2e

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/snappy"
	"github.com/prometheus/prometheus/prompb"
)

// remoteWrite sends series as one Prometheus remote-write 1.0 request.
func remoteWrite(base string, series []prompb.TimeSeries) error {
	for i := range series {
		ls := series[i].Labels
		sort.Slice(ls, func(a, b int) bool { return ls[a].Name < ls[b].Name })
	}
	req := &prompb.WriteRequest{Timeseries: series}
	raw, err := req.Marshal()
	if err != nil {
		return err
	}
	code, msg, err := post(base, "/api/v1/write", snappy.Encode(nil, raw), map[string]string{
		"Content-Encoding":                  "snappy",
		"Content-Type":                      "application/x-protobuf",
		"X-Prometheus-Remote-Write-Version": "0.1.0",
	})
	if err != nil {
		return err
	}
	if code/100 != 2 {
		return fmt.Errorf("remote write: HTTP %d %s", code, strings.TrimSpace(msg))
	}
	return nil
}

// TestGracefulShutdown writes through remote write and line protocol,
// stops Aerie with SIGTERM (it must exit 0 within 10 s), starts it again
// on the same data directory, and reads the same samples back.
func TestGracefulShutdown(t *testing.T) {
	g := newTestGroup(t)
	dataDir := g.dataDir(t, "aerie")
	p, base := startTestAerie(t, g, "aerie", dataDir)

	start := time.Now().Add(-5*time.Minute).UnixMilli() / 1000 * 1000
	// No -0: remote write 1.0's protobuf drops a zero value's field, so -0
	// arrives as 0 (from Prometheus too); the line protocol sends it below.
	special := []float64{0.1, 42, math.NaN(), math.Inf(1), math.Inf(-1), 1e-300, -7.25, 1e300}
	var series []prompb.TimeSeries
	for s := 0; s < 20; s++ {
		ts := prompb.TimeSeries{Labels: []prompb.Label{
			{Name: "__name__", Value: "e2e_shutdown"},
			{Name: "job", Value: "e2e"},
			{Name: "instance", Value: fmt.Sprintf("i%d", s%4)},
			{Name: "series", Value: fmt.Sprint(s)},
		}}
		for i := 0; i < 60; i++ {
			v := float64(s*1000 + i)
			if s == 0 {
				v = special[i%len(special)]
			}
			ts.Samples = append(ts.Samples, prompb.Sample{Timestamp: start + int64(i)*5000, Value: v})
		}
		series = append(series, ts)
	}
	if err := remoteWrite(base, series); err != nil {
		t.Fatal(err)
	}
	line := fmt.Sprintf("e2e_shutdown_influx,host=h a=1.5,b=-0 %d\n", start/1000)
	if code, msg, err := post(base, "/write?precision=s", []byte(line), nil); err != nil || code/100 != 2 {
		t.Fatalf("influx write: HTTP %d %q %v", code, msg, err)
	}

	end := start + 60*5000
	sel := `{__name__=~"e2e_shutdown.*"}`
	before, err := rawSamples(base, sel, start-1, end)
	if err != nil {
		t.Fatal(err)
	}
	if len(before) != 22 {
		t.Fatalf("before the restart: %d series, want 22 (20 remote-written, 2 from line protocol)", len(before))
	}
	want := []string{"0.1", "42", "NaN", "+Inf", "-Inf", "1e-300", "-7.25", "1e+300"}
	if b := before[`{__name__="e2e_shutdown_influx_b", host="h"}`]; len(b) != 1 || b[0].V != "-0" {
		t.Errorf("e2e_shutdown_influx_b: %v, want one sample -0", b)
	}
	for k, ps := range before {
		if strings.Contains(k, `series="0"`) {
			for i, p := range ps {
				if p.V != want[i%len(want)] {
					t.Errorf("%s sample %d: %s, want %s (bit-exact special values)", k, i, p.V, want[i%len(want)])
					break
				}
			}
		}
	}

	stopStart := time.Now()
	if err := p.Stop(stopGrace); err != nil {
		t.Fatalf("graceful shutdown: %v\n%s", err, p.Tail(logTailLines))
	}
	t.Logf("aerie exited 0 %s after SIGTERM", time.Since(stopStart).Round(time.Millisecond))

	restart := time.Now()
	_, base2 := startTestAerie(t, g, "aerie-restarted", dataDir)
	t.Logf("restarted and ready in %s", time.Since(restart).Round(time.Millisecond))
	after, err := rawSamples(base2, sel, start-1, end)
	if err != nil {
		t.Fatal(err)
	}
	var diffs []string
	for k, ps := range before {
		if d := diffPoints(ps, after[k], 0); d != "" {
			diffs = append(diffs, k+": "+d)
		}
	}
	for k := range after {
		if before[k] == nil {
			diffs = append(diffs, k+": only after the restart")
		}
	}
	if len(diffs) > 0 {
		t.Errorf("%d series differ after the restart (before first):\n  %s", len(diffs), summarize(diffs, 10))
	}
}
