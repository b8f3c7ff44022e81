package graphite

import (
	"context"
	"fmt"
	"strings"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/aerie-db/aerie/internal/graphite/expr"
)

// LimitError is returned when a request exceeds one of the API's limits;
// the render API answers it with 422.
type LimitError struct {
	What  string // what was counted: "series", "points", "find results"
	Limit int
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("more than %d %s: narrow the query or the time range", e.Limit, e.What)
}

// Fetcher is the expr.Fetcher over a Store for one request: it turns
// path expressions and seriesByTag expressions into matchers, reads the
// series' points and counts series and points against the request's
// limits. It is not safe for concurrent use.
type Fetcher struct {
	store     Store
	now       int64 // Unix seconds, for the store's archive choice
	maxSeries int   // per request, all fetches together
	maxPoints int   // values per request, all fetches together
	series    int   // fetched so far
	points    int
}

var _ expr.Fetcher = (*Fetcher)(nil)

// NewFetcher returns a Fetcher reading store, with now the request's now
// and limits on the series and values read by all its fetches together
// (0 = no limit).
func NewFetcher(store Store, now int64, maxSeries, maxPoints int) *Fetcher {
	return &Fetcher{store: store, now: now, maxSeries: maxSeries, maxPoints: maxPoints}
}

// Fetch returns the series whose path matches pathExpr: a glob over
// __name__ (any labels), or, for a tagged path "a.b;k=v", the one series
// with exactly those tags.
func (f *Fetcher) Fetch(ctx context.Context, pathExpr string, from, until int64) ([]*expr.Series, error) {
	if strings.ContainsRune(pathExpr, ';') || (strings.HasSuffix(pathExpr, `"}`) && strings.Contains(pathExpr, "{")) {
		return f.fetchTaggedPath(ctx, pathExpr, from, until)
	}
	g, err := CompileGlob(pathExpr)
	if err != nil {
		return nil, err
	}
	var m *labels.Matcher
	if IsGlob(pathExpr) {
		m, err = labels.NewMatcher(labels.MatchRegexp, labels.MetricName, g.NameRegexp())
	} else {
		m, err = labels.NewMatcher(labels.MatchEqual, labels.MetricName, pathExpr)
	}
	if err != nil {
		return nil, fmt.Errorf("path expression %q: %w", pathExpr, err)
	}
	sets, err := f.store.Series(ctx, from*1000, until*1000, m)
	if err != nil {
		return nil, fmt.Errorf("find series of %q: %w", pathExpr, err)
	}
	kept := sets[:0]
	for _, ls := range sets {
		if g.Match(ls.Get(labels.MetricName)) {
			kept = append(kept, ls)
		}
	}
	return f.load(ctx, pathExpr, kept, from, until)
}

func (f *Fetcher) fetchTaggedPath(ctx context.Context, pathExpr string, from, until int64) ([]*expr.Series, error) {
	tags, err := ParseTagged(pathExpr)
	if err != nil {
		return nil, err
	}
	ms := make([]*labels.Matcher, 0, len(tags))
	for k, v := range tags {
		if k == "name" {
			k = labels.MetricName
		}
		ms = append(ms, labels.MustNewMatcher(labels.MatchEqual, k, v))
	}
	sets, err := f.store.Series(ctx, from*1000, until*1000, ms...)
	if err != nil {
		return nil, fmt.Errorf("find series of %q: %w", pathExpr, err)
	}
	want := FormatTagged(tags)
	kept := sets[:0]
	for _, ls := range sets {
		if SeriesName(ls) == want {
			kept = append(kept, ls)
		}
	}
	return f.load(ctx, pathExpr, kept, from, until)
}

// FetchTagged returns the series seriesByTag selects.
func (f *Fetcher) FetchTagged(ctx context.Context, exprs []string, from, until int64) ([]*expr.Series, error) {
	ms, err := TagMatchers(exprs)
	if err != nil {
		return nil, fmt.Errorf("seriesByTag: %w", err)
	}
	sets, err := f.store.Series(ctx, from*1000, until*1000, ms...)
	if err != nil {
		return nil, fmt.Errorf("seriesByTag: %w", err)
	}
	var b strings.Builder
	b.WriteString("seriesByTag(")
	for i, e := range exprs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("'" + e + "'")
	}
	b.WriteByte(')')
	return f.load(ctx, b.String(), sets, from, until)
}

// load reads the points of sets, counting them against the limits.
func (f *Fetcher) load(ctx context.Context, pathExpr string, sets []labels.Labels, from, until int64) ([]*expr.Series, error) {
	if f.maxSeries > 0 && f.series+len(sets) > f.maxSeries {
		return nil, &LimitError{What: "series", Limit: f.maxSeries}
	}
	f.series += len(sets)
	out := make([]*expr.Series, 0, len(sets))
	for _, ls := range sets {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		p, err := f.store.Points(ctx, ls, from, until, f.now)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", SeriesName(ls), err)
		}
		if p.Step <= 0 {
			return nil, fmt.Errorf("read %s: store returned step %d", SeriesName(ls), p.Step)
		}
		if len(p.Values) == 0 {
			// from after now: whisper returns no series, nor does
			// graphite-web
			continue
		}
		if f.maxPoints > 0 && f.points+len(p.Values) > f.maxPoints {
			return nil, &LimitError{What: "points", Limit: f.maxPoints}
		}
		f.points += len(p.Values)
		method := p.Method
		if method == "" {
			method = "average"
		}
		out = append(out, &expr.Series{
			Name:              SeriesName(ls),
			PathExpression:    pathExpr,
			Tags:              GraphiteTags(ls),
			Start:             p.Start,
			End:               p.Start + int64(len(p.Values))*p.Step,
			Step:              p.Step,
			Values:            p.Values,
			ConsolidationFunc: consolidationOf(method),
			XFilesFactor:      p.XFilesFactor,
		})
	}
	return out, nil
}

// consolidationOf maps a storage-aggregation method to the render API's
// consolidation function, as graphite-web's whisper reader does
// (aggregationMethod → consolidateBy; "avg" and "average" are one).
func consolidationOf(method string) string {
	switch method {
	case "avg", "average":
		return "average"
	case "sum", "min", "max", "last", "first":
		return method
	case "count":
		return "sum"
	}
	return "average"
}
