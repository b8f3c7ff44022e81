package queryparse

import (
	"slices"
	"sync"

	"github.com/prometheus/prometheus/promql/parser"
)

const (
	parseCacheEntries = 1024      // parses kept at most
	parseCacheBytes   = 1 << 20   // bytes of query strings kept at most
	parseCacheMaxLen  = 16 * 1024 // longer query strings are not kept
)

// parses is the process' parse cache.
//
// Locking: mu guards m and bytes; the expressions in m are never modified
// (callers get copies).
var parses = struct {
	mu    sync.Mutex
	m     map[string]parser.Expr
	bytes int // the length of m's keys
}{m: map[string]parser.Expr{}}

// ParseExpr is parser.ParseExpr through the cache: the caller owns the
// expression it gets and may modify it. The copy shares what nothing
// modifies (label matchers, functions) with the cached parse.
func ParseExpr(qs string) (parser.Expr, error) {
	parses.mu.Lock()
	e, ok := parses.m[qs]
	parses.mu.Unlock()
	if ok {
		return cloneExpr(e), nil
	}
	e, err := parser.ParseExpr(qs)
	if err != nil || len(qs) > parseCacheMaxLen {
		return e, err
	}
	kept := cloneExpr(e)
	if kept == nil { // a node cloneExpr does not know: not cached
		return e, nil
	}
	parses.mu.Lock()
	if len(parses.m) >= parseCacheEntries || parses.bytes+len(qs) > parseCacheBytes {
		// Full: an arbitrary eighth goes (map order is random), and more
		// until qs fits.
		n := parseCacheEntries / 8
		for k := range parses.m {
			if n <= 0 && parses.bytes+len(qs) <= parseCacheBytes {
				break
			}
			delete(parses.m, k)
			parses.bytes -= len(k)
			n--
		}
	}
	if _, dup := parses.m[qs]; !dup { // another goroutine's parse of qs
		parses.bytes += len(qs)
	}
	parses.m[qs] = kept
	parses.mu.Unlock()
	return e, nil
}

// cloneExpr returns a copy of e that shares nothing the engine or a
// planner may modify: every node, slice and pointer is new but the label
// matchers and the functions (immutable). It returns nil for nil, or if
// e holds a node type it does not know (TestParseExpr walks the copies of
// many parses to hold it to this).
func cloneExpr(e parser.Expr) parser.Expr {
	var c cloner
	if out := c.expr(e); !c.unknown {
		return out
	}
	return nil
}

// cloner copies expressions; unknown is set by a node type it does not
// know.
type cloner struct{ unknown bool }

func (cl *cloner) expr(e parser.Expr) parser.Expr {
	switch n := e.(type) {
	case nil:
		return nil
	case *parser.AggregateExpr:
		c := *n
		c.Expr, c.Param, c.Grouping = cl.expr(n.Expr), cl.expr(n.Param), slices.Clone(n.Grouping)
		return &c
	case *parser.BinaryExpr:
		c := *n
		c.LHS, c.RHS = cl.expr(n.LHS), cl.expr(n.RHS)
		if m := n.VectorMatching; m != nil {
			vm := *m
			vm.MatchingLabels, vm.Include = slices.Clone(m.MatchingLabels), slices.Clone(m.Include)
			vm.FillValues.LHS, vm.FillValues.RHS = clonePtr(m.FillValues.LHS), clonePtr(m.FillValues.RHS)
			c.VectorMatching = &vm
		}
		return &c
	case *parser.Call:
		c := *n
		if n.Args != nil {
			c.Args = make(parser.Expressions, len(n.Args))
			for i, a := range n.Args {
				c.Args[i] = cl.expr(a)
			}
		}
		return &c
	case *parser.DurationExpr:
		return cl.duration(n)
	case *parser.MatrixSelector:
		c := *n
		c.VectorSelector, c.RangeExpr = cl.expr(n.VectorSelector), cl.duration(n.RangeExpr)
		return &c
	case *parser.SubqueryExpr:
		c := *n
		c.Expr, c.Timestamp = cl.expr(n.Expr), clonePtr(n.Timestamp)
		c.RangeExpr, c.OriginalOffsetExpr, c.StepExpr = cl.duration(n.RangeExpr), cl.duration(n.OriginalOffsetExpr), cl.duration(n.StepExpr)
		return &c
	case *parser.NumberLiteral:
		c := *n
		return &c
	case *parser.StringLiteral:
		c := *n
		return &c
	case *parser.ParenExpr:
		c := *n
		c.Expr = cl.expr(n.Expr)
		return &c
	case *parser.UnaryExpr:
		c := *n
		c.Expr = cl.expr(n.Expr)
		return &c
	case *parser.StepInvariantExpr:
		c := *n
		c.Expr = cl.expr(n.Expr)
		return &c
	case *parser.VectorSelector:
		c := *n
		c.LabelMatchers, c.Timestamp = slices.Clone(n.LabelMatchers), clonePtr(n.Timestamp)
		c.OriginalOffsetExpr = cl.duration(n.OriginalOffsetExpr)
		return &c
	}
	cl.unknown = true
	return nil
}

func (cl *cloner) duration(d *parser.DurationExpr) *parser.DurationExpr {
	if d == nil {
		return nil
	}
	c := *d
	c.LHS, c.RHS = cl.expr(d.LHS), cl.expr(d.RHS)
	return &c
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	c := *p
	return &c
}
