package expr

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// canonical prints e as gen_parse.py prints graphite-web's parse.
func canonical(e Expr) string {
	switch e := e.(type) {
	case *PathExpr:
		return "P(" + e.Path + ")"
	case *CallExpr:
		var parts []string
		for _, a := range e.Args {
			parts = append(parts, canonical(a))
		}
		for _, kw := range e.Kwargs {
			parts = append(parts, kw.Name+"="+canonical(kw.Value))
		}
		return "C(" + e.Name + ";" + strings.Join(parts, ";") + ")"
	case *NumberExpr:
		if strings.EqualFold(e.Text, "inf") {
			return "INF"
		}
		if e.IsInt {
			return "I(" + e.Text + ")"
		}
		return "F(" + strings.ToLower(e.Text) + ")"
	case *StringExpr:
		return "S(" + e.Value + ")"
	case *BoolExpr:
		return "B(" + e.String() + ")"
	case *NoneExpr:
		return "NONE"
	}
	return "?"
}

// parseDifferences are inputs where Parse knowingly differs from
// graphite-web's grammar.
var parseDifferences = map[string]string{
	"template(a.b)": "template() is not supported: Parse reads it as a call, Eval answers unknown function",
}

// TestParseReference compares Parse with graphite-web 1.1.8's pyparsing
// grammar over parse_inputs.txt (parse_expected.json, made by
// gen_parse.py). graphite-web parses without parseAll, so it evaluates
// the longest valid prefix of a target and ignores the rest ("a.b)" is
// a.b); Parse rejects such targets with the offset of the rest.
func TestParseReference(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "graphiteweb", "parse_expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct {
		Input  string `json:"input"`
		Full   string `json:"full"`
		Prefix string `json:"prefix"`
		Error  string `json:"error"`
	}
	if err := json.Unmarshal(b, &cases); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		if _, ok := parseDifferences[c.Input]; ok {
			continue
		}
		e, err := Parse(c.Input)
		if c.Full == "" {
			if err == nil {
				t.Errorf("Parse(%q) = %s; graphite-web: %s (prefix %s)", c.Input, canonical(e), c.Error, c.Prefix)
			}
			continue
		}
		if err != nil {
			t.Errorf("Parse(%q): %v; graphite-web %s", c.Input, err, c.Full)
			continue
		}
		if got := canonical(e); got != c.Full {
			t.Errorf("Parse(%q) = %s; graphite-web %s", c.Input, got, c.Full)
		}
	}
}
