package expr

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/aerie-db/aerie/internal/mathx"
)

func init() {
	register("scale", "Transform", func(c *callCtx) ([]*Series, error) {
		f := c.float(1)
		return mapSeries(c.series(0), "scale", fmt.Sprintf("scale(%%s,%s)", pyG(f)), pyStr(c.arg(1)), func(v float64) float64 { return v * f }), nil
	}, pSeriesList, req("factor", "float"))
	register("offset", "Transform", func(c *callCtx) ([]*Series, error) {
		f := c.float(1)
		return mapSeries(c.series(0), "offset", fmt.Sprintf("offset(%%s,%s)", pyG(f)), pyStr(c.arg(1)), func(v float64) float64 { return v + f }), nil
	}, pSeriesList, req("factor", "float"))
	register("absolute", "Transform", func(c *callCtx) ([]*Series, error) {
		return mapSeries(c.series(0), "absolute", "absolute(%s)", "1", math.Abs), nil
	}, pSeriesList)
	register("invert", "Transform", func(c *callCtx) ([]*Series, error) {
		return mapSeries(c.series(0), "invert", "invert(%s)", "1", func(v float64) float64 { return safePow(v, -1) }), nil
	}, pSeriesList)
	register("pow", "Transform", func(c *callCtx) ([]*Series, error) {
		f := c.float(1)
		return mapSeries(c.series(0), "pow", fmt.Sprintf("pow(%%s,%s)", pyG(f)), pyStr(c.arg(1)), func(v float64) float64 { return safePow(v, f) }), nil
	}, pSeriesList, req("factor", "float"))
	register("squareRoot", "Transform", func(c *callCtx) ([]*Series, error) {
		return mapSeries(c.series(0), "squareRoot", "squareRoot(%s)", "1", func(v float64) float64 { return safePow(v, 0.5) }), nil
	}, pSeriesList)
	register("log", "Transform", logarithm, pSeriesList, opt("base", "integer", int64(10)))
	register("isNonNull", "Transform", func(c *callCtx) ([]*Series, error) {
		out := make([]*Series, 0, len(c.series(0)))
		for _, s := range c.series(0) {
			vals := make([]float64, len(s.Values))
			for i, v := range s.Values {
				if !isNull(v) {
					vals[i] = 1
				}
			}
			out = append(out, derive(s, "isNonNull("+s.Name+")", vals, "isNonNull", "1"))
		}
		return out, nil
	}, pSeriesList)
	register("derivative", "Transform", func(c *callCtx) ([]*Series, error) {
		out := make([]*Series, 0, len(c.series(0)))
		for _, s := range c.series(0) {
			vals := make([]float64, len(s.Values))
			prev := null
			for i, v := range s.Values {
				vals[i] = v - prev // NaN if either is null
				prev = v
			}
			out = append(out, derive(s, "derivative("+s.Name+")", vals, "derivative", "1"))
		}
		return out, nil
	}, pSeriesList)
	register("nonNegativeDerivative", "Transform", func(c *callCtx) ([]*Series, error) {
		return nonNegative(c, "nonNegativeDerivative", false)
	}, pSeriesList, opt("maxValue", "float", nil), opt("minValue", "float", nil))
	register("perSecond", "Transform", func(c *callCtx) ([]*Series, error) {
		return nonNegative(c, "perSecond", true)
	}, pSeriesList, opt("maxValue", "float", nil), opt("minValue", "float", nil))
	register("integral", "Transform", func(c *callCtx) ([]*Series, error) {
		out := make([]*Series, 0, len(c.series(0)))
		for _, s := range c.series(0) {
			vals := make([]float64, len(s.Values))
			cur := 0.0
			for i, v := range s.Values {
				if isNull(v) {
					vals[i] = null
					continue
				}
				cur += v
				vals[i] = cur
			}
			out = append(out, derive(s, "integral("+s.Name+")", vals, "integral", "1"))
		}
		return out, nil
	}, pSeriesList)
	register("delay", "Transform", delay, pSeriesList, req("steps", "integer"))
	register("keepLastValue", "Transform", keepLastValue, pSeriesList, opt("limit", "intOrInf", math.Inf(1)))
	register("transformNull", "Transform", transformNull, pSeriesList, opt("default", "float", int64(0)), opt("referenceSeries", "seriesList", nil))
	register("changed", "Special", changed, pSeriesList)
	for _, w := range []struct{ name, fn string }{
		{"movingAverage", "average"}, {"movingMedian", "median"}, {"movingSum", "sum"}, {"movingMin", "min"}, {"movingMax", "max"},
	} {
		fn := w.fn
		register(w.name, "Calculate", func(c *callCtx) ([]*Series, error) {
			return movingWindow(c, fn, 2)
		}, pSeriesList, suggest(req("windowSize", "intOrInterval"), intOrIntervalSuggestions...), opt("xFilesFactor", "float", nil))
	}
	register("movingWindow", "Calculate", func(c *callCtx) ([]*Series, error) {
		return movingWindow(c, c.str(2), 3)
	}, pSeriesList, suggest(req("windowSize", "intOrInterval"), intOrIntervalSuggestions...), aggFuncParam("func", "average"), opt("xFilesFactor", "float", nil))
	register("summarize", "Transform", summarize, pSeriesList, suggest(req("intervalString", "interval"), intervalSuggestions...),
		aggFuncParam("func", "sum"), opt("alignToFrom", "boolean", false))
	register("smartSummarize", "Transform", smartSummarize, pSeriesList, suggest(req("intervalString", "interval"), intervalSuggestions...),
		aggFuncParam("func", "sum"), alignToParam())
	register("hitcount", "Transform", hitcount, pSeriesList, suggest(req("intervalString", "interval"), intervalSuggestions...), opt("alignToInterval", "boolean", false))
	register("timeShift", "Transform", timeShift, pSeriesList, suggest(req("timeShift", "interval"), shiftSuggestions...),
		opt("resetEnd", "boolean", true), opt("alignDst", "boolean", false))
	register("timeStack", "Transform", timeStack, pSeriesList, suggest(opt("timeShiftUnit", "interval", "1d"), shiftSuggestions...),
		opt("timeShiftStart", "integer", int64(0)), opt("timeShiftEnd", "integer", int64(7)))
	register("timeSlice", "Transform", timeSlice, pSeriesList, req("startSliceAt", "date"), opt("endSliceAt", "date", "now"))
}

// alignToParam is smartSummarize's alignTo: a unit name; true and false
// are listed for the deprecated alignToFrom and ignored.
func alignToParam() ParamInfo {
	p := opt("alignTo", "string", nil)
	p.Options = []any{"days", false, "hours", "minutes", "months", nil, "seconds", true, "weeks", "years"}
	p.lenient = true // graphite-web goes by prefix: "weeks3", "h" …
	return p
}

// mapSeries applies f to every non-null value, naming each result by
// nameFmt (one %s for the input's name) and setting tag to tagVal.
func mapSeries(series []*Series, tag, nameFmt, tagVal string, f func(float64) float64) []*Series {
	out := make([]*Series, 0, len(series))
	for _, s := range series {
		vals := make([]float64, len(s.Values))
		for i, v := range s.Values {
			if isNull(v) {
				vals[i] = null
			} else {
				vals[i] = f(v)
			}
		}
		out = append(out, derive(s, fmt.Sprintf(nameFmt, s.Name), vals, tag, tagVal))
	}
	return out
}

// safePow is math.pow with graphite-web's None for what Python raises on.
func safePow(a, b float64) float64 {
	if isNull(a) || isNull(b) {
		return null
	}
	r := math.Pow(a, b)
	if r != r || (math.IsInf(r, 0) && !math.IsInf(a, 0) && !math.IsInf(b, 0)) {
		return null
	}
	return r
}

func logarithm(c *callCtx) ([]*Series, error) {
	base := c.int(1)
	if base <= 0 || base == 1 {
		return nil, c.errf("base", "base %d has no logarithm", base)
	}
	lb := math.Log(float64(base))
	out := make([]*Series, 0, len(c.series(0)))
	for _, s := range c.series(0) {
		vals := make([]float64, len(s.Values))
		for i, v := range s.Values {
			if isNull(v) || v <= 0 {
				vals[i] = null
			} else {
				vals[i] = math.Log(v) / lb
			}
		}
		out = append(out, derive(s, fmt.Sprintf("log(%s, %d)", s.Name, base), vals, "log", strconv.FormatInt(base, 10)))
	}
	return out, nil
}

// nonNegativeDelta is graphite-web's _nonNegativeDelta: the increase from
// prev to val, accounting for counter wraps when maxValue/minValue are set.
func nonNegativeDelta(val, prev, maxValue, minValue float64) (delta, newPrev float64) {
	if !isNull(maxValue) && !isNull(val) && val > maxValue {
		return null, null
	}
	if !isNull(minValue) && !isNull(val) && val < minValue {
		return null, null
	}
	if isNull(prev) || isNull(val) {
		return null, val
	}
	if val >= prev {
		return val - prev, val
	}
	if !isNull(maxValue) {
		mn := 0.0
		if !isNull(minValue) {
			mn = minValue
		}
		return maxValue + 1 + val - prev - mn, val
	}
	if !isNull(minValue) {
		return val - minValue, val
	}
	return null, val
}

// round6 is Python's round(x, 6).
func round6(x float64) float64 {
	if math.IsInf(x, 0) || x != x {
		return x
	}
	r, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'f', 6, 64), 64)
	return r
}

func nonNegative(c *callCtx, name string, perSecond bool) ([]*Series, error) {
	maxV, minV := null, null
	if c.has(1) {
		maxV = c.float(1)
	}
	if c.has(2) {
		minV = c.float(2)
	}
	out := make([]*Series, 0, len(c.series(0)))
	for _, s := range c.series(0) {
		vals := make([]float64, len(s.Values))
		prev := null
		for i, v := range s.Values {
			var d float64
			d, prev = nonNegativeDelta(v, prev, maxV, minV)
			if perSecond && !isNull(d) {
				d = round6(d / float64(s.Step))
			}
			vals[i] = d
		}
		out = append(out, derive(s, name+"("+s.Name+")", vals, name, "1"))
	}
	return out, nil
}

func delay(c *callCtx) ([]*Series, error) {
	steps := c.int(1)
	out := make([]*Series, 0, len(c.series(0)))
	for _, s := range c.series(0) {
		n := int64(len(s.Values))
		vals := make([]float64, 0, n)
		if steps < 0 {
			k := -steps
			if k < n {
				vals = append(vals, s.Values[k:]...)
			}
			for i := int64(0); i < min(k, n); i++ {
				vals = append(vals, null)
			}
		} else {
			for i := int64(0); i < min(steps, n); i++ {
				vals = append(vals, null)
			}
			// series[:-steps] in Python; [:-0] is empty.
			if steps > 0 && steps < n {
				vals = append(vals, s.Values[:n-steps]...)
			}
		}
		out = append(out, derive(s, fmt.Sprintf("delay(%s,%d)", s.Name, steps), vals, "delay", strconv.FormatInt(steps, 10)))
	}
	return out, nil
}

func keepLastValue(c *callCtx) ([]*Series, error) {
	limit := c.float(1)
	out := make([]*Series, 0, len(c.series(0)))
	for _, s := range c.series(0) {
		vals := append([]float64(nil), s.Values...)
		nones := 0
		last := null
		for i, v := range vals {
			if isNull(v) {
				nones++
				continue
			}
			if nones > 0 && float64(nones) <= limit && !isNull(last) {
				for j := i - nones; j < i; j++ {
					vals[j] = last
				}
			}
			nones = 0
			last = v
		}
		if nones > 0 && float64(nones) <= limit && !isNull(last) {
			for j := len(vals) - nones; j < len(vals); j++ {
				vals[j] = last
			}
		}
		n := derive(s, "keepLastValue("+s.Name+")", vals)
		out = append(out, n)
	}
	return out, nil
}

func transformNull(c *callCtx) ([]*Series, error) {
	def := c.float(1)
	ref := c.series(2)
	var defaults []float64
	if len(ref) > 0 {
		n := 0
		for _, r := range ref {
			n = max(n, len(r.Values))
		}
		defaults = make([]float64, n)
		for i := range defaults {
			defaults[i] = null
			for _, r := range ref {
				if i < len(r.Values) && !isNull(r.Values[i]) {
					defaults[i] = def
					break
				}
			}
		}
	}
	out := make([]*Series, 0, len(c.series(0)))
	for _, s := range c.series(0) {
		name := fmt.Sprintf("transformNull(%s,%s)", s.Name, pyG(def))
		extra := []string{"transformNull", pyStr(c.arg(1))}
		if len(ref) > 0 {
			name = fmt.Sprintf("transformNull(%s,%s,referenceSeries)", s.Name, pyG(def))
			extra = append(extra, "referenceSeries", "1")
		}
		n := len(s.Values)
		if len(defaults) > n {
			n = len(defaults)
		}
		vals := make([]float64, n)
		for i := range vals {
			v := null
			if i < len(s.Values) {
				v = s.Values[i]
			}
			switch {
			case !isNull(v):
				vals[i] = v
			case defaults != nil:
				vals[i] = null
				if i < len(defaults) {
					vals[i] = defaults[i]
				}
			default:
				vals[i] = def
			}
		}
		// graphite-web extends the series with the new values and deletes
		// as many from the front: when the reference series are longer,
		// what remains is the tail of the new values.
		if len(vals) > len(s.Values) {
			vals = vals[len(vals)-len(s.Values):]
		}
		out = append(out, derive(s, name, vals, extra...))
	}
	return out, nil
}

func changed(c *callCtx) ([]*Series, error) {
	out := make([]*Series, 0, len(c.series(0)))
	for _, s := range c.series(0) {
		vals := make([]float64, len(s.Values))
		prev := null
		for i, v := range s.Values {
			switch {
			case isNull(prev):
				prev = v
			case !isNull(v) && prev != v:
				vals[i] = 1
				prev = v
			}
		}
		out = append(out, derive(s, "changed("+s.Name+")", vals))
	}
	return out, nil
}

// interval parses an interval argument (already validated by bind).
func (c *callCtx) interval(i int) int64 {
	n, _ := ParseOffset(c.str(i))
	return n
}

func movingWindow(c *callCtx, fn string, xffParam int) ([]*Series, error) {
	series := c.series(0)
	if len(series) == 0 {
		return nil, nil
	}
	agg := aggFuncs[fn]
	if agg == nil {
		return nil, c.errf("func", "unsupported aggregation function: %s", fn)
	}
	windowArg := c.arg(1)
	var preview, points int64
	isInterval := false
	switch w := windowArg.(type) {
	case string:
		d, err := ParseOffset(w)
		if err != nil {
			return nil, c.errf("windowSize", "invalid interval %s: %v", pyRepr(w), err)
		}
		preview, isInterval = d, true
		if preview < 0 {
			preview = -preview
		}
	case int64:
		if w < 0 {
			return nil, c.errf("windowSize", "window of %d points", w)
		}
		var maxStep int64
		for _, s := range series {
			maxStep = max(maxStep, s.Step)
		}
		points, preview = w, maxStep*w
	default:
		return nil, c.errf("windowSize", "invalid \"intOrInterval\" value %s", reprArg(windowArg))
	}
	if preview > c.from-math.MinInt64/2 || preview > MaxPoints*(c.until-c.from) {
		return nil, c.errf("windowSize", "window %s too large", pyStr(windowArg))
	}
	previewList, err := c.refetch(c.from-preview, c.until)
	if err != nil {
		return nil, err
	}
	tag := "moving" + strings.ToUpper(fn[:1]) + fn[1:]
	out := make([]*Series, 0, len(previewList))
	for _, s := range previewList {
		name := fmt.Sprintf("%s(%s,%s)", tag, s.Name, pyStr(windowArg))
		wp := points
		if isInterval {
			name = fmt.Sprintf("%s(%s,\"%s\")", tag, s.Name, pyStr(windowArg))
			wp = preview / s.Step
		}
		xf := s.XFilesFactor
		if c.has(xffParam) {
			xf = c.float(xffParam)
		}
		var vals []float64
		win := make([]float64, 0, min(wp, int64(len(s.Values))))
		for i := wp; i < int64(len(s.Values)); i++ {
			win = win[:0]
			for _, v := range s.Values[i-wp : i] {
				if !isNull(v) {
					win = append(win, v)
				}
			}
			if len(win) > 0 && xff(len(win), int(wp), xf) {
				vals = append(vals, agg(win))
			} else {
				vals = append(vals, null)
			}
		}
		n := derive(s, name, vals, tag, pyStr(windowArg))
		n.Start = s.Start + preview
		n.End = n.Start + int64(len(vals))*n.Step
		out = append(out, n)
	}
	return out, nil
}

// summarizeValues is graphite-web's _summarizeValues: the buckets of
// interval seconds from start until end, each aggregated with fn if the
// series' xFilesFactor allows. It returns the values and the end of the
// last bucket.
func summarizeValues(s *Series, agg aggFunc, interval, start, end int64) ([]float64, int64) {
	intervalPoints := float64(interval) / float64(s.Step)
	n := len(s.Values)
	ts := func(i int) int64 { return s.Start + int64(i)*s.Step }
	var vals []float64
	i := 0
	t := start
	for ; t < end; t += interval {
		first := i
		nonNull := 0
		for i < n && ts(i) < t+interval {
			if ts(i) <= t {
				first = i
			}
			if ts(i) >= t && !isNull(s.Values[i]) {
				nonNull++
			}
			i++
		}
		if nonNull > 0 && float64(nonNull)/intervalPoints >= s.XFilesFactor {
			vals = append(vals, agg(s.Values[first:i]))
		} else {
			vals = append(vals, null)
		}
	}
	return vals, t
}

func (c *callCtx) positiveInterval(i int) (int64, error) {
	interval := c.interval(i)
	if interval <= 0 {
		return 0, c.errf(c.def.params[i].Name, "interval %s is not positive", pyRepr(c.str(i)))
	}
	return interval, nil
}

func checkBuckets(c *callCtx, span, interval int64) error {
	if span/interval > MaxPoints {
		return fmt.Errorf("%s: %d buckets of %ds (at most %d): %w", c.expr.Name, span/interval, interval, MaxPoints, ErrLimit)
	}
	return nil
}

func summarize(c *callCtx) ([]*Series, error) {
	interval, err := c.positiveInterval(1)
	if err != nil {
		return nil, err
	}
	fn, alignToFrom := c.str(2), c.bool(3)
	agg := aggFuncs[fn]
	suffix := ""
	if alignToFrom {
		suffix = ", true"
	}
	out := make([]*Series, 0, len(c.series(0)))
	for _, s := range c.series(0) {
		start, end := s.Start, s.End
		if !alignToFrom {
			start = s.Start - mathx.FloorMod(s.Start, interval)
			end = s.End - mathx.FloorMod(s.End, interval) + interval
		}
		if err := checkBuckets(c, end-start, interval); err != nil {
			return nil, err
		}
		vals, _ := summarizeValues(s, agg, interval, start, end)
		n := derive(s, fmt.Sprintf("summarize(%s, \"%s\", \"%s\"%s)", s.Name, c.str(1), fn, suffix), vals,
			"summarize", c.str(1), "summarizeFunction", fn)
		n.Start, n.Step = start, interval
		n.End = start + int64(len(vals))*interval
		out = append(out, n)
	}
	return out, nil
}

// alignStart truncates t to the unit alignTo names (graphite-web's
// getUnitString), in loc; weeks align to Monday or to the ISO weekday
// given as alignTo's last digit.
func alignStart(t int64, alignTo string, loc *time.Location) (int64, bool) {
	d := time.Unix(t, 0).In(loc)
	day := time.Date(d.Year(), d.Month(), d.Day(), 0, 0, 0, 0, loc)
	switch {
	case strings.HasPrefix(alignTo, "s"):
		return t, true
	case strings.HasPrefix(alignTo, "min"):
		return time.Date(d.Year(), d.Month(), d.Day(), d.Hour(), d.Minute(), 0, 0, loc).Unix(), true
	case strings.HasPrefix(alignTo, "h"):
		return time.Date(d.Year(), d.Month(), d.Day(), d.Hour(), 0, 0, 0, loc).Unix(), true
	case strings.HasPrefix(alignTo, "d"):
		return day.Unix(), true
	case strings.HasPrefix(alignTo, "w"):
		want := 1
		if last := alignTo[len(alignTo)-1]; isDigit(last) {
			want = int(last - '0')
		}
		iso := int(d.Weekday())
		if iso == 0 {
			iso = 7
		}
		back := iso - want
		if back < 0 {
			back += 7
		}
		return day.AddDate(0, 0, -back).Unix(), true
	case strings.HasPrefix(alignTo, "mon"):
		return time.Date(d.Year(), d.Month(), 1, 0, 0, 0, 0, loc).Unix(), true
	case strings.HasPrefix(alignTo, "y"):
		return time.Date(d.Year(), 1, 1, 0, 0, 0, 0, loc).Unix(), true
	}
	return 0, false
}

func smartSummarize(c *callCtx) ([]*Series, error) {
	interval, err := c.positiveInterval(1)
	if err != nil {
		return nil, err
	}
	fn := c.str(2)
	agg := aggFuncs[fn]
	series := c.series(0)
	if a, ok := c.arg(3).(string); ok {
		start, ok := alignStart(c.from, a, c.ev.loc)
		if !ok {
			return nil, c.errf("alignTo", "invalid offset unit %s", pyRepr(a))
		}
		if series, err = c.refetch(start, c.until); err != nil {
			return nil, err
		}
	}
	out := make([]*Series, 0, len(series))
	for _, s := range series {
		if err := checkBuckets(c, s.End-s.Start, interval); err != nil {
			return nil, err
		}
		vals, _ := summarizeValues(s, agg, interval, s.Start, s.End)
		n := derive(s, fmt.Sprintf("smartSummarize(%s, \"%s\", \"%s\")", s.Name, c.str(1), fn), vals,
			"smartSummarize", c.str(1), "smartSummarizeFunction", fn)
		n.Step = interval
		n.End = n.Start + int64(len(vals))*interval
		out = append(out, n)
	}
	return out, nil
}

func hitcount(c *callCtx) ([]*Series, error) {
	interval, err := c.positiveInterval(1)
	if err != nil {
		return nil, err
	}
	align := c.bool(2)
	series := c.series(0)
	ends := make([]int64, len(series))
	for i, s := range series {
		ends[i] = s.End
	}
	if align {
		start := c.from
		switch {
		case interval >= 86400:
			start, _ = alignStart(start, "d", c.ev.loc)
		case interval >= 3600:
			start, _ = alignStart(start, "h", c.ev.loc)
		case interval >= 60:
			start, _ = alignStart(start, "min", c.ev.loc)
		}
		if series, err = c.refetch(start, c.until); err != nil {
			return nil, err
		}
		ends = make([]int64, len(series))
		for i, s := range series {
			ends[i] = s.Start + (s.End-s.Start)/interval*interval + interval
		}
	}
	suffix := ""
	if align {
		suffix = ", true"
	}
	out := make([]*Series, 0, len(series))
	for k, s := range series {
		end := ends[k]
		if err := checkBuckets(c, end-s.Start, interval); err != nil {
			return nil, err
		}
		count := (end - s.Start + interval - 1) / interval
		if end-s.Start <= 0 {
			count = 0
		}
		buckets := make([]float64, count)
		used := make([]bool, count)
		add := func(b int64, v float64) {
			buckets[b] += v
			used[b] = true
		}
		newStart := end - count*interval
		for i, v := range s.Values {
			if isNull(v) {
				continue
			}
			t := s.Start + int64(i)*s.Step
			sb, sm := floorDiv(t-newStart, interval)
			eb, em := floorDiv(t+s.Step-newStart, interval)
			if eb >= count {
				eb, em = count-1, interval
			}
			if sb == eb {
				if sb >= 0 {
					add(sb, v*float64(em-sm))
				}
				continue
			}
			if sb >= 0 {
				add(sb, v*float64(interval-sm))
			}
			for j := sb + 1; j < eb; j++ {
				if j >= 0 {
					add(j, v*float64(interval))
				}
			}
			if em > 0 && eb >= 0 {
				add(eb, v*float64(em))
			}
		}
		for i := range buckets {
			if !used[i] {
				buckets[i] = null
			}
		}
		n := derive(s, fmt.Sprintf("hitcount(%s, \"%s\"%s)", s.Name, c.str(1), suffix), buckets, "hitcount", c.str(1))
		n.Start, n.Step = newStart, interval
		n.End = newStart + count*interval
		out = append(out, n)
	}
	return out, nil
}

func floorDiv(a, b int64) (q, m int64) {
	m = mathx.FloorMod(a, b)
	return (a - m) / b, m
}

// shiftString is a timeShift/timeStack offset with graphite-web's default
// sign: backwards.
func shiftString(s string) string {
	if s != "" && isDigit(s[0]) {
		return "-" + s
	}
	return s
}

func timeShift(c *callCtx) ([]*Series, error) {
	shift := shiftString(c.str(1))
	delta, err := ParseOffset(shift)
	if err != nil {
		return nil, c.errf("timeShift", "invalid interval %s: %v", pyRepr(shift), err)
	}
	series := c.series(0)
	if len(series) == 0 {
		return nil, nil
	}
	first := series[0]
	shifted, err := c.refetch(c.from+delta, c.until+delta)
	if err != nil {
		return nil, err
	}
	out := make([]*Series, 0, len(shifted))
	for _, s := range shifted {
		n := rename(s, fmt.Sprintf("timeShift(%s, \"%s\")", s.Name, shift))
		n.Tags = copyTags(s.Tags, "timeShift", shift)
		n.Start = first.Start
		n.End = n.Start + int64(len(n.Values))*n.Step
		out = append(out, n)
	}
	return out, nil
}

func timeStack(c *callCtx) ([]*Series, error) {
	unit := shiftString(c.str(1))
	delta, err := ParseOffset(unit)
	if err != nil {
		return nil, c.errf("timeShiftUnit", "invalid interval %s: %v", pyRepr(unit), err)
	}
	series := c.series(0)
	if len(series) == 0 {
		return nil, nil
	}
	first := series[0]
	lo, hi := c.int(2), c.int(3)
	if hi-lo > MaxFetches {
		return nil, fmt.Errorf("timeStack of %d shifts: %w", hi-lo, ErrLimit)
	}
	var out []*Series
	for k := lo; k < hi; k++ {
		shifted, err := c.refetch(c.from+delta*k, c.until+delta*k)
		if err != nil {
			return nil, err
		}
		for _, s := range shifted {
			name := fmt.Sprintf("timeShift(%s, %s, %d)", s.Name, unit, k)
			n := derive(s, name, s.Values, "timeShiftUnit", unit, "timeShift", strconv.FormatInt(k, 10))
			n.Start = first.Start
			n.End = n.Start + int64(len(n.Values))*n.Step
			out = append(out, n)
		}
	}
	return out, nil
}

func timeSlice(c *callCtx) ([]*Series, error) {
	start, err := c.timeArg(1)
	if err != nil {
		return nil, c.errf("startSliceAt", "%v", err)
	}
	end, err := c.timeArg(2)
	if err != nil {
		return nil, c.errf("endSliceAt", "%v", err)
	}
	out := make([]*Series, 0, len(c.series(0)))
	for _, s := range c.series(0) {
		vals := make([]float64, len(s.Values))
		cur := c.from
		for i, v := range s.Values {
			if isNull(v) || cur < start || cur > end {
				vals[i] = null
			} else {
				vals[i] = v
			}
			cur += s.Step
		}
		n := derive(s, fmt.Sprintf("timeSlice(%s, %d, %d)", s.Name, start, end), vals,
			"timeSliceStart", strconv.FormatInt(start, 10), "timeSliceEnd", strconv.FormatInt(end, 10))
		n.PathExpression = s.PathExpression
		out = append(out, n)
	}
	return out, nil
}
