package vmformat

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/stretchr/testify/require"
)

func TestParseCSVFormat(t *testing.T) {
	for _, tc := range []struct {
		spec string
		want string // canonical form, or the error
	}{
		{"1:time:unix_ms,2:metric:cpu,3:label:host", "1:time:unix_ms,2:metric:cpu,3:label:host"},
		{"3:label:host,1:metric:a,5:metric:b,2:time:custom:2006-01-02 15:04:05", "1:metric:a,2:time:custom:2006-01-02 15:04:05,3:label:host,5:metric:b"},
		{"2:label:__name__,1:metric:value,4:time:rfc3339", "1:metric:value,2:label:__name__,4:time:rfc3339"},
		{"1:metric:a", "1:metric:a"},
		{"", `csv format entry 1 "": want <column>:<type>:<name or time format>`},
		{"1:time:unix_s", `csv format "1:time:unix_s" has no metric column`},
		{"0:metric:a", `csv format entry 1 "0:metric:a": column must be a number from 1 to 65536`},
		{"x:metric:a", `csv format entry 1 "x:metric:a": column must be a number from 1 to 65536`},
		{"65537:metric:a", `csv format entry 1 "65537:metric:a": column must be a number from 1 to 65536`},
		{"1:metric:a,1:metric:b", `csv format entry 2 "1:metric:b": column 1 appears twice`},
		{"1:metric:a,2:time:unix_s,3:time:unix_ms", `csv format entry 3 "3:time:unix_ms": a second time column`},
		{"1:metric:a,2:time:unix_us", `csv format entry 2 "2:time:unix_us": unknown time format "unix_us": want unix_s, unix_ms, unix_ns, rfc3339 or custom:<Go layout>`},
		{"1:metric:a,2:time:custom:", `csv format entry 2 "2:time:custom:": empty layout in time format "custom:"`},
		{"1:metric:", `csv format entry 1 "1:metric:": empty metric name`},
		{"1:metric:a,2:label:", `csv format entry 2 "2:label:": empty label name`},
		{"1:metric:a,2:label:h,3:label:h", `csv format entry 3 "3:label:h": label "h" is already column 2`},
		{"1:metric:a,2:tag:h", `csv format entry 2 "2:tag:h": unknown type "tag": want time, metric or label`},
		{"1:metric:a,2:metric:b,3:label:__name__", `csv format "1:metric:a,2:metric:b,3:label:__name__": with a label:__name__ column, exactly one metric column`},
	} {
		f, err := ParseCSVFormat(tc.spec)
		if err != nil {
			require.Equal(t, tc.want, err.Error(), tc.spec)
			continue
		}
		require.Equal(t, tc.want, f.String(), tc.spec)
	}
}

func TestTimeFormat(t *testing.T) {
	for _, tc := range []struct {
		format string
		in     string
		want   int64  // ms
		err    string // of parse
		out    string // of append(want)
	}{
		{format: "unix_ms", in: "1700000000123", want: 1700000000123, out: "1700000000123"},
		{format: "unix_ms", in: "-5", want: -5, out: "-5"},
		{format: "unix_ms", in: "+5.9", want: 5, out: "5"},
		{format: "unix_ms", in: "-5.1", want: -6, out: "-6"},
		{format: "unix_ms", in: "9223372036854775807", want: math.MaxInt64, out: "9223372036854775807"},
		{format: "unix_ms", in: "-9223372036854775808", want: math.MinInt64, out: "-9223372036854775808"},
		{format: "unix_ms", in: "9223372036854775808", err: `invalid time "9223372036854775808" for format unix_ms: out of range`},
		{format: "unix_ms", in: "", err: `invalid time "" for format unix_ms: not a number`},
		{format: "unix_ms", in: "1e3", err: `invalid time "1e3" for format unix_ms: not a decimal number`},
		{format: "unix_ms", in: "1.", err: `invalid time "1." for format unix_ms: not a decimal number`},
		{format: "unix_s", in: "1700000000", want: 1700000000000, out: "1700000000"},
		{format: "unix_s", in: "1700000000.1239", want: 1700000000123, out: "1700000000"},
		{format: "unix_s", in: ".5", want: 500, out: "0"},
		{format: "unix_s", in: "-0.0001", want: -1, out: "-1"},
		{format: "unix_s", in: "9223372036854776", err: `invalid time "9223372036854776" for format unix_s: out of range`},
		{format: "unix_ns", in: "1700000000123456789", want: 1700000000123, out: "1700000000123000000"},
		{format: "unix_ns", in: "-1", want: -1, out: "-1000000"},
		{format: "unix_ns", in: "0", want: 0, out: "0"},
		{format: "unix_ns", in: "9223372036854775807000000", want: math.MaxInt64, out: "9223372036854775807000000"},
		{format: "rfc3339", in: "2023-11-14T22:13:20Z", want: 1700000000000, out: "2023-11-14T22:13:20Z"},
		{format: "rfc3339", in: "2023-11-14T23:13:20.1239+01:00", want: 1700000000123, out: "2023-11-14T22:13:20.123Z"},
		{format: "rfc3339", in: "1969-12-31T23:59:59.9995Z", want: -1, out: "1969-12-31T23:59:59.999Z"},
		{format: "rfc3339", in: "2023-11-14", err: `invalid time "2023-11-14" for format rfc3339`},
		{format: "custom:2006-01-02 15:04:05.000", in: "2023-11-14 22:13:20.123", want: 1700000000123, out: "2023-11-14 22:13:20.123"},
	} {
		name := tc.format + " " + tc.in
		f, err := parseTimeFormat(tc.format)
		require.NoError(t, err)
		got, err := f.parse([]byte(tc.in))
		if tc.err != "" {
			require.EqualError(t, err, tc.err, name)
			continue
		}
		require.NoError(t, err, name)
		require.Equal(t, tc.want, got, name)
		require.Equal(t, tc.out, string(f.append(nil, got)), name)
	}
}

// csvSamples formats decoded samples for comparison.
func csvSamples(ss []Sample) []string {
	var out []string
	for _, s := range ss {
		out = append(out, fmt.Sprintf("%s %d %s", s.Labels, s.T, AppendCSVValue(nil, s.V)))
	}
	return out
}

func TestCSVDecoder(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec string
		lim  Limits
		in   string
		want [][]string // samples per good record
		errs []string
	}{
		{
			name: "VictoriaMetrics' documented example",
			spec: "2:metric:ask,3:metric:bid,1:label:ticker,4:label:market",
			in:   "GOOG,1.23,4.56,NYSE\nMSFT,3.21,1.67,NASDAQ\n",
			want: [][]string{
				{`{__name__="ask", market="NYSE", ticker="GOOG"} 1000 1.23`, `{__name__="bid", market="NYSE", ticker="GOOG"} 1000 4.56`},
				{`{__name__="ask", market="NASDAQ", ticker="MSFT"} 1000 3.21`, `{__name__="bid", market="NASDAQ", ticker="MSFT"} 1000 1.67`},
			},
		},
		{
			name: "time, quotes, empty fields, extra columns, special values",
			spec: "1:time:unix_s,2:metric:m,3:label:host,4:metric:n",
			in: "1700000000,1,a,2,extra\r\n" +
				"1700000001,,\"b,\"\"c\"\"\",NaN\n" +
				"\n" +
				"1700000002.5,StaleNaN,,-Inf\n" +
				"1700000003,NaN:0x7ff8000000000abc,\"multi\nline\r\nvalue\",\n" +
				"1700000004,-0",
			want: [][]string{
				{`{__name__="m", host="a"} 1700000000000 1`, `{__name__="n", host="a"} 1700000000000 2`},
				{`{__name__="n", host="b,\"c\""} 1700000001000 NaN`},
				{`{__name__="m"} 1700000002500 StaleNaN`, `{__name__="n"} 1700000002500 -Inf`},
				{`{__name__="m", host="multi\nline\r\nvalue"} 1700000003000 NaN:0x7ff8000000000abc`},
				{`{__name__="m"} 1700000004000 -0`},
			},
		},
		{
			name: "name from the data",
			spec: "1:label:__name__,2:metric:fallback,3:time:unix_ms,4:label:job",
			in:   "up,1,5,a\n,0,6,b\n",
			want: [][]string{
				{`{__name__="up", job="a"} 5 1`},
				{`{__name__="fallback", job="b"} 6 0`},
			},
		},
		{
			name: "bad records do not stop the decoder",
			spec: "1:time:unix_ms,2:metric:m,3:label:l",
			lim:  Limits{MaxLineBytes: 40, MaxLabelValueBytes: 5},
			in: "x,1,a\n" + // 1
				"5,y,a\n" + // 2
				"5\n" + // 3
				"5,1,\"a\"b\n" + // 4
				"5,1,123456\n" + // 5
				"5,1,\"abc\n" + // 6
				"def\"\n" + // 7
				"5,1,\"" + strings.Repeat("x", 50) + "\n" + // 8
				",1,a\n" + // 9
				"5,1,\xff\n" + // 10
				"6,2,\"unterminated", // 11
			errs: []string{
				`line 1 col 1 (byte 0): column 1 (time): invalid time "x" for format unix_ms: not a decimal number`,
				`line 2 col 3 (byte 8): column 2 (metric "m"): invalid value "y": want a number, NaN, +Inf, -Inf, StaleNaN or NaN:0x<hex>`,
				`line 3 (byte 12): column 3 (label "l"): missing: the record has 1 columns`,
				`line 4 col 8 (byte 21): column 3 (label "l"): unexpected 'b' after the closing quote`,
				`line 5 col 5 (byte 27): column 3 (label "l"): label value of 6 bytes is longer than the limit of 5`,
				`line 6 col 5 (byte 38): column 3 (label "l"): label value of 7 bytes is longer than the limit of 5`,
				`line 8 (byte 48): line longer than the limit of 40 bytes`,
				`line 9 col 1 (byte 104): column 1 (time): invalid time "" for format unix_ms: not a number`,
				`line 10 col 5 (byte 113): column 3 (label "l"): invalid UTF-8 in a label value`,
				`line 11 col 5 (byte 119): column 3 (label "l"): quoted field without its closing quote`,
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := ParseCSVFormat(tc.spec)
			require.NoError(t, err)
			d := NewCSVDecoder(strings.NewReader(tc.in), f, tc.lim, 1000)
			var got [][]string
			var errs []string
			for d.Next() {
				if err := d.LineErr(); err != nil {
					errs = append(errs, err.Error())
					continue
				}
				got = append(got, csvSamples(d.Samples()))
			}
			require.NoError(t, d.Err())
			require.Equal(t, tc.want, got)
			require.Equal(t, tc.errs, errs)
		})
	}
}

func TestCSVDecoderLimitsOnFormat(t *testing.T) {
	f, err := ParseCSVFormat("1:metric:m,2:label:a,3:label:b")
	require.NoError(t, err)
	d := NewCSVDecoder(strings.NewReader("1,2,3\n"), f, Limits{MaxLabels: 2}, 0)
	require.False(t, d.Next())
	require.EqualError(t, d.Err(), "csv format has 2 label columns, more than the limit of 1 labels per series")
}

func TestCSVExport(t *testing.T) {
	for _, tc := range []struct {
		spec string
		want string // row, or the error
	}{
		{"__name__,__value__,__timestamp__:unix_ms,host", "up,1.5,1700000000123,\"a,b\"\n"},
		{"__timestamp__,__value__,job,missing", "1700000000123,1.5,\"x\"\"y\",\n"},
		{"__timestamp__:unix_s,__timestamp__:unix_ns,__timestamp__:rfc3339", "1700000000,1700000000123000000,2023-11-14T22:13:20.123Z\n"},
		{"__timestamp__:custom:Jan 2 2006 15:04:05.000 MST,__value__", "Nov 14 2023 22:13:20.123 UTC,1.5\n"},
		{"", "empty csv export format: want fields such as __name__,__value__,__timestamp__:unix_ms,<label>"},
		{"__name__,,__value__", "csv export field 2 is empty"},
		{"__timestamp__:unix_us", `csv export field 1 "__timestamp__:unix_us": unknown time format "unix_us": want unix_s, unix_ms, unix_ns, rfc3339 or custom:<Go layout>`},
	} {
		f, err := ParseCSVExportFormat(tc.spec)
		if err != nil {
			require.Equal(t, tc.want, err.Error(), tc.spec)
			continue
		}
		require.Equal(t, strings.Replace(tc.spec, "__timestamp__,", "__timestamp__:unix_ms,", 1), f.String())
		lset := labels.FromStrings("__name__", "up", "host", "a,b", "job", `x"y`)
		require.Equal(t, tc.want, string(AppendCSVRow(nil, f, lset, 1700000000123, 1.5)), tc.spec)
	}
}
