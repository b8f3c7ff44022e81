package expr

import (
	"fmt"
	"math"
	"math/big"
	"regexp"
	"strconv"
	"strings"
)

// null is Graphite's None.
var null = math.NaN()

func isNull(v float64) bool { return v != v }

// newSeries builds a series the way graphite-web's TimeSeries constructor
// does: tags parsed from the name unless it looks like a function call.
func newSeries(name string, start, step int64, values []float64, xff float64) *Series {
	return &Series{
		Name:              name,
		PathExpression:    name,
		Tags:              tagsFromName(name),
		Start:             start,
		End:               start + int64(len(values))*step,
		Step:              step,
		Values:            values,
		ConsolidationFunc: "average",
		XFilesFactor:      xff,
	}
}

var funcNameRe = regexp.MustCompile(`(?i)^[a-z]+[(].+[)]$`)

// tagsFromName parses a carbon path a.b;k=v;… into tags as graphite-web's
// tag database does; a name that looks like a call gets only "name".
func tagsFromName(name string) map[string]string {
	if funcNameRe.MatchString(name) || !strings.Contains(name, ";") {
		return map[string]string{"name": name}
	}
	segs := strings.Split(name, ";")
	tags := map[string]string{"name": segs[0]}
	for _, seg := range segs[1:] {
		k, v, ok := strings.Cut(seg, "=")
		if !ok || k == "" || v == "" {
			return map[string]string{"name": name}
		}
		tags[k] = v
	}
	return tags
}

// derive copies s under a new name with new values, as graphite-web's
// TimeSeries.copy does: the path expression becomes the name, the
// tags are kept (copied, with the extra ones set).
func derive(s *Series, name string, values []float64, extraTags ...string) *Series {
	n := *s
	n.Name = name
	n.PathExpression = name
	n.Values = values
	n.End = n.Start + int64(len(values))*n.Step
	n.Tags = copyTags(s.Tags, extraTags...)
	return &n
}

// rename copies s with only its name changed (alias functions keep the
// path expression).
func rename(s *Series, name string) *Series {
	n := *s
	n.Name = name
	return &n
}

func copyTags(t map[string]string, kv ...string) map[string]string {
	m := make(map[string]string, len(t)+len(kv)/2)
	for k, v := range t {
		m[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

// mapValues returns f applied to every value of s.
func mapValues(s *Series, f func(float64) float64) []float64 {
	out := make([]float64, len(s.Values))
	for i, v := range s.Values {
		out[i] = f(v)
	}
	return out
}

// pyNonFinite is Python's text of ±inf and nan; ok is false for a finite v.
func pyNonFinite(v float64) (s string, ok bool) {
	switch {
	case math.IsInf(v, 1):
		return "inf", true
	case math.IsInf(v, -1):
		return "-inf", true
	case v != v:
		return "nan", true
	}
	return "", false
}

// pyG formats a float as Python's "%g".
func pyG(v float64) string {
	if s, ok := pyNonFinite(v); ok {
		return s
	}
	return fmt.Sprintf("%.6g", v)
}

// pyFloat formats a float as Python's str(float).
func pyFloat(v float64) string {
	if s, ok := pyNonFinite(v); ok {
		return s
	}
	if v == 0 {
		if math.Signbit(v) {
			return "-0.0"
		}
		return "0.0"
	}
	e := strconv.FormatFloat(v, 'e', -1, 64)
	exp, _ := strconv.Atoi(e[strings.IndexByte(e, 'e')+1:])
	if exp < -4 || exp >= 16 {
		mant, ex, _ := strings.Cut(e, "e")
		sign := ex[0]
		digits := ex[1:]
		if len(digits) < 2 {
			digits = "0" + digits
		}
		return mant + "e" + string(sign) + digits
	}
	s := strconv.FormatFloat(v, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}

// pyInt formats a float as Python's "%d" does (truncating; exact for
// large values); ok is false for inf and nan, where Python raises.
func pyInt(v float64) (string, bool) {
	if math.IsInf(v, 0) || v != v {
		return "", false
	}
	if math.Abs(v) < 1<<62 {
		return strconv.FormatInt(int64(v), 10), true
	}
	i, _ := new(big.Float).SetFloat64(math.Trunc(v)).Int(nil)
	return i.String(), true
}

// pyStr formats an argument value as Python's str().
func pyStr(v any) string {
	switch v := v.(type) {
	case nil:
		return "None"
	case bool:
		if v {
			return "True"
		}
		return "False"
	case int64:
		return strconv.FormatInt(v, 10)
	case float64:
		return pyFloat(v)
	case string:
		return v
	}
	return fmt.Sprint(v)
}

// pyRepr formats an argument value as Python's repr().
func pyRepr(v any) string {
	if s, ok := v.(string); ok {
		if strings.Contains(s, "'") && !strings.Contains(s, `"`) {
			return `"` + s + `"`
		}
		return "'" + strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), "'", `\'`) + "'"
	}
	return pyStr(v)
}

func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

func lcm(a, b int64) int64 {
	if a == b {
		return a
	}
	return a / gcd(a, b) * b
}

// Consolidate returns s's values grouped n points at a time with s's
// ConsolidationFunc ("average" when empty, "avg" and "avg_zero" too) and
// XFilesFactor, as graphite-web's TimeSeries.consolidate(n) makes them
// for maxDataPoints and for normalize: a group is null unless its
// non-null share reaches XFilesFactor; the last group may be short but
// its share is counted over n. The result is a new slice; n <= 1 copies
// the values. The consolidated series starts at s.Start with step
// s.Step*n.
func Consolidate(s *Series, n int64) []float64 {
	v := consolidated(s, n)
	if n <= 1 {
		v = append([]float64(nil), v...)
	}
	return v
}

// consolidated returns s's values grouped by n points with s's
// consolidation function and xFilesFactor, as graphite-web iterates a
// series after consolidate(n). n <= 1 returns the values themselves.
func consolidated(s *Series, n int64) []float64 {
	if n <= 1 {
		return s.Values
	}
	out := make([]float64, 0, (int64(len(s.Values))+n-1)/n)
	buf := make([]float64, 0, n)
	for i := 0; i < len(s.Values); i += int(n) {
		j := i + int(n)
		if j > len(s.Values) {
			j = len(s.Values)
		}
		buf = buf[:0]
		nonNull := 0
		for _, v := range s.Values[i:j] {
			if !isNull(v) {
				buf = append(buf, v)
				nonNull++
			} else if s.ConsolidationFunc == "avg_zero" {
				buf = append(buf, 0)
			}
		}
		if nonNull == 0 || float64(nonNull)/float64(n) < s.XFilesFactor {
			out = append(out, null)
			continue
		}
		out = append(out, consolidate(s.ConsolidationFunc, buf))
	}
	return out
}

// consolidate applies a render consolidation function to non-empty buf.
func consolidate(fn string, buf []float64) float64 {
	switch fn {
	case "avg", "avg_zero", "average", "":
		return sum(buf) / float64(len(buf))
	case "sum":
		return sum(buf)
	case "max":
		return maxOf(buf)
	case "min":
		return minOf(buf)
	case "first":
		return buf[0]
	case "last":
		return buf[len(buf)-1]
	}
	return sum(buf) / float64(len(buf))
}

func sum(vs []float64) float64 {
	var t float64
	for _, v := range vs {
		t += v
	}
	return t
}

func maxOf(vs []float64) float64 {
	m := vs[0]
	for _, v := range vs[1:] {
		if v > m {
			m = v
		}
	}
	return m
}

func minOf(vs []float64) float64 {
	m := vs[0]
	for _, v := range vs[1:] {
		if v < m {
			m = v
		}
	}
	return m
}

// normalized is a set of series brought to a common step by graphite-web's
// normalize: the lcm of their steps, each consolidated to it.
type normalized struct {
	series      []*Series   // the inputs
	values      [][]float64 // their consolidated values
	start, step int64
	n           int // the longest consolidated length (izip_longest)
}

// normalize returns nil if there is no series.
func normalize(lists ...[]*Series) *normalized {
	var all []*Series
	for _, l := range lists {
		all = append(all, l...)
	}
	if len(all) == 0 {
		return nil
	}
	step := all[0].Step
	for _, s := range all[1:] {
		step = lcm(step, s.Step)
	}
	nz := &normalized{series: all, step: step, start: all[0].Start}
	for _, s := range all {
		if s.Start < nz.start {
			nz.start = s.Start
		}
		v := consolidated(s, step/s.Step)
		nz.values = append(nz.values, v)
		if len(v) > nz.n {
			nz.n = len(v)
		}
	}
	return nz
}

// row fills buf with the i-th value of every series, null past one's end.
func (nz *normalized) row(i int, buf []float64) []float64 {
	buf = buf[:0]
	for _, v := range nz.values {
		if i < len(v) {
			buf = append(buf, v[i])
		} else {
			buf = append(buf, null)
		}
	}
	return buf
}

// mapRows returns f of each row of nz's values (a value of each series,
// null where one ends early); row is reused from call to call.
func (nz *normalized) mapRows(f func(row []float64) float64) []float64 {
	values := make([]float64, nz.n)
	row := make([]float64, 0, len(nz.values))
	for i := range values {
		row = nz.row(i, row)
		values[i] = f(row)
	}
	return values
}

// formatPathExpressions joins the distinct path expressions in order.
func formatPathExpressions(series []*Series) string {
	var out []string
	seen := map[string]bool{}
	for _, s := range series {
		if !seen[s.PathExpression] {
			seen[s.PathExpression] = true
			out = append(out, s.PathExpression)
		}
	}
	return strings.Join(out, ",")
}
