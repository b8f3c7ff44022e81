package bucket

import (
	"testing"

	"github.com/aerie-db/aerie/internal/formatdoc"
)

// TestFormatDoc: docs/format/bucket.md lists exactly the format constants
// of this package, with their values.
func TestFormatDoc(t *testing.T) {
	formatdoc.Check(t, "../../docs/format/bucket.md", ".")
}
