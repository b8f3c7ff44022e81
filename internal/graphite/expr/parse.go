package expr

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Limits on a target. Graphite-web has none; these keep a hostile target
// from costing more than a large legitimate dashboard does.
const (
	MaxTargetLen = 64 << 10 // bytes
	MaxDepth     = 64       // nested calls and pipes
	MaxArgs      = 1024     // arguments of one call, keyword ones included
)

// pathSymbols are the bytes that end a path node unless escaped with a
// backslash (graphite-web's grammar; '=' may be escaped too).
const pathSymbols = "(){},.'\"\\|"

// ParseError is a target that does not parse. Offset is the byte offset in
// Target where parsing stopped; Expected says what would have been valid.
type ParseError struct {
	Target   string
	Offset   int
	Expected string
}

func (e *ParseError) Error() string {
	found := "end of target"
	if e.Offset < len(e.Target) {
		r := e.Target[e.Offset:]
		if len(r) > 16 {
			r = r[:16] + "…"
		}
		found = strconv.Quote(r)
	}
	return fmt.Sprintf("parse target at byte %d: expected %s, found %s", e.Offset, e.Expected, found)
}

// Parse parses a Graphite target: a path expression or a function call,
// optionally followed by piped calls (a.b|f(x)). Arguments are path
// expressions, calls, 'strings', "strings", numbers (1, -1.5, 1e3),
// true/false, None and inf, positional first then name=value.
func Parse(target string) (Expr, error) {
	if len(target) > MaxTargetLen {
		return nil, &ParseError{Target: target, Offset: MaxTargetLen, Expected: fmt.Sprintf("a target of at most %d bytes", MaxTargetLen)}
	}
	p := &parser{s: target}
	p.ws()
	e, err := p.expression(0)
	if err != nil {
		return nil, err
	}
	p.ws()
	if p.i < len(p.s) {
		return nil, p.errf("'|' or end of target")
	}
	return e, nil
}

type parser struct {
	s string
	i int
}

func (p *parser) errf(expected string) error {
	return &ParseError{Target: p.s, Offset: p.i, Expected: expected}
}

func (p *parser) ws() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *parser) peek() byte {
	if p.i < len(p.s) {
		return p.s[p.i]
	}
	return 0
}

func isIdentStart(c byte) bool { return isAlpha(c) || c == '_' }
func isIdent(c byte) bool      { return isAlpha(c) || isDigit(c) || c == '_' }

// ident returns the length of the identifier at offset i, 0 if none.
func (p *parser) ident(i int) int {
	if i >= len(p.s) || !isIdentStart(p.s[i]) {
		return 0
	}
	j := i + 1
	for j < len(p.s) && isIdent(p.s[j]) {
		j++
	}
	return j - i
}

// followedBy reports whether the next non-blank byte from offset i is c.
func (p *parser) followedBy(i int, c byte) bool {
	for i < len(p.s) && (p.s[i] == ' ' || p.s[i] == '\t' || p.s[i] == '\n' || p.s[i] == '\r') {
		i++
	}
	return i < len(p.s) && p.s[i] == c
}

// expression parses a call or a path expression and any piped calls.
func (p *parser) expression(depth int) (Expr, error) {
	if depth > MaxDepth {
		return nil, p.errf(fmt.Sprintf("at most %d nested calls", MaxDepth))
	}
	var e Expr
	var err error
	if n := p.ident(p.i); n > 0 && p.followedBy(p.i+n, '(') {
		e, err = p.call(depth)
	} else {
		e, err = p.path()
	}
	if err != nil {
		return nil, err
	}
	for {
		save := p.i
		p.ws()
		if p.peek() != '|' {
			p.i = save
			return e, nil
		}
		p.i++
		p.ws()
		if depth++; depth > MaxDepth {
			return nil, p.errf(fmt.Sprintf("at most %d nested calls", MaxDepth))
		}
		n := p.ident(p.i)
		if n == 0 || !p.followedBy(p.i+n, '(') {
			return nil, p.errf("a function call after '|'")
		}
		c, err := p.call(depth)
		if err != nil {
			return nil, err
		}
		call := c.(*CallExpr)
		call.Args = append([]Expr{e}, call.Args...)
		if len(call.Args)+len(call.Kwargs) > MaxArgs {
			return nil, &ParseError{Target: p.s, Offset: call.At, Expected: fmt.Sprintf("at most %d arguments", MaxArgs)}
		}
		e = call
	}
}

// call parses name(args) with p.i at the name.
func (p *parser) call(depth int) (Expr, error) {
	at := p.i
	n := p.ident(p.i)
	c := &CallExpr{Name: p.s[p.i : p.i+n], At: at}
	p.i += n
	p.ws()
	p.i++ // '('
	p.ws()
	if p.peek() == ')' {
		p.i++
		c.Raw = p.s[at:p.i]
		return c, nil
	}
	for {
		p.ws()
		argAt := p.i
		name, v, err := p.arg(depth + 1)
		if err != nil {
			return nil, err
		}
		if name != "" {
			// graphite-web's grammar wants a positional argument first; a
			// repeated keyword is allowed and the last one counts.
			if len(c.Args) == 0 {
				return nil, &ParseError{Target: p.s, Offset: argAt, Expected: "a positional argument before keyword arguments"}
			}
			c.Kwargs = append(c.Kwargs, Kwarg{Name: name, Value: v})
		} else {
			if len(c.Kwargs) > 0 {
				return nil, &ParseError{Target: p.s, Offset: argAt, Expected: "a keyword argument (name=value) after keyword arguments"}
			}
			c.Args = append(c.Args, v)
		}
		if len(c.Args)+len(c.Kwargs) > MaxArgs {
			return nil, &ParseError{Target: p.s, Offset: argAt, Expected: fmt.Sprintf("at most %d arguments", MaxArgs)}
		}
		p.ws()
		switch p.peek() {
		case ',':
			p.i++
		case ')':
			p.i++
			c.Raw = p.s[at:p.i]
			return c, nil
		default:
			return nil, p.errf("',' or ')'")
		}
	}
}

// arg parses one argument; name is set for a keyword argument.
func (p *parser) arg(depth int) (name string, v Expr, err error) {
	if n := p.ident(p.i); n > 0 && p.followedBy(p.i+n, '=') {
		name = p.s[p.i : p.i+n]
		p.i += n
		p.ws()
		p.i++ // '='
		p.ws()
	}
	v, err = p.value(depth)
	return name, v, err
}

// keyword reports whether the caseless keyword kw is at p.i and not
// followed by an identifier byte.
func (p *parser) keyword(kw string) bool {
	j := p.i + len(kw)
	if j > len(p.s) || !strings.EqualFold(p.s[p.i:j], kw) {
		return false
	}
	return j == len(p.s) || !(isIdent(p.s[j]) || p.s[j] == '$')
}

// value parses an argument's value in graphite-web's order: boolean,
// number, None, string, inf, expression.
func (p *parser) value(depth int) (Expr, error) {
	at := p.i
	switch {
	case p.keyword("true"):
		p.i += 4
		return &BoolExpr{Value: true, At: at}, nil
	case p.keyword("false"):
		p.i += 5
		return &BoolExpr{Value: false, At: at}, nil
	}
	if e := p.number(); e != nil {
		return e, nil
	}
	switch {
	case p.keyword("none"):
		p.i += 4
		return &NoneExpr{At: at}, nil
	case p.peek() == '\'' || p.peek() == '"':
		return p.str()
	case p.keyword("inf"):
		p.i += 3
		return &NumberExpr{Value: math.Inf(1), Text: p.s[at:p.i], At: at}, nil
	}
	if p.i >= len(p.s) {
		return nil, p.errf("an argument")
	}
	return p.expression(depth)
}

// number parses a numeric literal if one is at p.i and is followed by
// ',', ')' or the end of the target; otherwise it consumes nothing.
func (p *parser) number() *NumberExpr {
	at := p.i
	j := p.i
	digits := func() bool {
		k := j
		for j < len(p.s) && isDigit(p.s[j]) {
			j++
		}
		return j > k
	}
	if j < len(p.s) && p.s[j] == '-' {
		j++
	}
	if !digits() {
		return nil
	}
	isInt := true
	if j+1 < len(p.s) && p.s[j] == '.' && isDigit(p.s[j+1]) {
		j++
		digits()
		isInt = false
	}
	if j < len(p.s) && (p.s[j] == 'e' || p.s[j] == 'E') {
		k := j
		j++
		if j < len(p.s) && p.s[j] == '-' {
			j++
		}
		if digits() {
			isInt = false
		} else {
			j = k
		}
	}
	if !(j == len(p.s) || p.followedBy(j, ',') || p.followedBy(j, ')')) {
		k := j
		for k < len(p.s) && (p.s[k] == ' ' || p.s[k] == '\t' || p.s[k] == '\n' || p.s[k] == '\r') {
			k++
		}
		if k < len(p.s) {
			return nil
		}
	}
	text := p.s[at:j]
	v, err := strconv.ParseFloat(text, 64)
	if err != nil && !isRangeErr(err) {
		return nil
	}
	p.i = j
	return &NumberExpr{Value: v, Text: text, IsInt: isInt, At: at}
}

func isRangeErr(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

// str parses a quoted string; the value keeps escapes as written.
func (p *parser) str() (Expr, error) {
	at := p.i
	q := p.s[p.i]
	p.i++
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == '\\':
			if p.i+1 >= len(p.s) {
				p.i++
				return nil, p.errf(fmt.Sprintf("the closing %c of the string at byte %d", q, at))
			}
			p.i += 2
		case c == q:
			if p.i+1 < len(p.s) && p.s[p.i+1] == q {
				p.i += 2
				continue
			}
			p.i++
			return &StringExpr{Value: p.s[at+1 : p.i-1], Quote: q, At: at}, nil
		case c == '\n' || c == '\r':
			return nil, p.errf(fmt.Sprintf("the closing %c of the string at byte %d", q, at))
		default:
			p.i++
		}
	}
	return nil, p.errf(fmt.Sprintf("the closing %c of the string at byte %d", q, at))
}

func isPathByte(c byte) bool {
	return c > ' ' && c != 0x7f && strings.IndexByte(pathSymbols, c) < 0
}

// path parses a path expression: nodes separated by dots, each a run of
// path bytes, escapes and {a,b} alternatives.
func (p *parser) path() (Expr, error) {
	at := p.i
	var b strings.Builder
	for {
		if err := p.pathNode(&b); err != nil {
			return nil, err
		}
		if p.peek() != '.' {
			break
		}
		p.i++
		b.WriteByte('.')
	}
	return &PathExpr{Path: b.String(), At: at}, nil
}

func (p *parser) pathNode(b *strings.Builder) error {
	start := p.i
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == '{':
			if err := p.pathEnum(b); err != nil {
				return err
			}
		case c == '\\' || isPathByte(c):
			if err := p.pathPart(b); err != nil {
				return err
			}
		default:
			if p.i == start {
				return p.errf("a path expression or a function call")
			}
			return nil
		}
	}
	if p.i == start {
		return p.errf("a path expression or a function call")
	}
	return nil
}

// pathPart consumes path bytes and escapes, at least one.
func (p *parser) pathPart(b *strings.Builder) error {
	start := p.i
	for p.i < len(p.s) {
		c := p.s[p.i]
		if c == '\\' {
			if p.i+1 < len(p.s) && (strings.IndexByte(pathSymbols, p.s[p.i+1]) >= 0 || p.s[p.i+1] == '=') {
				b.WriteByte(p.s[p.i+1])
				p.i += 2
				continue
			}
			p.i++
			return p.errf("one of (){},.'\"\\|= after '\\'")
		}
		if !isPathByte(c) {
			break
		}
		b.WriteByte(c)
		p.i++
	}
	if p.i == start {
		return p.errf("a path node")
	}
	return nil
}

// pathEnum consumes {part,part,...}.
func (p *parser) pathEnum(b *strings.Builder) error {
	b.WriteByte('{')
	p.i++
	for {
		if err := p.pathPart(b); err != nil {
			return err
		}
		switch p.peek() {
		case ',':
			b.WriteByte(',')
			p.i++
		case '}':
			b.WriteByte('}')
			p.i++
			return nil
		default:
			return p.errf("',' or '}' in {…} alternatives")
		}
	}
}

// pathRoundTrips reports whether p.s, read as a path expression, is
// exactly itself with nothing escaped.
func (p *parser) pathRoundTrips() bool {
	if strings.IndexByte(p.s, '\\') >= 0 {
		return false
	}
	e, err := p.path()
	if err != nil || p.i != len(p.s) {
		return false
	}
	return e.(*PathExpr).Path == p.s
}
