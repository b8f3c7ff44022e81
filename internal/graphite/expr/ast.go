package expr

import (
	"strings"
)

// Expr is a parsed target: a path expression, a function call or a
// literal argument. String returns a target that parses back to an equal
// expression.
type Expr interface {
	// Pos is the byte offset of the expression in the parsed target.
	Pos() int
	String() string
	exprNode()
}

// PathExpr is a Graphite path expression: dot-separated nodes with globs
// (*, ?, [a-c], {a,b}) and optional tags (a.b;k=v). Path holds it with
// backslash escapes removed, as graphite-web hands it to its finders.
type PathExpr struct {
	Path string
	At   int
}

// CallExpr is a function call. A piped call (a.b|f(x)) is parsed into the
// nested form f(a.b,x).
type CallExpr struct {
	Name   string
	Args   []Expr
	Kwargs []Kwarg
	At     int
	// Raw is the call's text in the target; graphite-web uses it as the
	// path expression of seriesByTag's series.
	Raw string
}

// Kwarg is a keyword argument name=value.
type Kwarg struct {
	Name  string
	Value Expr
}

// StringExpr is a quoted string. Value is the text between the quotes as
// written (graphite-web keeps backslashes); Quote is ' or ".
type StringExpr struct {
	Value string
	Quote byte
	At    int
}

// NumberExpr is a numeric literal: integer, float, scientific or inf.
// Text is the literal as written.
type NumberExpr struct {
	Value float64
	Text  string
	IsInt bool
	At    int
}

// BoolExpr is true or false (any case).
type BoolExpr struct {
	Value bool
	At    int
}

// NoneExpr is None (any case).
type NoneExpr struct{ At int }

func (e *PathExpr) Pos() int   { return e.At }
func (e *CallExpr) Pos() int   { return e.At }
func (e *StringExpr) Pos() int { return e.At }
func (e *NumberExpr) Pos() int { return e.At }
func (e *BoolExpr) Pos() int   { return e.At }
func (e *NoneExpr) Pos() int   { return e.At }

func (*PathExpr) exprNode()   {}
func (*CallExpr) exprNode()   {}
func (*StringExpr) exprNode() {}
func (*NumberExpr) exprNode() {}
func (*BoolExpr) exprNode()   {}
func (*NoneExpr) exprNode()   {}

func (e *PathExpr) String() string {
	if p := (&parser{s: e.Path}); p.pathRoundTrips() {
		return e.Path
	}
	return escapePath(e.Path)
}

// escapePath escapes every grammar symbol so the path reads back as a
// single node with exactly this text.
func escapePath(path string) string {
	var b strings.Builder
	for i := 0; i < len(path); i++ {
		c := path[i]
		if strings.IndexByte(pathSymbols, c) >= 0 || c == '=' {
			b.WriteByte('\\')
		}
		b.WriteByte(c)
	}
	return b.String()
}

func (e *CallExpr) String() string {
	var b strings.Builder
	args := e.Args
	if len(args) > 0 && pipeHead(args[0]) {
		// A path such as "1" or "true" reads as a literal in argument
		// position; it can only have come from a pipe, so print one.
		b.WriteString(args[0].String())
		b.WriteByte('|')
		args = args[1:]
	}
	b.WriteString(e.Name)
	b.WriteByte('(')
	for i, a := range args {
		if i > 0 {
			b.WriteByte(',')
		}
		s, _ := argString(a)
		b.WriteString(s)
	}
	for i, kw := range e.Kwargs {
		if i > 0 || len(args) > 0 {
			b.WriteByte(',')
		}
		b.WriteString(kw.Name)
		b.WriteByte('=')
		s, _ := argString(kw.Value)
		b.WriteString(s)
	}
	b.WriteByte(')')
	return b.String()
}

// pipeHead reports whether e must be printed at the head of a pipe.
func pipeHead(e Expr) bool {
	switch e := e.(type) {
	case *PathExpr:
		_, ok := argString(e)
		return !ok
	case *CallExpr:
		// true(…) and friends read as the keyword in argument position.
		for _, kw := range []string{"true", "false", "none", "inf"} {
			if strings.EqualFold(e.Name, kw) {
				return true
			}
		}
		return len(e.Args) > 0 && pipeHead(e.Args[0])
	}
	return false
}

// argString prints an argument; a path that would read back as something
// else in argument position (a kwarg) is escaped, and ok is false if even
// that does not read back (a path such as "1" or "true").
func argString(e Expr) (s string, ok bool) {
	pe, isPath := e.(*PathExpr)
	if !isPath {
		return e.String(), true
	}
	for _, s := range []string{pe.String(), escapePath(pe.Path)} {
		p := &parser{s: s + ")"}
		if name, a, err := p.arg(0); err == nil && name == "" && p.i == len(s) {
			if q, ok := a.(*PathExpr); ok && q.Path == pe.Path {
				return s, true
			}
		}
	}
	return pe.String(), false
}

func (e *StringExpr) String() string {
	return string(e.Quote) + e.Value + string(e.Quote)
}

func (e *NumberExpr) String() string { return e.Text }

func (e *BoolExpr) String() string {
	if e.Value {
		return "true"
	}
	return "false"
}

func (e *NoneExpr) String() string { return "None" }
