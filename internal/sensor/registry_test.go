package sensor

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aerie-db/aerie/internal/formatdoc"
	"github.com/aerie-db/aerie/internal/sensor/pointio"
)

// TestFormatDoc checks docs/format/sensors.md's constants against the code.
func TestFormatDoc(t *testing.T) {
	require.Equal(t, formatdoc.Exported(t, ".", "MaxNameLen"), formatdoc.Table(t, "../../docs/format/sensors.md"))
}

func TestRegistry(t *testing.T) {
	dir := t.TempDir()
	r, err := openRegistry(dir)
	require.NoError(t, err)
	got, err := r.Set("a", pointio.Int16)
	require.NoError(t, err)
	require.Equal(t, pointio.Int16, got)
	got, err = r.Set("a", pointio.Float64) // the first type stays
	require.NoError(t, err)
	require.Equal(t, pointio.Int16, got)
	_, err = r.Set("b", pointio.Float32)
	require.NoError(t, err)

	r2, err := openRegistry(dir)
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b"}, r2.Names())
	typ, ok := r2.Type("b")
	require.True(t, ok)
	require.Equal(t, pointio.Float32, typ)

	// Every damaged byte is found: magic, version, body (CRC), CRC.
	path := filepath.Join(dir, RegistryFilename)
	good, err := os.ReadFile(path)
	require.NoError(t, err)
	for _, c := range []struct {
		at   int
		want string
	}{{0, "magic"}, {4, "version"}, {10, "CRC32C"}, {len(good) - 1, "CRC32C"}} {
		bad := append([]byte(nil), good...)
		bad[c.at] ^= 0x40
		require.NoError(t, os.WriteFile(path, bad, 0o644))
		_, err := openRegistry(dir)
		require.ErrorContains(t, err, c.want, "byte %d", c.at)
	}
	require.NoError(t, os.WriteFile(path, good[:5], 0o644))
	_, err = openRegistry(dir)
	require.ErrorContains(t, err, "shorter than header")
}
