package carbon

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/stretchr/testify/require"
)

const now = int64(1_700_000_123_456)

func TestParseLine(t *testing.T) {
	long := strings.Repeat("a", 5000)
	for _, tc := range []struct {
		line string
		want Sample
		err  string // substring of the error; "" = no error
	}{
		// Carbon's accepted forms.
		{line: "a.b.c 1.5 1700000000", want: Sample{"a.b.c", 1700000000000, 1.5}},
		{line: "  a.b.c\t\t42   1700000000  \r", want: Sample{"a.b.c", 1700000000000, 42}},
		{line: "a.b 1e3 1700000000.25", want: Sample{"a.b", 1700000000250, 1000}},
		{line: "a.b 1_000 1_700_000_000", want: Sample{"a.b", 1700000000000, 1000}},
		{line: "a.b -inf 1700000000", want: Sample{"a.b", 1700000000000, math.Inf(-1)}},
		{line: "a.b Infinity 1700000000", want: Sample{"a.b", 1700000000000, math.Inf(1)}},
		{line: "a.b 1e400 1700000000", want: Sample{"a.b", 1700000000000, math.Inf(1)}},
		{line: "a.b .5 1700000000.", want: Sample{"a.b", 1700000000000, 0.5}},
		{line: "a.b +2. 1700000000", want: Sample{"a.b", 1700000000000, 2}},
		{line: "a.b 1 -1", want: Sample{"a.b", now, 1}},
		{line: "a.b 1 -1.9", want: Sample{"a.b", now, 1}},
		{line: "a.b 1 -0.5", want: Sample{"a.b", -500, 1}},
		{line: "a.b 1 -2", want: Sample{"a.b", -2000, 1}},
		{line: "a.b 1 0.0015", want: Sample{"a.b", 2, 1}},
		{line: "a.b 1 1.001", want: Sample{"a.b", 1001, 1}},
		{line: "~a.b 1 1", want: Sample{"a.b", 1000, 1}},
		{line: "caf\u00e9.\u20ac 1 1", want: Sample{"caf\u00e9.\u20ac", 1000, 1}},
		{line: "a\u00a0b 1 1", err: "more than 3 fields"}, // Python splits on NBSP too
		// Tags: sorted, last wins, "name" ignored, OpenMetrics form.
		{line: "a.b;env=prod;dc=eu 1 1", want: Sample{"a.b;dc=eu;env=prod", 1000, 1}},
		{line: "a.b;dc=x;dc=y 1 1", want: Sample{"a.b;dc=y", 1000, 1}},
		{line: "a.b;name=zzz;k=v=w 1 1", want: Sample{"a.b;k=v=w", 1000, 1}},
		{line: "a.b;a.b=1;a=2 1 1", want: Sample{"a.b;a.b=1;a=2", 1000, 1}}, // carbon sorts ";a.b=1" before ";a=2"
		{line: `a.b{env="prod",dc="e\"u"} 1 1`, want: Sample{`a.b;dc=e"u;env=prod`, 1000, 1}},
		{line: `a.b{env="p\\x"} 1 1`, want: Sample{`a.b;env=p\x`, 1000, 1}},
		{line: `~a.b{dc="x":,e="y"} 1 1`, want: Sample{"a.b;dc=x;e=y", 1000, 1}},
		// NaN values are dropped.
		{line: "a.b nan 1", err: "NaN"},
		{line: "a.b -NaN 1", err: "NaN"},
		// Rejected forms.
		{line: "", err: "0 fields"},
		{line: "a.b 1", err: "2 fields"},
		{line: "a.b 1 2 3", err: "line at byte 8: more than 3 fields"},
		{line: "a.b x 1", err: "value at byte 4"},
		{line: "a.b 1 x", err: "timestamp at byte 6"},
		{line: "a.b 0x10 1", err: "value at byte 4"},
		{line: "a.b 1__0 1", err: "value"},
		{line: "a.b 1_ 1", err: "value"},
		{line: "a.b _1 1", err: "value"},
		{line: "a.b 1e 1", err: "value"},
		{line: "a.b . 1", err: "value"},
		{line: "a.b 1 nan", err: "timestamp at byte 6: NaN is not a time"},
		{line: "a.b 1 inf", err: "timestamp at byte 6"},
		{line: "a.b 1 1e300", err: "out of range"},
		{line: "a.b\xff 1 1", err: "line at byte 3: not valid UTF-8"},
		{line: "~~~ 1 1", err: "path at byte 0: name \"~~~\" is empty"},
		{line: "a.b; 1 1", err: "tag at byte 4: segment \"\" is not tag=value"},
		{line: "a.b;x 1 1", err: "tag at byte 4"},
		{line: "a.b;=v 1 1", err: "tag at byte 4"},
		{line: "a.b;k= 1 1", err: "empty value"},
		{line: "a.b;k=v;k!x=1 1 1", err: "tag at byte 8: tag name \"k!x\" holds one of"},
		{line: "a.b;k^=1 1 1", err: "holds one of"},
		{line: "a.b;k=~v 1 1", err: "starts with '~'"},
		{line: "a.b;__name__=x 1 1", err: "reserved"},
		{line: "  a.b;__x=y 1 1", err: "tag at byte 6"},
		{line: ";k=v 1 1", err: "path at byte 0"},
		{line: `a{b="c"}{d="e"} 1 1`, err: "more than one '{'"},
		{line: `{b="c"} 1 1`, err: "no metric name"},
		{line: `a;b{c="d"} 1 1`, err: "path at byte 1: ';' in the name"},
		{line: `a{b=c"} 1 1`, err: "not tag=\"value\""},
		{line: `a{b=""} 1 1`, err: "not tag=\"value\""},
		{line: `a{b="c"d="e"} 1 1`, err: "want ','"},
		{line: `a{b="c\n"} 1 1`, err: `'\' not followed`},
		{line: long + " 1 1", err: "path at byte 0: 5000 bytes, over the limit of 4096"},
		{line: "a;" + strings.Repeat("k", 300) + "=v 1 1", err: "tag name of 300 bytes"},
		{line: "a;k=" + strings.Repeat("v", 2000) + " 1 1", err: "2000 bytes, over the limit of 1024"},
	} {
		got, err := ParseLine([]byte(tc.line), now, Limits{})
		if tc.err != "" {
			require.ErrorContains(t, err, tc.err, "%q", tc.line)
			continue
		}
		require.NoError(t, err, "%q", tc.line)
		require.Equal(t, tc.want, got, "%q", tc.line)
	}
}

func TestParseLineLimits(t *testing.T) {
	lim := Limits{MaxTags: 2, MaxPathLen: 20}
	_, err := ParseLine([]byte("a;a=1;b=2 1 1"), now, lim)
	require.NoError(t, err)
	_, err = ParseLine([]byte("a;a=1;b=2;c=3 1 1"), now, lim)
	require.ErrorContains(t, err, "tag at byte 10: more than 2 tags")
	_, err = ParseLine([]byte("a;a=1;a=2;a=3 1 1"), now, lim)
	require.NoError(t, err, "a repeated tag counts once")
	_, err = ParseLine([]byte("abcdefghijklmnopqrstu 1 1"), now, lim)
	require.ErrorContains(t, err, "21 bytes")
	var pe *ParseError
	require.True(t, errors.As(err, &pe))
	require.Equal(t, "path", pe.Field)
}

func TestLabels(t *testing.T) {
	for path, want := range map[string]labels.Labels{
		"a.b.c":              labels.FromStrings("__name__", "a.b.c"),
		"a.b;dc=eu;env=prod": labels.FromStrings("__name__", "a.b", "dc", "eu", "env", "prod"),
		"a.b;a.b=1;a=2":      labels.FromStrings("__name__", "a.b", "a", "2", "a.b", "1"),
		"a;k=v=w":            labels.FromStrings("__name__", "a", "k", "v=w"),
	} {
		require.Equal(t, want, Labels(path), path)
	}
}

func TestParsePyFloat(t *testing.T) {
	for in, want := range map[string]float64{
		"0": 0, "-0": math.Copysign(0, -1), "1.": 1, ".1": .1, "1_0.0_1": 10.01, "1E+2": 100, "1e-2": 0.01,
		"+INF": math.Inf(1), "-Infinity": math.Inf(-1), "1e-400": 0,
	} {
		got, ok := parsePyFloat([]byte(in))
		require.True(t, ok, in)
		require.Equal(t, math.Float64bits(want), math.Float64bits(got), in)
	}
	for _, in := range []string{"", "+", "-", ".", "e1", "1e", "1e+", "0x1p3", "1_", "1__0", "_1", "1._0", "1_.0", "infinit", "nana", "1.2.3", "١", " 1"} {
		_, ok := parsePyFloat([]byte(in))
		require.False(t, ok, in)
	}
}

func FuzzParseLine(f *testing.F) {
	for _, s := range []string{
		"a.b.c 1.5 1700000000", "a.b;env=prod;dc=eu 1 1", `a.b{env="prod",dc="e\"u"} 1 -1`,
		"~a 1_0 1e3", "a.b nan 1", "a\xff 1 1", "a;k=v;k!x=1 1 1", "a{b=\"c\"}{ 1 1", "  \t\r",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		s1, err1 := ParseLine(line, now, Limits{})
		s2, err2 := ParseLine(line, now, Limits{})
		require.Equal(t, err1 == nil, err2 == nil, "not deterministic")
		if err1 != nil {
			require.Equal(t, err1.Error(), err2.Error())
			return
		}
		require.Equal(t, s1.T, s2.T)
		require.Equal(t, math.Float64bits(s1.V), math.Float64bits(s2.V))
		require.Equal(t, s1.Path, s2.Path)
		require.False(t, math.IsNaN(s1.V), "NaN value accepted")
		// Round trip: the normalized path is valid labels and, without '{', a
		// fixed point; printed back as a line, it parses to the same sample.
		lset := Labels(s1.Path)
		require.Equal(t, s1.Path[:len(lset.Get(labels.MetricName))], lset.Get(labels.MetricName))
		lset.Range(func(l labels.Label) {
			require.NotEmpty(t, l.Name)
			require.NotEmpty(t, l.Value)
		})
		if !strings.Contains(s1.Path, "{") {
			p, err := NormalizePath([]byte(s1.Path), Limits{})
			require.NoError(t, err)
			require.Equal(t, s1.Path, p)
		}
	})
}

func TestCompareTags(t *testing.T) {
	words := []string{"", "a", "a.b", "a=", "ab", "b", "=", "a=b", "\xff", "é"}
	sign := func(x int) int { return min(max(x, -1), 1) }
	for _, an := range words {
		for _, av := range words {
			for _, bn := range words {
				for _, bv := range words {
					want := strings.Compare(";"+an+"="+av, ";"+bn+"="+bv)
					got := compareTags(tag{[]byte(an), []byte(av)}, tag{[]byte(bn), []byte(bv)})
					require.Equal(t, want, sign(got), "%q=%q vs %q=%q", an, av, bn, bv)
				}
			}
		}
	}
}
