package pointio

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseType(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Type
		err  string
	}{
		{in: "int8", want: Int8},
		{in: "int16", want: Int16},
		{in: "int32", want: Int32},
		{in: "int64", want: Int64},
		{in: "float32", want: Float32},
		{in: "float64", want: Float64},
		{in: "Int8", err: `unknown value type "Int8": want int8, int16, int32, int64, float32 or float64`},
		{in: "double", err: `unknown value type "double": want int8, int16, int32, int64, float32 or float64`},
		{in: "", err: `unknown value type "": want int8, int16, int32, int64, float32 or float64`},
	} {
		got, err := ParseType(tc.in)
		if tc.err != "" {
			require.EqualError(t, err, tc.err, tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		require.Equal(t, tc.want, got, tc.in)
		require.Equal(t, tc.in, got.String())
	}
	require.Equal(t, "Type(0)", Type(0).String())
	require.Equal(t, "Type(7)", Type(7).String())
}

// TestTypeNumbers pins the numbers of the types, which sensor metadata
// persists.
func TestTypeNumbers(t *testing.T) {
	require.Equal(t, []Type{1, 2, 3, 4, 5, 6}, []Type{Int8, Int16, Int32, Int64, Float32, Float64})
}

func TestTypeFit(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	for _, tc := range []struct {
		typ  Type
		in   float64
		want float64
		err  string
	}{
		{typ: Int8, in: 127, want: 127},
		{typ: Int8, in: -128, want: -128},
		{typ: Int8, in: 128, err: "value 128 does not fit int8 (-128 to 127)"},
		{typ: Int8, in: -129, err: "value -129 does not fit int8 (-128 to 127)"},
		{typ: Int8, in: 300, err: "value 300 does not fit int8 (-128 to 127)"},
		{typ: Int8, in: 2.5, err: "value 2.5 does not fit int8: not an integer"},
		{typ: Int8, in: nan, err: "value NaN does not fit int8: not an integer"},
		{typ: Int8, in: inf, err: "value +Inf does not fit int8: not an integer"},
		{typ: Int8, in: math.Copysign(0, -1), want: 0},
		{typ: Int16, in: 32767, want: 32767},
		{typ: Int16, in: 32768, err: "value 32768 does not fit int16 (-32768 to 32767)"},
		{typ: Int16, in: -32769, err: "value -32769 does not fit int16 (-32768 to 32767)"},
		{typ: Int32, in: math.MaxInt32, want: math.MaxInt32},
		{typ: Int32, in: math.MinInt32, want: math.MinInt32},
		{typ: Int32, in: math.MaxInt32 + 1, err: "value 2147483648 does not fit int32 (-2147483648 to 2147483647)"},
		{typ: Int64, in: math.MinInt64, want: math.MinInt64},
		{typ: Int64, in: 1 << 62, want: 1 << 62},
		{typ: Int64, in: -math.MinInt64, err: "value 9223372036854775808 does not fit int64 (-9223372036854775808 to 9223372036854775807)"},
		{typ: Int64, in: 1e-300, err: "value 1e-300 does not fit int64: not an integer"},
		{typ: Float32, in: 0.1, want: float64(float32(0.1))},
		{typ: Float32, in: math.MaxFloat32, want: math.MaxFloat32},
		{typ: Float32, in: -math.MaxFloat32, want: -math.MaxFloat32},
		{typ: Float32, in: 1e39, err: "value 1e+39 does not fit float32 (magnitude above 3.4028234663852886e+38)"},
		{typ: Float32, in: -1e39, err: "value -1e+39 does not fit float32 (magnitude above 3.4028234663852886e+38)"},
		{typ: Float32, in: 1e-50, want: 0},
		{typ: Float32, in: inf, want: inf},
		{typ: Float32, in: -inf, want: -inf},
		{typ: Float64, in: 1e300, want: 1e300},
		{typ: Float64, in: -inf, want: -inf},
		{typ: Type(9), in: 1, err: "unknown value type Type(9)"},
	} {
		got, err := tc.typ.Fit(tc.in)
		if tc.err != "" {
			require.EqualError(t, err, tc.err, "%s %v", tc.typ, tc.in)
			continue
		}
		require.NoError(t, err, "%s %v", tc.typ, tc.in)
		require.Equal(t, math.Float64bits(tc.want), math.Float64bits(got), "%s %v: got %v", tc.typ, tc.in, got)
	}
	for _, typ := range []Type{Float32, Float64} {
		got, err := typ.Fit(nan)
		require.NoError(t, err)
		require.True(t, math.IsNaN(got), typ)
	}
}
