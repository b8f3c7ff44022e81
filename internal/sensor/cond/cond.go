package cond

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/aerie-db/aerie/internal/sensor/enum"
)

// Limits on a condition (invariant 5).
const (
	// MaxLen is the longest condition Parse accepts, in bytes.
	MaxLen = 4096
	// MaxDepth is how deep parentheses, and &/| groups, may nest.
	MaxDepth = 64
)

// SyntaxError reports a condition Parse rejects and the byte where the
// problem is.
type SyntaxError struct {
	Offset int    // byte offset in the condition; len(condition) at its end
	Msg    string // what was wrong, e.g. `unknown metric "mean" (valid metrics: …)`
}

// Error formats e as `condition: byte 14: expected operator …`.
func (e *SyntaxError) Error() string {
	return fmt.Sprintf("condition: byte %d: %s", e.Offset, e.Msg)
}

// op is a comparison operator.
type op uint8

const (
	opLt  op = 1
	opLte op = 2
	opGt  op = 3
	opGte op = 4
	opEq  op = 5
	opNe  op = 6
)

var opNames = [...]string{opLt: "lt", opLte: "lte", opGt: "gt", opGte: "gte", opEq: "eq", opNe: "ne"}

func parseOp(s string) (op, bool) { return enum.Parse[op](opNames[:], s) }

// compare applies o with IEEE semantics: NaN on either side makes every
// operator false except ne.
func (o op) compare(x, y float64) bool {
	switch o {
	case opLt:
		return x < y
	case opLte:
		return x <= y
	case opGt:
		return x > y
	case opGte:
		return x >= y
	case opEq:
		return x == y
	case opNe:
		return x != y
	}
	panic(fmt.Sprintf("cond: invalid operator %d", o))
}

type kind uint8

const (
	kindCmp kind = 1 // metric op value
	kindAnd kind = 2 // all of kids
	kindOr  kind = 3 // any of kids
)

// Expr is a parsed condition. It is immutable (invariant 6).
type Expr struct {
	kind   kind
	metric Metric  // kindCmp
	op     op      // kindCmp
	value  float64 // kindCmp; never NaN or Inf
	kids   []*Expr // kindAnd, kindOr: two or more, none of the same kind
	height int     // 0 for a comparison, else 1 + the highest kid's
}

// Eval reports whether the condition holds for the metric values get
// returns. get reports false for a metric it cannot supply (p50 without a
// sketch, say); that comparison is then false. get may be called more than
// once for a metric, and not at all for metrics whose comparison cannot
// change the result.
func (e *Expr) Eval(get func(Metric) (float64, bool)) bool {
	switch e.kind {
	case kindCmp:
		v, ok := get(e.metric)
		return ok && e.op.compare(v, e.value)
	case kindAnd:
		for _, k := range e.kids {
			if !k.Eval(get) {
				return false
			}
		}
		return true
	case kindOr:
		for _, k := range e.kids {
			if k.Eval(get) {
				return true
			}
		}
		return false
	}
	panic(fmt.Sprintf("cond: invalid expression kind %d", e.kind))
}

// Metrics returns the distinct metrics the condition uses, in order of first
// use, so a caller can refuse a condition it cannot answer (p50 without
// sketches) with a clear message before evaluating it.
func (e *Expr) Metrics() []Metric {
	var seen [P99 + 1]bool
	var ms []Metric
	var walk func(*Expr)
	walk = func(e *Expr) {
		if e.kind == kindCmp {
			if !seen[e.metric] {
				seen[e.metric] = true
				ms = append(ms, e.metric)
			}
			return
		}
		for _, k := range e.kids {
			walk(k)
		}
	}
	walk(e)
	return ms
}

// String returns the canonical form of the condition (invariant 3), e.g.
// "((min lte 200 & max gte 50) | avg eq 75)".
func (e *Expr) String() string {
	var b strings.Builder
	e.write(&b)
	return b.String()
}

func (e *Expr) write(b *strings.Builder) {
	if e.kind == kindCmp {
		b.WriteString(e.metric.String())
		b.WriteByte(' ')
		b.WriteString(opNames[e.op])
		b.WriteByte(' ')
		b.WriteString(strconv.FormatFloat(e.value, 'g', -1, 64))
		return
	}
	sep := " & "
	if e.kind == kindOr {
		sep = " | "
	}
	b.WriteByte('(')
	for i, k := range e.kids {
		if i > 0 {
			b.WriteString(sep)
		}
		k.write(b)
	}
	b.WriteByte(')')
}

// Parse parses a condition. Errors are *SyntaxError.
func Parse(s string) (*Expr, error) {
	return parse(s, MaxLen)
}

// parse is Parse with a length limit of maxLen bytes; tests lift it to
// check invariant 3 on canonical forms longer than MaxLen.
func parse(s string, maxLen int) (*Expr, error) {
	if len(s) > maxLen {
		return nil, &SyntaxError{Offset: maxLen, Msg: fmt.Sprintf("condition is %d bytes long; the limit is %d", len(s), maxLen)}
	}
	p := &parser{s: s}
	p.next()
	if p.tok.kind == tokEOF {
		return nil, p.errorf(p.tok.off, "empty condition: want comparisons such as \"min lte 200 & max gte 50\"")
	}
	e, err := p.parseOr()
	if err != nil {
		return nil, err
	}
	switch p.tok.kind {
	case tokEOF:
		return e, nil
	case tokRParen:
		return nil, p.errorf(p.tok.off, "unmatched \")\"")
	}
	return nil, p.errorf(p.tok.off, "expected \"&\", \"|\" or end of condition, found %s", p.tok.describe())
}

type tokKind uint8

const (
	tokEOF    tokKind = iota + 1
	tokWord           // run of letters, digits, '_', '.', '+', '-'
	tokAnd            // &
	tokOr             // |
	tokLParen         // (
	tokRParen         // )
	tokJunk           // run of any other non-space bytes, e.g. "<="
)

type token struct {
	kind tokKind
	off  int
	text string
}

func (t token) describe() string {
	if t.kind == tokEOF {
		return "end of condition"
	}
	return quote(t.text)
}

type parser struct {
	s     string
	pos   int
	tok   token
	depth int // parentheses open at tok
}

func (p *parser) errorf(off int, format string, args ...any) error {
	return &SyntaxError{Offset: off, Msg: fmt.Sprintf(format, args...)}
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

func isWord(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '_' || c == '.' || c == '+' || c == '-'
}

func isPunct(c byte) bool { return c == '&' || c == '|' || c == '(' || c == ')' }

// next scans the token at p.pos into p.tok.
func (p *parser) next() {
	for p.pos < len(p.s) && isSpace(p.s[p.pos]) {
		p.pos++
	}
	start := p.pos
	if start == len(p.s) {
		p.tok = token{kind: tokEOF, off: start}
		return
	}
	c := p.s[start]
	p.pos++
	switch {
	case c == '&':
		p.tok = token{kind: tokAnd, off: start, text: "&"}
	case c == '|':
		p.tok = token{kind: tokOr, off: start, text: "|"}
	case c == '(':
		p.tok = token{kind: tokLParen, off: start, text: "("}
	case c == ')':
		p.tok = token{kind: tokRParen, off: start, text: ")"}
	case isWord(c):
		for p.pos < len(p.s) && isWord(p.s[p.pos]) {
			p.pos++
		}
		p.tok = token{kind: tokWord, off: start, text: p.s[start:p.pos]}
	default:
		for p.pos < len(p.s) && !isSpace(p.s[p.pos]) && !isPunct(p.s[p.pos]) && !isWord(p.s[p.pos]) {
			p.pos++
		}
		p.tok = token{kind: tokJunk, off: start, text: p.s[start:p.pos]}
	}
}

// parseOr parses and { "|" and }.
func (p *parser) parseOr() (*Expr, error) { return p.parseList(kindOr, tokOr, p.parseAnd) }

// parseAnd parses primary { "&" primary }.
func (p *parser) parseAnd() (*Expr, error) { return p.parseList(kindAnd, tokAnd, p.parsePrimary) }

// parseList parses operand { sep operand } and groups the operands with k.
func (p *parser) parseList(k kind, sep tokKind, operand func() (*Expr, error)) (*Expr, error) {
	start := p.tok.off
	var kids []*Expr
	for {
		e, err := operand()
		if err != nil {
			return nil, err
		}
		kids = append(kids, e)
		if p.tok.kind != sep {
			break
		}
		p.next()
	}
	return p.group(k, kids, start)
}

// group joins kids with k, splicing in kids of the same kind (invariant 2),
// and enforces MaxDepth on the result.
func (p *parser) group(k kind, kids []*Expr, start int) (*Expr, error) {
	if len(kids) == 1 {
		return kids[0], nil
	}
	e := &Expr{kind: k}
	for _, kid := range kids {
		if kid.kind == k {
			e.kids = append(e.kids, kid.kids...)
		} else {
			e.kids = append(e.kids, kid)
		}
	}
	for _, kid := range e.kids {
		e.height = max(e.height, kid.height+1)
	}
	if e.height > MaxDepth {
		return nil, p.errorf(start, "\"&\" and \"|\" groups nest more than %d deep", MaxDepth)
	}
	return e, nil
}

// parsePrimary parses "(" or ")" or a comparison.
func (p *parser) parsePrimary() (*Expr, error) {
	switch p.tok.kind {
	case tokLParen:
		open := p.tok.off
		if p.depth == MaxDepth {
			return nil, p.errorf(open, "parentheses nest more than %d deep", MaxDepth)
		}
		p.depth++
		p.next()
		e, err := p.parseOr()
		if err != nil {
			return nil, err
		}
		switch p.tok.kind {
		case tokRParen:
		case tokEOF:
			return nil, p.errorf(p.tok.off, "missing \")\" to close \"(\" at byte %d", open)
		default:
			return nil, p.errorf(p.tok.off, "expected \"&\", \"|\" or \")\", found %s", p.tok.describe())
		}
		p.depth--
		p.next()
		return e, nil
	case tokWord:
		return p.parseCmp()
	}
	return nil, p.errorf(p.tok.off, "expected metric or \"(\", found %s", p.tok.describe())
}

// parseCmp parses metric op value; p.tok is a word.
func (p *parser) parseCmp() (*Expr, error) {
	m, err := ParseMetric(p.tok.text)
	if err != nil {
		return nil, p.errorf(p.tok.off, "%v", err)
	}
	p.next()
	o, ok := parseOp(p.tok.text)
	if p.tok.kind != tokWord || !ok {
		return nil, p.errorf(p.tok.off, "expected operator (lt, lte, gt, gte, eq, ne), found %s", p.tok.describe())
	}
	p.next()
	if p.tok.kind != tokWord {
		return nil, p.errorf(p.tok.off, "expected value after %q, found %s", opNames[o], p.tok.describe())
	}
	text := p.tok.text
	v, err := strconv.ParseFloat(text, 64)
	switch {
	case errors.Is(err, strconv.ErrRange) && math.IsInf(v, 0):
		return nil, p.errorf(p.tok.off, "value %s is out of the range of float64", quote(text))
	case err != nil:
		return nil, p.errorf(p.tok.off, "invalid value %s: want a number such as 200, -1.5e3 or .5", quote(text))
	case math.IsNaN(v) || math.IsInf(v, 0):
		return nil, p.errorf(p.tok.off, "value %s is not allowed: NaN and Inf cannot be compared usefully", quote(text))
	}
	p.next()
	return &Expr{kind: kindCmp, metric: m, op: o, value: v}, nil
}
