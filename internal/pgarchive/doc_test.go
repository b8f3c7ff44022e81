package pgarchive

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aerie-db/aerie/internal/formatdoc"
)

const spec = "../../docs/format/pgarchive.md"

func TestFormatDoc(t *testing.T) {
	formatdoc.Check(t, spec, ".")
	doc, err := os.ReadFile(spec)
	require.NoError(t, err)
	require.Contains(t, string(doc), strings.TrimSpace(schemaSQL), "the spec does not quote schemaSQL")
	require.Contains(t, string(doc), strings.TrimSpace(upsertRowSQL), "the spec does not quote upsertRowSQL")
}
