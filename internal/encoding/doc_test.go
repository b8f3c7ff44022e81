package encoding

import (
	"testing"

	"github.com/aerie-db/aerie/internal/formatdoc"
)

// TestFormatDocConstants checks that the constants table of
// docs/format/tuples.md lists every exported constant of the package with
// its value in code, and nothing else.
func TestFormatDocConstants(t *testing.T) {
	formatdoc.Check(t, "../../docs/format/tuples.md", ".")
}
