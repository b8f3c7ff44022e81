package expr

import (
	"fmt"
	"strings"
)

func init() {
	register("alias", "Alias", func(c *callCtx) ([]*Series, error) {
		name := c.str(1)
		out := make([]*Series, len(c.series(0)))
		for i, s := range c.series(0) {
			out[i] = rename(s, name)
		}
		return out, nil
	}, pSeriesList, req("newName", "string"))
	register("aliasByNode", "Alias", aliasByNode, pSeriesList, multi(req("nodes", "nodeOrTag")))
	register("aliasByTags", "Alias", aliasByNode, pSeriesList, multi(req("tags", "nodeOrTag")))
	register("aliasSub", "Alias", aliasSub, pSeriesList, req("search", "string"), req("replace", "string"))
	register("aliasByMetric", "Alias", func(c *callCtx) ([]*Series, error) {
		return substr(c.series(0), -1, 0), nil
	}, pSeriesList)
	register("substr", "Special", func(c *callCtx) ([]*Series, error) {
		return substr(c.series(0), c.int(1), c.int(2)), nil
	}, pSeriesList, opt("start", "node", int64(0)), opt("stop", "node", int64(0)))
	register("legendValue", "Alias", legendValue, pSeriesList,
		multi(lenient(withOptions(opt("valuesTypes", "string", nil), legendOptions()...))))

	register("consolidateBy", "Special", func(c *callCtx) ([]*Series, error) {
		return consolidateBy(c.series(0), c.str(1)), nil
	}, pSeriesList, withOptions(req("consolidationFunc", "string"), "sum", "average", "avg", "avg_zero", "min", "max", "first", "last"))
	register("cumulative", "Special", func(c *callCtx) ([]*Series, error) {
		return consolidateBy(c.series(0), "sum"), nil
	}, pSeriesList)
	register("constantLine", "Special", func(c *callCtx) ([]*Series, error) {
		return []*Series{constantLine(c, c.float(0), pyFloat(c.float(0)))}, nil
	}, req("value", "float"))
	register("threshold", "Graph", func(c *callCtx) ([]*Series, error) {
		s := constantLine(c, c.float(0), pyFloat(c.float(0)))
		if l := c.str(1); l != "" {
			s.Name = l
		}
		return []*Series{s}, nil
	}, req("value", "float"), opt("label", "string", nil), opt("color", "string", nil))
	register("setXFilesFactor", "Special", setXFilesFactor, pSeriesList, req("xFilesFactor", "float"))
	funcs["xFilesFactor"] = &funcDef{FuncInfo: FuncInfo{Name: "xFilesFactor", Group: "Special", Params: funcs["setXFilesFactor"].params},
		params: funcs["setXFilesFactor"].params, fn: setXFilesFactor}
	register("offsetToZero", "Transform", func(c *callCtx) ([]*Series, error) {
		out := make([]*Series, 0, len(c.series(0)))
		for _, s := range c.series(0) {
			m := safeMin(s.Values)
			vals := mapValues(s, func(v float64) float64 { return v - m })
			tag := pyFloat(m)
			if isNull(m) {
				tag = "None"
			}
			out = append(out, derive(s, "offsetToZero("+s.Name+")", vals, "offsetToZero", tag))
		}
		return out, nil
	}, pSeriesList)
	register("scaleToSeconds", "Transform", func(c *callCtx) ([]*Series, error) {
		secs := c.float(1)
		d, ok := pyInt(secs)
		if !ok {
			return nil, c.errf("seconds", "%s has no integer form for the name", pyG(secs))
		}
		out := make([]*Series, 0, len(c.series(0)))
		for _, s := range c.series(0) {
			f := secs / float64(s.Step)
			vals := mapValues(s, func(v float64) float64 { return round6(v * f) })
			out = append(out, derive(s, fmt.Sprintf("scaleToSeconds(%s,%s)", s.Name, d), vals, "scaleToSeconds", pyStr(c.arg(1))))
		}
		return out, nil
	}, pSeriesList, req("seconds", "float"))

	// Graph functions only style a PNG; the data and names are what
	// graphite-web returns for them in json/csv/raw.
	keep := func(c *callCtx) ([]*Series, error) { return c.series(0), nil }
	register("color", "Graph", keep, pSeriesList, req("theColor", "string"))
	register("alpha", "Graph", keep, pSeriesList, req("alpha", "float"))
	register("lineWidth", "Graph", keep, pSeriesList, req("width", "float"))
	register("dashed", "Graph", func(c *callCtx) ([]*Series, error) {
		n := c.int(1)
		out := make([]*Series, len(c.series(0)))
		for i, s := range c.series(0) {
			r := rename(s, fmt.Sprintf("dashed(%s, %s)", s.Name, pyG(float64(n))))
			r.Tags = copyTags(s.Tags, "dashed", pyStr(c.arg(1)))
			out[i] = r
		}
		return out, nil
	}, pSeriesList, opt("dashLength", "integer", int64(5)))
	for _, name := range []string{"secondYAxis", "drawAsInfinite"} {
		name := name
		register(name, "Graph", func(c *callCtx) ([]*Series, error) {
			out := make([]*Series, len(c.series(0)))
			for i, s := range c.series(0) {
				r := rename(s, name+"("+s.Name+")")
				r.Tags = copyTags(s.Tags, name, "1")
				out[i] = r
			}
			return out, nil
		}, pSeriesList)
	}
}

func lenient(p ParamInfo) ParamInfo { p.lenient = true; return p }

func aliasByNode(c *callCtx) ([]*Series, error) {
	nodes := c.multi(1)
	out := make([]*Series, len(c.series(0)))
	for i, s := range c.series(0) {
		out[i] = rename(s, aggKey(s, nodes))
	}
	return out, nil
}

// pyReplacement turns a Python re.sub replacement (\1, \g<1>, \g<name>)
// into a Go regexp one.
func pyReplacement(r string) string {
	var b strings.Builder
	for i := 0; i < len(r); i++ {
		c := r[i]
		switch {
		case c == '$':
			b.WriteString("$$")
		case c == '\\' && i+1 < len(r) && isDigit(r[i+1]):
			j := i + 1
			for j < len(r) && j < i+3 && isDigit(r[j]) {
				j++
			}
			b.WriteString("${" + r[i+1:j] + "}")
			i = j - 1
		case c == '\\' && strings.HasPrefix(r[i+1:], "g<"):
			if end := strings.IndexByte(r[i+3:], '>'); end >= 0 {
				b.WriteString("${" + r[i+3:i+3+end] + "}")
				i += 3 + end
				continue
			}
			b.WriteByte(c)
		case c == '\\' && i+1 < len(r):
			i++
			switch r[i] {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case '\\':
				b.WriteByte('\\')
			default:
				b.WriteByte('\\')
				b.WriteByte(r[i])
			}
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func aliasSub(c *callCtx) ([]*Series, error) {
	re, err := c.compileRegexp("search", c.str(1))
	if err != nil {
		return nil, err
	}
	repl := pyReplacement(c.str(2))
	out := make([]*Series, len(c.series(0)))
	for i, s := range c.series(0) {
		out[i] = rename(s, re.ReplaceAllString(s.Name, repl))
	}
	return out, nil
}

func substr(series []*Series, start, stop int64) []*Series {
	out := make([]*Series, len(series))
	for i, s := range series {
		left := strings.LastIndexByte(s.Name, '(') + 1
		right := strings.IndexByte(s.Name, ')')
		if right < 0 {
			right = len(s.Name) + 1
		}
		clean := ""
		if left < min(right, len(s.Name)) {
			clean = s.Name[left:min(right, len(s.Name))]
		}
		parts := strings.Split(clean, ".")
		lo, hi := pyIndex(start, len(parts)), len(parts)
		if stop != 0 {
			hi = pyIndex(stop, len(parts))
		}
		name := ""
		if lo < hi {
			name = strings.Join(parts[lo:hi], ".")
		}
		if k := strings.IndexByte(name, ','); k >= 0 {
			name = name[:k]
		}
		out[i] = rename(s, name)
	}
	return out
}

// pyIndex clamps a Python slice bound.
func pyIndex(i int64, n int) int {
	if i < 0 {
		i += int64(n)
		if i < 0 {
			i = 0
		}
	}
	if i > int64(n) {
		i = int64(n)
	}
	return int(i)
}

func legendOptions() []string {
	var out []string
	for _, n := range aggFuncNames {
		out = append(out, n, n+"Series")
	}
	return append(out, "si", "binary")
}

func legendValue(c *callCtx) ([]*Series, error) {
	var types []string
	for _, v := range c.multi(1) {
		types = append(types, pyStr(v))
	}
	if len(types) == 0 {
		return nil, c.errf("valuesTypes", "at least one value type is required")
	}
	if types[len(types)-1] == "si" || types[len(types)-1] == "binary" {
		return nil, c.errf("valuesTypes", "unit systems (si, binary) are not supported")
	}
	out := make([]*Series, len(c.series(0)))
	copy(out, c.series(0))
	for _, t := range types {
		agg := aggFuncs[t]
		for i, s := range out {
			val := "(?)"
			if agg != nil {
				v := agg(s.Values)
				if isNull(v) {
					val = "None"
				} else if t == "count" {
					val = fmt.Sprint(int64(v))
				} else {
					val = pyFloat(v)
				}
			}
			out[i] = rename(s, fmt.Sprintf("%s (%s: %s)", s.Name, t, val))
		}
	}
	return out, nil
}

func consolidateBy(series []*Series, fn string) []*Series {
	out := make([]*Series, len(series))
	for i, s := range series {
		r := derive(s, fmt.Sprintf("consolidateBy(%s,\"%s\")", s.Name, fn), s.Values, "consolidateBy", fn)
		r.ConsolidationFunc = fn
		out[i] = r
	}
	return out
}

// constantLine is graphite-web's: three points spanning the request.
func constantLine(c *callCtx, v float64, text string) *Series {
	step := (c.until - c.from) / 2
	if step < 1 {
		step = 1
	}
	s := newSeries(text, c.from, step, []float64{v, v, v}, c.ev.xff)
	s.PathExpression = fmt.Sprintf("constantLine(%s)", text)
	return s
}

func setXFilesFactor(c *callCtx) ([]*Series, error) {
	xf := c.float(1)
	out := make([]*Series, len(c.series(0)))
	for i, s := range c.series(0) {
		r := rename(s, s.Name)
		r.XFilesFactor = xf
		r.Tags = copyTags(s.Tags, "xFilesFactor", pyFloat(xf))
		out[i] = r
	}
	return out, nil
}
