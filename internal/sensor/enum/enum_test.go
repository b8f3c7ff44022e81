package enum

import "testing"

type color uint8

var colorNames = [...]string{1: "red", 2: "green", 4: "blue"}

func TestNameParse(t *testing.T) {
	f := func(v color, name string, parses bool) {
		t.Helper()
		if got := Name(colorNames[:], v, "color"); got != name {
			t.Fatalf("Name(%d) = %q, want %q", v, got, name)
		}
		got, ok := Parse[color](colorNames[:], name)
		if ok != parses || (parses && got != v) {
			t.Fatalf("Parse(%q) = %d, %v; want %d, %v", name, got, ok, v, parses)
		}
	}
	f(1, "red", true)
	f(2, "green", true)
	f(4, "blue", true)
	f(0, "color(0)", false)
	f(3, "color(3)", false)
	f(5, "color(5)", false)
	f(255, "color(255)", false)
	if _, ok := Parse[color](colorNames[:], ""); ok {
		t.Fatal(`Parse("") matched an unnamed value`)
	}
}
