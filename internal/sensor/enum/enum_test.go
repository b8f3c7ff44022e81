package enum

import (
	"fmt"
	"testing"
)

type color uint8

var colorNames = [...]string{1: "red", 2: "green", 4: "blue"}

// TestNameParse checks every value: a named one prints as its name and
// parses back (invariant 1), an unnamed one prints as "color(N)" and
// parses to nothing (invariant 2).
func TestNameParse(t *testing.T) {
	for v := range 256 {
		c := color(v)
		named := v < len(colorNames) && colorNames[v] != ""
		want := fmt.Sprintf("color(%d)", v)
		if named {
			want = colorNames[v]
		}
		name := Name(colorNames[:], c, "color")
		if name != want {
			t.Errorf("Name(%d) = %q, want %q", v, name, want)
		}
		if got, ok := Parse[color](colorNames[:], name); ok != named || (named && got != c) {
			t.Errorf("Parse(%q) = %d, %v", name, got, ok)
		}
	}
	if got, ok := Parse[color](colorNames[:], ""); ok {
		t.Errorf(`Parse("") = %d: matched an unnamed value`, got)
	}
}
