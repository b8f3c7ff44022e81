package ingest

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aerie-db/aerie/internal/vmformat"
)

// collect runs a reader and formats what it emitted and rejected.
func collect(t *testing.T, read func(emit func(*Sample), reject func(Rejection)) error) (samples, rejections []string) {
	t.Helper()
	err := read(func(s *Sample) {
		samples = append(samples, fmt.Sprintf("%d: %s %d %v", s.Line, s.Labels, s.T, s.V))
	}, func(r Rejection) {
		rejections = append(rejections, fmt.Sprintf("%s %d skipped=%v: %s", r.Reason, r.N, r.Skipped, r.Msg))
	})
	require.NoError(t, err)
	return samples, rejections
}

func TestReadInflux(t *testing.T) {
	in := "cpu,host=a usage=1.5,idle=2i 1700000000000000000\n" +
		"\n# comment\n" +
		"cpu,host=b usage=oops 1700000000000000000\n" +
		"svc,host=a status=\"up\",latency=3i 1700000001000000000\r\n" +
		strings.Repeat("x", 100) + "\n" +
		"mem free=1u\n" +
		"big v=9007199254740993i 1"
	samples, rejections := collect(t, func(emit func(*Sample), reject func(Rejection)) error {
		return ReadInflux(strings.NewReader(in), StreamOptions{Now: testNow, MaxLineBytes: 64}, emit, reject)
	})
	require.Equal(t, []string{
		`1: {__name__="cpu_usage", host="a"} 1700000000000 1.5`,
		`1: {__name__="cpu_idle", host="a"} 1700000000000 2`,
		`5: {__name__="svc_latency", host="a"} 1700000001000 3`,
		`7: {__name__="mem_free"} 1700000000789 1`,
	}, samples)
	require.Equal(t, []string{
		`parse_error 1 skipped=false: line 4 col 18 (byte 77): field value has unrecognized type (at "oops")`,
		`string_field 1 skipped=true: line 5: 1 fields skipped (string_field)`,
		`parse_error 1 skipped=false: line 6 (byte 157): line longer than the limit of 64 bytes`,
		`inexact_integer 1 skipped=false: line 8: field "v" of "big": integer 9007199254740993 is not exactly representable as float64`,
	}, rejections)

	err := ReadInflux(strings.NewReader(""), StreamOptions{InfluxPrecision: "xs"}, nil, nil)
	require.EqualError(t, err, `invalid precision "xs": want ns, u, ms, s, m or h`)
}

func TestReadExposition(t *testing.T) {
	defer func(n int) { chunkBytes = n }(chunkBytes)
	chunkBytes = 40 // a few lines per chunk: the line numbers go on across chunks
	now := testNow.UnixMilli()
	for _, tc := range []struct {
		name        string
		om          bool
		in          string
		samples     []string
		rejections  []string
		maxLineSize int
	}{
		{
			name: "text",
			in: "# HELP a A.\n# TYPE a counter\na{x=\"1\"} 1 1000\na{x=\"2\"} 2\n\n" +
				"bad{ 3\nb 4 2000\nc{x=\"multi\nline\"} 5 3000\nd\x00 6\ne 7 4000\r\n" + strings.Repeat("f", 80) + " 1\ng 8 5000",
			maxLineSize: 64,
			samples: []string{
				`3: {__name__="a", x="1"} 1000 1`,
				fmt.Sprintf(`4: {__name__="a", x="2"} %d 2`, now),
				`7: {__name__="b"} 2000 4`,
				"8: {__name__=\"c\", x=\"multi\\nline\"} 3000 5",
				`11: {__name__="e"} 4000 7`,
				`13: {__name__="g"} 5000 8`,
			},
			rejections: []string{
				`parse_error 1 skipped=false: line 6: expected label name, got "3" ("INVALID") while parsing: "bad{ 3"`,
				`parse_error 1 skipped=false: line 10 col 2 (byte 99): line holds a NUL byte`,
				`parse_error 1 skipped=false: line 12 (byte 113): line longer than the limit of 64 bytes`,
			},
		},
		{
			name: "a multi-line label in a body with CRLF",
			in:   "c{x=\"multi\nline\"} 5 3000\r\nd 6\r\ne 7 4000\r\n",
			samples: []string{
				"1: {__name__=\"c\", x=\"multi\\nline\"} 3000 5",
				fmt.Sprintf(`3: {__name__="d"} %d 6`, now),
				`4: {__name__="e"} 4000 7`,
			},
		},
		{
			name: "OpenMetrics",
			om:   true,
			in: "# TYPE a gauge\na 1 1\na 2 2\na 3 3\n# TYPE b counter\nb_total 4 4\nb_created 1 4\n" +
				"c{ 5\nc 6 6\n# EOF\n",
			samples: []string{
				`2: {__name__="a"} 1000 1`, `3: {__name__="a"} 2000 2`, `4: {__name__="a"} 3000 3`,
				`6: {__name__="b_total"} 4000 4`, `7: {__name__="b_created"} 4000 1`, `9: {__name__="c"} 6000 6`,
			},
			rejections: []string{`parse_error 1 skipped=false: line 8: expected label name, got " " ("INVALID") while parsing: "c{ "`},
		},
		{
			name:       "OpenMetrics without # EOF",
			om:         true,
			in:         "a 1 1\nb 2 1\n",
			samples:    []string{`1: {__name__="a"} 1000 1`, `2: {__name__="b"} 1000 2`},
			rejections: []string{`parse_error 1 skipped=false: line 3 (end of input): data does not end with # EOF`},
		},
		{
			name:       "OpenMetrics with data after # EOF",
			om:         true,
			in:         "a 1 1\n# EOF\n\nb 2 1\nc 3 1\n",
			samples:    []string{`1: {__name__="a"} 1000 1`},
			rejections: []string{`parse_error 1 skipped=false: line 3: unexpected data after # EOF`}, // even an empty line, as the handler (textparse) says
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			samples, rejections := collect(t, func(emit func(*Sample), reject func(Rejection)) error {
				return ReadExposition(strings.NewReader(tc.in), StreamOptions{Now: testNow, OpenMetrics: tc.om, MaxLineBytes: tc.maxLineSize}, emit, reject)
			})
			require.Equal(t, tc.samples, samples)
			require.Equal(t, tc.rejections, rejections)
		})
	}
}

// ReadJSONLines and ReadCSV read lines as the VictoriaMetrics import
// handlers do (the same loop): a bad line is one rejected sample and the
// reading goes on; every sample keeps its line.
func TestReadVMLines(t *testing.T) {
	json := `{"metric":{"__name__":"m","a":"1"},"values":[1,2],"timestamps":[1000,2000]}` + "\n\n" +
		`{"metric":{"__name__":"m"},"values":[x],"timestamps":[3000]}` + "\n" +
		`{"metric":{"__name__":"n"},"values":[3],"timestamps":[4000]}`
	samples, rejections := collect(t, func(emit func(*Sample), reject func(Rejection)) error {
		return ReadJSONLines(strings.NewReader(json), StreamOptions{}, emit, reject)
	})
	require.Equal(t, []string{
		`1: {__name__="m", a="1"} 1000 1`,
		`1: {__name__="m", a="1"} 2000 2`,
		`4: {__name__="n"} 4000 3`,
	}, samples)
	require.Equal(t, []string{`parse_error 1 skipped=false: line 3 col 38 (byte 114): values[0]: invalid value "x"`}, rejections)

	f, err := vmformat.ParseCSVFormat("1:label:host,2:metric:cpu,3:metric:mem")
	require.NoError(t, err)
	samples, rejections = collect(t, func(emit func(*Sample), reject func(Rejection)) error {
		return ReadCSV(strings.NewReader("a,1,2\nb,oops,3\nc,4,5\n"), f, StreamOptions{Now: testNow}, emit, reject)
	})
	require.Equal(t, []string{
		`1: {__name__="cpu", host="a"} 1700000000789 1`,
		`1: {__name__="mem", host="a"} 1700000000789 2`,
		`3: {__name__="cpu", host="c"} 1700000000789 4`,
		`3: {__name__="mem", host="c"} 1700000000789 5`,
	}, samples)
	require.Equal(t, []string{`parse_error 1 skipped=false: line 2 col 3 (byte 8): column 2 (metric "cpu"): invalid value "oops": want a number, NaN, +Inf, -Inf, StaleNaN or NaN:0x<hex>`}, rejections)
}

// ReadExposition must hand out what the handler commits (both keep the
// first of two samples with one series and timestamp), report as many
// problems, and be deterministic.
func FuzzReadExposition(f *testing.F) {
	f.Add([]byte("# TYPE m counter\nm{a=\"b\"} 1 1000\nbad{\nn 2\n"), false)
	f.Fuzz(func(t *testing.T, body []byte, om bool) {
		read := func() (map[string]uint64, int, []string) {
			got := map[string]uint64{}
			var lines []string
			rejected := 0
			err := ReadExposition(bytes.NewReader(body), StreamOptions{Now: testNow, OpenMetrics: om}, func(s *Sample) {
				require.Positive(t, s.Line)
				k := fmt.Sprintf("%s %d", s.Labels, s.T)
				if _, ok := got[k]; !ok {
					got[k] = math.Float64bits(s.V)
				}
				lines = append(lines, fmt.Sprint(s.Line))
			}, func(r Rejection) {
				require.Positive(t, r.Line)
				rejected += r.N
				lines = append(lines, r.Msg)
			})
			require.NoError(t, err)
			return got, rejected, lines
		}
		got, rejected, lines := read()
		got2, _, lines2 := read()
		require.Equal(t, lines, lines2, "not deterministic")
		require.Equal(t, got, got2)

		ra := &recordingAppendable{}
		var hk hook
		r := request{url: "/api/v1/import/prometheus", body: body}
		if om {
			r.header = map[string]string{"Content-Type": omType}
		}
		rec := serve(t, NewPromImportHandler(ra, Options{Metrics: hk.fn, Now: func() time.Time { return testNow }, BatchSamples: 1 << 30}), r)
		stored := ra.committed
		if stored == nil {
			stored = map[string]uint64{}
		}
		require.Equal(t, stored, got, "%s", rec.Body.String())
		parseErrors := hk.n[ReasonParse] + hk.n[ReasonNativeHistogram]
		require.Equal(t, parseErrors, rejected, "%s", rec.Body.String())
	})
}

func FuzzReadInflux(f *testing.F) {
	f.Add([]byte("cpu,host=a usage=1.5,idle=2i 1700000000000000000\nbad line\n"))
	f.Fuzz(func(t *testing.T, body []byte) {
		read := func() []string {
			var out []string
			err := ReadInflux(bytes.NewReader(body), StreamOptions{Now: testNow}, func(s *Sample) {
				require.Positive(t, s.Line)
				out = append(out, fmt.Sprintf("%d %s %d %x", s.Line, s.Labels, s.T, math.Float64bits(s.V)))
			}, func(r Rejection) {
				require.Positive(t, r.Line)
				require.Positive(t, r.N)
				out = append(out, r.Msg)
			})
			require.NoError(t, err)
			return out
		}
		require.Equal(t, read(), read(), "not deterministic")
	})
}
