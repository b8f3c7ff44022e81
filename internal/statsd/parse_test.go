package statsd

import (
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/stretchr/testify/require"
)

// pm is a parsed metric in comparable form.
type pm struct {
	Name   string
	Type   Type
	Value  float64
	Delta  bool
	Member string
	Rate   float64
	Tags   string // name=value,...
}

func toPM(m *Metric) pm {
	var tags []string
	for _, t := range m.Tags {
		tags = append(tags, string(t.Name)+"="+string(t.Value))
	}
	return pm{Name: string(m.Name), Type: m.Type, Value: m.Value, Delta: m.Delta, Member: string(m.Member), Rate: m.Rate, Tags: strings.Join(tags, ",")}
}

type perr struct {
	line, offset int
	msg          string // substring of the error
}

func parseAll(p *Parser, packet string) (ms []pm, errs []perr, n, skipped int) {
	n, skipped = p.ParsePacket([]byte(packet), func(m *Metric) { ms = append(ms, toPM(m)) }, func(e *ParseError) {
		errs = append(errs, perr{e.Line, e.Offset, e.Error()})
	})
	return
}

func TestParsePacket(t *testing.T) {
	f := func(packet string, want []pm, wantErrs ...perr) {
		t.Helper()
		got, errs, n, _ := parseAll(NewParser(Limits{}, false), packet)
		require.Equal(t, want, got, "packet %q", packet)
		require.Equal(t, len(want), n)
		require.Len(t, errs, len(wantErrs), "packet %q: errors %v", packet, errs)
		for i, e := range wantErrs {
			require.Equal(t, e.line, errs[i].line, "error %d: %s", i, errs[i].msg)
			require.Equal(t, e.offset, errs[i].offset, "error %d: %s", i, errs[i].msg)
			require.Contains(t, errs[i].msg, e.msg)
		}
	}
	// docs/metric_types.md
	f("gorets:1|c", []pm{{Name: "gorets", Type: Counter, Value: 1, Rate: 1}})
	f("gorets:1|c|@0.1", []pm{{Name: "gorets", Type: Counter, Value: 1, Rate: 0.1}})
	f("glork:320|ms|@0.1", []pm{{Name: "glork", Type: Timer, Value: 320, Rate: 0.1}})
	f("gaugor:333|g", []pm{{Name: "gaugor", Type: Gauge, Value: 333, Rate: 1}})
	f("gaugor:-10|g", []pm{{Name: "gaugor", Type: Gauge, Value: -10, Delta: true, Rate: 1}})
	f("gaugor:+4|g", []pm{{Name: "gaugor", Type: Gauge, Value: 4, Delta: true, Rate: 1}})
	f("uniques:765|s", []pm{{Name: "uniques", Type: Set, Member: "765", Rate: 1}})
	f("gorets:1|c\nglork:320|ms\ngaugor:333|g\nuniques:765|s", []pm{
		{Name: "gorets", Type: Counter, Value: 1, Rate: 1},
		{Name: "glork", Type: Timer, Value: 320, Rate: 1},
		{Name: "gaugor", Type: Gauge, Value: 333, Rate: 1},
		{Name: "uniques", Type: Set, Member: "765", Rate: 1},
	})
	// Empty lines, CRLF, a trailing newline.
	f("\na:1|c\r\n\r\n\nb:2|h\n", []pm{{Name: "a", Type: Counter, Value: 1, Rate: 1}, {Name: "b", Type: Timer, Value: 2, Rate: 1}})
	// Multiple values per line (statsd's stats.js), each with its rate.
	f("a:1|c:2|c|@0.5:3|ms", []pm{
		{Name: "a", Type: Counter, Value: 1, Rate: 1},
		{Name: "a", Type: Counter, Value: 2, Rate: 0.5},
		{Name: "a", Type: Timer, Value: 3, Rate: 1},
	})
	// DogStatsD tags, sorted by name; values may hold ':'.
	f("req:1|c|@0.5|#env:prod,az:b,url:http://x", []pm{{Name: "req", Type: Counter, Value: 1, Rate: 0.5, Tags: "az=b,env=prod,url=http://x"}})
	f("req:1:2|c|#a:b", nil, perr{1, 5, `no '|type' after the value "1"`})
	// Sanitized names.
	f("a b\t\tc/d*e:1|c", []pm{{Name: "a_b_c-de", Type: Counter, Value: 1, Rate: 1}})
	// Numbers.
	f("a:.5|ms\na:5.|ms\na:-1e-3|ms\na:+2E2|c", []pm{
		{Name: "a", Type: Timer, Value: 0.5, Rate: 1},
		{Name: "a", Type: Timer, Value: 5, Rate: 1},
		{Name: "a", Type: Timer, Value: -0.001, Rate: 1},
		{Name: "a", Type: Counter, Value: 200, Rate: 1},
	})

	// Malformed lines are refused whole, with their line and byte; the
	// others go on.
	f("gorets", nil, perr{1, 6, "no ':' after the metric name"})
	f("ok:1|c\n:1|c\nok:2|c", []pm{{Name: "ok", Type: Counter, Value: 1, Rate: 1}, {Name: "ok", Type: Counter, Value: 2, Rate: 1}},
		perr{2, 7, "empty metric name"})
	f("$$$:1|c", nil, perr{1, 0, "empty once sanitized"})
	f("a:1", nil, perr{1, 3, "no '|type'"})
	f("a:|c", nil, perr{1, 2, "not a finite decimal number"})
	f("a:1|x", nil, perr{1, 4, `unknown metric type "x"`})
	f("a:1|", nil, perr{1, 4, `unknown metric type ""`})
	f("a:1|c|0.1", nil, perr{1, 6, "not a sample rate"})
	f("a:1|c|@", nil, perr{1, 6, "not a sample rate"})
	f("a:1|c|@0", nil, perr{1, 6, "not a number in (0, 1]"})
	f("a:1|c|@1.5", nil, perr{1, 6, "not a number in (0, 1]"})
	f("a:1|c|@-0.5", nil, perr{1, 6, "not a number in (0, 1]"})
	f("a:1|c|@0.5|x", nil, perr{1, 10, `unexpected field "x"`})
	f("a:1|c:2|x", nil, perr{1, 8, `unknown metric type "x"`})
	f("a:1|c:", nil, perr{1, 6, "no '|type'"})
	f("a:0x10|c", nil, perr{1, 2, "not a finite decimal"})
	f("a:Infinity|g", nil, perr{1, 2, "not a finite decimal"})
	f("a:NaN|ms", nil, perr{1, 2, "not a finite decimal"})
	f("a:1e999|ms", nil, perr{1, 2, "not a finite decimal"})
	f("a: 1|c", nil, perr{1, 2, "not a finite decimal"})
	f("a:1e|c", nil, perr{1, 2, "not a finite decimal"})
	f("a:.|c", nil, perr{1, 2, "not a finite decimal"})
	f("a:|s", nil, perr{1, 2, "empty set member"})
	f("a:1|c|#", nil, perr{1, 7, "empty tag list"})
	f("a:1|c|#x", nil, perr{1, 7, "no name:value form"})
	f("a:1|c|#x:1,", nil, perr{1, 11, "empty tag"})
	f("a:1|c|#x:1,y:", nil, perr{1, 11, "empty value"})
	f("a:1|c|#x:1,:y", nil, perr{1, 11, "no name:value form"})
	f("a:1|c|#__name__:y", nil, perr{1, 7, "reserved"})
	f("a:1|c|#x:1,x:2", nil, perr{1, 11, `duplicate tag "x"`})
	f("a:1|c|#x:\xff", nil, perr{1, 7, "not valid UTF-8"})
}

func TestParseLimits(t *testing.T) {
	p := NewParser(Limits{MaxNameLen: 4, MaxMetricsPerPacket: 3, MaxTags: 2}, false)
	_, errs, _, _ := parseAll(p, "abcde:1|c")
	require.Equal(t, []perr{{1, 0, `statsd line 1, byte 0, metric "abcde": metric name of 5 bytes, more than 4`}}, errs)
	_, errs, _, _ = parseAll(p, "a:1|c|#x:1,y:2,z:3")
	require.Equal(t, []perr{{1, 15, `statsd line 1, byte 15, metric "a": more than 2 tags`}}, errs)

	// The budget: values past the third refuse the rest of the packet,
	// beginning with the whole line that overflows.
	ms, errs, n, skipped := parseAll(p, "a:1|c\nb:1|c\n\nc:1|c:2|c\nd:1|c\n\ne:1|c\n")
	require.Equal(t, 2, n)
	require.Len(t, ms, 2)
	require.Equal(t, 3, skipped, "lines c, d and e")
	require.Len(t, errs, 1)
	require.Equal(t, perr{4, 19, `statsd line 4, byte 19, metric "c": more than 3 metrics in one packet: the rest of the packet is refused`}, errs[0])

	// ParseLine: offsets in the line.
	err := p.ParseLine([]byte("ab:1|q\r"), func(*Metric) { t.Fatal("no metric expected") })
	require.EqualError(t, err, `statsd line 1, byte 5, metric "ab": unknown metric type "q" (want c, g, ms, h or s)`)
	var got []pm
	require.NoError(t, p.ParseLine([]byte("ab:1|c:2|g\r"), func(m *Metric) { got = append(got, toPM(m)) }))
	require.Equal(t, []pm{{Name: "ab", Type: Counter, Value: 1, Rate: 1}, {Name: "ab", Type: Gauge, Value: 2, Rate: 1}}, got)
}

func TestParseKeepNames(t *testing.T) {
	p := NewParser(Limits{}, true)
	ms, errs, _, _ := parseAll(p, "a b/é:1|c\n\xff:1|c")
	require.Equal(t, []pm{{Name: "a b/é", Type: Counter, Value: 1, Rate: 1}}, ms)
	require.Len(t, errs, 1)
	require.Contains(t, errs[0].msg, "not valid UTF-8")
}

func TestKeyRoundTrip(t *testing.T) {
	p := NewParser(Limits{}, false)
	var b batcher
	_, _ = p.ParsePacket([]byte("a.b:1|c|#z:1,a:x:y\nc:2|s\nd:3|g|#k:v"), b.add, func(e *ParseError) { t.Fatal(e) })
	rs := b.take()
	require.Len(t, rs, 3)
	name, tags := splitKey(rs[0].key)
	require.Equal(t, "a.b", name)
	require.Equal(t, "{a=\"x:y\", z=\"1\"}", labelsString(tags))
	require.Equal(t, "c", rs[1].key)
	require.Equal(t, "2", rs[1].member)
	require.Equal(t, "d\xffk\xfev", rs[2].key)
	require.Nil(t, b.take())
}

func labelsString(ls []labels.Label) string { return labels.New(ls...).String() }
