package expr

import (
	"math"
	"sort"
)

// aggFunc reduces values (NaN = None) to one, NaN when graphite-web's
// would return None.
type aggFunc func(vs []float64) float64

func nonNull(vs []float64) []float64 {
	out := make([]float64, 0, len(vs))
	for _, v := range vs {
		if !isNull(v) {
			out = append(out, v)
		}
	}
	return out
}

// sumCount returns the sum and the number of the non-null values.
func sumCount(vs []float64) (t float64, n int) {
	for _, v := range vs {
		if !isNull(v) {
			t += v
			n++
		}
	}
	return t, n
}

func safeSum(vs []float64) float64 {
	t, n := sumCount(vs)
	if n == 0 {
		return null
	}
	return t
}

func safeAvg(vs []float64) float64 {
	t, n := sumCount(vs)
	if n == 0 {
		return null
	}
	return t / float64(n)
}

func safeMax(vs []float64) float64 {
	m, ok := 0.0, false
	for _, v := range vs {
		if !isNull(v) && (!ok || v > m) {
			m, ok = v, true
		}
	}
	if !ok {
		return null
	}
	return m
}

func safeMin(vs []float64) float64 {
	m, ok := 0.0, false
	for _, v := range vs {
		if !isNull(v) && (!ok || v < m) {
			m, ok = v, true
		}
	}
	if !ok {
		return null
	}
	return m
}

func safeLast(vs []float64) float64 {
	for i := len(vs) - 1; i >= 0; i-- {
		if !isNull(vs[i]) {
			return vs[i]
		}
	}
	return null
}

func safeLen(vs []float64) float64 {
	n := 0
	for _, v := range vs {
		if !isNull(v) {
			n++
		}
	}
	return float64(n)
}

func safeMedian(vs []float64) float64 {
	s := nonNull(vs)
	if len(s) == 0 {
		return null
	}
	sort.Float64s(s)
	mid := len(s) / 2
	if len(s)%2 == 0 {
		return (s[mid-1] + s[mid]) / 2
	}
	return s[mid]
}

func safeDiff(vs []float64) float64 {
	s := nonNull(vs)
	if len(s) == 0 {
		return null
	}
	t := s[0]
	for _, v := range s[1:] {
		t += -v
	}
	return t
}

func safeStdDev(vs []float64) float64 {
	avg := safeAvg(vs)
	if isNull(avg) {
		return null
	}
	t, n := 0.0, 0
	for _, v := range vs {
		if !isNull(v) {
			t += (v - avg) * (v - avg)
			n++
		}
	}
	return math.Sqrt(t / float64(n))
}

func safeAvgZero(vs []float64) float64 {
	if len(vs) == 0 {
		return null
	}
	t := 0.0
	for _, v := range vs {
		if !isNull(v) {
			t += v
		}
	}
	return t / float64(len(vs))
}

func safeMul(vs []float64) float64 {
	if len(vs) == 0 {
		return null
	}
	p := 1.0
	for _, v := range vs {
		if isNull(v) {
			return null
		}
		p *= v
	}
	return p
}

func safeRange(vs []float64) float64 {
	mx, mn := safeMax(vs), safeMin(vs)
	if isNull(mx) || isNull(mn) {
		return null
	}
	return mx - mn
}

// aggFuncs are graphite-web's aggregation functions by name, aliases
// included.
var aggFuncs = map[string]aggFunc{
	"average":  safeAvg,
	"avg_zero": safeAvgZero,
	"median":   safeMedian,
	"sum":      safeSum,
	"min":      safeMin,
	"max":      safeMax,
	"diff":     safeDiff,
	"stddev":   safeStdDev,
	"count":    safeLen,
	"range":    safeRange,
	"multiply": safeMul,
	"last":     safeLast,
	"rangeOf":  safeRange,
	"avg":      safeAvg,
	"total":    safeSum,
	"current":  safeLast,
}

// aggFuncNames lists aggFuncs' keys sorted, as graphite-web's param
// options are.
var aggFuncNames = func() []string {
	var names []string
	for k := range aggFuncs {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}()

// xff reports whether nonNull of total values satisfy xFilesFactor.
func xff(nonNull, total int, xFilesFactor float64) bool {
	if nonNull == 0 || total == 0 {
		return false
	}
	return float64(nonNull)/float64(total) >= xFilesFactor
}

func xffValues(vs []float64, xFilesFactor float64) bool {
	return xff(int(safeLen(vs)), len(vs), xFilesFactor)
}
