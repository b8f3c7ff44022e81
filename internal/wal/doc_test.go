package wal

import (
	"testing"

	"github.com/aerie-db/aerie/internal/formatdoc"
)

// TestFormatDoc checks the constant table of docs/format/wal.md against the
// code, both ways. DefaultSyncInterval is configuration, not format.
func TestFormatDoc(t *testing.T) {
	formatdoc.Check(t, "../../docs/format/wal.md", ".", "DefaultSyncInterval")
}
