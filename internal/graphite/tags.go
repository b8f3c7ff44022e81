package graphite

import (
	"context"
	"math"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/prometheus/prometheus/model/labels"
)

// The tags API answers from the series the store holds: a series' tags
// are its labels (GraphiteTags), and every series is in the tag index —
// graphite-web's holds only series written with tags (see doc.go).

// TagIndex is an optional interface of a Store: the label names, and the
// values of one label, of the series matching ms (all series without
// ms), sorted, without listing the series. The tags API uses it where it
// needs no series counts (/tags and the autoComplete endpoints).
type TagIndex interface {
	LabelNames(ctx context.Context, ms ...*labels.Matcher) ([]string, error)
	LabelValues(ctx context.Context, name string, ms ...*labels.Matcher) ([]string, error)
}

// tagNamesOf returns the distinct Graphite tag names of the series
// matching ms, sorted.
func (a *API) tagNamesOf(ctx context.Context, ms []*labels.Matcher) ([]string, error) {
	ti, ok := a.store.(TagIndex)
	if !ok {
		sets, err := a.seriesOf(ctx, ms)
		if err != nil {
			return nil, err
		}
		return tagNames(sets), nil
	}
	names, err := ti.LabelNames(ctx, ms...)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(names))
	for _, n := range names {
		switch {
		case n == labels.MetricName:
			out = append(out, "name")
		case strings.HasPrefix(n, "__") || n == "name":
		default:
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// tagValuesOf returns the distinct values of Graphite tag tag over the
// series matching ms, sorted.
func (a *API) tagValuesOf(ctx context.Context, tag string, ms []*labels.Matcher) ([]string, error) {
	ti, ok := a.store.(TagIndex)
	if !ok {
		sets, err := a.seriesOf(ctx, ms)
		if err != nil {
			return nil, err
		}
		counts := tagValues(sets, tag)
		vals := make([]string, 0, len(counts))
		for v := range counts {
			vals = append(vals, v)
		}
		slices.Sort(vals)
		return vals, nil
	}
	name := tag
	switch {
	case tag == "name":
		name = labels.MetricName
	case strings.HasPrefix(tag, "__"):
		return nil, nil
	}
	vals, err := ti.LabelValues(ctx, name, ms...)
	if err != nil {
		return nil, err
	}
	vals = slices.DeleteFunc(vals, func(v string) bool { return v == "" })
	slices.Sort(vals)
	return vals, nil
}

// seriesOf returns the series matching ms, all without ms.
func (a *API) seriesOf(ctx context.Context, ms []*labels.Matcher) ([]labels.Labels, error) {
	if len(ms) == 0 {
		return a.allSeries(ctx)
	}
	return a.store.Series(ctx, math.MinInt64, math.MaxInt64, ms...)
}

// listParam returns the values of name, or of name[] (graphite-web
// accepts both spellings of a list).
func listParam(q url.Values, name string) []string {
	if v := q[name]; len(v) > 0 {
		return v
	}
	return q[name+"[]"]
}

// allSeries returns every series' label set.
func (a *API) allSeries(ctx context.Context) ([]labels.Labels, error) {
	return a.store.Series(ctx, math.MinInt64, math.MaxInt64,
		labels.MustNewMatcher(labels.MatchRegexp, labels.MetricName, ".+"))
}

// FindSeries returns the Graphite names of the series the tag
// expressions select, sorted and distinct.
func (a *API) FindSeries(ctx context.Context, exprs []string) ([]string, error) {
	ms, err := TagMatchers(exprs)
	if err != nil {
		return nil, err
	}
	sets, err := a.store.Series(ctx, math.MinInt64, math.MaxInt64, ms...)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(sets))
	for _, ls := range sets {
		names = append(names, SeriesName(ls))
	}
	slices.Sort(names)
	names = slices.Compact(names)
	if len(names) > a.opts.MaxFindResults {
		return nil, &LimitError{What: "series", Limit: a.opts.MaxFindResults}
	}
	return names, nil
}

// prefixFilter compiles graphite-web's tag and value filter: a regexp
// anchored at the start ("^(" + filter + ")" unless it starts with ^).
func prefixFilter(param, f string) (*regexp.Regexp, error) {
	if f == "" {
		return nil, nil
	}
	if len(f) > maxTagExprLen {
		return nil, badParam(param, "longer than %d bytes", maxTagExprLen)
	}
	if !strings.HasPrefix(f, "^") {
		f = "^(" + f + ")"
	}
	re, err := regexp.Compile(f)
	if err != nil {
		return nil, badParam(param, "bad regular expression: %v", err)
	}
	return re, nil
}

// limitParam is a tags request's limit (default def; at most
// MaxFindResults).
func (a *API) limitParam(q url.Values, def int) (int, error) {
	n, err := intParam(q, "limit", def)
	if err != nil {
		return 0, err
	}
	if n <= 0 || n > a.opts.MaxFindResults {
		n = a.opts.MaxFindResults
	}
	return n, nil
}

// jsonHandler serves a tags endpoint: f answers the request's parameters
// with a value for writeJSON, or an error for writeJSONError.
func (a *API) jsonHandler(f func(r *http.Request, q url.Values) (any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		q, err := a.params(w, r)
		if err != nil {
			writeJSONError(w, err)
			return
		}
		v, err := f(r, q)
		if err != nil {
			writeJSONError(w, err)
			return
		}
		writeJSON(w, q, v)
	}
}

func (a *API) tagSeries(_ *http.Request, q url.Values) (any, error) {
	path := q.Get("path")
	if path == "" {
		return nil, badParam("path", "no path specified")
	}
	tags, err := ParseTagged(path)
	if err != nil {
		return nil, &paramError{param: "path", err: err}
	}
	return FormatTagged(tags), nil
}

func (a *API) tagMultiSeries(_ *http.Request, q url.Values) (any, error) {
	paths := listParam(q, "path")
	if len(paths) == 0 {
		return nil, badParam("path", "no paths specified")
	}
	if len(paths) > a.opts.MaxFindResults {
		return nil, badParam("path", "%d paths: at most %d", len(paths), a.opts.MaxFindResults)
	}
	out := make([]string, len(paths))
	for i, p := range paths {
		tags, err := ParseTagged(p)
		if err != nil {
			return nil, &paramError{param: "path", err: err}
		}
		out[i] = FormatTagged(tags)
	}
	return out, nil
}

func (a *API) findSeries(r *http.Request, q url.Values) (any, error) {
	exprs := listParam(q, "expr")
	if len(exprs) == 0 {
		return nil, badParam("expr", "no tag expressions specified")
	}
	names, err := a.FindSeries(r.Context(), exprs)
	if err != nil {
		return nil, queryError("expr", err)
	}
	return names, nil
}

type tagInfo struct {
	Tag string `json:"tag"`
}

type tagValue struct {
	Value string `json:"value"`
	Count int    `json:"count"`
}

type tagDetails struct {
	Tag    string     `json:"tag"`
	Values []tagValue `json:"values"`
}

// tagValues counts the series of each value of tag (tag "name": paths).
func tagValues(sets []labels.Labels, tag string) map[string]int {
	counts := map[string]int{}
	for _, ls := range sets {
		if v, ok := GraphiteTags(ls)[tag]; ok {
			counts[v]++
		}
	}
	return counts
}

// tagNames returns the distinct tag names of sets, sorted.
func tagNames(sets []labels.Labels) []string {
	seen := map[string]bool{}
	for _, ls := range sets {
		for k := range GraphiteTags(ls) {
			seen[k] = true
		}
	}
	names := make([]string, 0, len(seen))
	for k := range seen {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

// filterParams are the filter and limit of /tags and /tags/{tag}.
func (a *API) filterParams(q url.Values) (*regexp.Regexp, int, error) {
	re, err := prefixFilter("filter", q.Get("filter"))
	if err != nil {
		return nil, 0, err
	}
	limit, err := a.limitParam(q, 0)
	if err != nil {
		return nil, 0, err
	}
	return re, limit, nil
}

func (a *API) tagList(r *http.Request, q url.Values) (any, error) {
	re, limit, err := a.filterParams(q)
	if err != nil {
		return nil, err
	}
	names, err := a.tagNamesOf(r.Context(), nil)
	if err != nil {
		return nil, err
	}
	out := []tagInfo{}
	for _, t := range names {
		if re != nil && !re.MatchString(t) {
			continue
		}
		if len(out) == limit {
			break
		}
		out = append(out, tagInfo{Tag: t})
	}
	return out, nil
}

// tag answers a tag's values with their series counts, or null for an
// unknown tag (as graphite-web).
func (a *API) tag(r *http.Request, q url.Values) (any, error) {
	tag := r.PathValue("tag")
	re, limit, err := a.filterParams(q)
	if err != nil {
		return nil, err
	}
	sets, err := a.allSeries(r.Context())
	if err != nil {
		return nil, err
	}
	counts := tagValues(sets, tag)
	if len(counts) == 0 {
		return nil, nil
	}
	vals := make([]string, 0, len(counts))
	for v := range counts {
		if re == nil || re.MatchString(v) {
			vals = append(vals, v)
		}
	}
	slices.Sort(vals)
	if len(vals) > limit {
		vals = vals[:limit]
	}
	d := tagDetails{Tag: tag, Values: make([]tagValue, len(vals))}
	for i, v := range vals {
		d.Values[i] = tagValue{Value: v, Count: counts[v]}
	}
	return d, nil
}

func (a *API) autoCompleteTags(r *http.Request, q url.Values) (any, error) {
	limit, err := a.limitParam(q, a.opts.AutoCompleteSize)
	if err != nil {
		return nil, err
	}
	prefix := q.Get("tagPrefix")
	exprs := listParam(q, "expr")
	var ms []*labels.Matcher
	searched := map[string]bool{}
	if len(exprs) > 0 {
		if ms, err = TagMatchers(exprs); err != nil {
			return nil, queryError("expr", err)
		}
		for _, e := range exprs {
			ts, _ := ParseTagSpec(e)
			searched[ts.Tag] = true
		}
	}
	names, err := a.tagNamesOf(r.Context(), ms)
	if err != nil {
		return nil, err
	}
	out := []string{}
	for _, t := range names {
		if searched[t] || !strings.HasPrefix(t, prefix) {
			continue
		}
		if len(out) == limit {
			break
		}
		out = append(out, t)
	}
	return out, nil
}

func (a *API) autoCompleteValues(r *http.Request, q url.Values) (any, error) {
	tag := q.Get("tag")
	if tag == "" {
		return nil, badParam("tag", "no tag specified")
	}
	limit, err := a.limitParam(q, a.opts.AutoCompleteSize)
	if err != nil {
		return nil, err
	}
	prefix := q.Get("valuePrefix")
	exprs := listParam(q, "expr")
	var ms []*labels.Matcher
	if len(exprs) > 0 {
		if ms, err = TagMatchers(append(slices.Clone(exprs), tag+"!=")); err != nil {
			return nil, queryError("expr", err)
		}
	}
	all, err := a.tagValuesOf(r.Context(), tag, ms)
	if err != nil {
		return nil, err
	}
	vals := []string{}
	for _, v := range all {
		if strings.HasPrefix(v, prefix) {
			if len(vals) == limit {
				break
			}
			vals = append(vals, v)
		}
	}
	return vals, nil
}
