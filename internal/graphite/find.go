package graphite

import (
	"context"
	"errors"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/aerie-db/aerie/internal/graphite/attime"
)

// Node is one answer of a find: a path that the query's components match,
// a leaf if a series has exactly that path, a branch if series have
// longer paths under it (a path may be both: two nodes).
type Node struct {
	Path string
	Leaf bool
}

// Name is the node's last component.
func (n Node) Name() string { return n.Path[strings.LastIndexByte(n.Path, '.')+1:] }

// Find returns the nodes matching query, branches before leaves of the
// same path, sorted by Name as graphite-web's find view sorts them (then
// by path). from and until (milliseconds) bound the series considered;
// limit caps the answer (a *LimitError past it).
func (a *API) Find(ctx context.Context, query string, from, until int64, leavesOnly bool, limit int) ([]Node, error) {
	g, err := CompileGlob(query)
	if err != nil {
		return nil, err
	}
	m, err := labels.NewMatcher(labels.MatchRegexp, labels.MetricName, g.PrefixRegexp())
	if err != nil {
		return nil, err
	}
	paths, err := a.paths(ctx, from, until, m)
	if err != nil {
		return nil, err
	}
	type kind struct{ branch, leaf bool }
	seen := map[string]*kind{}
	var order []string
	for _, p := range paths {
		node, leaf, ok := g.MatchPrefix(p)
		if !ok {
			continue
		}
		k := seen[node]
		if k == nil {
			k = &kind{}
			seen[node] = k
			order = append(order, node)
		}
		if leaf {
			k.leaf = true
		} else {
			k.branch = true
		}
	}
	var out []Node
	for _, p := range order {
		k := seen[p]
		if k.branch && !leavesOnly {
			out = append(out, Node{Path: p})
		}
		if k.leaf {
			out = append(out, Node{Path: p, Leaf: true})
		}
		if limit > 0 && len(out) > limit {
			return nil, &LimitError{What: "find results", Limit: limit}
		}
	}
	slices.SortStableFunc(out, func(x, y Node) int {
		if c := strings.Compare(x.Name(), y.Name()); c != 0 {
			return c
		}
		if c := strings.Compare(x.Path, y.Path); c != 0 {
			return c
		}
		if !x.Leaf && y.Leaf {
			return -1
		}
		if x.Leaf && !y.Leaf {
			return 1
		}
		return 0
	})
	return out, nil
}

// paths returns the distinct paths (__name__ values) of the series
// matching m with data in [from, until] (milliseconds): from the store's
// TagIndex when it has one and the range is unbounded, else from its
// series.
func (a *API) paths(ctx context.Context, from, until int64, m *labels.Matcher) ([]string, error) {
	if ti, ok := a.store.(TagIndex); ok && from == math.MinInt64 && until == math.MaxInt64 {
		return ti.LabelValues(ctx, labels.MetricName, m)
	}
	sets, err := a.store.Series(ctx, from, until, m)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(sets))
	for i, ls := range sets {
		p := ls.Get(labels.MetricName)
		if i == 0 || p != out[len(out)-1] {
			out = append(out, p)
		}
	}
	return out, nil
}

// findRange parses find's optional from/until ("-1" or absent is
// unbounded), in milliseconds. graphite-web checks them and hands them
// to its finders, whose whisper finder ignores them: so does handleFind.
func (a *API) findRange(q url.Values) (from, until int64, err error) {
	from, until = math.MinInt64, math.MaxInt64
	loc := a.location(q)
	_, _, now, err := a.timeRange(url.Values{"now": q["now"]}, loc, "")
	if err != nil {
		return 0, 0, err
	}
	for _, p := range []struct {
		name string
		dst  *int64
	}{{"from", &from}, {"until", &until}} {
		s := q.Get(p.name)
		if s == "" || s == "-1" {
			continue
		}
		t, err := attime.Parse(s, time.Unix(now, 0), loc)
		if err != nil {
			return 0, 0, &paramError{param: p.name, err: err}
		}
		*p.dst = t * 1000
	}
	return from, until, nil
}

type treeNode struct {
	Text          string `json:"text"`
	ID            string `json:"id"`
	AllowChildren int    `json:"allowChildren"`
	Expandable    int    `json:"expandable"`
	Leaf          int    `json:"leaf"`
}

type completerNode struct {
	Path   string `json:"path,omitempty"`
	Name   string `json:"name"`
	IsLeaf string `json:"is_leaf,omitempty"`
}

func (a *API) handleFind(w http.ResponseWriter, r *http.Request) {
	q, err := a.params(w, r)
	if err != nil {
		writeError(w, err)
		return
	}
	format := q.Get("format")
	if format == "" {
		format = "treejson"
	}
	var leavesOnly, wildcards, automaticVariants, position int
	for _, p := range []struct {
		name string
		dst  *int
		def  int
	}{{"leavesOnly", &leavesOnly, 0}, {"wildcards", &wildcards, 0}, {"automatic_variants", &automaticVariants, 0}, {"position", &position, -1}} {
		if *p.dst, err = intParam(q, p.name, p.def); err != nil {
			writeError(w, err)
			return
		}
	}
	if _, _, err := a.findRange(q); err != nil {
		writeError(w, err)
		return
	}
	query, ok := q["query"]
	if !ok {
		writeError(w, badParam("query", "missing"))
		return
	}
	if query[0] == "" {
		writeError(w, badParam("query", "empty"))
		return
	}
	qs := query[0]
	basePath := ""
	if i := strings.LastIndexByte(qs, '.'); i >= 0 {
		basePath = qs[:i+1]
	}
	if format == "completer" {
		qs = strings.ReplaceAll(qs, "..", "*.")
		if !strings.HasSuffix(qs, "*") {
			qs += "*"
		}
		if automaticVariants != 0 {
			parts := strings.Split(qs, ".")
			for i, p := range parts {
				if strings.Contains(p, ",") && !strings.Contains(p, "{") {
					parts[i] = "{" + p + "}"
				}
			}
			qs = strings.Join(parts, ".")
		}
	}
	switch format {
	case "treejson", "completer", "nodelist":
	default:
		writeError(w, badParam("format", "%.32q is not supported (want treejson, completer or nodelist)", format))
		return
	}
	if _, err := checkJSONP(q); err != nil {
		writeError(w, err)
		return
	}
	nodes, err := a.Find(r.Context(), qs, math.MinInt64, math.MaxInt64, leavesOnly != 0, a.opts.MaxFindResults)
	if err != nil {
		writeError(w, queryError("query", err))
		return
	}
	w.Header().Set("Pragma", "no-cache")
	w.Header().Set("Cache-Control", "no-cache")
	switch format {
	case "treejson":
		writeJSON(w, q, treeJSON(nodes, basePath, wildcards != 0))
	case "completer":
		res := make([]completerNode, 0, len(nodes)+1)
		for _, n := range nodes {
			c := completerNode{Path: n.Path, Name: n.Name(), IsLeaf: "0"}
			if n.Leaf {
				c.IsLeaf = "1"
			} else {
				c.Path += "."
			}
			res = append(res, c)
		}
		if len(res) > 1 && wildcards != 0 {
			res = append(res, completerNode{Name: "*"})
		}
		writeJSON(w, q, map[string]any{"metrics": res})
	case "nodelist":
		found := map[string]bool{}
		for _, n := range nodes {
			parts := strings.Split(n.Path, ".")
			i := position
			if i < 0 {
				i += len(parts)
			}
			if i < 0 || i >= len(parts) {
				writeError(w, badParam("position", "%d is outside path %q", position, n.Path))
				return
			}
			found[parts[i]] = true
		}
		list := make([]string, 0, len(found))
		for k := range found {
			list = append(list, k)
		}
		slices.Sort(list)
		writeJSON(w, q, map[string]any{"nodes": list})
	}
}

// queryError names param in a pattern error.
func queryError(param string, err error) error {
	var pe *PatternError
	if errors.As(err, &pe) {
		return &paramError{param: param, err: err}
	}
	return err
}

// treeJSON is graphite-web's tree_json: a wildcard node first when asked
// and more than one node matched, then branches, then leaves, each name
// once.
func treeJSON(nodes []Node, basePath string, wildcards bool) []treeNode {
	branch := func(t treeNode) treeNode { t.AllowChildren, t.Expandable, t.Leaf = 1, 1, 0; return t }
	leaf := func(t treeNode) treeNode { t.AllowChildren, t.Expandable, t.Leaf = 0, 0, 1; return t }
	res := []treeNode{}
	if len(nodes) > 1 && wildcards {
		wc := treeNode{Text: "*", ID: basePath + "*"}
		anyBranch := slices.ContainsFunc(nodes, func(n Node) bool { return !n.Leaf })
		if anyBranch {
			wc = branch(wc)
		} else {
			wc = leaf(wc)
		}
		res = append(res, wc)
	}
	found := map[string]bool{}
	var branches, leaves []treeNode
	for _, n := range nodes {
		name := n.Name()
		if found[name] {
			continue
		}
		found[name] = true
		t := treeNode{Text: unquotePlus(name), ID: basePath + name}
		if n.Leaf {
			leaves = append(leaves, leaf(t))
		} else {
			branches = append(branches, branch(t))
		}
	}
	res = append(res, branches...)
	return append(res, leaves...)
}

// unquotePlus is Python's urllib unquote_plus, leaving bad escapes as
// they are.
func unquotePlus(s string) string {
	if !strings.ContainsAny(s, "%+") {
		return s
	}
	if u, err := url.QueryUnescape(s); err == nil {
		return u
	}
	return strings.ReplaceAll(s, "+", " ")
}

func (a *API) handleExpand(w http.ResponseWriter, r *http.Request) {
	q, err := a.params(w, r)
	if err != nil {
		writeError(w, err)
		return
	}
	groupByExpr, err := intParam(q, "groupByExpr", 0)
	if err != nil {
		writeError(w, err)
		return
	}
	leavesOnly, err := intParam(q, "leavesOnly", 0)
	if err != nil {
		writeError(w, err)
		return
	}
	if _, err := checkJSONP(q); err != nil {
		writeError(w, err)
		return
	}
	queries := q["query"]
	if len(queries) > a.opts.MaxTargets {
		writeError(w, badParam("query", "%d queries: at most %d", len(queries), a.opts.MaxTargets))
		return
	}
	grouped := map[string][]string{}
	union := map[string]bool{}
	total := 0
	for _, qs := range queries {
		nodes, err := a.Find(r.Context(), qs, math.MinInt64, math.MaxInt64, false, a.opts.MaxFindResults)
		if err != nil {
			writeError(w, queryError("query", err))
			return
		}
		set := map[string]bool{}
		for _, n := range nodes {
			if n.Leaf || leavesOnly == 0 {
				set[n.Path] = true
			}
		}
		paths := make([]string, 0, len(set))
		for p := range set {
			paths = append(paths, p)
			union[p] = true
		}
		total += len(paths)
		if total > a.opts.MaxFindResults {
			writeError(w, &LimitError{What: "find results", Limit: a.opts.MaxFindResults})
			return
		}
		slices.Sort(paths)
		grouped[qs] = paths
	}
	w.Header().Set("Pragma", "no-cache")
	w.Header().Set("Cache-Control", "no-cache")
	if groupByExpr != 0 {
		writeJSON(w, q, map[string]any{"results": grouped})
		return
	}
	all := make([]string, 0, len(union))
	for p := range union {
		all = append(all, p)
	}
	slices.Sort(all)
	writeJSON(w, q, map[string]any{"results": all})
}

// handleIndex answers every path, sorted (graphite-web's index.json).
func (a *API) handleIndex(w http.ResponseWriter, r *http.Request) {
	q, err := a.params(w, r)
	if err != nil {
		writeError(w, err)
		return
	}
	if _, err := checkJSONP(q); err != nil {
		writeError(w, err)
		return
	}
	all, err := a.paths(r.Context(), math.MinInt64, math.MaxInt64,
		labels.MustNewMatcher(labels.MatchRegexp, labels.MetricName, ".+"))
	if err != nil {
		writeError(w, err)
		return
	}
	seen := map[string]bool{}
	paths := []string{}
	for _, p := range all {
		if !seen[p] {
			seen[p] = true
			paths = append(paths, p)
			if len(paths) > a.opts.MaxFindResults {
				writeError(w, &LimitError{What: "find results", Limit: a.opts.MaxFindResults})
				return
			}
		}
	}
	slices.Sort(paths)
	writeJSON(w, q, paths)
}
