package expr

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// seriesAggregations are the series functions that combine their series
// point by point with an aggregation function, fn.
var seriesAggregations = []struct{ name, fn string }{
	{"sumSeries", "sum"}, {"sum", "sum"}, {"averageSeries", "average"}, {"avg", "average"},
	{"maxSeries", "max"}, {"minSeries", "min"}, {"diffSeries", "diff"}, {"stddevSeries", "stddev"},
	{"rangeOfSeries", "rangeOf"},
}

func init() {
	for _, a := range seriesAggregations {
		fn := a.fn
		register(a.name, "Combine", func(c *callCtx) ([]*Series, error) {
			return aggregate(c.seriesLists(0), fn, c.ev.xff)
		}, pSeriesLists)
	}
	register("multiplySeries", "Combine", func(c *callCtx) ([]*Series, error) {
		lists := c.seriesLists(0)
		if len(lists) == 1 && len(lists[0]) == 1 {
			return lists[0], nil
		}
		return aggregate(lists, "multiply", c.ev.xff)
	}, pSeriesLists)
	register("aggregate", "Combine", func(c *callCtx) ([]*Series, error) {
		fn := c.str(1)
		if !c.has(2) {
			return aggregate([][]*Series{c.series(0)}, fn, c.ev.xff)
		}
		return aggregate([][]*Series{c.series(0)}, fn, c.float(2))
	}, pSeriesList, aggFuncParam("func", nil), opt("xFilesFactor", "float", nil))
	funcs["aggregate"].deprecatedAgg = true
	register("countSeries", "Combine", countSeries, multi(opt("seriesLists", "seriesList", nil)))
	register("divideSeries", "Combine", divideSeries, req("dividendSeriesList", "seriesList"), req("divisorSeries", "seriesList"))
	register("asPercent", "Combine", asPercent, pSeriesList, opt("total", "any", nil), multi(opt("nodes", "nodeOrTag", nil)))
	funcs["pct"] = &funcDef{FuncInfo: FuncInfo{Name: "pct", Group: "Combine", Params: funcs["asPercent"].params}, params: funcs["asPercent"].params, fn: asPercent}
	register("group", "Combine", func(c *callCtx) ([]*Series, error) {
		var out []*Series
		for _, l := range c.seriesLists(0) {
			out = append(out, l...)
		}
		return out, nil
	}, multi(opt("seriesLists", "seriesList", nil)))
	register("groupByNode", "Combine", func(c *callCtx) ([]*Series, error) {
		return groupByNodes(c, c.series(0), c.str(2), []any{c.arg(1)})
	}, pSeriesList, req("nodeNum", "nodeOrTag"), aggOrSeriesFuncParam("callback", "average"))
	register("groupByNodes", "Combine", func(c *callCtx) ([]*Series, error) {
		return groupByNodes(c, c.series(0), c.str(1), c.multi(2))
	}, pSeriesList, aggOrSeriesFuncParam("callback", nil), multi(opt("nodes", "nodeOrTag", nil)))
	register("groupByTags", "Combine", groupByTags, pSeriesList, aggOrSeriesFuncParam("callback", nil), multi(req("tags", "tag")))
	register("applyByNode", "Combine", applyByNode, pSeriesList, req("nodeNum", "node"), req("templateFunction", "string"), opt("newName", "string", nil))
	register("percentileOfSeries", "Combine", percentileOfSeries, pSeriesList, req("n", "float"), opt("interpolate", "boolean", false))
	register("sumSeriesWithWildcards", "Combine", func(c *callCtx) ([]*Series, error) {
		return aggregateWithWildcards(c, c.series(0), "sum", c.multi(1))
	}, pSeriesList, multi(opt("position", "node", nil)))
	register("averageSeriesWithWildcards", "Combine", func(c *callCtx) ([]*Series, error) {
		return aggregateWithWildcards(c, c.series(0), "average", c.multi(1))
	}, pSeriesList, multi(opt("position", "node", nil)))
	register("aggregateWithWildcards", "Combine", func(c *callCtx) ([]*Series, error) {
		return aggregateWithWildcards(c, c.series(0), c.str(1), c.multi(2))
	}, pSeriesList, aggFuncParam("func", nil), multi(opt("position", "node", nil)))
	funcs["aggregateWithWildcards"].deprecatedAgg = true
}

// aggregatorFuncs are the series functions graphite-web marks as
// aggregators: the callbacks groupByNode and friends accept besides the
// aggregation functions.
// Those that need more arguments than a series list (…Lists,
// …WithWildcards, powSeries) are listed as graphite-web lists them, and
// fail as bad arguments when used.
var aggregatorFuncs = []string{"asPercent", "averageSeries", "averageSeriesWithWildcards", "avg", "countSeries",
	"diffSeries", "diffSeriesLists", "maxSeries", "minSeries", "multiplySeries", "multiplySeriesLists",
	"multiplySeriesWithWildcards", "pct", "powSeries", "rangeOfSeries", "stddevSeries", "sum", "sumSeries",
	"sumSeriesLists", "sumSeriesWithWildcards"}

func aggOrSeriesFuncParam(name string, def any) ParamInfo {
	seen := map[string]bool{}
	var opts []string
	for _, o := range append(append([]string(nil), aggFuncNames...), aggregatorFuncs...) {
		if !seen[o] {
			seen[o] = true
			opts = append(opts, o)
		}
	}
	sort.Strings(opts)
	return choiceParam(name, "aggOrSeriesFunc", def, opts...)
}

// aggregate combines the series point by point with an aggregation
// function, as graphite-web's aggregate(); xf is the xFilesFactor, NaN for
// the default (0).
func aggregate(lists [][]*Series, fn string, xf float64) ([]*Series, error) {
	name := strings.TrimSuffix(fn, "Series")
	agg := aggFuncs[name]
	if agg == nil {
		return nil, &ArgError{Func: "aggregate", Param: "func", Msg: "unsupported aggregation function: " + fn}
	}
	nz := normalize(lists...)
	if nz == nil {
		return nil, nil
	}
	xff := xf
	if isNull(xff) {
		xff = 0
	}
	values := nz.mapRows(func(row []float64) float64 {
		if !xffValues(row, xff) {
			return null
		}
		return agg(row)
	})
	sname := fmt.Sprintf("%sSeries(%s)", name, formatPathExpressions(nz.series))
	s := newSeries(sname, nz.start, nz.step, values, xff)
	s.Tags = commonTags(nz.series)
	if _, ok := s.Tags["name"]; !ok {
		s.Tags["name"] = sname
	}
	s.Tags["aggregatedBy"] = name
	return []*Series{s}, nil
}

// commonTags are the tags with the same value in every series.
func commonTags(series []*Series) map[string]string {
	tags := copyTags(series[0].Tags)
	for _, s := range series[1:] {
		for k, v := range tags {
			if w, ok := s.Tags[k]; !ok || w != v {
				delete(tags, k)
			}
		}
	}
	return tags
}

func countSeries(c *callCtx) ([]*Series, error) {
	lists := c.seriesLists(0)
	nz := normalize(lists...)
	if len(lists) == 0 {
		s := constantLine(c, 0, "0")
		s.PathExpression = "countSeries()"
		return []*Series{s}, nil
	}
	if nz == nil {
		return nil, nil
	}
	values := make([]float64, nz.n)
	for i := range values {
		values[i] = float64(len(nz.values))
	}
	name := fmt.Sprintf("countSeries(%s)", formatPathExpressions(nz.series))
	return []*Series{newSeries(name, nz.start, nz.step, values, c.ev.xff)}, nil
}

func safeDiv(a, b float64) float64 {
	if isNull(a) || isNull(b) || b == 0 {
		return null
	}
	return a / b
}

func divideSeries(c *callCtx) ([]*Series, error) {
	dividends, divisors := c.series(0), c.series(1)
	if len(divisors) == 0 {
		out := make([]*Series, len(dividends))
		for i, s := range dividends {
			n := derive(s, fmt.Sprintf("divideSeries(%s,MISSING)", s.Name), mapValues(s, func(float64) float64 { return null }))
			n.Tags = s.Tags
			out[i] = n
		}
		return out, nil
	}
	if len(divisors) > 1 {
		return nil, c.errf("divisorSeries", "divideSeries second argument must reference exactly 1 series (got %d)", len(divisors))
	}
	d := divisors[0]
	out := make([]*Series, 0, len(dividends))
	for _, s := range dividends {
		nz := normalize([]*Series{s, d})
		values := nz.mapRows(func(row []float64) float64 { return safeDiv(row[0], row[1]) })
		out = append(out, newSeries(fmt.Sprintf("divideSeries(%s,%s)", s.Name, d.Name), nz.start, nz.step, values, c.ev.xff))
	}
	return out, nil
}

// percentOf is graphite-web's safeMul(safeDiv(v, t), 100).
func percentOf(v, t float64) float64 {
	q := safeDiv(v, t)
	if isNull(q) {
		return null
	}
	return q * 100
}

// sumTotal sums series point by point for asPercent's totals.
func sumTotal(series []*Series, xff float64) *Series {
	if len(series) == 1 {
		return series[0]
	}
	nz := normalize(series)
	values := nz.mapRows(safeSum)
	return newSeries(fmt.Sprintf("sumSeries(%s)", formatPathExpressions(series)), nz.start, nz.step, values, xff)
}

// percentPair divides s by total point by point after normalizing them.
func percentPair(name string, s, total *Series, xff float64) *Series {
	nz := normalize([]*Series{s, total})
	values := nz.mapRows(func(row []float64) float64 { return percentOf(row[0], row[1]) })
	return newSeries(name, nz.start, nz.step, values, xff)
}

func asPercent(c *callCtx) ([]*Series, error) {
	series := c.series(0)
	total := c.arg(1)
	if nodes := c.multi(2); len(nodes) > 0 {
		return asPercentNodes(c, series, total, nodes)
	}
	nz := normalize(series)
	if nz == nil {
		return nil, nil
	}
	var out []*Series
	switch t := total.(type) {
	case nil:
		totals := nz.mapRows(safeSum)
		text := fmt.Sprintf("sumSeries(%s)", formatPathExpressions(series))
		for k, s := range series {
			out = append(out, percentValues(s, nz, k, totals, text, c.ev.xff))
		}
	case []*Series:
		switch {
		case len(t) == len(series):
			a := append([]*Series(nil), series...)
			b := append([]*Series(nil), t...)
			sort.SliceStable(a, func(i, j int) bool { return a[i].Name < a[j].Name })
			sort.SliceStable(b, func(i, j int) bool { return b[i].Name < b[j].Name })
			for i := range a {
				out = append(out, percentPair(fmt.Sprintf("asPercent(%s,%s)", a[i].Name, b[i].Name), a[i], b[i], c.ev.xff))
			}
		case len(t) == 1:
			nz = normalize(series, t)
			tv := nz.values[len(series)]
			for k, s := range series {
				out = append(out, percentValues(s, nz, k, tv, t[0].Name, c.ev.xff))
			}
		default:
			return nil, c.errf("total", "asPercent second argument must be missing, a single digit, reference exactly 1 series or reference the same number of series as the first argument")
		}
	case int64, float64:
		tf := c.float(1)
		totals := make([]float64, len(series[0].Values))
		for i := range totals {
			totals[i] = tf
		}
		for k, s := range series {
			out = append(out, percentValues(s, nz, k, totals, pyStr(t), c.ev.xff))
		}
	default:
		return nil, c.errf("total", "total must be None, a number or a seriesList, not %s", typeName(t))
	}
	return out, nil
}

// percentValues is series k of nz as a percentage of totals.
func percentValues(s *Series, nz *normalized, k int, totals []float64, totalText string, xff float64) *Series {
	v := nz.values[k]
	n := len(v)
	if len(totals) > n {
		n = len(totals)
	}
	values := make([]float64, n)
	for i := range values {
		a, b := null, null
		if i < len(v) {
			a = v[i]
		}
		if i < len(totals) {
			b = totals[i]
		}
		values[i] = percentOf(a, b)
	}
	if totalText == "" {
		totalText = s.PathExpression
	}
	// graphite-web keeps the series' own step here even when normalize
	// consolidated the values to a coarser one.
	return newSeries(fmt.Sprintf("asPercent(%s,%s)", s.Name, totalText), s.Start, s.Step, values, xff)
}

func asPercentNodes(c *callCtx, series []*Series, total any, nodes []any) ([]*Series, error) {
	keys, meta := groupBy(series, func(s *Series) string { return aggKey(s, nodes) })
	totals := map[string]*Series{}
	switch t := total.(type) {
	case nil:
		for _, k := range keys {
			totals[k] = sumTotal(meta[k], c.ev.xff)
		}
	case []*Series:
		groups := map[string][]*Series{}
		for _, s := range t {
			k := aggKey(s, nodes)
			if _, ok := groups[k]; !ok {
				if _, ok := meta[k]; !ok {
					keys = append(keys, k)
				}
			}
			groups[k] = append(groups[k], s)
		}
		for k, g := range groups {
			totals[k] = sumTotal(g, c.ev.xff)
		}
	default:
		return nil, c.errf("total", "total must be None or a seriesList")
	}
	var out []*Series
	for _, k := range keys {
		ss, ok := meta[k]
		if !ok {
			t := totals[k]
			values := mapValues(t, func(float64) float64 { return null })
			out = append(out, newSeries(fmt.Sprintf("asPercent(MISSING,%s)", t.Name), t.Start, t.Step, values, c.ev.xff))
			continue
		}
		for _, s := range ss {
			t, ok := totals[k]
			if !ok {
				values := mapValues(s, func(float64) float64 { return null })
				out = append(out, newSeries(fmt.Sprintf("asPercent(%s,MISSING)", s.Name), s.Start, s.Step, values, c.ev.xff))
				continue
			}
			out = append(out, percentPair(fmt.Sprintf("asPercent(%s,%s)", s.Name, t.Name), s, t, c.ev.xff))
		}
	}
	return out, nil
}

// firstPathExpression finds the first path expression of a name that
// looks like a call, descending first arguments.
func firstPathExpression(name string) string {
	e, err := Parse(name)
	if err != nil {
		return ""
	}
	for {
		switch x := e.(type) {
		case *PathExpr:
			return x.Path
		case *CallExpr:
			if len(x.Args) == 0 {
				return ""
			}
			e = x.Args[0]
		default:
			return ""
		}
	}
}

// nodeOrTag is graphite-web's getNodeOrTag: an integer picks a node of
// the path (negative from the end), anything else a tag.
func nodeOrTag(s *Series, n any, path string) string {
	var idx int64
	isNode := false
	switch x := n.(type) {
	case int64:
		idx, isNode = x, true
	case float64:
		if x == math.Trunc(x) && !math.IsInf(x, 0) {
			idx, isNode = int64(x), true
		}
	}
	if isNode {
		if path == "" {
			path = s.Name
		}
		base, _, _ := strings.Cut(path, ";")
		parts := strings.Split(base, ".")
		if idx < 0 {
			idx += int64(len(parts))
		}
		if idx >= 0 && idx < int64(len(parts)) {
			return parts[idx]
		}
	}
	return s.Tags[pyStr(n)]
}

func aggKey(s *Series, nodes []any) string {
	path := ""
	if strings.HasSuffix(s.Name, ")") {
		path = firstPathExpression(s.Name)
	}
	parts := make([]string, len(nodes))
	for i, n := range nodes {
		parts[i] = nodeOrTag(s, n, path)
	}
	return strings.Join(parts, ".")
}

// groupBy groups series by key, the keys in the order of their first
// series (as graphite-web's dicts keep insertion order).
func groupBy(series []*Series, key func(*Series) string) (keys []string, groups map[string][]*Series) {
	groups = map[string][]*Series{}
	for _, s := range series {
		k := key(s)
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], s)
	}
	return keys, groups
}

// applyCallback runs groupByNode's callback over one group: an aggregator
// series function by name, or an aggregation function.
func applyCallback(c *callCtx, callback string, group []*Series) (*Series, error) {
	var out []*Series
	var err error
	switch callback {
	case "multiplySeries":
		if len(group) == 1 {
			out = group
		} else {
			out, err = aggregate([][]*Series{group}, "multiply", c.ev.xff)
		}
	case "countSeries":
		nz := normalize(group)
		values := make([]float64, nz.n)
		for i := range values {
			values[i] = float64(len(group))
		}
		out = []*Series{newSeries(fmt.Sprintf("countSeries(%s)", formatPathExpressions(group)), nz.start, nz.step, values, c.ev.xff)}
	case "asPercent", "pct":
		sub := &callCtx{ev: c.ev, expr: c.expr, def: funcs["asPercent"], from: c.from, until: c.until,
			vals: []any{group, nil, nil}, set: []bool{true, false, false}}
		out, err = asPercent(sub)
	default:
		fn := callback // an aggregation function
		for _, a := range seriesAggregations {
			if a.name == callback {
				fn = a.fn
			}
		}
		out, err = aggregate([][]*Series{group}, fn, c.ev.xff)
	}
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out[0], nil
}

func groupByNodes(c *callCtx, series []*Series, callback string, nodes []any) ([]*Series, error) {
	keys, meta := groupBy(series, func(s *Series) string { return aggKey(s, nodes) })
	return applyToGroups(c, callback, keys, meta, func(k string, s *Series) (*Series, error) { return rename(s, k), nil })
}

// applyToGroups runs callback over each group, in the order of keys, and
// returns what named makes of each result with the group's key; groups
// the callback answers nothing for are left out.
func applyToGroups(c *callCtx, callback string, keys []string, groups map[string][]*Series, named func(k string, s *Series) (*Series, error)) ([]*Series, error) {
	out := make([]*Series, 0, len(keys))
	for _, k := range keys {
		s, err := applyCallback(c, callback, groups[k])
		if err != nil {
			return nil, err
		}
		if s == nil {
			continue
		}
		if s, err = named(k, s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

func groupByTags(c *callCtx) ([]*Series, error) {
	series, callback := c.series(0), c.str(1)
	var tags []string
	byName := false
	for _, t := range c.multi(2) {
		tags = append(tags, pyStr(t))
		byName = byName || pyStr(t) == "name"
	}
	name := callback
	if !byName {
		names := map[string]bool{}
		for _, s := range series {
			names[s.Tags["name"]] = true
		}
		if len(names) == 1 {
			for n := range names {
				name = n
			}
		}
	}
	keys, meta := groupBy(series, func(s *Series) string {
		var kv []string
		for _, t := range tags {
			if byName && t == "name" {
				continue
			}
			kv = append(kv, t+"="+s.Tags[t])
		}
		sort.Strings(kv)
		head := name
		if byName {
			head = s.Tags["name"]
		}
		return strings.Join(append([]string{head}, kv...), ";")
	})
	return applyToGroups(c, callback, keys, meta, func(k string, s *Series) (*Series, error) {
		for _, seg := range strings.Split(k, ";")[1:] {
			if strings.HasSuffix(seg, "=") {
				return nil, c.errf("tags", "value for tag %q may not be empty (series %s)", strings.TrimSuffix(seg, "="), meta[k][0].Name)
			}
		}
		n := rename(s, k)
		n.PathExpression = k
		n.Tags = tagsFromName(k)
		return n, nil
	})
}

func applyByNode(c *callCtx) ([]*Series, error) {
	series, node, tmpl := c.series(0), c.int(1), c.str(2)
	newName := ""
	if c.has(3) {
		newName = c.str(3)
	}
	prefixes := map[string]bool{}
	for _, s := range series {
		parts := strings.Split(s.Name, ".")
		prefixes[strings.Join(pySlice(parts, node+1), ".")] = true
	}
	sorted := make([]string, 0, len(prefixes))
	for p := range prefixes {
		sorted = append(sorted, p)
	}
	sort.Strings(sorted)
	var out []*Series
	for _, p := range sorted {
		target := strings.ReplaceAll(tmpl, "%", p)
		v, err := c.evalBuilt("templateFunction", target, target)
		if err != nil {
			return nil, err
		}
		res, ok := v.([]*Series)
		if !ok {
			return nil, c.errf("templateFunction", "%s is not a series list", target)
		}
		for _, r := range res {
			n := *r
			if newName != "" {
				n.Name = strings.ReplaceAll(newName, "%", p)
			}
			n.PathExpression = p
			if len(series) > 0 {
				n.Start = series[len(series)-1].Start
				n.End = n.Start + int64(len(n.Values))*n.Step
			}
			out = append(out, &n)
		}
	}
	return out, nil
}

// percentile is graphite-web's _getPercentile over the non-null values;
// ok is false where graphite-web's index falls outside the values (an
// IndexError there), which happens for n far outside [0, 100].
func percentile(points []float64, n float64, interpolate bool) (p float64, ok bool) {
	s := nonNull(points)
	if len(s) == 0 {
		return null, true
	}
	sort.Float64s(s)
	frac := n / 100 * float64(len(s)+1)
	if math.IsNaN(frac) || math.Abs(frac) > float64(4*len(s)+4) {
		return null, false
	}
	rank := int(frac)
	rankFrac := frac - float64(rank)
	if !interpolate {
		rank += int(math.Ceil(rankFrac))
	}
	at := func(i int) (float64, bool) {
		if i < 0 {
			i += len(s) // Python's negative index
		}
		if i < 0 || i >= len(s) {
			return null, false
		}
		return s[i], true
	}
	switch {
	case rank == 0:
		p = s[0]
	case rank-1 == len(s):
		p = s[len(s)-1]
	default:
		if p, ok = at(rank - 1); !ok {
			return null, false
		}
	}
	if interpolate && rank != len(s) {
		next, ok := at(rank)
		if !ok {
			return null, false
		}
		p += rankFrac * (next - p)
	}
	return p, true
}

func percentileOfSeries(c *callCtx) ([]*Series, error) {
	series, n, interp := c.series(0), c.float(1), c.bool(2)
	if n <= 0 {
		return nil, c.errf("n", "the requested percent is required to be greater than 0")
	}
	if len(series) == 0 {
		return nil, nil
	}
	nz := normalize(series)
	values := make([]float64, nz.n)
	row := make([]float64, 0, len(series))
	for i := range values {
		var ok bool
		if values[i], ok = percentile(nz.row(i, row), n, interp); !ok {
			return nil, c.errf("n", "percentile %s is out of range", pyG(n))
		}
	}
	name := fmt.Sprintf("percentileOfSeries(%s,%s)", series[0].PathExpression, pyG(n))
	return []*Series{newSeries(name, nz.start, nz.step, values, c.ev.xff)}, nil
}

func aggregateWithWildcards(c *callCtx, series []*Series, fn string, positions []any) ([]*Series, error) {
	if len(series) == 0 {
		return nil, nil
	}
	agg := aggFuncs[strings.TrimSuffix(fn, "Series")]
	if agg == nil {
		return nil, c.errf("func", "unsupported aggregation function: %s", fn)
	}
	drop := map[int]bool{}
	for _, p := range positions {
		switch x := p.(type) {
		case int64:
			drop[int(x)] = true
		}
	}
	keys, groups := groupBy(series, func(s *Series) string {
		var kept []string
		for i, part := range strings.Split(s.Name, ".") {
			if !drop[i] {
				kept = append(kept, part)
			}
		}
		return strings.Join(kept, ".")
	})
	out := make([]*Series, 0, len(keys))
	for _, k := range keys {
		r, err := aggregate([][]*Series{groups[k]}, fn, c.ev.xff)
		if err != nil {
			return nil, err
		}
		if len(r) == 0 {
			continue
		}
		out = append(out, rename(r[0], k))
	}
	return out, nil
}
