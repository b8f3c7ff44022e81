package sensorbench

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestValueText: a value's CSV text parses to value(q), which is what
// every peer stores and what the checks expect.
func TestValueText(t *testing.T) {
	for _, q := range []int32{0, 1, -1, 5, -5, 99, 100, 101, -101, 2137, -2137, 123456} {
		b := appendHundredths(nil, q)
		v, err := strconv.ParseFloat(string(b), 64)
		require.NoError(t, err)
		require.Equal(t, value(q), v, "%d → %s", q, b)
	}
	require.Equal(t, "1704067200000,-0.05\n", string(appendRow(nil, Start, -5)))
}

// TestGenerate: the data are deterministic by seed, every row is where
// the manifest says, and a second call reuses the files.
func TestGenerate(t *testing.T) {
	dir := t.TempDir()
	logf := func(string, ...any) {}
	d, err := loadOrGenerate(dir, 7, 2, 2*time.Hour, logf)
	require.NoError(t, err)
	require.Equal(t, int64(7200), d.Points)
	require.Equal(t, Start+7199*1000, d.end())
	require.Equal(t, 2, d.hours())
	b0, err := os.ReadFile(d.path(d.Sensors[0]))
	require.NoError(t, err)
	require.Equal(t, d.Sensors[0].Bytes, int64(len(b0)))
	lines := bytes.Split(bytes.TrimSuffix(b0, []byte("\n")), []byte("\n"))
	require.Len(t, lines, 7200)
	require.True(t, bytes.HasPrefix(lines[0], []byte("1704067200000,")))

	other, err := generate(filepath.Join(t.TempDir(), "b"), 7, 2, 7200)
	require.NoError(t, err)
	b1, err := os.ReadFile(other.path(other.Sensors[0]))
	require.NoError(t, err)
	require.Equal(t, b0, b1)
	require.Equal(t, d.Sensors[1].Sum, other.Sensors[1].Sum)

	st, err := os.Stat(filepath.Join(dir, manifest))
	require.NoError(t, err)
	again, err := loadOrGenerate(dir, 7, 2, 2*time.Hour, logf)
	require.NoError(t, err)
	st2, err := os.Stat(filepath.Join(dir, manifest))
	require.NoError(t, err)
	require.Equal(t, st.ModTime(), st2.ModTime(), "regenerated")
	require.Equal(t, d.Sensors[1].Hourly, again.Sensors[1].Hourly)

	// The conditions' expectations follow the hourly extremes.
	for _, c := range d.conditions() {
		for _, s := range d.Sensors {
			for h, mm := range s.Hourly {
				meets := value(mm[0]) <= c.x && value(mm[1]) >= c.y
				from := d.Start + int64(h)*hourMs
				in := false
				for _, iv := range c.expect[s.Name] {
					in = in || (iv.From <= from && from+hourMs-1 <= iv.To)
				}
				require.Equal(t, meets, in, "%s %s hour %d", c.name, s.Name, h)
			}
		}
	}
}
