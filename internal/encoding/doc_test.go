package encoding

import (
	"go/ast"
	"go/constant"
	"go/parser"
	"go/token"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const formatDoc = "../../docs/format/tuples.md"

// TestFormatDocConstants checks that the constants table of
// docs/format/tuples.md lists every exported constant of the package with
// its value in code, and nothing else.
func TestFormatDocConstants(t *testing.T) {
	doc, err := os.ReadFile(formatDoc)
	require.NoError(t, err)
	inDoc := map[string]string{}
	row := regexp.MustCompile("^\\| `(\\w+)` \\| ([^|]+) \\|$")
	for _, line := range strings.Split(string(doc), "\n") {
		if m := row.FindStringSubmatch(line); m != nil {
			inDoc[m[1]] = strings.TrimSpace(m[2])
		}
	}
	require.Equal(t, exportedConstants(t), inDoc)
}

// exportedConstants evaluates the exported constants declared in the
// package's non-test files.
func exportedConstants(t *testing.T) map[string]string {
	t.Helper()
	fset := token.NewFileSet()
	entries, err := os.ReadDir(".")
	require.NoError(t, err)
	out := map[string]string{}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, e.Name(), nil, 0)
		require.NoError(t, err)
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if !name.IsExported() {
						continue
					}
					require.Lessf(t, i, len(vs.Values), "constant %s has no explicit value", name.Name)
					out[name.Name] = evalConst(t, vs.Values[i]).ExactString()
				}
			}
		}
	}
	return out
}

func evalConst(t *testing.T, e ast.Expr) constant.Value {
	t.Helper()
	switch e := e.(type) {
	case *ast.BasicLit:
		return constant.MakeFromLiteral(e.Value, e.Kind, 0)
	case *ast.ParenExpr:
		return evalConst(t, e.X)
	case *ast.UnaryExpr:
		return constant.UnaryOp(e.Op, evalConst(t, e.X), 0)
	case *ast.BinaryExpr:
		x, y := evalConst(t, e.X), evalConst(t, e.Y)
		if e.Op == token.SHL || e.Op == token.SHR {
			s, _ := constant.Uint64Val(y)
			return constant.Shift(x, e.Op, uint(s))
		}
		return constant.BinaryOp(x, e.Op, y)
	}
	t.Fatalf("cannot evaluate constant expression %T", e)
	return nil
}
