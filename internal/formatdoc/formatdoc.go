package formatdoc

import (
	"go/ast"
	"go/constant"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

var row = regexp.MustCompile("^\\| `(\\w+)` \\| ([^|]+) \\|$")

// Table returns the constant table of the spec at path, values normalized.
func Table(t testing.TB, path string) map[string]string {
	t.Helper()
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(doc), "| constant | value |")
	if !ok {
		t.Fatalf("%s: no `| constant | value |` table", path)
	}
	out := map[string]string{}
	for _, line := range strings.Split(table, "\n") {
		if m := row.FindStringSubmatch(strings.TrimSpace(line)); m != nil {
			out[m[1]] = normalize(strings.TrimSpace(m[2]))
		}
	}
	return out
}

// normalize writes integers in decimal so 0xAE1BDA7A and 2920012410 are
// equal; other values are compared as written.
func normalize(s string) string {
	v := constant.MakeFromLiteral(s, token.INT, 0)
	if v.Kind() == constant.Int {
		return v.ExactString()
	}
	return s
}

// Exported evaluates the exported constants declared in the non-test Go
// files of dir, except those named in skip.
func Exported(t testing.TB, dir string, skip ...string) map[string]string {
	t.Helper()
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, id := range vs.Names {
					if !id.IsExported() || slices.Contains(skip, id.Name) {
						continue
					}
					if i >= len(vs.Values) {
						t.Fatalf("%s: constant %s has no explicit value (persisted values need explicit numbers)", name, id.Name)
					}
					v := eval(t, vs.Values[i])
					if v.Kind() == constant.String {
						out[id.Name] = constant.StringVal(v)
					} else {
						out[id.Name] = v.ExactString()
					}
				}
			}
		}
	}
	return out
}

func eval(t testing.TB, e ast.Expr) constant.Value {
	t.Helper()
	switch e := e.(type) {
	case *ast.BasicLit:
		return constant.MakeFromLiteral(e.Value, e.Kind, 0)
	case *ast.ParenExpr:
		return eval(t, e.X)
	case *ast.UnaryExpr:
		return constant.UnaryOp(e.Op, eval(t, e.X), 0)
	case *ast.CallExpr: // a conversion such as int64(3600 * 1000)
		if len(e.Args) == 1 {
			return eval(t, e.Args[0])
		}
	case *ast.BinaryExpr:
		x, y := eval(t, e.X), eval(t, e.Y)
		if e.Op == token.SHL || e.Op == token.SHR {
			s, _ := constant.Uint64Val(y)
			return constant.Shift(x, e.Op, uint(s))
		}
		if e.Op == token.QUO && x.Kind() == constant.Int && y.Kind() == constant.Int {
			return constant.BinaryOp(x, token.QUO_ASSIGN, y)
		}
		return constant.BinaryOp(x, e.Op, y)
	}
	t.Fatalf("formatdoc: cannot evaluate %T; give the constant a literal value", e)
	return nil
}

// Check fails t unless the spec's table equals the package's constants.
func Check(t testing.TB, spec, dir string, skip ...string) {
	t.Helper()
	want, got := Exported(t, dir, skip...), Table(t, spec)
	for k, v := range want {
		if g, ok := got[k]; !ok {
			t.Errorf("%s: constant %s = %s missing from the table", spec, k, v)
		} else if g != v {
			t.Errorf("%s: constant %s is %s in the table, %s in code", spec, k, g, v)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s: table lists %s, which the code does not export", spec, k)
		}
	}
}
