package graphite

import (
	"regexp"
	"strings"
	"unicode/utf8"
)

// Limits of a path expression (a find query or a target's path).
const (
	maxGlobLen   = 4096
	maxGlobNodes = 256 // dot-separated components
	maxGlobDepth = 16  // nesting of braces
)

// Glob is a compiled Graphite path expression: dot-separated components,
// each a pattern of literal bytes, "*" (any run of bytes), "?" (one
// byte), "[a-c]" / "[!a-c]" (a byte class) and "{a,b*}" (alternatives,
// which may nest and hold globs). No pattern matches a dot: a component
// matches exactly one component of a path, as graphite-web's finder
// matches directory entries.
type Glob struct {
	src   string
	nodes []*regexp.Regexp // one anchored regexp per component
	// re is one regexp over whole names (components joined by \.) for the
	// store's __name__ matcher; it may match a little more than nodes do
	// (a class holding a dot), never less.
	re string
}

// CompileGlob compiles a Graphite path expression. Errors give the byte
// offset of what was wrong.
func CompileGlob(s string) (*Glob, error) {
	if s == "" {
		return nil, patternErrorf("path expression is empty")
	}
	if len(s) > maxGlobLen {
		return nil, patternErrorf("path expression %.32q…: longer than %d bytes", s, maxGlobLen)
	}
	g := &Glob{src: s}
	parts := splitGlob(s)
	if len(parts) > maxGlobNodes {
		return nil, patternErrorf("path expression %.32q…: more than %d components", s, maxGlobNodes)
	}
	var whole strings.Builder
	off := 0
	for i, p := range parts {
		if p == "" {
			return nil, patternErrorf("path expression %q: empty component at byte %d", s, off)
		}
		c := globCompiler{src: s, base: off}
		re, err := c.translate(p)
		if err != nil {
			return nil, err
		}
		rx, err := regexp.Compile("^(?:" + re + ")$")
		if err != nil {
			return nil, patternErrorf("path expression %q: component %q: %v", s, p, err)
		}
		g.nodes = append(g.nodes, rx)
		if i > 0 {
			whole.WriteString(`\.`)
		}
		whole.WriteString("(?:" + re + ")")
		off += len(p) + 1
	}
	g.re = whole.String()
	return g, nil
}

// splitGlob splits on the dots outside braces (graphite-web splits on
// every dot; a dot inside braces there matches nothing, here it is an
// error of the component, since a component never holds a dot).
func splitGlob(s string) []string {
	var parts []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '{':
			depth++
		case '}':
			if depth > 0 {
				depth--
			}
		case '.':
			if depth == 0 {
				parts = append(parts, s[start:i])
				start = i + 1
			}
		}
	}
	return append(parts, s[start:])
}

// String returns the expression as given.
func (g *Glob) String() string { return g.src }

// Len is the number of components.
func (g *Glob) Len() int { return len(g.nodes) }

// NameRegexp is a regexp (for an anchored Prometheus matcher) over names
// of exactly Len components that the glob may match; Match decides.
func (g *Glob) NameRegexp() string { return g.re }

// PrefixRegexp is NameRegexp followed by any further components: the
// names under the nodes that the glob matches.
func (g *Glob) PrefixRegexp() string { return g.re + `(?:\..*)?` }

// Match reports whether path (a Graphite path, no tags) matches the glob.
func (g *Glob) Match(path string) bool {
	n := 0
	for i, rx := range g.nodes {
		j := strings.IndexByte(path[n:], '.')
		var c string
		if j < 0 {
			if i != len(g.nodes)-1 {
				return false
			}
			c, n = path[n:], len(path)
		} else {
			if i == len(g.nodes)-1 {
				return false
			}
			c, n = path[n:n+j], n+j+1
		}
		if !rx.MatchString(c) {
			return false
		}
	}
	return true
}

// MatchPrefix reports whether the first Len components of path match,
// returning the matched node (those components) and whether it is the
// whole path (a leaf) rather than a branch above longer paths.
func (g *Glob) MatchPrefix(path string) (node string, leaf, ok bool) {
	n, atEnd := 0, false
	for i := range g.nodes {
		if atEnd {
			return "", false, false
		}
		j := strings.IndexByte(path[n:], '.')
		var c string
		if j < 0 {
			c, n, atEnd = path[n:], len(path), true
		} else {
			c, n = path[n:n+j], n+j+1
		}
		if !g.nodes[i].MatchString(c) {
			return "", false, false
		}
	}
	if atEnd {
		return path, true, true
	}
	return path[:n-1], false, true
}

// IsGlob reports whether s holds glob metacharacters.
func IsGlob(s string) bool { return strings.ContainsAny(s, "*?[{") }

type globCompiler struct {
	src   string // the whole expression, for errors
	base  int    // offset of the component in src
	depth int
}

// translate turns one component into a regexp (unanchored) in which no
// wildcard matches a dot.
func (c *globCompiler) translate(p string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		switch ch := p[i]; ch {
		case '*':
			b.WriteString(`[^.]*`)
		case '?':
			b.WriteString(`[^.]`)
		case '[':
			j, class, err := c.class(p, i)
			if err != nil {
				return "", err
			}
			b.WriteString(class)
			i = j
		case '{':
			j, alt, err := c.braces(p, i)
			if err != nil {
				return "", err
			}
			b.WriteString(alt)
			i = j
		case '.':
			return "", patternErrorf("path expression %q: dot inside braces at byte %d", c.src, c.base+i)
		default:
			_, n := utf8.DecodeRuneInString(p[i:])
			b.WriteString(regexp.QuoteMeta(p[i : i+n]))
			i += n - 1
		}
	}
	return b.String(), nil
}

// class translates the byte class starting at p[i] == '[' and returns the
// index of its closing ']'. "[!…]" negates (fnmatch), a leading ']' is a
// member, and an unterminated '[' is an error.
func (c *globCompiler) class(p string, i int) (int, string, error) {
	j := i + 1
	neg := false
	if j < len(p) && (p[j] == '!' || p[j] == '^') {
		neg, j = true, j+1
	}
	start := j
	if j < len(p) && p[j] == ']' {
		j++
	}
	for j < len(p) && p[j] != ']' {
		j++
	}
	if j >= len(p) {
		return 0, "", patternErrorf("path expression %q: unterminated [ at byte %d", c.src, c.base+i)
	}
	body := p[start:j]
	var b strings.Builder
	b.WriteByte('[')
	if neg {
		b.WriteString(`^.`)
	}
	rs := []rune(body)
	for k, r := range rs {
		if r == '-' && k > 0 && k < len(rs)-1 {
			if rs[k-1] > rs[k+1] {
				return 0, "", patternErrorf("path expression %q: bad range %q in the class at byte %d", c.src, string(rs[k-1:k+2]), c.base+i)
			}
			b.WriteByte('-')
			continue
		}
		if r < utf8.RuneSelf && !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	b.WriteByte(']')
	return j, b.String(), nil
}

// braces translates the alternatives starting at p[i] == '{' and returns
// the index of its closing '}'.
func (c *globCompiler) braces(p string, i int) (int, string, error) {
	c.depth++
	defer func() { c.depth-- }()
	if c.depth > maxGlobDepth {
		return 0, "", patternErrorf("path expression %q: braces nested deeper than %d at byte %d", c.src, maxGlobDepth, c.base+i)
	}
	depth := 0
	var alts []string
	var offs []int
	start := i + 1
	for j := i + 1; j < len(p); j++ {
		switch p[j] {
		case '[':
			// a class may hold ',' or '}'
			k := j + 1
			if k < len(p) && (p[k] == '!' || p[k] == '^') {
				k++
			}
			if k < len(p) && p[k] == ']' {
				k++
			}
			for k < len(p) && p[k] != ']' {
				k++
			}
			if k < len(p) {
				j = k
			}
		case '{':
			depth++
		case '}':
			if depth > 0 {
				depth--
				continue
			}
			alts, offs = append(alts, p[start:j]), append(offs, start)
			var b strings.Builder
			b.WriteString("(?:")
			for k, a := range alts {
				if k > 0 {
					b.WriteByte('|')
				}
				sub := globCompiler{src: c.src, base: c.base + offs[k], depth: c.depth}
				re, err := sub.translate(a)
				if err != nil {
					return 0, "", err
				}
				b.WriteString(re)
			}
			b.WriteByte(')')
			return j, b.String(), nil
		case ',':
			if depth == 0 {
				alts, offs = append(alts, p[start:j]), append(offs, start)
				start = j + 1
			}
		}
	}
	return 0, "", patternErrorf("path expression %q: unterminated { at byte %d", c.src, c.base+i)
}
