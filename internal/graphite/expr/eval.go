package expr

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aerie-db/aerie/internal/graphite/attime"
)

// Evaluation limits, on top of the parser's.
const (
	// MaxFetches bounds the Fetcher calls of one Eval: functions that
	// re-fetch (timeStack, applyByNode, movingAverage …) multiply them.
	MaxFetches = 10000
	// MaxPoints bounds the points of one series a function creates
	// (summarize, hitcount, constantLine …).
	MaxPoints = 1 << 22
)

// Eval evaluates a parsed target over [from, until) (Unix seconds; now is
// the request's "now", which relative times such as timeSlice's are taken
// from). Path expressions are fetched with f.Fetch, seriesByTag with
// f.FetchTagged; functions that look outside the range (movingAverage,
// timeShift, timeStack, smartSummarize's alignTo, hitcount's
// alignToInterval, applyByNode) fetch again as graphite-web does.
//
// Errors: *UnknownFunctionError, *ArgError and errors wrapping ErrLimit
// are the target's fault (IsBadRequest); a Fetcher's errors are returned
// wrapped.
func Eval(ctx context.Context, e Expr, from, until, now int64, f Fetcher) ([]*Series, error) {
	return EvalOptions(ctx, e, from, until, now, f, Options{})
}

// EvalOptions is Eval with request options.
func EvalOptions(ctx context.Context, e Expr, from, until, now int64, f Fetcher, opts Options) ([]*Series, error) {
	if until <= from {
		return nil, &ArgError{Func: "render", Param: "until", Msg: fmt.Sprintf("until (%d) is not after from (%d)", until, from)}
	}
	loc := opts.Location
	if loc == nil {
		loc = time.UTC
	}
	if opts.XFilesFactor < 0 || opts.XFilesFactor > 1 || opts.XFilesFactor != opts.XFilesFactor {
		return nil, &ArgError{Func: "render", Param: "xFilesFactor", Msg: fmt.Sprintf("%v is not between 0 and 1", opts.XFilesFactor)}
	}
	ev := &evaluator{ctx: ctx, f: f, now: now, xff: opts.XFilesFactor, loc: loc, fetches: new(int)}
	v, err := ev.eval(e, from, until)
	if err != nil {
		return nil, err
	}
	switch v := v.(type) {
	case []*Series:
		return v, nil
	case nil:
		return nil, nil
	}
	return nil, &ArgError{Func: "render", Param: "target", Pos: e.Pos(), Msg: fmt.Sprintf("target is a %s, not a series list", typeName(v))}
}

type evaluator struct {
	ctx     context.Context
	f       Fetcher
	now     int64
	xff     float64        // the request's xFilesFactor
	loc     *time.Location // for times of day
	fetches *int           // shared by the evaluators of re-fetches
}

// Options are render request settings that change evaluation.
type Options struct {
	// XFilesFactor is graphite-web's request xFilesFactor (default 0):
	// fetched series get it, and aggregates use it unless given one.
	XFilesFactor float64
	// Location is the time zone of times of day in timeSlice,
	// smartSummarize's alignTo and hitcount's alignToInterval (nil = UTC).
	Location *time.Location
}

// eval evaluates e over [from, until); a series list is []*Series, a
// literal int64, float64, string, bool or nil.
func (ev *evaluator) eval(e Expr, from, until int64) (any, error) {
	if err := ev.ctx.Err(); err != nil {
		return nil, err
	}
	switch e := e.(type) {
	case *PathExpr:
		return ev.fetch(e.Path, from, until, nil)
	case *StringExpr:
		return e.Value, nil
	case *NumberExpr:
		if e.IsInt {
			if n, err := strconv.ParseInt(e.Text, 10, 64); err == nil {
				return n, nil
			}
		}
		return e.Value, nil
	case *BoolExpr:
		return e.Value, nil
	case *NoneExpr:
		return nil, nil
	case *CallExpr:
		return ev.call(e, from, until)
	}
	return nil, fmt.Errorf("unknown expression %T", e)
}

// fetch loads a path expression, or seriesByTag's expressions if tagged
// is not nil, and copies the series so that nothing downstream writes to
// the Fetcher's.
func (ev *evaluator) fetch(pathExpr string, from, until int64, tagged []string) ([]*Series, error) {
	if *ev.fetches++; *ev.fetches > MaxFetches {
		return nil, fmt.Errorf("more than %d fetches: %w", MaxFetches, ErrLimit)
	}
	var got []*Series
	var err error
	if tagged != nil {
		got, err = ev.f.FetchTagged(ev.ctx, tagged, from, until)
	} else {
		got, err = ev.f.Fetch(ev.ctx, pathExpr, from, until)
	}
	if err != nil {
		return nil, fmt.Errorf("fetch %s: %w", pathExpr, err)
	}
	out := make([]*Series, 0, len(got))
	seen := make(map[string]bool, len(got))
	for _, s := range got {
		if s == nil || seen[s.Name] {
			continue
		}
		if s.Step <= 0 {
			return nil, fmt.Errorf("fetch %s: series %q has step %d", pathExpr, s.Name, s.Step)
		}
		seen[s.Name] = true
		c := *s
		c.PathExpression = pathExpr
		c.XFilesFactor = ev.xff
		c.End = c.Start + int64(len(c.Values))*c.Step
		if c.Tags == nil {
			c.Tags = tagsFromName(c.Name)
		}
		if c.ConsolidationFunc == "" {
			c.ConsolidationFunc = "average"
		}
		out = append(out, &c)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (ev *evaluator) call(e *CallExpr, from, until int64) (any, error) {
	if e.Name == "seriesByTag" {
		return ev.seriesByTag(e, from, until)
	}
	def := funcs[e.Name]
	if def == nil {
		return nil, &UnknownFunctionError{Name: e.Name, Pos: e.At}
	}
	c := &callCtx{ev: ev, expr: e, def: def, from: from, until: until}
	args := make([]any, len(e.Args))
	for i, a := range e.Args {
		v, err := ev.eval(a, from, until)
		if err != nil {
			return nil, err
		}
		args[i] = v
	}
	kwargs := make(map[string]any, len(e.Kwargs))
	for _, kw := range e.Kwargs {
		v, err := ev.eval(kw.Value, from, until)
		if err != nil {
			return nil, err
		}
		kwargs[kw.Name] = v
	}
	if err := c.bind(args, kwargs); err != nil {
		return nil, err
	}
	if def.fnLists != nil {
		return def.fnLists(c)
	}
	out, err := def.fn(c)
	if err != nil {
		return nil, err
	}
	for _, s := range out {
		if n := len(s.Values); n > MaxPoints {
			return nil, fmt.Errorf("%s made a series of %d points (at most %d): %w", e.Name, n, MaxPoints, ErrLimit)
		}
	}
	return out, nil
}

func (ev *evaluator) seriesByTag(e *CallExpr, from, until int64) (any, error) {
	if len(e.Kwargs) > 0 || len(e.Args) == 0 {
		return nil, &ArgError{Func: e.Name, Param: "tagExpressions", Pos: e.At, Msg: "want one or more 'tag=value' strings"}
	}
	exprs := make([]string, len(e.Args))
	for i, a := range e.Args {
		s, ok := a.(*StringExpr)
		if !ok {
			return nil, &ArgError{Func: e.Name, Param: "tagExpressions", Pos: e.At, Msg: fmt.Sprintf("argument %d is not a string", i+1)}
		}
		if !tagExprRe.MatchString(s.Value) {
			return nil, &ArgError{Func: e.Name, Param: "tagExpressions", Pos: e.At, Msg: fmt.Sprintf("invalid tag expression %s", pyRepr(s.Value))}
		}
		if _, v, ok := strings.Cut(s.Value, "=~"); ok {
			if _, err := regexp.Compile("^(?:" + v + ")"); err != nil {
				return nil, &ArgError{Func: e.Name, Param: "tagExpressions", Pos: e.At, Msg: fmt.Sprintf("invalid regular expression in %s: %v", pyRepr(s.Value), err)}
			}
		}
		exprs[i] = s.Value
	}
	raw := e.Raw
	if raw == "" {
		raw = e.String()
	}
	return ev.fetch(raw, from, until, exprs)
}

// tagExprRe is graphite-web's tag expression syntax: tag, operator
// (=, !=, =~, !=~), value.
var tagExprRe = regexp.MustCompile(`^[^;!=]+!?=~?[^;]*$`)

// callCtx is one function call being evaluated: its bound arguments and
// time range.
type callCtx struct {
	ev          *evaluator
	expr        *CallExpr
	def         *funcDef
	from, until int64
	vals        []any  // by parameter; a multiple parameter's are []any
	set         []bool // whether vals[i] was given
}

func (c *callCtx) errf(param, format string, args ...any) error {
	return &ArgError{Func: c.expr.Name, Param: param, Pos: c.expr.At, Msg: fmt.Sprintf(format, args...)}
}

// bind matches arguments to parameters and checks their types as
// graphite-web's validateParams does.
func (c *callCtx) bind(args []any, kwargs map[string]any) error {
	ps := c.def.params
	c.vals = make([]any, len(ps))
	c.set = make([]bool, len(ps))
	multiple := len(ps) > 0 && ps[len(ps)-1].Multiple
	if len(args)+len(kwargs) > len(ps) && !multiple {
		return c.errf("", "too many parameters (%d, at most %d)", len(args)+len(kwargs), len(ps))
	}
	for i, a := range args {
		pi := i
		if pi >= len(ps) {
			pi = len(ps) - 1
		}
		p := ps[pi]
		if a == nil && !p.Required {
			continue
		}
		v, err := c.check(p, a)
		if err != nil {
			return err
		}
		if p.Multiple {
			list, _ := c.vals[pi].([]any)
			c.vals[pi] = append(list, v)
		} else {
			c.vals[pi] = v
		}
		c.set[pi] = true
	}
	used := 0
	for pi := len(args); pi < len(ps); pi++ {
		p := ps[pi]
		a, ok := kwargs[p.Name]
		if ok {
			used++
		}
		if !ok || a == nil {
			if p.Required && p.fallback == nil {
				return c.errf(p.Name, "missing required parameter")
			}
			continue
		}
		v, err := c.check(p, a)
		if err != nil {
			return err
		}
		if p.Multiple {
			v = []any{v}
		}
		c.vals[pi], c.set[pi] = v, true
	}
	if used < len(kwargs) {
		var bad []string
		for k := range kwargs {
			found := false
			for pi := len(args); pi < len(ps); pi++ {
				found = found || ps[pi].Name == k
			}
			if !found {
				bad = append(bad, k)
			}
		}
		sort.Strings(bad)
		return c.errf("", "unexpected keyword arguments: %s", strings.Join(bad, ", "))
	}
	for pi, p := range ps {
		if p.Required && !c.set[pi] {
			if p.fallback != nil {
				c.vals[pi], c.set[pi] = p.fallback, true
				continue
			}
			return c.errf(p.Name, "missing required parameter")
		}
	}
	return nil
}

func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "None"
	case []*Series:
		return "series list"
	case [][]*Series:
		return "list of series lists"
	case int64:
		return "integer"
	case float64:
		return "float"
	case string:
		return "string"
	case bool:
		return "boolean"
	}
	return fmt.Sprintf("%T", v)
}

// check validates one argument against its parameter's type and returns
// it in the Go type the function reads.
func (c *callCtx) check(p ParamInfo, v any) (any, error) {
	bad := func() error {
		return c.errf(p.Name, "invalid %q value %s", p.Type, reprArg(v))
	}
	if len(p.Options) > 0 && !p.lenient {
		s, ok := v.(string)
		if ok && p.Type == "aggFunc" && c.def.deprecatedAgg && strings.HasSuffix(s, "Series") {
			// Logged as deprecated by graphite-web, and stripped.
			s = strings.TrimSuffix(s, "Series")
		}
		if ok && !contains(p.Options, s) || !ok && !contains(p.Options, v) {
			var opts []string
			for _, o := range p.Options {
				opts = append(opts, pyStr(o))
			}
			return nil, c.errf(p.Name, "invalid option %s (want one of %s)", reprArg(v), strings.Join(opts, ", "))
		}
	}
	switch p.Type {
	case "seriesList":
		if _, ok := v.([]*Series); !ok {
			return nil, bad()
		}
	case "seriesLists":
		if _, ok := v.([][]*Series); !ok {
			return nil, bad()
		}
	case "float":
		switch x := v.(type) {
		case int64:
			return float64(x), nil
		case float64:
			return x, nil
		case bool:
			if x {
				return 1.0, nil
			}
			return 0.0, nil
		case string:
			f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
			if err != nil && !isRangeErr(err) {
				return nil, bad()
			}
			return f, nil
		}
		return nil, bad()
	case "integer", "node":
		switch x := v.(type) {
		case int64:
			return x, nil
		case bool:
			if x {
				return int64(1), nil
			}
			return int64(0), nil
		case string:
			n, err := strconv.ParseInt(strings.TrimSpace(x), 10, 64)
			if err != nil {
				return nil, bad()
			}
			return n, nil
		}
		return nil, bad()
	case "intOrInf":
		switch x := v.(type) {
		case int64:
			return float64(x), nil
		case float64:
			if math.IsInf(x, 1) {
				return x, nil
			}
		}
		return nil, bad()
	case "interval":
		s, ok := v.(string)
		if !ok {
			return nil, bad()
		}
		if _, err := ParseOffset(s); err != nil {
			return nil, c.errf(p.Name, "invalid interval %s: %v", reprArg(v), err)
		}
	case "boolean":
		switch x := v.(type) {
		case bool:
			return x, nil
		case string:
			switch strings.ToLower(x) {
			case "true":
				return true, nil
			case "false":
				return false, nil
			}
		case int64:
			if x == 0 || x == 1 {
				return x == 1, nil
			}
		case float64:
			if x == 0 || x == 1 {
				return x == 1, nil
			}
		}
		return nil, bad()
	case "nodeOrTag":
		switch v.(type) {
		case int64, string, float64:
		default:
			return nil, bad()
		}
	}
	if _, ok := v.([]*Series); ok && p.Type != "seriesList" && p.Type != "any" {
		return nil, bad()
	}
	if _, ok := v.([][]*Series); ok && p.Type != "seriesLists" {
		return nil, bad()
	}
	return v, nil
}

func reprArg(v any) string {
	switch v.(type) {
	case []*Series:
		return "(a series list)"
	case [][]*Series:
		return "(a list of series lists)"
	}
	return pyRepr(v)
}

func contains(list []any, s any) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Accessors of bound arguments; an unset one yields the parameter's
// default. bind has checked the types.

func (c *callCtx) has(i int) bool { return c.set[i] }

func (c *callCtx) arg(i int) any {
	if c.set[i] {
		return c.vals[i]
	}
	return c.def.params[i].Default
}

func (c *callCtx) series(i int) []*Series {
	s, _ := c.arg(i).([]*Series)
	return s
}

// seriesLists returns a multiple seriesList parameter's lists.
func (c *callCtx) seriesLists(i int) [][]*Series {
	var out [][]*Series
	for _, v := range c.multi(i) {
		s, _ := v.([]*Series)
		out = append(out, s)
	}
	return out
}

func (c *callCtx) multi(i int) []any {
	l, _ := c.vals[i].([]any)
	return l
}

func (c *callCtx) float(i int) float64 {
	switch x := c.arg(i).(type) {
	case float64:
		return x
	case int64:
		return float64(x)
	}
	return null
}

// timeArg reads argument i as a time, the way the request's from and
// until are read, relative to the request's now.
func (c *callCtx) timeArg(i int) (int64, error) {
	return attime.Parse(c.str(i), time.Unix(c.ev.now, 0), c.ev.loc)
}

func (c *callCtx) int(i int) int64 {
	switch x := c.arg(i).(type) {
	case int64:
		return x
	case float64:
		return int64(x)
	}
	return 0
}

func (c *callCtx) str(i int) string {
	if v := c.arg(i); v != nil {
		return pyStr(v)
	}
	return ""
}

func (c *callCtx) bool(i int) bool {
	b, _ := c.arg(i).(bool)
	return b
}

// argExpr returns the expression given for parameter i, for functions
// that evaluate it again over another range.
func (c *callCtx) argExpr(i int) Expr {
	if i < len(c.expr.Args) {
		return c.expr.Args[i]
	}
	for _, kw := range c.expr.Kwargs {
		if kw.Name == c.def.params[i].Name {
			return kw.Value
		}
	}
	return nil
}

// evalBuilt parses and evaluates text, an expression the function built,
// over the call's range; a parse error is param's, "what: error".
func (c *callCtx) evalBuilt(param, what, text string) (any, error) {
	e, err := Parse(text)
	if err != nil {
		return nil, c.errf(param, "%s: %v", what, err)
	}
	return c.ev.eval(e, c.from, c.until)
}

// refetch evaluates the first argument again over [from, until).
func (c *callCtx) refetch(from, until int64) ([]*Series, error) {
	e := c.argExpr(0)
	if e == nil {
		return nil, nil
	}
	if until <= from {
		return nil, nil // graphite-web fetches nothing over an empty range
	}
	v, err := c.ev.eval(e, from, until)
	if err != nil {
		return nil, err
	}
	s, _ := v.([]*Series)
	return s, nil
}
