package graphite

import (
	"regexp"
	"strings"
	"testing"
)

func TestGlobMatch(t *testing.T) {
	for _, tc := range []struct {
		pattern string
		yes, no []string
	}{
		{"a.b.c", []string{"a.b.c"}, []string{"a.b", "a.b.c.d", "a.bc", "aXb.c", "a.b.C"}},
		{"a.*.c", []string{"a.b.c", "a.xyz.c", "a..c"}, []string{"a.b.d.c", "a.c", "a.b.c.d"}},
		{"*", []string{"a", "servers", ""}, []string{"a.b"}},
		{"a.b*", []string{"a.b", "a.bc", "a.b-1"}, []string{"a.b.c", "a.ab"}},
		{"a.?.c", []string{"a.x.c"}, []string{"a.xy.c", "a..c", "a...c"}},
		{"a.[a-c].d", []string{"a.a.d", "a.c.d"}, []string{"a.d.d", "a.ab.d", "a...d"}},
		{"a.[!a-c].d", []string{"a.x.d", "a.1.d"}, []string{"a.b.d", "a...d", "a.xy.d"}},
		{"a.[^a].d", []string{"a.b.d"}, []string{"a.a.d", "a...d"}},
		{"a.[]x].d", []string{"a.].d", "a.x.d"}, []string{"a.y.d"}},
		{"a.{b,c}.d", []string{"a.b.d", "a.c.d"}, []string{"a.bc.d", "a.e.d"}},
		{"a.{b*,c?}.d", []string{"a.b.d", "a.bxx.d", "a.cx.d"}, []string{"a.c.d", "a.b.x.d"}},
		{"a.{b{1,2},c}.d", []string{"a.b1.d", "a.b2.d", "a.c.d"}, []string{"a.b3.d", "a.b.d"}},
		{"a.{,x}b", []string{"a.b", "a.xb"}, []string{"a.yb"}},
		{"a.x{[0-2],9}", []string{"a.x0", "a.x9"}, []string{"a.x5"}},
		{"a.b+c.(d)|e$", []string{"a.b+c.(d)|e$"}, []string{"a.bbc.d|e"}},
		{"servers.*.cpu.{user,system}", []string{"servers.web1.cpu.user"}, []string{"servers.web1.cpu.idle"}},
		{"héllo.wörld", []string{"héllo.wörld"}, []string{"hello.world"}},
	} {
		g, err := CompileGlob(tc.pattern)
		if err != nil {
			t.Errorf("CompileGlob(%q): %v", tc.pattern, err)
			continue
		}
		rx := regexp.MustCompile("^(?:" + g.NameRegexp() + ")$")
		for _, s := range tc.yes {
			if !g.Match(s) {
				t.Errorf("%q should match %q", tc.pattern, s)
			}
			if !rx.MatchString(s) {
				t.Errorf("NameRegexp of %q (%s) should match %q", tc.pattern, g.NameRegexp(), s)
			}
		}
		for _, s := range tc.no {
			if g.Match(s) {
				t.Errorf("%q should not match %q", tc.pattern, s)
			}
		}
	}
}

func TestGlobMatchPrefix(t *testing.T) {
	g, err := CompileGlob("a.*")
	if err != nil {
		t.Fatal(err)
	}
	prx := regexp.MustCompile("^(?:" + g.PrefixRegexp() + ")$")
	for _, tc := range []struct {
		path, node string
		leaf, ok   bool
	}{
		{"a.b", "a.b", true, true},
		{"a.b.c.d", "a.b", false, true},
		{"a", "", false, false},
		{"b.c", "", false, false},
	} {
		node, leaf, ok := g.MatchPrefix(tc.path)
		if node != tc.node || leaf != tc.leaf || ok != tc.ok {
			t.Errorf("MatchPrefix(%q) = %q, %v, %v; want %q, %v, %v", tc.path, node, leaf, ok, tc.node, tc.leaf, tc.ok)
		}
		if ok && !prx.MatchString(tc.path) {
			t.Errorf("PrefixRegexp %s should match %q", g.PrefixRegexp(), tc.path)
		}
	}
}

func TestGlobErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", "empty"},
		{"a..b", "empty component at byte 2"},
		{"a.", "empty component at byte 2"},
		{"a.[bc", "unterminated [ at byte 2"},
		{"a.{b,c", "unterminated { at byte 2"},
		{"a.[z-a]", "bad range \"z-a\" in the class at byte 2"},
		{"a.[.x].d", "unterminated [ at byte 2"}, // graphite-web splits on every dot too
		{"a.{b.c,d}", "dot inside braces"},
		{strings.Repeat("{", 20) + strings.Repeat("}", 20), "nested deeper"},
		{strings.Repeat("a.", 300) + "a", "more than 256 components"},
		{strings.Repeat("a", 5000), "longer than"},
	} {
		_, err := CompileGlob(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("CompileGlob(%.40q) = %v, want an error saying %q", tc.in, err, tc.want)
		}
		if _, ok := err.(*PatternError); err != nil && !ok {
			t.Errorf("CompileGlob(%.40q): %T, want *PatternError", tc.in, err)
		}
	}
}

// FuzzGlob checks that no pattern panics and that the store-side regexp
// never rejects a name Match accepts (invariant 2).
func FuzzGlob(f *testing.F) {
	for _, s := range []string{"a.b.c", "a.*.c", "a.{b,c*}.[!x-z]?", "{a,{b,{c}}}", "[]]", "[!]", "a.[", "{", "}", ",", "a.{,}", "x.[a-]", "*.*.*"} {
		f.Add(s, "a.b.c")
	}
	f.Fuzz(func(t *testing.T, pattern, name string) {
		g, err := CompileGlob(pattern)
		if err != nil {
			if _, ok := err.(*PatternError); !ok {
				t.Fatalf("CompileGlob(%q): %T %v, want *PatternError", pattern, err, err)
			}
			return
		}
		rx, err := regexp.Compile("^(?:" + g.NameRegexp() + ")$")
		if err != nil {
			t.Fatalf("NameRegexp of %q does not compile: %v", pattern, err)
		}
		prx, err := regexp.Compile("^(?:" + g.PrefixRegexp() + ")$")
		if err != nil {
			t.Fatalf("PrefixRegexp of %q does not compile: %v", pattern, err)
		}
		if g.Match(name) && !rx.MatchString(name) {
			t.Fatalf("%q matches %q but its NameRegexp %s does not", pattern, name, g.NameRegexp())
		}
		if node, leaf, ok := g.MatchPrefix(name); ok {
			if !prx.MatchString(name) {
				t.Fatalf("%q prefix-matches %q but its PrefixRegexp does not", pattern, name)
			}
			if leaf != (node == name) || !g.Match(node) {
				t.Fatalf("MatchPrefix(%q) of %q = %q, %v", name, pattern, node, leaf)
			}
		}
	})
}
