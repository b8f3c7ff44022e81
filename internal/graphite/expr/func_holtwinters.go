package expr

import (
	"math"

	"github.com/aerie-db/aerie/internal/mathx"
)

func init() {
	boot := suggest(opt("bootstrapInterval", "interval", "7d"), "7d", "30d")
	season := suggest(opt("seasonality", "interval", "1d"), "1d", "7d")
	delta := opt("delta", "integer", int64(3))
	register("holtWintersForecast", "Calculate", func(c *callCtx) ([]*Series, error) {
		return holtWinters(c, hwForecast, 1, 2)
	}, pSeriesList, boot, season)
	register("holtWintersConfidenceBands", "Calculate", func(c *callCtx) ([]*Series, error) {
		return holtWinters(c, hwBands, 2, 3)
	}, pSeriesList, delta, boot, season)
	register("holtWintersAberration", "Calculate", func(c *callCtx) ([]*Series, error) {
		return holtWinters(c, hwAberration, 2, 3)
	}, pSeriesList, delta, boot, season)
	register("holtWintersConfidenceArea", "Calculate", func(c *callCtx) ([]*Series, error) {
		return holtWinters(c, hwArea, 2, 3)
	}, pSeriesList, delta, boot, season)
}

type hwKind int

const (
	hwForecast hwKind = iota
	hwBands
	hwAberration
	hwArea
)

// holtWintersAnalysis is graphite-web's: predictions and deviations of a
// triple exponential smoothing with alpha = gamma = 0.1, beta = 0.0035
// and a season of seasonLen points.
func holtWintersAnalysis(vals []float64, seasonLen int) (predictions, deviations []float64, ok bool) {
	const alpha, gamma, beta = 0.1, 0.1, 0.0035
	n := len(vals)
	intercepts := make([]float64, 0, n)
	slopes := make([]float64, 0, n)
	seasonals := make([]float64, 0, n)
	predictions = make([]float64, 0, n)
	deviations = make([]float64, 0, n)
	lastSeasonal := func(i int) (float64, bool) {
		j := i - seasonLen
		if j < 0 {
			return 0, true
		}
		if j >= len(seasonals) {
			return 0, false // graphite-web's IndexError for seasons shorter than two points
		}
		return seasonals[j], true
	}
	lastDeviation := func(i int) float64 {
		if j := i - seasonLen; j >= 0 && j < len(deviations) {
			return deviations[j]
		}
		return 0
	}
	nextPred := null
	for i, actual := range vals {
		if isNull(actual) {
			intercepts = append(intercepts, null)
			slopes = append(slopes, 0)
			seasonals = append(seasonals, 0)
			predictions = append(predictions, nextPred)
			deviations = append(deviations, 0)
			nextPred = null
			continue
		}
		var lastIntercept, lastSlope, prediction float64
		if i == 0 {
			lastIntercept, lastSlope, prediction = actual, 0, actual
		} else {
			lastIntercept, lastSlope = intercepts[len(intercepts)-1], slopes[len(slopes)-1]
			if isNull(lastIntercept) {
				lastIntercept = actual
			}
			prediction = nextPred
		}
		ls, ok1 := lastSeasonal(i)
		nls, ok2 := lastSeasonal(i + 1)
		if !ok1 || !ok2 {
			return nil, nil, false
		}
		lsd := lastDeviation(i)
		intercept := alpha*(actual-ls) + (1-alpha)*(lastIntercept+lastSlope)
		slope := beta*(intercept-lastIntercept) + (1-beta)*lastSlope
		seasonal := gamma*(actual-intercept) + (1-gamma)*ls
		nextPred = intercept + slope + nls
		p := prediction
		if isNull(p) {
			p = 0
		}
		deviation := gamma*math.Abs(actual-p) + (1-gamma)*lsd
		intercepts = append(intercepts, intercept)
		slopes = append(slopes, slope)
		seasonals = append(seasonals, seasonal)
		predictions = append(predictions, prediction)
		deviations = append(deviations, deviation)
	}
	return predictions, deviations, true
}

func holtWinters(c *callCtx, kind hwKind, bootParam, seasonParam int) ([]*Series, error) {
	preview := c.interval(bootParam)
	seasonality := c.interval(seasonParam)
	deltaK := float64(c.int(1))
	if preview < 0 || preview > MaxPoints*(c.until-c.from) {
		return nil, c.errf("bootstrapInterval", "bootstrap interval %s out of range", pyRepr(c.str(bootParam)))
	}
	previewList, err := c.refetch(c.from-preview, c.until)
	if err != nil {
		return nil, err
	}
	var out []*Series
	for _, s := range previewList {
		seasonLen := int(mathx.FloorDiv(seasonality, s.Step))
		preds, devs, ok := holtWintersAnalysis(s.Values, seasonLen)
		if !ok {
			return nil, c.errf("seasonality", "season %s is shorter than two points of %ds", pyRepr(c.str(seasonParam)), s.Step)
		}
		wp := int(preview / s.Step)
		if wp > len(preds) {
			wp = len(preds)
		}
		start := s.Start + preview
		// graphite-web's analysis tags the series it analyses; every series
		// made from it shares that one tag map.
		tags := copyTags(s.Tags, "holtWintersForecast", "1", "holtWintersDeviation", "1")
		if kind == hwForecast {
			r := newSeries("holtWintersForecast("+s.Name+")", start, s.Step, preds[wp:], s.XFilesFactor)
			r.Tags = tags
			out = append(out, r)
			continue
		}
		fc, dv := preds[wp:], devs[wp:]
		upper := make([]float64, len(fc))
		lower := make([]float64, len(fc))
		for i := range fc {
			if isNull(fc[i]) || isNull(dv[i]) {
				upper[i], lower[i] = null, null
				continue
			}
			upper[i] = fc[i] + deltaK*dv[i]
			lower[i] = fc[i] - deltaK*dv[i]
		}
		bandTags := copyTags(tags, "holtWintersConfidenceUpper", "1", "holtWintersConfidenceLower", "1")
		lo := newSeries("holtWintersConfidenceLower("+s.Name+")", start, s.Step, lower, s.XFilesFactor)
		up := newSeries("holtWintersConfidenceUpper("+s.Name+")", start, s.Step, upper, s.XFilesFactor)
		lo.Tags, up.Tags = bandTags, bandTags
		lo.PathExpression, up.PathExpression = s.PathExpression, s.PathExpression
		out = append(out, lo, up)
	}
	switch kind {
	case hwBands:
		return out, nil
	case hwArea:
		if len(out) != 2 {
			return nil, c.errf("seriesList", "holtWintersConfidenceArea needs exactly one series (got %d bands)", len(out))
		}
		name := "holtWintersConfidenceArea(" + out[1].PathExpression + ")"
		tags := copyTags(out[1].Tags, "holtWintersConfidenceArea", "1")
		for _, r := range out {
			r.Name, r.PathExpression, r.Tags = name, name, tags
		}
		return out, nil
	case hwAberration:
		bands := map[string]*Series{}
		for _, b := range out {
			bands[b.Name] = b
		}
		var res []*Series
		for _, s := range c.series(0) {
			lo, up := bands["holtWintersConfidenceLower("+s.Name+")"], bands["holtWintersConfidenceUpper("+s.Name+")"]
			if lo == nil || up == nil {
				return nil, c.errf("seriesList", "no confidence bands for %s", s.Name)
			}
			ab := make([]float64, len(s.Values))
			for i, v := range s.Values {
				if i >= len(lo.Values) || i >= len(up.Values) {
					return nil, c.errf("seriesList", "confidence bands of %s shorter than the series", s.Name)
				}
				switch {
				case isNull(v):
				case !isNull(up.Values[i]) && v > up.Values[i]:
					ab[i] = v - up.Values[i]
				case !isNull(lo.Values[i]) && v < lo.Values[i]:
					ab[i] = v - lo.Values[i]
				}
			}
			r := newSeries("holtWintersAberration("+s.Name+")", s.Start, s.Step, ab, s.XFilesFactor)
			r.Tags = copyTags(s.Tags, "holtWintersAberration", "1")
			res = append(res, r)
		}
		return res, nil
	}
	return out, nil
}
