package codecbench

import (
	"bytes"
	"context"
	"math"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/aerie-db/aerie/bench/harness"
)

// TestCodecsRoundTrip: both codecs give back a window with gaps, NaN and
// a stale-marker-like payload bit for bit, and Aerie's bytes count every
// part.
func TestCodecsRoundTrip(t *testing.T) {
	w := &window{series: 3, ts: make([]int64, 300), vals: make([][]float64, 3), pres: make([][]bool, 3)}
	for i := range w.ts {
		w.ts[i] = 1_700_000_000_000 + int64(i)*15_000 + int64(i%3)
		for s := range 3 {
			w.vals[s] = append(w.vals[s], float64(i*s)+0.25)
		}
	}
	w.vals[1][7] = math.NaN()
	w.vals[1][8] = math.Float64frombits(0x7ff0000000000002)
	w.pres[2] = make([]bool, len(w.ts))
	for i := range w.pres[2] {
		w.pres[2][i] = i%5 != 0
	}
	for name, cd := range map[string]codec{"aerie": aerieCodec, "prometheus": promCodec} {
		n, decode := cd(w)
		if n <= 0 {
			t.Errorf("%s: %d bytes", name, n)
		}
		if err := decode(true); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		w.vals[0][10]++ // what was encoded no longer matches
		if err := decode(true); err == nil {
			t.Errorf("%s: a changed value was not noticed", name)
		}
		if err := decode(false); err != nil {
			t.Errorf("%s: decode without the check: %v", name, err)
		}
		w.vals[0][10]--
	}
}

// TestRun encodes the real capture at 15 s (every 15th scrape).
func TestRun(t *testing.T) {
	fs := pflag.NewFlagSet("codec", pflag.ContinueOnError)
	run := Codec.Flags(fs)
	if err := fs.Parse([]string{"--every=15"}); err != nil {
		t.Fatal(err)
	}
	rep, err := run(context.Background(), harness.Options{Scale: "small"})
	if err != nil {
		t.Fatal(err)
	}
	r := rep.(*Report)
	if r.Samples == 0 || len(r.Results) != 5 || r.Results[0].Aerie <= 0 || r.Results[0].Prometheus <= 0 {
		t.Fatalf("%+v", r)
	}
	var b bytes.Buffer
	if err := r.WriteMarkdown(&b); err != nil || !strings.Contains(b.String(), "`bytes_per_sample`") {
		t.Fatalf("%v\n%s", err, b.String())
	}
}
