package jsonenc

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

func TestAppendString(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", `""`},
		{"a<b>&", `"a<b>&"`},
		{"q\"\\", `"q\"\\"`},
		{"\n\r\t\b\f\x00\x1f\x7f", `"\n\r\t\b\f\u0000\u001f` + "\x7f" + `"`},
		{"é\xffx", `"é\ufffdx"`},
		{"\xe2\x82", `"\ufffd\ufffd"`}, // a cut rune: one U+FFFD a byte
		{"ü€😀", `"ü€😀"`},
		{"\u2028", "\"\u2028\""},
	} {
		got := AppendString([]byte("x"), tc.in)
		require.Equal(t, "x"+tc.want, string(got), "%q", tc.in)
		var back string
		require.NoError(t, json.Unmarshal(got[1:], &back))
	}
}

func TestAppendFloat(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		want string
	}{
		{0, "0"},
		{math.Copysign(0, -1), "-0"},
		{1, "1"},
		{0.5, "0.5"},
		{1e-6, "0.000001"},
		{1e-7, "1e-7"},
		{-1.25e-7, "-1.25e-7"},
		{1e-10, "1e-10"},
		{1e20, "100000000000000000000"},
		{1e21, "1e+21"},
		{1 << 60, "1152921504606847000"},
		{1700000000, "1700000000"},
		{math.MaxFloat64, "1.7976931348623157e+308"},
		{math.SmallestNonzeroFloat64, "5e-324"},
	} {
		require.Equal(t, "x"+tc.want, string(AppendFloat([]byte("x"), tc.v)), "%x", math.Float64bits(tc.v))
	}
}

// FuzzAppendString checks invariant 1 against encoding/json.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain", "a\"b\\c\nd\te\x01\b\f", "<&>", "é\xff", "\xe2\x82", "\u2028\u2029", "😀"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := AppendString(nil, s)
		require.Equal(t, got, AppendString(nil, s), "deterministic")
		var back string
		require.NoError(t, json.Unmarshal(got, &back), "%q", got)
		want, err := json.Marshal(s)
		require.NoError(t, err)
		var wantBack string
		require.NoError(t, json.Unmarshal(want, &wantBack))
		require.Equal(t, wantBack, back, "decodes as encoding/json's text decodes")
		if utf8.ValidString(s) && !strings.ContainsAny(s, "\u2028\u2029") {
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			require.NoError(t, enc.Encode(s))
			require.Equal(t, strings.TrimSuffix(buf.String(), "\n"), string(got))
		}
	})
}

// FuzzAppendFloat checks invariant 2 against encoding/json.
func FuzzAppendFloat(f *testing.F) {
	for _, v := range []float64{0, math.Copysign(0, -1), 1e-7, 1e21, 1 << 60, math.MaxFloat64, math.SmallestNonzeroFloat64, 0.1} {
		f.Add(math.Float64bits(v))
	}
	f.Fuzz(func(t *testing.T, bits uint64) {
		v := math.Float64frombits(bits)
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return
		}
		want, err := json.Marshal(v)
		require.NoError(t, err)
		require.Equal(t, string(want), string(AppendFloat(nil, v)))
	})
}
