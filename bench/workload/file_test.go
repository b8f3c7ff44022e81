package workload

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/prompb"
)

// dump encodes write requests as a remote-write dump, less cut bytes at
// the end of the uncompressed stream.
func dump(t testing.TB, cut int, reqs ...*prompb.WriteRequest) []byte {
	t.Helper()
	var raw []byte
	for _, r := range reqs {
		b, err := r.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		raw = binary.BigEndian.AppendUint32(raw, uint32(len(b)))
		raw = append(raw, b...)
	}
	raw = raw[:len(raw)-cut]
	var out bytes.Buffer
	zw, err := zstd.NewWriter(&out)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := zw.Write(raw); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// series makes a prompb series from label pairs and (t, v) pairs.
func series(pairs []string, tv ...float64) prompb.TimeSeries {
	var s prompb.TimeSeries
	for i := 0; i < len(pairs); i += 2 {
		s.Labels = append(s.Labels, prompb.Label{Name: pairs[i], Value: pairs[i+1]})
	}
	for i := 0; i < len(tv); i += 2 {
		s.Samples = append(s.Samples, prompb.Sample{Timestamp: int64(tv[i]), Value: tv[i+1]})
	}
	return s
}

func writeFile(t testing.TB, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// describe renders a workload: per target its series and its rows as
// "T: v v _ v" (_ for an absent value).
func describe(t testing.TB, w Workload) string {
	t.Helper()
	var b strings.Builder
	for i := range w.NumTargets() {
		fmt.Fprintf(&b, "target %d\n", i)
		for _, l := range w.Series(i) {
			fmt.Fprintf(&b, "  %s\n", l)
		}
		for _, r := range collect(t, w, i) {
			fmt.Fprintf(&b, "  %d:", r.T)
			for j, v := range r.Values {
				if r.Present != nil && !r.Present[j] {
					b.WriteString(" _")
				} else {
					b.WriteString(" " + strconv.FormatFloat(v, 'g', -1, 64))
				}
			}
			b.WriteString("\n")
		}
	}
	fmt.Fprintf(&b, "samples %d, time %d–%d, interval %v\n", w.Samples(), w.MinTime(), w.MaxTime(), w.Interval())
	return b.String()
}

// fileWant is what every test file below holds.
const fileWant = `target 0
  {__name__="a_total", instance="h1", job="j"}
  {__name__="b", instance="h1", job="j", x="1"}
  1000: 1 _
  2000: 2 20
  3000: 3 30
  4000: _ NaN
target 1
  {__name__="c", instance="h2", job="j"}
  1500: 5
  2500: 6
samples 8, time 1000–4000, interval 1s
`

func TestFromFile(t *testing.T) {
	stale := math.Float64frombits(value.StaleNaN)
	rw := dump(t, 0,
		&prompb.WriteRequest{Timeseries: []prompb.TimeSeries{
			// Labels out of order, and an empty label, are normalized.
			series([]string{"job", "j", "__name__", "a_total", "instance", "h1", "empty", ""}, 1000, 1, 2000, 2),
			series([]string{"__name__", "c", "instance", "h2", "job", "j"}, 1500, 5),
		}},
		&prompb.WriteRequest{Timeseries: []prompb.TimeSeries{
			series([]string{"__name__", "a_total", "instance", "h1", "job", "j"}, 2000, 2, 3000, 3), // 2000 resent
			series([]string{"__name__", "b", "instance", "h1", "job", "j", "x", "1"}, 2000, 20, 3000, 30),
			series([]string{"__name__", "c", "instance", "h2", "job", "j"}, 2500, 6),
		}},
		&prompb.WriteRequest{Timeseries: []prompb.TimeSeries{
			{Labels: []prompb.Label{{Name: "__name__", Value: "b"}, {Name: "instance", Value: "h1"}, {Name: "job", Value: "j"}, {Name: "x", Value: "1"}},
				Samples: []prompb.Sample{{Timestamp: 4000, Value: stale}}},
		}},
	)
	text := `# HELP a_total A counter.
# TYPE a_total counter
a_total{job="j",instance="h1"} 1 1000

a_total{job="j",instance="h1"} 2 2000
b{job="j",instance="h1",x="1"} 20 2000
c{job="j",instance="h2"} 6 2500
c{job="j",instance="h2"} 5 1500
# a comment
a_total{job="j",instance="h1"} 3 3000
b{job="j",instance="h1",x="1"} 30 3000
a_total{job="j",instance="h1"} 2 2000
b{job="j",instance="h1",x="1"} NaN 4000`
	om := `# TYPE a counter
# HELP a A counter.
a_total{job="j",instance="h1"} 1 1.0
a_total{job="j",instance="h1"} 2 2
b{job="j",instance="h1",x="1"} 20 2
c{job="j",instance="h2"} 5 1.5
c{job="j",instance="h2"} 6 2.5
a_total{job="j",instance="h1"} 3 3
b{job="j",instance="h1",x="1"} 30 3
b{job="j",instance="h1",x="1"} NaN 4
# EOF
`
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"capture.rwpb.zst", rw},
		{"metrics.prom", []byte(text)},
		{"metrics.om", []byte(om)},
	} {
		w, err := FromFile(writeFile(t, tc.name, tc.data))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if w.Name() != "file:"+tc.name {
			t.Errorf("%s: Name() = %q", tc.name, w.Name())
		}
		// Stale markers may be any NaN; the text ones are the parser's.
		if got := describe(t, w); got != fileWant {
			t.Errorf("%s:\n%s\nwant\n%s", tc.name, got, fileWant)
		}
		for i := range w.NumTargets() {
			checkSeries(t, w.Name(), i, w.Series(i))
		}
	}
	w, err := FromFile(writeFile(t, "x.zst", rw))
	if err != nil {
		t.Fatal(err)
	}
	var r Row
	s := w.Scraper(0)
	for s.Next(&r) {
	}
	if !value.IsStaleNaN(r.Values[1]) {
		t.Errorf("a stale marker became %v", r.Values[1])
	}
}

func TestFromFileErrors(t *testing.T) {
	good := &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{series([]string{"__name__", "up", "job", "j"}, 1000, 1)}}
	dup := &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{series([]string{"__name__", "up", "job", "j"}, 1000, 2)}}
	hist := &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{{
		Labels: []prompb.Label{{Name: "__name__", Value: "h"}}, Histograms: []prompb.Histogram{{Timestamp: 1}},
	}}}
	dupLabel := &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{series([]string{"__name__", "up", "a", "1", "a", "2"}, 1000, 1)}}
	rec2 := fmt.Sprintf("record 2 (byte %d)", 4+len(mustMarshal(t, good)))
	for _, tc := range []struct {
		name string
		data []byte
		want string // in the error, after the file name
	}{
		{"trunc.zst", dump(t, 3, good, good), ": " + rec2 + ": truncated: "},
		{"len.zst", dump(t, len(mustMarshal(t, good))+2, good, good), ": " + rec2 + ": truncated length"},
		{"junk.zst", append(dump(t, 0, good), []byte("junk")...), ": " + rec2 + ": "},
		{"dup.zst", dump(t, 0, good, dup), ": " + rec2 + `: series {__name__="up", job="j"}: two values at timestamp 1000`},
		{"hist.zst", dump(t, 0, hist), ": record 1 (byte 0): series {__name__=\"h\"}: native histograms"},
		{"label.zst", dump(t, 0, dupLabel), `: record 1 (byte 0): series {__name__="up", a="1", a="2"}: duplicate label "a"`},
		{"notime.prom", []byte("a 1 1000\n\n# HELP b x\nb{x=\"y\"} 2\n"), `:4: sample without timestamp: b{x="y"}`},
		{"bad.prom", []byte("a 1 1000\n  \nb{x=\"y\" 2 1000\n"), ":3: "},
		{"bad2.prom", []byte("a 1 1000\nb{x=\"multi\nline\"} 1 1000\nc 1 x\n"), ":4: "},
		{"dup.prom", []byte("a 1 1000\na 2 1000\n"), `:2: series {__name__="a"}: two values at timestamp 1000`},
		{"dup2.prom", []byte("a 1 1000\na 2 2000\na 3 1000\n"), `series {__name__="a"}: two values at timestamp 1000`},
		{"nul.prom", []byte("a 1 1000\nb 1 \x00 1000\n"), ":2: NUL byte"},
		{"notime.om", []byte("a 1 1\nb 2\n# EOF\n"), `:2: sample without timestamp: b`},
		{"bad.om", []byte("a 1 1\n\nb 2 2\n# EOF\n"), ":2: "},
		{"empty.prom", []byte("# nothing\n"), "no samples"},
		{"empty.om", []byte("# EOF\n"), "no samples"},
	} {
		p := writeFile(t, tc.name, tc.data)
		w, err := FromFile(p)
		if err == nil {
			t.Errorf("%s: no error, %d samples", tc.name, w.Samples())
			continue
		}
		t.Logf("%s: %v", tc.name, err)
		if !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %q, want the file name and %q", tc.name, err, tc.want)
		}
	}
	if _, err := FromFile(filepath.Join(t.TempDir(), "missing")); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("missing file: %v", err)
	}
}

func mustMarshal(t testing.TB, r *prompb.WriteRequest) []byte {
	t.Helper()
	b, err := r.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// nodeCapture is the real capture of /work/shared/data/README.md, absent in CI.
const nodeCapture = "/work/shared/data/node-1s-a.rwpb.zst"

func TestFromFileCapture(t *testing.T) {
	if _, err := os.Stat(nodeCapture); err != nil {
		t.Skipf("no capture: %v", err)
	}
	if testing.Short() {
		t.Skip("loading the capture takes seconds (15 s with -race)")
	}
	w, err := FromFile(nodeCapture)
	if err != nil {
		t.Fatal(err)
	}
	var n, samples int64
	for i := range w.NumTargets() {
		ls := w.Series(i)
		checkSeries(t, w.Name(), i, ls)
		n += int64(len(ls))
		var r Row
		s := w.Scraper(i)
		prev := int64(-1)
		for s.Next(&r) {
			if r.T <= prev {
				t.Fatalf("target %d: T %d after %d", i, r.T, prev)
			}
			prev = r.T
			for j := range r.Values {
				if r.Present == nil || r.Present[j] {
					samples++
				}
			}
		}
	}
	if n != 950 || samples != 1_535_436 || w.Samples() != samples {
		t.Errorf("capture: %d series, %d samples (Samples() %d), want 950, 1535436", n, samples, w.Samples())
	}
	if w.MinTime() != 1795297874652 || w.MaxTime() != 1795299490652 {
		t.Errorf("capture spans %d–%d", w.MinTime(), w.MaxTime())
	}
	if w.Interval() != time.Second {
		t.Errorf("capture interval %v, want 1s", w.Interval())
	}
	t.Logf("%d targets, %d series, %d samples", w.NumTargets(), n, samples)
}

// FuzzFromFileText parses arbitrary text, which must never panic, must
// give the same result twice, and when it succeeds must keep invariants 2–6.
func FuzzFromFileText(f *testing.F) {
	for _, s := range []string{
		"a 1 1000\n",
		"a{job=\"j\",instance=\"i\"} 1 1000\nb{job=\"j\",instance=\"i\"} 2 1000\na{job=\"j\",instance=\"i\"} 3 2000\n",
		"# HELP a x\n# TYPE a gauge\na 1 1000\n\na 2 500\n",
		"a_total 1 1.5\n# EOF\n",
		"# TYPE h histogram\nh_bucket{le=\"1\"} 1 1\nh_bucket{le=\"+Inf\"} 2 1\nh_sum 3 1\nh_count 2 1\n# EOF\n",
		"a{x=\"multi\nline\"} 1 1000\n",
		"a 1\n",
		"a{} NaN -5\n",
		"{\"quoted.name\",x=\"1\"} 1 1000\n",
		"a 1 1000 # {id=\"x\"} 1 1\n# EOF\n",
		"a{b=\"\"} 1 1\na 2 1\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		w1, err1 := parseText("fuzz", data)
		w2, err2 := parseText("fuzz", data)
		if (err1 == nil) != (err2 == nil) || (err1 != nil && err1.Error() != err2.Error()) {
			t.Fatalf("two parses differ: %v, %v", err1, err2)
		}
		if err1 != nil {
			if !strings.HasPrefix(err1.Error(), "workload: fuzz") {
				t.Fatalf("error %q does not name the file", err1)
			}
			return
		}
		if describe(t, w1) != describe(t, w2) {
			t.Fatal("two parses give different workloads")
		}
		var samples int64
		for i := range w1.NumTargets() {
			ls := w1.Series(i)
			if !slices.IsSortedFunc(ls, labels.Compare) {
				t.Fatalf("target %d: series not sorted", i)
			}
			prev := w1.MinTime() - 1
			for _, r := range collect(t, w1, i) {
				if r.T <= prev || r.T > w1.MaxTime() {
					t.Fatalf("target %d: T %d after %d, max %d", i, r.T, prev, w1.MaxTime())
				}
				prev = r.T
				n := 0
				for j := range r.Values {
					if r.Present == nil || r.Present[j] {
						n++
					}
				}
				if n == 0 {
					t.Fatalf("target %d: row %d has no value", i, r.T)
				}
				samples += int64(n)
			}
		}
		if samples != w1.Samples() {
			t.Fatalf("Samples() %d, rows hold %d", w1.Samples(), samples)
		}
	})
}
