package vmformat

import (
	"errors"
	"io"
	"math"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/stretchr/testify/require"
)

var (
	staleNaN  = math.Float64frombits(StaleNaNBits)
	normalNaN = math.Float64frombits(NormalNaNBits)
	payload   = math.Float64frombits(0x7ff8000000000abc)
	negNaN    = math.Float64frombits(0xfff8000000000001)
	negZero   = math.Copysign(0, -1)
	tenth     = 0.1 // a variable: 0.1 + 0.2 in constants is exactly 0.3
)

func TestAppendJSONValue(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		json string
		csv  string
	}{
		{0, "0", "0"},
		{negZero, "-0", "-0"},
		{1, "1", "1"},
		{0.5, "0.5", "0.5"},
		{-1.25e-7, "-1.25e-7", "-1.25e-7"},
		{1e21, "1e+21", "1e+21"},
		{1e20, "100000000000000000000", "100000000000000000000"},
		{1700000000, "1700000000", "1700000000"},
		{tenth + 0.2, "0.30000000000000004", "0.30000000000000004"},
		{math.MaxFloat64, "1.7976931348623157e+308", "1.7976931348623157e+308"},
		{math.SmallestNonzeroFloat64, "5e-324", "5e-324"},
		{math.Inf(1), `"Infinity"`, "+Inf"},
		{math.Inf(-1), `"-Infinity"`, "-Inf"},
		{normalNaN, "null", "NaN"},
		{staleNaN, `"StaleNaN"`, "StaleNaN"},
		{payload, `"NaN:0x7ff8000000000abc"`, "NaN:0x7ff8000000000abc"},
		{negNaN, `"NaN:0xfff8000000000001"`, "NaN:0xfff8000000000001"},
	} {
		require.Equal(t, tc.json, string(AppendJSONValue(nil, tc.v)), "%x", math.Float64bits(tc.v))
		require.Equal(t, tc.csv, string(AppendCSVValue(nil, tc.v)), "%x", math.Float64bits(tc.v))
		v, err := parseCSVValue([]byte(tc.csv))
		require.NoError(t, err)
		require.Equal(t, math.Float64bits(tc.v), math.Float64bits(v), tc.csv)
	}
}

func TestAppendJSONLine(t *testing.T) {
	lset := labels.FromStrings("__name__", "up", "Job", "a\"b\\c\nd\te\x01", "zone", "ü€", "bad", "\xff")
	got := AppendJSONLine([]byte("x"), lset, []int64{1700000000000, -5}, []float64{1, staleNaN})
	require.Equal(t, `x{"metric":{"__name__":"up","Job":"a\"b\\c\nd\te\u0001","bad":"\ufffd","zone":"ü€"},"values":[1,"StaleNaN"],"timestamps":[1700000000000,-5]}`+"\n", string(got))

	// A series without a name starts with its first label.
	got = AppendJSONLine(nil, labels.FromStrings("a", "1"), []int64{0}, []float64{0})
	require.Equal(t, `{"metric":{"a":"1"},"values":[0],"timestamps":[0]}`+"\n", string(got))
}

// decodeAll reads every line of in: the series as JSON lines re-encoded,
// and the line errors.
func decodeAll(t testing.TB, in string, lim Limits) (out []string, errs []string, err error) {
	t.Helper()
	d := NewJSONDecoder(strings.NewReader(in), lim)
	for d.Next() {
		if e := d.LineErr(); e != nil {
			errs = append(errs, e.Error())
			continue
		}
		s := d.Series()
		out = append(out, string(AppendJSONLine(nil, s.Labels, s.Timestamps, s.Values)))
	}
	return out, errs, d.Err()
}

func TestJSONDecoder(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want []string // re-encoded series
		errs []string
	}{
		{
			name: "export of VictoriaMetrics",
			in: `{"metric":{"__name__":"up","job":"node","instance":"a:9100"},"values":[0,1,1],"timestamps":[1700000000000,1700000015000,1700000030000]}` + "\n" +
				`{"metric":{"__name__":"r"},"values":[null,"Infinity","-Infinity",1.5e3],"timestamps":[1,2,3,4]}` + "\r\n",
			want: []string{
				`{"metric":{"__name__":"up","instance":"a:9100","job":"node"},"values":[0,1,1],"timestamps":[1700000000000,1700000015000,1700000030000]}` + "\n",
				`{"metric":{"__name__":"r"},"values":[null,"Infinity","-Infinity",1500],"timestamps":[1,2,3,4]}` + "\n",
			},
		},
		{
			name: "older exports and other spellings",
			in: `{"values":[NaN,+Inf,-Inf,"inf","-inf","nan","NaN","null",Infinity,"StaleNaN",stalenan,"NaN:0x7FF8000000000ABC",NaN:0xfff8000000000001,-0],` +
				`"timestamps":[1,2,3,4,5,6,7,8,9,10,11,12,13,14], "metric" : { "a" : "b" , "__name__":"m","empty":""}, "extra":{"x":[1,{"y":null}],"z":true}}`,
			want: []string{
				`{"metric":{"__name__":"m","a":"b"},"values":[null,"Infinity","-Infinity","Infinity","-Infinity",null,null,null,"Infinity","StaleNaN","StaleNaN","NaN:0x7ff8000000000abc","NaN:0xfff8000000000001",-0],"timestamps":[1,2,3,4,5,6,7,8,9,10,11,12,13,14]}` + "\n",
			},
		},
		{
			name: "escapes",
			in:   `{"metric":{"__name__":"m","l":"\u00fc\ud83d\ude00\ud800x\"\/\b\f\n\r\t"},"values":[1],"timestamps":[1]}`,
			want: []string{`{"metric":{"__name__":"m","l":"ü😀` + "\uFFFD" + `x\"/\b\f\n\r\t"},"values":[1],"timestamps":[1]}` + "\n"},
		},
		{
			name: "blank lines are skipped; bad lines do not stop the decoder",
			in: "\n  \n" +
				`{"metric":{"__name__":"m"},"values":[1,2],"timestamps":[1]}` + "\n" +
				`{"metric":{"__name__":"m"},"values":[1],"timestamps":[1.5]}` + "\n" +
				`{"metric":{"__name__":"m"},"values":["x"],"timestamps":[1]}` + "\n" +
				`{"metric":{"__name__":"m"},"values":[01],"timestamps":[1]}` + "\n" +
				`{"metric":{"__name__":"m","job":3},"values":[1],"timestamps":[1]}` + "\n" +
				`{"metric":{"__name__":"m"},"values":[1],"timestamps":[1]} x` + "\n" +
				`{"metric":{},"values":[1],"timestamps":[1]}` + "\n" +
				`{"metric":{"a":"1","a":"2"},"values":[1],"timestamps":[1]}` + "\n" +
				`{"metric":{"a":"1"},"values":[],"timestamps":[]}` + "\n" +
				`{"metric":{"a":"1"},"values":[1],"timestamps":[99999999999999999999]}` + "\n" +
				`{"metric":{"a":"1"},"values":[1e400],"timestamps":[1]}` + "\n" +
				`{"metric":{"a":"1"},"values":["NaN:0x1"],"timestamps":[1]}` + "\n" +
				`{"metric":{"a":"1"},"values":[1]}` + "\n" +
				`{"metric":{"a":"1"},"metric":{"a":"1"},"values":[1],"timestamps":[1]}` + "\n" +
				`{"metric":{"a":"1` + "\x01" + `"},"values":[1],"timestamps":[1]}` + "\n" +
				`{"metric":{"a":"` + "\xff" + `"},"values":[1],"timestamps":[1]}` + "\n" +
				`{"metric":{"a":"1"},"values":[1],"timestamps":[1],"x":[[[` + "\n" +
				`{}` + "\n" +
				`[1]` + "\n" +
				`{"metric":{"a":"1"},"values":[2],"timestamps":[2]}`,
			want: []string{`{"metric":{"a":"1"},"values":[2],"timestamps":[2]}` + "\n"},
			errs: []string{
				`line 3 col 56 (byte 59): timestamps: 1 timestamps for 2 values`,
				`line 4 col 55 (byte 118): timestamps[0]: invalid timestamp "1.5": want integer milliseconds within int64`,
				`line 5 col 38 (byte 161): values[0]: string "x" is not a value: want a number, null, "Infinity", "-Infinity", "StaleNaN" or "NaN:0x<hex>"`,
				`line 6 col 38 (byte 221): values[0]: invalid number "01"`,
				`line 7 col 33 (byte 275): metric["job"]: label value is not a string`,
				`line 8 col 59 (byte 367): data after the object`,
				`line 9 col 11 (byte 379): metric: no labels`,
				`line 10 col 11 (byte 423): metric: label "a" appears twice`,
				`line 11 col 30 (byte 501): values: empty array`,
				`line 12 col 48 (byte 568): timestamps[0]: invalid timestamp "99999999999999999999": want integer milliseconds within int64`,
				`line 13 col 31 (byte 621): values[0]: number "1e400" is out of float64 range`,
				`line 14 col 31 (byte 676): values[0]: NaN payload "NaN:0x1": not a NaN bit pattern`,
				`line 15 (byte 705): missing key "timestamps"`,
				`line 16 col 21 (byte 759): key "metric" appears twice`,
				`line 17 col 18 (byte 826): metric["a"]: control character 0x01 in a string`,
				`line 18 col 17 (byte 877): metric["a"]: invalid UTF-8 in a string`,
				`line 19 col 58 (byte 969): unexpected end of line`,
				`line 20 col 2 (byte 971): empty object: want metric, values and timestamps`,
				`line 21 col 1 (byte 973): unexpected "[1]", want '{'`,
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errs, err := decodeAll(t, tc.in, Limits{})
			require.NoError(t, err)
			require.Equal(t, tc.want, out)
			require.Equal(t, tc.errs, errs)
		})
	}
}

func TestJSONDecoderLimits(t *testing.T) {
	lim := Limits{MaxLineBytes: 80, MaxLabels: 2, MaxLabelNameBytes: 3, MaxLabelValueBytes: 4}
	in := `{"metric":{"a":"1","b":"2"},"values":[1],"timestamps":[1]}` + "\n" +
		`{"metric":{"a":"1","b":"2","c":"3"},"values":[1],"timestamps":[1]}` + "\n" +
		`{"metric":{"abcd":"1"},"values":[1],"timestamps":[1]}` + "\n" +
		`{"metric":{"a":"12345"},"values":[1],"timestamps":[1]}` + "\n" +
		`{"metric":{"a":"1"},"values":[1,2,3,4,5,6,7,8,9,10,11,12,13],"timestamps":[1,2,3,4,5,6,7,8,9,10,11,12,13]}` + "\r\n" +
		`{"metric":{"a":"1"},"values":[3],"timestamps":[3]}`
	out, errs, err := decodeAll(t, in, lim)
	require.NoError(t, err)
	require.Equal(t, []string{
		`{"metric":{"a":"1","b":"2"},"values":[1],"timestamps":[1]}` + "\n",
		`{"metric":{"a":"1"},"values":[3],"timestamps":[3]}` + "\n",
	}, out)
	require.Equal(t, []string{
		`line 2 col 28 (byte 86): metric["c"]: more than 2 labels`,
		`line 3 col 12 (byte 137): metric: label name of 4 bytes is longer than the limit of 3`,
		`line 4 col 16 (byte 195): metric["a"]: label value of 5 bytes is longer than the limit of 4`,
		`line 5 (byte 235): line longer than the limit of 80 bytes`,
	}, errs)
}

func TestJSONDecoderReadError(t *testing.T) {
	in := `{"metric":{"a":"1"},"values":[1],"timestamps":[1]}` + "\n" + `{"metric":{"a":"1"},"val`
	boom := errors.New("boom")
	d := NewJSONDecoder(io.MultiReader(strings.NewReader(in), iotest.ErrReader(boom)), Limits{})
	require.True(t, d.Next())
	require.NoError(t, d.LineErr())
	require.False(t, d.Next())
	var re *ReadError
	require.ErrorAs(t, d.Err(), &re)
	require.ErrorIs(t, d.Err(), boom)
	require.Equal(t, ReadError{Line: 2, Offset: 51, Partial: true, Err: boom}, *re)
	require.Equal(t, "read line 2 (byte 51): boom", re.Error())
	require.False(t, d.Next(), "the error is sticky")
}

func TestJSONRoundTripBits(t *testing.T) {
	vs := []float64{0, negZero, 1, -1, math.Pi, math.MaxFloat64, -math.MaxFloat64, math.SmallestNonzeroFloat64,
		1e-7, 1e21, 123456789012345678, math.Inf(1), math.Inf(-1), normalNaN, staleNaN, payload, negNaN,
		math.Float64frombits(0x7ff0000000000001), math.Float64frombits(0xffffffffffffffff)}
	ts := make([]int64, len(vs))
	for i := range ts {
		ts[i] = math.MinInt64 + int64(i)
	}
	ts[len(ts)-1] = math.MaxInt64
	line := AppendJSONLine(nil, labels.FromStrings("__name__", "m"), ts, vs)
	d := NewJSONDecoder(strings.NewReader(string(line)), Limits{})
	require.True(t, d.Next())
	require.NoError(t, d.LineErr())
	s := d.Series()
	require.Equal(t, ts, s.Timestamps)
	require.Len(t, s.Values, len(vs))
	for i, v := range vs {
		require.Equal(t, math.Float64bits(v), math.Float64bits(s.Values[i]), "value %d", i)
	}
	require.False(t, d.Next())
	require.NoError(t, d.Err())
}
