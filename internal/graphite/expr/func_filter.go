package expr

import (
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

func init() {
	pN := req("n", "integer")
	pF := req("n", "float")
	for _, f := range []struct {
		name, fn string
		desc     bool
	}{
		{"highestCurrent", "current", true}, {"highestMax", "max", true}, {"highestAverage", "average", true},
		{"lowestCurrent", "current", false}, {"lowestAverage", "average", false},
	} {
		fn, desc := f.fn, f.desc
		register(f.name, "Filter Series", func(c *callCtx) ([]*Series, error) {
			return pySlice(sortByAgg(c.series(0), aggFuncs[fn], desc), c.int(1)), nil
		}, pSeriesList, pN)
	}
	pN1 := pN
	pN1.fallback = int64(1)
	register("highest", "Filter Series", func(c *callCtx) ([]*Series, error) {
		return pySlice(sortByAgg(c.series(0), aggFuncs[c.str(2)], true), c.int(1)), nil
	}, pSeriesList, pN1, aggFuncParam("func", "average"))
	register("lowest", "Filter Series", func(c *callCtx) ([]*Series, error) {
		return pySlice(sortByAgg(c.series(0), aggFuncs[c.str(2)], false), c.int(1)), nil
	}, pSeriesList, pN1, aggFuncParam("func", "average"))
	for _, f := range []struct{ name, fn, op string }{
		{"currentAbove", "last", ">"}, {"currentBelow", "last", "<="},
		{"averageAbove", "average", ">"}, {"averageBelow", "average", "<="},
		{"maximumAbove", "max", ">"}, {"maximumBelow", "max", "<="},
		{"minimumAbove", "min", ">"}, {"minimumBelow", "min", "<="},
	} {
		fn, op := f.fn, f.op
		register(f.name, "Filter Series", func(c *callCtx) ([]*Series, error) {
			return filterSeries(c.series(0), aggFuncs[fn], op, c.float(1)), nil
		}, pSeriesList, pF)
	}
	register("filterSeries", "Filter Series", func(c *callCtx) ([]*Series, error) {
		return filterSeries(c.series(0), aggFuncs[c.str(1)], c.str(2), c.float(3)), nil
	}, pSeriesList, aggFuncParam("func", nil), withOptions(req("operator", "string"), "!=", "<", "<=", "=", ">", ">="), req("threshold", "float"))
	register("limit", "Filter Series", func(c *callCtx) ([]*Series, error) {
		return pySlice(c.series(0), c.int(1)), nil
	}, pSeriesList, pN)
	register("exclude", "Filter Series", func(c *callCtx) ([]*Series, error) { return grep(c, false) },
		pSeriesList, req("pattern", "string"))
	register("grep", "Filter Series", func(c *callCtx) ([]*Series, error) { return grep(c, true) },
		pSeriesList, req("pattern", "string"))
	register("removeEmptySeries", "Filter Series", func(c *callCtx) ([]*Series, error) {
		xf := 0.0
		if c.has(1) {
			xf = c.float(1)
		}
		var out []*Series
		for _, s := range c.series(0) {
			if xffValues(s.Values, xf) {
				out = append(out, s)
			}
		}
		return out, nil
	}, pSeriesList, opt("xFilesFactor", "float", nil))
	register("mostDeviant", "Filter Series", mostDeviant, pSeriesList, pN)
	register("unique", "Filter Series", func(c *callCtx) ([]*Series, error) {
		var out []*Series
		seen := map[string]bool{}
		for _, l := range c.seriesLists(0) {
			for _, s := range l {
				if !seen[s.Name] {
					seen[s.Name] = true
					out = append(out, s)
				}
			}
		}
		return out, nil
	}, pSeriesLists)

	register("removeAboveValue", "Filter Data", func(c *callCtx) ([]*Series, error) {
		n := c.float(1)
		return removeValues(c.series(0), "removeAboveValue", n, func(v float64) bool { return v > n }), nil
	}, pSeriesList, pF)
	register("removeBelowValue", "Filter Data", func(c *callCtx) ([]*Series, error) {
		n := c.float(1)
		return removeValues(c.series(0), "removeBelowValue", n, func(v float64) bool { return v < n }), nil
	}, pSeriesList, pF)
	register("removeAbovePercentile", "Filter Data", func(c *callCtx) ([]*Series, error) {
		return removePercentile(c, "removeAbovePercentile", true)
	}, pSeriesList, pF)
	register("removeBelowPercentile", "Filter Data", func(c *callCtx) ([]*Series, error) {
		return removePercentile(c, "removeBelowPercentile", false)
	}, pSeriesList, pF)

	register("sortByName", "Sorting", sortByName, pSeriesList, opt("natural", "boolean", false), opt("reverse", "boolean", false))
	register("sortByMaxima", "Sorting", func(c *callCtx) ([]*Series, error) {
		return sortByAgg(c.series(0), safeMax, true), nil
	}, pSeriesList)
	register("sortByMinima", "Sorting", func(c *callCtx) ([]*Series, error) {
		var keep []*Series
		for _, s := range c.series(0) {
			if m := safeMax(s.Values); !isNull(m) && m > 0 {
				keep = append(keep, s)
			}
		}
		return sortByAgg(keep, safeMin, false), nil
	}, pSeriesList)
	register("sortByTotal", "Sorting", func(c *callCtx) ([]*Series, error) {
		return sortByAgg(c.series(0), safeSum, true), nil
	}, pSeriesList)
	register("sortBy", "Sorting", func(c *callCtx) ([]*Series, error) {
		return sortByAgg(c.series(0), aggFuncs[c.str(1)], c.bool(2)), nil
	}, pSeriesList, aggFuncParam("func", "average"), opt("reverse", "boolean", false))

	register("nPercentile", "Calculate", nPercentile, pSeriesList, pF)
	register("stdev", "Calculate", stdev, pSeriesList, req("points", "integer"), opt("windowTolerance", "float", 0.1))
	register("aggregateLine", "Calculate", aggregateLine, pSeriesList, aggFuncParam("func", "average"), opt("keepStep", "boolean", false))
}

// pySlice is Python's list[:n].
func pySlice[T any](s []T, n int64) []T {
	if n < 0 {
		n += int64(len(s))
		if n < 0 {
			n = 0
		}
	}
	if n > int64(len(s)) {
		n = int64(len(s))
	}
	return s[:n]
}

// sortByAgg sorts a copy of series by agg of their values, stably; None
// sorts as -inf, as graphite-web's keyFunc makes it.
func sortByAgg(series []*Series, agg aggFunc, desc bool) []*Series {
	out := append([]*Series(nil), series...)
	keys := make(map[*Series]float64, len(out))
	for _, s := range out {
		k := agg(s.Values)
		if isNull(k) {
			k = math.Inf(-1)
		}
		keys[s] = k
	}
	sort.SliceStable(out, func(i, j int) bool {
		if desc {
			return keys[out[i]] > keys[out[j]]
		}
		return keys[out[i]] < keys[out[j]]
	})
	return out
}

func filterSeries(series []*Series, agg aggFunc, op string, threshold float64) []*Series {
	var out []*Series
	for _, s := range series {
		v := agg(s.Values)
		var keep bool
		switch op {
		case "=":
			keep = !isNull(v) && v == threshold
		case "!=":
			keep = isNull(v) || v != threshold
		case ">":
			keep = !isNull(v) && v > threshold
		case ">=":
			keep = !isNull(v) && v >= threshold
		case "<":
			keep = isNull(v) || v < threshold
		case "<=":
			keep = isNull(v) || v <= threshold
		}
		if keep {
			out = append(out, s)
		}
	}
	return out
}

// compileRegexp compiles a Python regular expression argument; RE2 lacks
// lookaround and backreferences, which are rejected as bad arguments.
func (c *callCtx) compileRegexp(param, pattern string) (*regexp.Regexp, error) {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, c.errf(param, "invalid regular expression %s: %v", pyRepr(pattern), err)
	}
	return re, nil
}

func grep(c *callCtx, keep bool) ([]*Series, error) {
	re, err := c.compileRegexp("pattern", c.str(1))
	if err != nil {
		return nil, err
	}
	var out []*Series
	for _, s := range c.series(0) {
		if re.MatchString(s.Name) == keep {
			out = append(out, s)
		}
	}
	return out, nil
}

func mostDeviant(c *callCtx) ([]*Series, error) {
	type dev struct {
		sigma float64
		s     *Series
	}
	var devs []dev
	for _, s := range c.series(0) {
		mean := safeAvg(s.Values)
		if isNull(mean) {
			continue
		}
		sq := 0.0
		for _, v := range s.Values {
			if !isNull(v) {
				sq += (v - mean) * (v - mean)
			}
		}
		devs = append(devs, dev{sq / safeLen(s.Values), s})
	}
	sort.SliceStable(devs, func(i, j int) bool { return devs[i].sigma > devs[j].sigma })
	out := make([]*Series, len(devs))
	for i, d := range devs {
		out[i] = d.s
	}
	return pySlice(out, c.int(1)), nil
}

func removeValues(series []*Series, name string, n float64, drop func(float64) bool) []*Series {
	out := make([]*Series, 0, len(series))
	for _, s := range series {
		vals := make([]float64, len(s.Values))
		for i, v := range s.Values {
			if isNull(v) || drop(v) {
				vals[i] = null
			} else {
				vals[i] = v
			}
		}
		n := derive(s, fmt.Sprintf("%s(%s, %s)", name, s.Name, pyG(n)), vals)
		n.Tags = s.Tags
		out = append(out, n)
	}
	return out
}

func removePercentile(c *callCtx, name string, above bool) ([]*Series, error) {
	n := c.float(1)
	if math.IsInf(n, 0) || n != n {
		return nil, c.errf("n", "percentile %s is not a number", pyG(n))
	}
	if n == 0 {
		return nil, c.errf("n", "the requested percent is required to be greater than 0")
	}
	out := make([]*Series, 0, len(c.series(0)))
	for _, s := range c.series(0) {
		label := fmt.Sprintf("%s(%s, %s)", name, s.Name, pyG(n))
		p, ok := percentile(s.Values, n, false)
		if !ok {
			p = null // graphite-web's IndexError, caught there: the series is kept
		}
		if isNull(p) || (s.End-s.Start)/s.Step == 0 {
			r := derive(s, label, s.Values)
			if !isNull(p) {
				r.Tags = copyTags(s.Tags, "nPercentile", pyStr(c.arg(1)))
			} else {
				r.Tags = s.Tags
			}
			out = append(out, r)
			continue
		}
		vals := make([]float64, len(s.Values))
		for i, v := range s.Values {
			switch {
			case isNull(v), above && v > p, !above && v < p:
				vals[i] = null
			default:
				vals[i] = v
			}
		}
		// graphite-web's nPercentile tags the series it was given.
		out = append(out, derive(s, label, vals, "nPercentile", pyStr(c.arg(1))))
	}
	return out, nil
}

var digitRun = regexp.MustCompile(`\d+`)

func sortByName(c *callCtx) ([]*Series, error) {
	natural, reverse := c.bool(1), c.bool(2)
	out := append([]*Series(nil), c.series(0)...)
	key := func(s *Series) string { return s.Name }
	if natural {
		key = func(s *Series) string {
			return digitRun.ReplaceAllStringFunc(s.Name, func(d string) string {
				d = strings.TrimLeft(d, "0")
				if len(d) < 10 {
					d = strings.Repeat("0", 10-len(d)) + d
				}
				return d
			})
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if reverse {
			return key(out[i]) > key(out[j])
		}
		return key(out[i]) < key(out[j])
	})
	return out, nil
}

func nPercentile(c *callCtx) ([]*Series, error) {
	n := c.float(1)
	if n == 0 {
		return nil, c.errf("n", "the requested percent is required to be greater than 0")
	}
	var out []*Series
	for _, s := range c.series(0) {
		p, ok := percentile(s.Values, n, false)
		if !ok {
			return nil, c.errf("n", "percentile %s is out of range", pyG(n))
		}
		if isNull(p) {
			continue
		}
		count := (s.End - s.Start) / s.Step
		vals := make([]float64, count)
		for i := range vals {
			vals[i] = p
		}
		out = append(out, derive(s, fmt.Sprintf("nPercentile(%s, %s)", s.Name, pyG(n)), vals, "nPercentile", pyStr(c.arg(1))))
	}
	return out, nil
}

func stdev(c *callCtx) ([]*Series, error) {
	points, tol := c.int(1), c.float(2)
	if points < 0 {
		return nil, c.errf("points", "window of %d points", points)
	}
	out := make([]*Series, 0, len(c.series(0)))
	for _, s := range c.series(0) {
		vals := make([]float64, len(s.Values))
		valid := 0
		sum, sumSq := 0.0, 0.0
		for i, v := range s.Values {
			if int64(i) >= points {
				if d := s.Values[int64(i)-points]; !isNull(d) {
					valid--
					sum -= d
					sumSq -= d * d
				}
			}
			if !isNull(v) {
				valid++
				sum += v
				sumSq += v * v
			}
			vals[i] = null
			if points == 0 {
				continue // graphite-web counts no valid points in an empty window
			}
			if valid > 0 && float64(valid)/float64(points) >= tol {
				if d := float64(valid)*sumSq - sum*sum; d >= 0 {
					vals[i] = math.Sqrt(d) / float64(valid)
				}
			}
		}
		out = append(out, derive(s, fmt.Sprintf("stdev(%s,%d)", s.Name, points), vals, "stdev", strconv.FormatInt(points, 10)))
	}
	return out, nil
}

func aggregateLine(c *callCtx) ([]*Series, error) {
	agg := aggFuncs[c.str(1)]
	var out []*Series
	for _, s := range c.series(0) {
		v := agg(s.Values)
		name := fmt.Sprintf("aggregateLine(%s, %s)", s.Name, pyG(v))
		if isNull(v) {
			name = fmt.Sprintf("aggregateLine(%s, None)", s.Name)
		}
		if c.bool(2) {
			vals := make([]float64, len(s.Values))
			for i := range vals {
				vals[i] = v
			}
			out = append(out, derive(s, name, vals))
			continue
		}
		text := pyFloat(v)
		switch {
		case isNull(v):
			text = "None"
		case c.str(1) == "count":
			text = strconv.FormatInt(int64(v), 10) // safeLen is an int
		}
		l := constantLine(c, v, text)
		l.Name, l.PathExpression = name, name
		out = append(out, l)
	}
	return out, nil
}
