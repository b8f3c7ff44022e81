package statsd

import (
	"bytes"
	"math"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzParse: no input panics the parser or the aggregation behind it;
// parsing is deterministic (a reused parser gives what a fresh one
// gives); every metric passed on is well-formed; and a metric written
// back as a statsd line parses to itself.
//
//	go test -run '^$' -fuzz '^FuzzParse$' -fuzztime 10000x ./internal/statsd
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"gorets:1|c", "gorets:1|c|@0.1", "glork:320|ms|@0.1", "gaugor:333|g", "gaugor:-10|g", "gaugor:+4|g",
		"uniques:765|s", "gorets:1|c\nglork:320|ms\ngaugor:333|g\nuniques:765|s",
		"a:1|c:2|c|@0.5:3|ms", "req:1|c|@0.5|#env:prod,az:b,url:http://x", "a b/c:1|h\r\n",
		"a:1|c|#x:1,x:2", "a:1e999|ms", ":1|c", "a", "a:", "a:1|c|@", "\n\n", "a:1|c|#__name__:x",
		"x:.5e-3|g\ny:-.5|g", "_e{5,4}:title|text", "a:1|c|c:123", "a:1|c|T1656581400",
	} {
		f.Add([]byte(s), false)
	}
	f.Add([]byte("a\xffb:1|c|#k:\xfe"), true)
	f.Fuzz(func(t *testing.T, pkt []byte, keep bool) {
		lim := Limits{MaxNameLen: 64, MaxMetricsPerPacket: 32, MaxTags: 4}
		type out struct {
			ms    []pm
			lines []string // each metric written back as a line
			errs  []string
			n, s  int
		}
		run := func(p *Parser) out {
			var o out
			o.n, o.s = p.ParsePacket(pkt, func(m *Metric) {
				o.ms = append(o.ms, toPM(m))
				o.lines = append(o.lines, formatLine(m))
			}, func(e *ParseError) {
				if e.Offset < 0 || e.Offset > len(pkt) || e.Line < 1 {
					t.Fatalf("error outside the packet: %v", e)
				}
				o.errs = append(o.errs, e.Error())
			})
			return o
		}
		reused := NewParser(lim, keep)
		reused.ParsePacket([]byte("warm:1|c|#a:b,c:d\nup:2|s"), func(*Metric) {}, func(*ParseError) {})
		a, b := run(NewParser(lim, keep)), run(reused)
		if !equalOut(a.ms, b.ms) || len(a.errs) != len(b.errs) || a.n != b.n || a.s != b.s {
			t.Fatalf("not deterministic:\n%+v\n%+v", a, b)
		}
		for i := range a.errs {
			if a.errs[i] != b.errs[i] {
				t.Fatalf("errors differ: %q, %q", a.errs[i], b.errs[i])
			}
		}
		if a.n != len(a.ms) || a.n > lim.MaxMetricsPerPacket {
			t.Fatalf("%d metrics counted, %d passed on", a.n, len(a.ms))
		}

		p := NewParser(lim, keep)
		var bt batcher
		for i, m := range a.ms {
			checkMetric(t, m, keep)
			// Written back, it parses to itself.
			line := a.lines[i]
			var again []pm
			var lines []string
			if err := p.ParseLine([]byte(line), func(m *Metric) {
				again = append(again, toPM(m))
				lines = append(lines, formatLine(m))
			}); err != nil {
				t.Fatalf("%+v written as %q: %v", m, line, err)
			}
			if len(again) != 1 || !equalPM(again[0], m) || lines[0] != line {
				t.Fatalf("%+v written as %q parses to %+v", m, line, again)
			}
		}

		// Through the batcher, each metric's key names its series.
		NewParser(lim, keep).ParsePacket(pkt, bt.add, func(*ParseError) {})
		rs := bt.take()
		if len(rs) != len(a.ms) {
			t.Fatalf("%d recs of %d metrics", len(rs), len(a.ms))
		}
		for i, r := range rs {
			name, tags := splitKey(r.key)
			var ts []string
			for _, l := range tags {
				ts = append(ts, l.Name+"="+l.Value)
			}
			if name != a.ms[i].Name || strings.Join(ts, ",") != a.ms[i].Tags {
				t.Fatalf("key %q of %q", r.key, a.lines[i])
			}
			if r.member != a.ms[i].Member || r.typ != a.ms[i].Type {
				t.Fatalf("rec %+v of %q", r, a.lines[i])
			}
		}

		// The aggregation takes anything the parser passes on.
		cfg := Config{Percentiles: []float64{90, -10}, Histograms: []Histogram{{Bins: []float64{1, math.Inf(1)}}}, InternalStats: true}
		cfg.fill()
		acfg := cfg.aggConfig()
		agg := newAggregator(acfg)
		agg.addBatch(rs)
		var sn snapshot
		agg.snapshot([3]float64{1, 2, 3}, &sn)
		acfg.compute(&sn, &collector{acfg: acfg, got: map[string]float64{}})
	})
}

func equalPM(a, b pm) bool {
	// NaN never comes out of the parser; == is exact otherwise.
	return a == b
}

func equalOut(a, b []pm) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !equalPM(a[i], b[i]) {
			return false
		}
	}
	return true
}

func checkMetric(t *testing.T, m pm, keep bool) {
	t.Helper()
	if m.Name == "" || !utf8.ValidString(m.Name) {
		t.Fatalf("bad name %q", m.Name)
	}
	if !keep {
		if s := sanitize(nil, []byte(m.Name)); string(s) != m.Name {
			t.Fatalf("name %q is not sanitized", m.Name)
		}
	}
	if m.Type < Counter || m.Type > Set {
		t.Fatalf("bad type %v", m.Type)
	}
	if !(m.Rate > 0 && m.Rate <= 1) {
		t.Fatalf("rate %v", m.Rate)
	}
	if math.IsNaN(m.Value) || math.IsInf(m.Value, 0) {
		t.Fatalf("value %v", m.Value)
	}
	if (m.Type == Set) != (m.Member != "") {
		t.Fatalf("member %q of a %v", m.Member, m.Type)
	}
	if m.Delta && m.Type != Gauge {
		t.Fatalf("delta %v", m.Type)
	}
}

// formatLine writes m as a statsd line.
func formatLine(m *Metric) string {
	var b bytes.Buffer
	b.Write(m.Name)
	b.WriteByte(':')
	if m.Type == Set {
		b.Write(m.Member)
	} else {
		if m.Delta && !math.Signbit(m.Value) {
			b.WriteByte('+')
		}
		b.WriteString(strconv.FormatFloat(m.Value, 'g', -1, 64))
	}
	b.WriteByte('|')
	b.WriteString(map[Type]string{Counter: "c", Gauge: "g", Timer: "ms", Set: "s"}[m.Type])
	if m.Rate != 1 {
		b.WriteString("|@")
		b.WriteString(strconv.FormatFloat(m.Rate, 'g', -1, 64))
	}
	for i, t := range m.Tags {
		if i == 0 {
			b.WriteString("|#")
		} else {
			b.WriteByte(',')
		}
		b.Write(t.Name)
		b.WriteByte(':')
		b.Write(t.Value)
	}
	return b.String()
}
