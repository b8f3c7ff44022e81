package expr

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
)

func init() {
	register("aliasQuery", "Alias", aliasQuery, pSeriesList, req("search", "string"), req("replace", "string"), req("newName", "string"))
	register("verticalLine", "Graph", verticalLine, req("ts", "date"), opt("label", "string", nil), opt("color", "string", nil))
	walk := func(c *callCtx) ([]*Series, error) {
		cur := 0.0
		return generated(c, c.str(0), c.int(1), "", func(int64) float64 {
			v := cur
			cur += rand.Float64() - 0.5
			return v
		})
	}
	register("randomWalk", "Special", walk, req("name", "string"), opt("step", "integer", int64(60)))
	register("randomWalkFunction", "Special", walk, req("name", "string"), opt("step", "integer", int64(60)))
	register("removeBetweenPercentile", "Filter Series", removeBetweenPercentile, pSeriesList, req("n", "float"))
	mapDef := &funcDef{FuncInfo: FuncInfo{Name: "mapSeries", Group: "Combine", Params: []ParamInfo{pSeriesList, multi(req("mapNodes", "nodeOrTag"))}}, fnLists: mapSeriesFunc}
	mapDef.params = mapDef.Params
	funcs["mapSeries"] = mapDef
	mapAlias := *mapDef
	mapAlias.Name = "map"
	funcs["map"] = &mapAlias
	register("reduceSeries", "Combine", reduceSeries, req("seriesLists", "seriesLists"), req("reduceFunction", "string"),
		req("reduceNode", "node"), multi(req("reduceMatchers", "string")))
	funcs["reduce"] = &funcDef{FuncInfo: FuncInfo{Name: "reduce", Group: "Combine", Params: funcs["reduceSeries"].params},
		params: funcs["reduceSeries"].params, fn: reduceSeries}
	register("useSeriesAbove", "Filter Series", useSeriesAbove, pSeriesList, req("value", "float"), req("search", "string"), req("replace", "string"))
}

// pyPercent formats one float with a Python %-format (%s %d %i %f %g %e
// %x with flags, width and precision, and %%).
func pyPercent(format string, v float64) (string, error) {
	var b strings.Builder
	used := false
	for i := 0; i < len(format); i++ {
		ch := format[i]
		if ch != '%' {
			b.WriteByte(ch)
			continue
		}
		j := i + 1
		for j < len(format) && strings.IndexByte("-+ #0123456789.", format[j]) >= 0 {
			j++
		}
		if j >= len(format) {
			return "", fmt.Errorf("incomplete format")
		}
		spec, verb := format[i+1:j], format[j]
		i = j
		if verb == '%' {
			b.WriteByte('%')
			continue
		}
		if used {
			return "", fmt.Errorf("not enough arguments for format string")
		}
		used = true
		switch verb {
		case 's', 'r':
			fmt.Fprintf(&b, "%"+spec+"s", pyFloat(v))
		case 'd', 'i', 'u':
			s, ok := pyInt(v)
			if !ok {
				return "", fmt.Errorf("cannot convert %s to integer", pyFloat(v))
			}
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				return "", err
			}
			fmt.Fprintf(&b, "%"+spec+"d", n)
		case 'f', 'F', 'e', 'E', 'g', 'G':
			fmt.Fprintf(&b, "%"+spec+string(verb), v)
		default:
			return "", fmt.Errorf("unsupported format character %q", verb)
		}
	}
	if !used {
		return "", fmt.Errorf("not all arguments converted during string formatting")
	}
	return b.String(), nil
}

func aliasQuery(c *callCtx) ([]*Series, error) {
	re, err := c.compileRegexp("search", c.str(1))
	if err != nil {
		return nil, err
	}
	repl := pyReplacement(c.str(2))
	out := make([]*Series, 0, len(c.series(0)))
	for _, s := range c.series(0) {
		q := re.ReplaceAllString(s.Name, repl)
		v, err := c.evalBuilt("replace", "query "+q, q)
		if err != nil {
			return nil, err
		}
		found, _ := v.([]*Series)
		if len(found) == 0 {
			return nil, c.errf("search", "no series found with query: %s", q)
		}
		cur := safeLast(found[0].Values)
		if isNull(cur) {
			return nil, c.errf("search", "cannot get last value of series: %s", found[0].Name)
		}
		name, err := pyPercent(c.str(3), cur)
		if err != nil {
			return nil, c.errf("newName", "%v", err)
		}
		out = append(out, rename(s, name))
	}
	return out, nil
}

func verticalLine(c *callCtx) ([]*Series, error) {
	ts, err := c.timeArg(0)
	if err != nil {
		return nil, c.errf("ts", "%v", err)
	}
	switch {
	case ts < c.from:
		return nil, c.errf("ts", "verticalLine(): timestamp %d exists before start of range", ts)
	case ts > c.until:
		return nil, c.errf("ts", "verticalLine(): timestamp %d exists after end of range", ts)
	}
	label := "None"
	if c.has(1) {
		label = c.str(1)
	}
	return []*Series{newSeries(label, ts, 1, []float64{1, 1}, c.ev.xff)}, nil
}

func removeBetweenPercentile(c *callCtx) ([]*Series, error) {
	series, n := c.series(0), c.float(1)
	if len(series) == 0 {
		return nil, nil
	}
	if n < 50 {
		n = 100 - n
	}
	cols := len(series[0].Values)
	for _, s := range series[1:] {
		cols = min(cols, len(s.Values))
	}
	lows := make([]float64, cols)
	highs := make([]float64, cols)
	col := make([]float64, len(series))
	for i := 0; i < cols; i++ {
		for k, s := range series {
			col[k] = s.Values[i]
		}
		lo, ok1 := percentile(col, 100-n, false)
		hi, ok2 := percentile(col, n, false)
		if !ok1 || !ok2 {
			return nil, c.errf("n", "percentile %s is out of range", pyG(c.float(1)))
		}
		lows[i], highs[i] = lo, hi
	}
	var out []*Series
	for _, s := range series {
		keep := false
		for i, v := range s.Values {
			if i >= cols {
				return nil, c.errf("seriesList", "series of different lengths") // graphite-web's IndexError
			}
			if isNull(v) || isNull(lows[i]) || isNull(highs[i]) {
				return nil, c.errf("seriesList", "series %s has nulls, which graphite-web cannot compare", s.Name)
			}
			if !(lows[i] < v && v < highs[i]) {
				keep = true
			}
		}
		if keep {
			out = append(out, s)
		}
	}
	return out, nil
}

func useSeriesAbove(c *callCtx) ([]*Series, error) {
	re, err := c.compileRegexp("search", c.str(2))
	if err != nil {
		return nil, err
	}
	repl := pyReplacement(c.str(3))
	limit := c.float(1)
	var names []string
	for _, s := range c.series(0) {
		if len(s.Values) == 0 {
			return nil, c.errf("seriesList", "series %s is empty", s.Name)
		}
		for _, v := range s.Values {
			if isNull(v) {
				return nil, c.errf("seriesList", "series %s has nulls, which graphite-web cannot compare", s.Name)
			}
		}
		if maxOf(s.Values) > limit {
			names = append(names, re.ReplaceAllString(s.Name, repl))
		}
	}
	if len(names) == 0 {
		return nil, nil
	}
	target := "group(" + strings.Join(names, ",") + ")"
	v, err := c.evalBuilt("replace", "target "+target, target)
	if err != nil {
		return nil, err
	}
	found, _ := v.([]*Series)
	var out []*Series
	for _, s := range found {
		if len(s.Values) > 0 {
			out = append(out, s)
		}
	}
	return out, nil
}

func mapSeriesFunc(c *callCtx) ([][]*Series, error) {
	nodes := c.multi(1)
	keys, groups := groupBy(c.series(0), func(s *Series) string { return aggKey(s, nodes) })
	out := make([][]*Series, len(keys))
	for i, k := range keys {
		out[i] = groups[k]
	}
	return out, nil
}

// reduceSeries calls reduceFunction with one series list per matcher, for
// each group of series that share the nodes before reduceNode.
func reduceSeries(c *callCtx) ([]*Series, error) {
	lists, _ := c.arg(0).([][]*Series)
	fnName, node := c.str(1), c.int(2)
	var matchers []string
	for _, m := range c.multi(3) {
		matchers = append(matchers, pyStr(m))
	}
	def := funcs[fnName]
	if def == nil || def.fn == nil {
		return nil, &UnknownFunctionError{Name: fnName, Pos: c.expr.At}
	}
	var keys []string
	slots := map[string][]*Series{}
	for _, l := range lists {
		for _, s := range l {
			nodes := strings.Split(s.Name, ".")
			idx := node
			if idx < 0 {
				idx += int64(len(nodes))
			}
			if idx < 0 || idx >= int64(len(nodes)) {
				return nil, c.errf("reduceNode", "series %s has no node %d", s.Name, node)
			}
			key := strings.Join(nodes[:idx], ".") + ".reduce." + fnName
			for i, m := range matchers {
				if nodes[idx] != m {
					continue
				}
				if _, ok := slots[key]; !ok {
					slots[key] = make([]*Series, len(matchers))
					keys = append(keys, key)
				}
				slots[key][i] = s
				break
			}
		}
	}
	var out []*Series
	for _, k := range keys {
		args := make([]any, len(matchers))
		for i, s := range slots[k] {
			if s == nil {
				return nil, c.errf("reduceMatchers", "no series for %q under %s", matchers[i], k)
			}
			args[i] = []*Series{s}
		}
		sub := &callCtx{ev: c.ev, expr: c.expr, def: def, from: c.from, until: c.until}
		if err := sub.bind(args, nil); err != nil {
			return nil, err
		}
		res, err := def.fn(sub)
		if err != nil {
			return nil, err
		}
		if len(res) == 0 {
			return nil, c.errf("reduceFunction", "%s returned no series for %s", fnName, k)
		}
		out = append(out, rename(res[0], k))
	}
	return out, nil
}
