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

func (a *API) handleTagSeries(w http.ResponseWriter, r *http.Request) {
	q, err := a.params(w, r)
	if err != nil {
		writeJSONError(w, err)
		return
	}
	path := q.Get("path")
	if path == "" {
		writeJSONError(w, badParam("path", "no path specified"))
		return
	}
	tags, err := ParseTagged(path)
	if err != nil {
		writeJSONError(w, &paramError{param: "path", err: err})
		return
	}
	writeJSON(w, q, FormatTagged(tags))
}

func (a *API) handleTagMultiSeries(w http.ResponseWriter, r *http.Request) {
	q, err := a.params(w, r)
	if err != nil {
		writeJSONError(w, err)
		return
	}
	paths := listParam(q, "path")
	if len(paths) == 0 {
		writeJSONError(w, badParam("path", "no paths specified"))
		return
	}
	if len(paths) > a.opts.MaxFindResults {
		writeJSONError(w, badParam("path", "%d paths: at most %d", len(paths), a.opts.MaxFindResults))
		return
	}
	out := make([]string, len(paths))
	for i, p := range paths {
		tags, err := ParseTagged(p)
		if err != nil {
			writeJSONError(w, &paramError{param: "path", err: err})
			return
		}
		out[i] = FormatTagged(tags)
	}
	writeJSON(w, q, out)
}

func (a *API) handleFindSeries(w http.ResponseWriter, r *http.Request) {
	q, err := a.params(w, r)
	if err != nil {
		writeJSONError(w, err)
		return
	}
	exprs := listParam(q, "expr")
	if len(exprs) == 0 {
		writeJSONError(w, badParam("expr", "no tag expressions specified"))
		return
	}
	names, err := a.FindSeries(r.Context(), exprs)
	if err != nil {
		writeJSONError(w, queryError("expr", err))
		return
	}
	writeJSON(w, q, names)
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

func (a *API) handleTagList(w http.ResponseWriter, r *http.Request) {
	q, err := a.params(w, r)
	if err != nil {
		writeJSONError(w, err)
		return
	}
	re, err := prefixFilter("filter", q.Get("filter"))
	if err != nil {
		writeJSONError(w, err)
		return
	}
	limit, err := a.limitParam(q, 0)
	if err != nil {
		writeJSONError(w, err)
		return
	}
	sets, err := a.allSeries(r.Context())
	if err != nil {
		writeJSONError(w, err)
		return
	}
	out := []tagInfo{}
	for _, t := range tagNames(sets) {
		if re != nil && !re.MatchString(t) {
			continue
		}
		if len(out) == limit {
			break
		}
		out = append(out, tagInfo{Tag: t})
	}
	writeJSON(w, q, out)
}

// handleTag answers a tag's values with their series counts, or null for
// an unknown tag (as graphite-web).
func (a *API) handleTag(w http.ResponseWriter, r *http.Request) {
	q, err := a.params(w, r)
	if err != nil {
		writeJSONError(w, err)
		return
	}
	tag := r.PathValue("tag")
	re, err := prefixFilter("filter", q.Get("filter"))
	if err != nil {
		writeJSONError(w, err)
		return
	}
	limit, err := a.limitParam(q, 0)
	if err != nil {
		writeJSONError(w, err)
		return
	}
	sets, err := a.allSeries(r.Context())
	if err != nil {
		writeJSONError(w, err)
		return
	}
	counts := tagValues(sets, tag)
	if len(counts) == 0 {
		writeJSON(w, q, nil)
		return
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
	writeJSON(w, q, d)
}

func (a *API) handleAutoCompleteTags(w http.ResponseWriter, r *http.Request) {
	q, err := a.params(w, r)
	if err != nil {
		writeJSONError(w, err)
		return
	}
	limit, err := a.limitParam(q, a.opts.AutoCompleteSize)
	if err != nil {
		writeJSONError(w, err)
		return
	}
	prefix := q.Get("tagPrefix")
	exprs := listParam(q, "expr")
	var sets []labels.Labels
	searched := map[string]bool{}
	if len(exprs) == 0 {
		sets, err = a.allSeries(r.Context())
	} else {
		var ms []*labels.Matcher
		if ms, err = TagMatchers(exprs); err == nil {
			for _, e := range exprs {
				ts, _ := ParseTagSpec(e)
				searched[ts.Tag] = true
			}
			sets, err = a.store.Series(r.Context(), math.MinInt64, math.MaxInt64, ms...)
		}
	}
	if err != nil {
		writeJSONError(w, queryError("expr", err))
		return
	}
	out := []string{}
	for _, t := range tagNames(sets) {
		if searched[t] || !strings.HasPrefix(t, prefix) {
			continue
		}
		if len(out) == limit {
			break
		}
		out = append(out, t)
	}
	writeJSON(w, q, out)
}

func (a *API) handleAutoCompleteValues(w http.ResponseWriter, r *http.Request) {
	q, err := a.params(w, r)
	if err != nil {
		writeJSONError(w, err)
		return
	}
	tag := q.Get("tag")
	if tag == "" {
		writeJSONError(w, badParam("tag", "no tag specified"))
		return
	}
	limit, err := a.limitParam(q, a.opts.AutoCompleteSize)
	if err != nil {
		writeJSONError(w, err)
		return
	}
	prefix := q.Get("valuePrefix")
	exprs := listParam(q, "expr")
	var sets []labels.Labels
	if len(exprs) == 0 {
		sets, err = a.allSeries(r.Context())
	} else {
		var ms []*labels.Matcher
		if ms, err = TagMatchers(append(slices.Clone(exprs), tag+"!=")); err == nil {
			sets, err = a.store.Series(r.Context(), math.MinInt64, math.MaxInt64, ms...)
		}
	}
	if err != nil {
		writeJSONError(w, queryError("expr", err))
		return
	}
	counts := tagValues(sets, tag)
	vals := make([]string, 0, len(counts))
	for v := range counts {
		if strings.HasPrefix(v, prefix) {
			vals = append(vals, v)
		}
	}
	slices.Sort(vals)
	if len(vals) > limit {
		vals = vals[:limit]
	}
	writeJSON(w, q, vals)
}
