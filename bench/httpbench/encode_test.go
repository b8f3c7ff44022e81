package httpbench

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/influxdata/line-protocol/v2/lineprotocol"
	"github.com/klauspost/compress/snappy"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"

	"github.com/aerie-db/aerie/bench/workload"
)

func TestLPName(t *testing.T) {
	for _, tc := range []struct{ name, meas, field string }{
		{"cpu_usage_user", "cpu", "usage_user"},
		{"node_cpu_seconds_total", "node", "cpu_seconds_total"},
		{"up", "up", "value"},
		{"_x", "_x", "value"},
		{"x_", "x_", "value"},
	} {
		m, f := lpName(tc.name)
		if m != tc.meas || f != tc.field {
			t.Errorf("lpName(%q) = %q, %q; want %q, %q", tc.name, m, f, tc.meas, tc.field)
		}
	}
}

// sample is one sample as a server stores it.
type sample struct {
	series string // labels.Labels.String()
	t      int64
	v      float64
}

// want returns every sample of w, its series named as line protocol
// names them if lp.
func want(t *testing.T, w workload.Workload, lp bool) []sample {
	t.Helper()
	var out []sample
	for i := 0; i < w.NumTargets(); i++ {
		ls := w.Series(i)
		sc := w.Scraper(i)
		var row workload.Row
		for sc.Next(&row) {
			for slot, v := range row.Values {
				if row.Present != nil && !row.Present[slot] {
					continue
				}
				l := ls[slot]
				if lp {
					m, f := lpName(l.Get(labels.MetricName))
					l = labels.NewBuilder(l).Set(labels.MetricName, m+"_"+f).Labels()
				}
				out = append(out, sample{l.String(), row.T, v})
			}
		}
	}
	sortSamples(out)
	return out
}

func sortSamples(s []sample) {
	slices.SortFunc(s, func(a, b sample) int {
		if c := strings.Compare(a.series, b.series); c != 0 {
			return c
		}
		return int(a.t - b.t)
	})
}

func decodeLP(t *testing.T, b []byte) []sample {
	t.Helper()
	var out []sample
	dec := lineprotocol.NewDecoderWithBytes(b)
	for dec.Next() {
		m, err := dec.Measurement()
		if err != nil {
			t.Fatal(err)
		}
		var tags []labels.Label
		for {
			k, v, err := dec.NextTag()
			if err != nil {
				t.Fatal(err)
			}
			if k == nil {
				break
			}
			tags = append(tags, labels.Label{Name: string(k), Value: string(v)})
		}
		type fv struct {
			k string
			v float64
		}
		var fs []fv
		for {
			k, v, err := dec.NextField()
			if err != nil {
				t.Fatal(err)
			}
			if k == nil {
				break
			}
			if v.Kind() != lineprotocol.Float {
				t.Fatalf("field %s is %v, want a float", k, v.Kind())
			}
			fs = append(fs, fv{string(k), v.FloatV()})
		}
		ts, err := dec.Time(lineprotocol.Millisecond, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range fs {
			b := labels.NewScratchBuilder(len(tags) + 1)
			for _, l := range tags {
				b.Add(l.Name, l.Value)
			}
			b.Add(labels.MetricName, string(m)+"_"+f.k)
			b.Sort()
			out = append(out, sample{b.Labels().String(), ts.UnixMilli(), f.v})
		}
	}
	if dec.Err() != nil {
		t.Fatal(dec.Err())
	}
	return out
}

func decodeRW(t *testing.T, b []byte) []sample {
	t.Helper()
	raw, err := snappy.Decode(nil, b)
	if err != nil {
		t.Fatal(err)
	}
	var req prompb.WriteRequest
	if err := req.Unmarshal(raw); err != nil {
		t.Fatal(err)
	}
	var out []sample
	for _, ts := range req.Timeseries {
		if len(ts.Samples) != 1 {
			t.Fatalf("a TimeSeries with %d samples, want one per sample", len(ts.Samples))
		}
		lb := labels.NewScratchBuilder(len(ts.Labels))
		for i, l := range ts.Labels {
			if i > 0 && ts.Labels[i-1].Name >= l.Name {
				t.Fatalf("labels not sorted: %v", ts.Labels)
			}
			lb.Add(l.Name, l.Value)
		}
		out = append(out, sample{lb.Labels().String(), ts.Samples[0].Timestamp, ts.Samples[0].Value})
	}
	return out
}

// TestEncodeRoundTrip decodes every request of both protocols and checks
// that they carry exactly the workload's samples, that every stream's
// requests cover the same ticks, and the per-name counts.
func TestEncodeRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		kind    string
		targets int
		streams int
		batch   int
	}{
		{"tsbs", 13, 4, 100},
		{"tsbs", 3, 8, 1}, // fewer targets than streams; one tick per request
		{"node", 3, 2, 1000},
	} {
		w, err := workload.New(tc.kind, workload.Spec{Targets: tc.targets, Duration: 10 * time.Minute, Seed: 3})
		if err != nil {
			t.Fatal(err)
		}
		for _, proto := range protocols {
			t.Run(fmt.Sprintf("%s/%d/%s", tc.kind, tc.targets, proto), func(t *testing.T) {
				enc, err := encodeWorkload(w, proto, tc.streams, tc.batch)
				if err != nil {
					t.Fatal(err)
				}
				if got := len(enc.streams); got != min(tc.streams, tc.targets) {
					t.Fatalf("%d streams", got)
				}
				var got []sample
				for s, st := range enc.streams {
					if len(st) != len(enc.streams[0]) {
						t.Errorf("stream %d has %d requests, stream 0 %d: requests are not cut at the same ticks", s, len(st), len(enc.streams[0]))
					}
					for _, b := range st {
						var part []sample
						if proto == lineProtocol {
							part = decodeLP(t, b.data)
						} else {
							part = decodeRW(t, b.data)
						}
						if len(part) != b.samples {
							t.Fatalf("a request of %d samples says %d", len(part), b.samples)
						}
						got = append(got, part...)
					}
				}
				sortSamples(got)
				exp := want(t, w, proto == lineProtocol)
				if len(got) != len(exp) || int64(len(got)) != enc.samples || enc.samples != w.Samples() {
					t.Fatalf("%d samples decoded, %d counted, %d generated, workload says %d", len(got), enc.samples, len(exp), w.Samples())
				}
				for i := range got {
					if got[i] != exp[i] {
						t.Fatalf("sample %d: %+v, want %+v", i, got[i], exp[i])
					}
				}
				perName := map[string]int64{}
				for _, s := range exp {
					ls, _ := parseLabels(s.series)
					perName[ls]++
				}
				if !maps.Equal(perName, enc.perName) {
					t.Errorf("per-name counts %v, want %v", enc.perName, perName)
				}
			})
		}
	}
}

// parseLabels returns the __name__ of a labels.Labels.String().
func parseLabels(s string) (string, bool) {
	_, rest, ok := strings.Cut(s, `__name__="`)
	name, _, _ := strings.Cut(rest, `"`)
	return name, ok
}

func TestClientBodies(t *testing.T) {
	mk := func(s, n int) []body {
		var bs []body
		for j := range n {
			bs = append(bs, body{data: []byte(fmt.Sprintf("%d.%d", s, j))})
		}
		return bs
	}
	e := &encoded{streams: [][]body{mk(0, 2), mk(1, 2), mk(2, 2), mk(3, 1)}}
	for _, tc := range []struct {
		c, n int
		want string
	}{
		{0, 1, "0.0 1.0 2.0 3.0 0.1 1.1 2.1"},
		{0, 2, "0.0 2.0 0.1 2.1"},
		{1, 2, "1.0 3.0 1.1"},
		{3, 4, "3.0"},
		{5, 8, ""},
	} {
		var got []string
		for _, b := range e.clientBodies(tc.c, tc.n) {
			got = append(got, string(b.data))
		}
		if s := strings.Join(got, " "); s != tc.want {
			t.Errorf("client %d of %d: %q, want %q", tc.c, tc.n, s, tc.want)
		}
	}
}

func TestLPEscaping(t *testing.T) {
	ls := labels.FromStrings("__name__", "a b_c,d", "k=1", "v 1,2", "empty", "")
	e := &lpEncoder{}
	if err := e.addTarget(0, []labels.Labels{ls}); err != nil {
		t.Fatal(err)
	}
	if err := e.addRow(0, &workload.Row{T: 5, Values: []float64{1.5}}); err != nil {
		t.Fatal(err)
	}
	b, _ := e.flush()
	if want := "a\\ b,k\\=1=v\\ 1\\,2 c\\,d=1.5 5\n"; !bytes.Equal(b.data, []byte(want)) {
		t.Fatalf("%q, want %q", b.data, want)
	}
	got := decodeLP(t, b.data)
	if want := labels.FromStrings("__name__", "a b_c,d", "k=1", "v 1,2").String(); len(got) != 1 || got[0].series != want {
		t.Fatalf("decoded %+v, want %s", got, want)
	}
	if err := e.addTarget(1, []labels.Labels{labels.FromStrings("__name__", "m_x", "a", `tail\`)}); err == nil {
		t.Fatal("a tag value ending in a backslash was accepted")
	}
}
