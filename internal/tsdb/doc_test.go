package tsdb

import (
	"testing"

	"github.com/aerie-db/aerie/internal/formatdoc"
)

func TestFormatDoc(t *testing.T) {
	formatdoc.Check(t, "../../docs/format/tombstones.md", ".")
}
