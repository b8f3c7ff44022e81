package extract

import (
	"errors"
	"testing"
)

// FuzzParseFunc checks that ParseFunc never panics, that its errors carry
// an offset inside the input, and that the canonical form parses back to
// itself (doc.go invariant 6).
func FuzzParseFunc(f *testing.F) {
	f.Fuzz(func(t *testing.T, s string) {
		fn, err := ParseFunc(s)
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) || se.Offset < 0 || se.Offset > len(s) || se.Msg == "" {
				t.Fatalf("ParseFunc(%q): bad error %v", s, err)
			}
			return
		}
		c := fn.String()
		again, err := ParseFunc(c)
		if err != nil {
			t.Fatalf("ParseFunc(%q) ok but its canonical form %q fails: %v", s, c, err)
		}
		if again.String() != c || again.Kind() != fn.Kind() {
			t.Fatalf("canonical form unstable: %q -> %q", c, again.String())
		}
		if again2, _ := ParseFunc(s); again2.String() != c {
			t.Fatalf("ParseFunc(%q) not deterministic", s)
		}
		if fn.Kind() == FuncAggregate && len(fn.Columns()) != len(fn.Metrics()) {
			t.Fatalf("ParseFunc(%q): %d columns for %d metrics", s, len(fn.Columns()), len(fn.Metrics()))
		}
		// Every parsed function makes a working operator.
		op, err := New(Params{From: 0, To: 10, Interval: 3, Func: fn}, &collector{})
		if err != nil {
			t.Fatalf("New with %q: %v", c, err)
		}
		for i := int64(0); i <= 10; i++ {
			if err := op.Push(i, float64(i)-4.5); err != nil {
				t.Fatal(err)
			}
		}
		if err := op.Close(); err != nil {
			t.Fatal(err)
		}
	})
}
