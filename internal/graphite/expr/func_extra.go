package expr

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

func init() {
	register("add", "Transform", func(c *callCtx) ([]*Series, error) {
		k := c.float(1)
		d, ok := pyInt(k)
		if !ok {
			return nil, c.errf("constant", "%s has no integer form for the name", pyG(k))
		}
		return mapSeries(c.series(0), "add", "add(%s,"+d+")", pyStr(c.arg(1)), func(v float64) float64 { return v + k }), nil
	}, pSeriesList, req("constant", "float"))
	register("exp", "Transform", func(c *callCtx) ([]*Series, error) {
		return mapSeries(c.series(0), "exp", "exp(%s)", "e", math.Exp), nil
	}, pSeriesList)
	register("sigmoid", "Transform", func(c *callCtx) ([]*Series, error) {
		return mapSeries(c.series(0), "sigmoid", "sigmoid(%s)", "sigmoid", func(v float64) float64 { return 1 / (1 + math.Exp(-v)) }), nil
	}, pSeriesList)
	register("logit", "Transform", func(c *callCtx) ([]*Series, error) {
		return mapSeries(c.series(0), "logit", "logit(%s)", "logit", func(v float64) float64 {
			if v == 1 || v/(1-v) <= 0 {
				return null
			}
			return math.Log(v / (1 - v))
		}), nil
	}, pSeriesList)
	register("minMax", "Transform", func(c *callCtx) ([]*Series, error) {
		out := make([]*Series, 0, len(c.series(0)))
		for _, s := range c.series(0) {
			lo, hi := safeMin(s.Values), safeMax(s.Values)
			if isNull(lo) {
				lo, hi = 0, 0
			}
			vals := mapValues(s, func(v float64) float64 {
				switch {
				case isNull(v):
					return null
				case hi == lo:
					return 0
				}
				return (v - lo) / (hi - lo)
			})
			n := derive(s, "minMax("+s.Name+")", vals)
			out = append(out, n)
		}
		return out, nil
	}, pSeriesList)
	register("round", "Transform", roundFunc, pSeriesList, opt("precision", "integer", int64(0)))
	register("interpolate", "Transform", interpolate, pSeriesList, opt("limit", "intOrInf", math.Inf(1)))
	register("integralByInterval", "Transform", integralByInterval, pSeriesList, req("intervalUnit", "string"))
	register("exponentialMovingAverage", "Calculate", exponentialMovingAverage, pSeriesList,
		suggest(req("windowSize", "intOrInterval"), intOrIntervalSuggestions...))

	register("powSeries", "Combine", powSeries, multi(req("seriesList", "seriesList")))
	for _, a := range []struct{ name, fn string }{{"sumSeriesLists", "sum"}, {"diffSeriesLists", "diff"}, {"multiplySeriesLists", "multiply"}} {
		fn := a.fn
		register(a.name, "Combine", func(c *callCtx) ([]*Series, error) {
			return aggregateSeriesLists(c, c.series(0), c.series(1), fn, c.ev.xff)
		}, req("seriesListFirstPos", "seriesList"), req("seriesListSecondPos", "seriesList"))
	}
	register("aggregateSeriesLists", "Combine", func(c *callCtx) ([]*Series, error) {
		xf := c.ev.xff
		if c.has(3) {
			xf = c.float(3)
		}
		return aggregateSeriesLists(c, c.series(0), c.series(1), c.str(2), xf)
	}, req("seriesListFirstPos", "seriesList"), req("seriesListSecondPos", "seriesList"), aggFuncParam("func", nil), opt("xFilesFactor", "float", nil))
	register("divideSeriesLists", "Combine", divideSeriesLists, req("dividendSeriesList", "seriesList"), req("divisorSeriesList", "seriesList"))
	register("multiplySeriesWithWildcards", "Combine", func(c *callCtx) ([]*Series, error) {
		return aggregateWithWildcards(c, c.series(0), "multiply", c.multi(1))
	}, pSeriesList, multi(opt("position", "node", nil)))
	register("weightedAverage", "Combine", weightedAverage, req("seriesListAvg", "seriesList"), req("seriesListWeight", "seriesList"), multi(opt("nodes", "nodeOrTag", nil)))

	register("averageOutsidePercentile", "Filter Series", averageOutsidePercentile, pSeriesList, req("n", "float"))
	register("fallbackSeries", "Special", func(c *callCtx) ([]*Series, error) {
		if len(c.series(0)) > 0 {
			return c.series(0), nil
		}
		return c.series(1), nil
	}, pSeriesList, req("fallback", "seriesList"))
	register("identity", "Calculate", func(c *callCtx) ([]*Series, error) {
		return generated(c, c.str(0), 60, fmt.Sprintf("identity(\"%s\")", c.str(0)), func(t int64) float64 { return float64(t) })
	}, req("name", "string"))
	timeFn := func(c *callCtx) ([]*Series, error) {
		return generated(c, c.str(0), c.int(1), "", func(t int64) float64 { return float64(t) })
	}
	register("time", "Transform", timeFn, req("name", "string"), opt("step", "integer", int64(60)))
	register("timeFunction", "Transform", timeFn, req("name", "string"), opt("step", "integer", int64(60)))
	sinFn := func(c *callCtx) ([]*Series, error) {
		amp := float64(c.int(1))
		return generated(c, c.str(0), c.int(2), "", func(t int64) float64 { return math.Sin(float64(t)) * amp })
	}
	register("sin", "Transform", sinFn, req("name", "string"), opt("amplitude", "integer", int64(1)), opt("step", "integer", int64(60)))
	register("sinFunction", "Transform", sinFn, req("name", "string"), opt("amplitude", "integer", int64(1)), opt("step", "integer", int64(60)))
	register("areaBetween", "Graph", areaBetween, pSeriesList)
	register("cactiStyle", "Special", cactiStyle, pSeriesList, withOptions(opt("system", "string", nil), "si", "binary"), opt("units", "string", nil))
	register("linearRegression", "Calculate", linearRegression, pSeriesList, opt("startSourceAt", "date", nil), opt("endSourceAt", "date", nil))
}

// pyRound is Python's round(x, n) for floats: correctly rounded, ties to
// even.
func pyRound(x float64, n int64) float64 {
	if isNull(x) || math.IsInf(x, 0) {
		return x
	}
	if n >= 0 {
		if n > 20 {
			return x
		}
		r, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'f', int(n), 64), 64)
		return r
	}
	p := math.Pow(10, float64(-n))
	return math.RoundToEven(x/p) * p
}

func roundFunc(c *callCtx) ([]*Series, error) {
	prec := c.int(1)
	out := make([]*Series, 0, len(c.series(0)))
	for _, s := range c.series(0) {
		name := "round(" + s.Name + ")"
		if c.has(1) {
			name = fmt.Sprintf("round(%s,%d)", s.Name, prec)
		}
		vals := mapValues(s, func(v float64) float64 { return pyRound(v, prec) })
		out = append(out, derive(s, name, vals, "round", strconv.FormatInt(prec, 10)))
	}
	return out, nil
}

func interpolate(c *callCtx) ([]*Series, error) {
	limit := c.float(1)
	out := make([]*Series, 0, len(c.series(0)))
	for _, s := range c.series(0) {
		vals := append([]float64(nil), s.Values...)
		nones := 0
		for i := 1; i < len(vals); i++ {
			v := vals[i]
			switch {
			case isNull(v):
				nones++
			case nones == 0:
			case isNull(vals[i-nones-1]):
				nones = 0
			default:
				if float64(nones) <= limit {
					prev := vals[i-nones-1]
					for j := i - nones; j < i; j++ {
						vals[j] = prev + float64(j-(i-nones-1))*(v-prev)/float64(nones+1)
					}
				}
				nones = 0
			}
		}
		out = append(out, derive(s, "interpolate("+s.Name+")", vals))
	}
	return out, nil
}

func integralByInterval(c *callCtx) ([]*Series, error) {
	unit := c.str(1)
	d, err := ParseOffset(unit)
	if err != nil {
		return nil, c.errf("intervalUnit", "invalid interval %s: %v", pyRepr(unit), err)
	}
	if d < 0 {
		d = -d
	}
	if d == 0 {
		return nil, c.errf("intervalUnit", "interval %s is zero", pyRepr(unit))
	}
	out := make([]*Series, 0, len(c.series(0)))
	for _, s := range c.series(0) {
		vals := make([]float64, len(s.Values))
		t := s.Start
		cur := 0.0
		for i, v := range s.Values {
			if q, _ := floorDiv(t-c.from, d); func() bool { p, _ := floorDiv(t-c.from-s.Step, d); return p != q }() {
				cur = 0
			}
			if !isNull(v) {
				cur += v
			}
			vals[i] = cur
			t += s.Step
		}
		out = append(out, derive(s, fmt.Sprintf("integralByInterval(%s,'%s')", s.Name, unit), vals, "integralByInterval", unit))
	}
	return out, nil
}

func exponentialMovingAverage(c *callCtx) ([]*Series, error) {
	series := c.series(0)
	if len(series) == 0 {
		return nil, nil
	}
	var preview, points int64
	var k float64
	isInterval := false
	switch w := c.arg(1).(type) {
	case string:
		d, err := ParseOffset(w)
		if err != nil {
			return nil, c.errf("windowSize", "invalid interval %s: %v", pyRepr(w), err)
		}
		if d < 0 {
			d = -d
		}
		preview, isInterval = d, true
		k = 2 / float64(preview+1)
	case int64:
		if w < 0 {
			return nil, c.errf("windowSize", "window of %d points", w)
		}
		var maxStep int64
		for _, s := range series {
			maxStep = max(maxStep, s.Step)
		}
		points, preview = w, maxStep*w
		k = 2 / float64(w+1)
	default:
		return nil, c.errf("windowSize", "invalid \"intOrInterval\" value %s", reprArg(c.arg(1)))
	}
	if preview > MaxPoints*(c.until-c.from) {
		return nil, c.errf("windowSize", "window %s too large", pyStr(c.arg(1)))
	}
	list, err := c.refetch(c.from-preview, c.until)
	if err != nil {
		return nil, err
	}
	out := make([]*Series, 0, len(list))
	for _, s := range list {
		name := fmt.Sprintf("exponentialMovingAverage(%s,%s)", s.Name, pyStr(c.arg(1)))
		wp := points
		if isInterval {
			name = fmt.Sprintf("exponentialMovingAverage(%s,\"%s\")", s.Name, pyStr(c.arg(1)))
			wp = preview / s.Step
		}
		wp = min(wp, int64(len(s.Values)))
		ema := safeAvg(s.Values[:wp])
		if isNull(ema) {
			ema = 0
		}
		vals := []float64{pyRound(ema, 6)}
		for _, v := range s.Values[wp:] {
			if isNull(v) {
				vals = append(vals, null)
				continue
			}
			ema = k*v + (1-k)*ema
			vals = append(vals, pyRound(ema, 6))
		}
		n := derive(s, name, vals, "exponentialMovingAverage", pyStr(c.arg(1)))
		n.Start = s.Start + preview
		n.End = n.Start + int64(len(vals))*n.Step
		out = append(out, n)
	}
	return out, nil
}

func powSeries(c *callCtx) ([]*Series, error) {
	nz := normalize(c.seriesLists(0)...)
	if nz == nil {
		return nil, nil
	}
	names := make([]string, len(nz.series))
	for i, s := range nz.series {
		names[i] = s.Name
	}
	values := nz.mapRows(func(row []float64) float64 {
		v := row[0]
		for _, e := range row[1:] {
			v = safePow(v, e)
		}
		return v
	})
	return []*Series{newSeries("powSeries("+strings.Join(names, ",")+")", nz.start, nz.step, values, c.ev.xff)}, nil
}

func aggregateSeriesLists(c *callCtx, first, second []*Series, fn string, xf float64) ([]*Series, error) {
	if len(first) != len(second) {
		return nil, c.errf("seriesListSecondPos", "seriesListFirstPos and seriesListSecondPos argument must have equal length")
	}
	var out []*Series
	for i := range first {
		r, err := aggregate([][]*Series{{first[i], second[i]}}, fn, xf)
		if err != nil {
			return nil, err
		}
		if len(r) == 0 {
			continue
		}
		s := r[0]
		s.Name = s.Name[:strings.Index(s.Name, "Series(")] + fmt.Sprintf("Series(%s,%s)", first[i].Name, second[i].Name)
		out = append(out, s)
	}
	return out, nil
}

func divideSeriesLists(c *callCtx) ([]*Series, error) {
	a, b := c.series(0), c.series(1)
	if len(a) != len(b) {
		return nil, c.errf("divisorSeriesList", "dividendSeriesList and divisorSeriesList argument must have equal length")
	}
	out := make([]*Series, 0, len(a))
	for i := range a {
		nz := normalize([]*Series{a[i], b[i]})
		values := nz.mapRows(func(row []float64) float64 { return safeDiv(row[0], row[1]) })
		out = append(out, newSeries(fmt.Sprintf("divideSeries(%s,%s)", a[i].Name, b[i].Name), nz.start, nz.step, values, c.ev.xff))
	}
	return out, nil
}

func weightedAverage(c *callCtx) ([]*Series, error) {
	avgs, weights, nodes := c.series(0), c.series(1), c.multi(2)
	if len(avgs) != len(weights) {
		return nil, c.errf("seriesListWeight", "weightedAverage must receive the same number of series for seriesListAvg and seriesListWeight but received respectively %d and %d", len(avgs), len(weights))
	}
	type pair struct{ avg, weight *Series }
	var keys []string
	byKey := map[string]*pair{}
	get := func(k string) *pair {
		if p, ok := byKey[k]; ok {
			return p
		}
		keys = append(keys, k)
		byKey[k] = &pair{}
		return byKey[k]
	}
	for i := range avgs {
		get(aggKey(avgs[i], nodes)).avg = avgs[i]
		get(aggKey(weights[i], nodes)).weight = weights[i]
	}
	var products []*Series
	for _, k := range keys {
		p := byKey[k]
		if p.avg == nil || p.weight == nil {
			continue
		}
		n := max(len(p.avg.Values), len(p.weight.Values))
		vals := make([]float64, n)
		for i := range vals {
			a, w := null, null
			if i < len(p.avg.Values) {
				a = p.avg.Values[i]
			}
			if i < len(p.weight.Values) {
				w = p.weight.Values[i]
			}
			vals[i] = a * w
		}
		products = append(products, newSeries(fmt.Sprintf("product(%s,%s)", p.weight.Name, p.avg.Name), p.avg.Start, p.avg.Step, vals, c.ev.xff))
	}
	if len(products) == 0 {
		return nil, nil
	}
	sp, err := aggregate([][]*Series{products}, "sum", c.ev.xff)
	if err != nil {
		return nil, err
	}
	sw, err := aggregate([][]*Series{weights}, "sum", c.ev.xff)
	if err != nil {
		return nil, err
	}
	n := max(len(sp[0].Values), len(sw[0].Values))
	vals := make([]float64, n)
	for i := range vals {
		a, b := null, null
		if i < len(sp[0].Values) {
			a = sp[0].Values[i]
		}
		if i < len(sw[0].Values) {
			b = sw[0].Values[i]
		}
		vals[i] = safeDiv(a, b)
	}
	paths := func(l []*Series) string {
		set := map[string]bool{}
		var out []string
		for _, s := range l {
			if !set[s.PathExpression] {
				set[s.PathExpression] = true
				out = append(out, s.PathExpression)
			}
		}
		sort.Strings(out)
		return strings.Join(out, ",")
	}
	var ns []string
	for _, n := range nodes {
		ns = append(ns, pyStr(n))
	}
	name := fmt.Sprintf("weightedAverage(%s, %s, %s)", paths(avgs), paths(weights), strings.Join(ns, ","))
	return []*Series{newSeries(name, sp[0].Start, sp[0].Step, vals, c.ev.xff)}, nil
}

func averageOutsidePercentile(c *callCtx) ([]*Series, error) {
	series, n := c.series(0), c.float(1)
	avgs := make([]float64, len(series))
	for i, s := range series {
		avgs[i] = safeAvg(s.Values)
		if isNull(avgs[i]) {
			return nil, c.errf("seriesList", "series %s has no values to average", s.Name)
		}
	}
	if n < 50 {
		n = 100 - n
	}
	lo, ok1 := percentile(avgs, 100-n, false)
	hi, ok2 := percentile(avgs, n, false)
	if !ok1 || !ok2 {
		return nil, c.errf("n", "percentile %s is out of range", pyG(c.float(1)))
	}
	var out []*Series
	for i, s := range series {
		if !(lo < avgs[i] && avgs[i] < hi) {
			out = append(out, s)
		}
	}
	return out, nil
}

// generated makes identity/time/sin: one point per step from the start
// of the request while before its end.
func generated(c *callCtx, name string, step int64, pathExpr string, f func(int64) float64) ([]*Series, error) {
	if step <= 0 {
		return nil, c.errf("step", "step %d is not positive", step)
	}
	if (c.until-c.from)/step > MaxPoints {
		return nil, fmt.Errorf("%s: %d points: %w", c.expr.Name, (c.until-c.from)/step, ErrLimit)
	}
	var vals []float64
	for t := c.from; t < c.until; t += step {
		vals = append(vals, f(t))
	}
	s := newSeries(name, c.from, step, vals, c.ev.xff)
	if pathExpr != "" {
		s.PathExpression = pathExpr
	}
	return []*Series{s}, nil
}

func areaBetween(c *callCtx) ([]*Series, error) {
	series := c.series(0)
	if len(series) != 2 {
		return nil, c.errf("seriesList", "areaBetween series argument must reference *exactly* 2 series (got %d)", len(series))
	}
	lower, upper := series[0], series[1]
	name := fmt.Sprintf("areaBetween(%s)", upper.PathExpression)
	tags := copyTags(upper.Tags, "areaBetween", "1")
	l, u := rename(lower, name), rename(upper, name)
	l.Tags, u.Tags = tags, tags
	return []*Series{l, u}, nil
}

// cactiStyle appends current/max/min to the names, padded as
// graphite-web pads them; unit systems (si, binary) are not supported.
func cactiStyle(c *callCtx) ([]*Series, error) {
	series := c.series(0)
	if len(series) == 0 {
		return series, nil
	}
	if c.has(1) {
		return nil, c.errf("system", "unit systems (si, binary) are not supported")
	}
	units := ""
	if c.has(2) {
		units = c.str(2)
	}
	fmtv := func(x float64) string {
		if units != "" {
			return fmt.Sprintf("%.2f %s", x, units)
		}
		return fmt.Sprintf("%.2f", x)
	}
	orThree := func(v float64) float64 {
		if isNull(v) || v == 0 {
			return 3
		}
		return math.Trunc(v)
	}
	nameLen, lastLen, maxLen, minLen := 0, 0, 0, 0
	for _, s := range series {
		nameLen = max(nameLen, len(s.Name))
		lastLen = max(lastLen, len(fmtv(orThree(safeLast(s.Values))))+3)
		maxLen = max(maxLen, len(fmtv(orThree(safeMax(s.Values))))+3)
		minLen = max(minLen, len(fmtv(orThree(safeMin(s.Values))))+3)
	}
	show := func(v float64) string {
		if isNull(v) {
			return "nan"
		}
		return fmtv(v)
	}
	out := make([]*Series, len(series))
	for i, s := range series {
		name := fmt.Sprintf("%-*s Current:%-*s Max:%-*s Min:%-*s ", nameLen, s.Name,
			lastLen, show(safeLast(s.Values)), maxLen, show(safeMax(s.Values)), minLen, show(safeMin(s.Values)))
		out[i] = rename(s, name)
	}
	return out, nil
}

func linearRegression(c *callCtx) ([]*Series, error) {
	from, until := c.from, c.until
	var err error
	if c.has(1) {
		if from, err = c.timeArg(1); err != nil {
			return nil, c.errf("startSourceAt", "%v", err)
		}
	}
	if c.has(2) {
		if until, err = c.timeArg(2); err != nil {
			return nil, c.errf("endSourceAt", "%v", err)
		}
	}
	sources, err := c.refetch(from, until)
	if err != nil {
		return nil, err
	}
	series := c.series(0)
	var out []*Series
	for i := 0; i < len(sources) && i < len(series); i++ {
		src, s := sources[i], series[i]
		var n, sumI, sumV, sumII, sumIV float64
		for j, v := range src.Values {
			if isNull(v) {
				continue
			}
			fj := float64(j)
			n++
			sumI += fj
			sumV += v
			sumII += fj * fj
			sumIV += fj * v
		}
		den := n*sumII - sumI*sumI
		if den == 0 {
			continue
		}
		factor := (n*sumIV - sumI*sumV) / den / float64(src.Step)
		offset := (sumII*sumV-sumIV*sumI)/den - factor*float64(src.Start)
		vals := make([]float64, len(s.Values))
		for j := range vals {
			vals[j] = offset + float64(s.Start+int64(j)*s.Step)*factor
		}
		tag := fmt.Sprintf("%d, %d", from, until)
		out = append(out, derive(s, fmt.Sprintf("linearRegression(%s, %d, %d)", s.Name, from, until), vals, "linearRegressions", tag))
	}
	return out, nil
}
