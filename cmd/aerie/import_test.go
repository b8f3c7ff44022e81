package main

import (
	"bytes"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aerie-db/aerie/internal/importer"
	"github.com/aerie-db/aerie/internal/importer/importertest"
	"github.com/aerie-db/aerie/internal/vmformat"
)

// runImportCmd runs `aerie import args...` and returns its standard output
// and standard error.
func runImportCmd(t *testing.T, stdin string, args ...string) (string, string, error) {
	t.Helper()
	cmd := newRootCmd()
	var stdout, stderr bytes.Buffer
	cmd.SetOut(&stdout)
	cmd.SetErr(&stderr)
	cmd.SetIn(strings.NewReader(stdin))
	cmd.SetArgs(append([]string{"import"}, args...))
	err := cmd.Execute()
	return stdout.String(), stderr.String(), err
}

func TestImportFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		err  string
	}{
		{[]string{"x.lp"}, "give exactly one of --url and --data.dir"},
		{[]string{"--url=http://a", "--data.dir=d", "x.lp"}, "give exactly one of --url and --data.dir"},
		{[]string{"--data.dir=d", "x.csv"}, "x.csv: CSV needs --csv.format, e.g. 1:time:unix_ms,2:label:host,3:metric:cpu"},
		{[]string{"--data.dir=d", "--csv.format=1:label:a", "x.csv"}, `csv format "1:label:a" has no metric column`},
		{[]string{"--url=ftp://a", "--format=influx", "-"}, `--url "ftp://a": want http://host:port`},
		{[]string{"--data.dir=d", "--sort.run-bytes=5", "x.lp"}, "--sort.run-bytes must be from 1024 to 2147483648"},
		{[]string{"--data.dir=d"}, "requires at least 1 arg(s), only received 0"},
	} {
		_, _, err := runImportCmd(t, "", append([]string{"--progress=none"}, tc.args...)...)
		require.EqualError(t, err, tc.err, "%v", tc.args)
	}
}

// Standard input, read through the command; the summary says what was
// stored.
func TestImportStdin(t *testing.T) {
	dir := t.TempDir()
	stdout, stderr, err := runImportCmd(t, "a 1 1000\nb 2 2000\n", "--progress=none", "--format=prometheus", "--data.dir="+dir, "-")
	require.NoError(t, err)
	require.Equal(t, "stored 2 samples, rejected 0\n", stdout)
	require.Empty(t, stderr)
	require.Equal(t, map[string]int{"a": 1, "b": 1}, importertest.CountDB(t, dir))
}

// Progress lines (what a pipe or a log gets): bytes read, then samples
// written.
func TestImportProgressLines(t *testing.T) {
	files, _ := importertest.GenFiles(t, t.TempDir(), true)
	args := append([]string{"--progress=lines", "--progress.interval=0", "--data.dir=" + t.TempDir(), "--tmp.dir=" + t.TempDir(), "--csv.format=" + importertest.CSVFormat}, files...)
	_, stderr, err := runImportCmd(t, "", args...)
	require.NoError(t, err)
	require.Contains(t, stderr, "import: reading ")
	require.Contains(t, stderr, "import: writing ")
}

// The progress bar (what a terminal gets) shows bytes, then samples.
func TestImportProgressBar(t *testing.T) {
	files, _ := importertest.GenFiles(t, t.TempDir(), false)
	args := append([]string{"--progress=bar", "--data.dir=" + t.TempDir(), "--tmp.dir=" + t.TempDir(), "--csv.format=" + importertest.CSVFormat}, files...)
	_, stderr, err := runImportCmd(t, "", args...)
	require.NoError(t, err)
	require.Contains(t, stderr, "reading (")
	require.Contains(t, stderr, "samples/s")
	require.Contains(t, stderr, "writing")
	require.Contains(t, stderr, "100%")
}

// The commands of docs/quickstart.md §6 parse: every `aerie import` line's
// flags and CSV spec, every format= of a curl line.
func TestImportQuickstart(t *testing.T) {
	b, err := os.ReadFile("../../docs/quickstart.md")
	require.NoError(t, err)
	doc := string(b)
	_, section, ok := strings.Cut(doc, "## 6. Import and export")
	require.True(t, ok)
	section = strings.ReplaceAll(section, "\\\n", " ") // continued lines
	var imports, formats int
	for _, line := range strings.Split(section, "\n") {
		if args, ok := strings.CutPrefix(line, "./aerie import "); ok {
			imports++
			fields := strings.Fields(args)
			if i := slices.Index(fields, "<"); i >= 0 {
				fields = fields[:i]
			}
			cmd, _, err := newRootCmd().Find([]string{"import"})
			require.NoError(t, err)
			require.NoError(t, cmd.ParseFlags(fields), line)
			get := func(name string) string { return cmd.Flags().Lookup(name).Value.String() }
			require.NotEqual(t, get("url") == "", get("data.dir") == "", line)
			if spec := get("csv.format"); spec != "" {
				_, err := vmformat.ParseCSVFormat(spec)
				require.NoError(t, err, line)
			}
			for _, file := range cmd.Flags().Args() {
				if file != "-" || get("format") != importer.FormatAuto {
					_, err := importer.FileFormat(get("format"), file)
					require.NoError(t, err, line)
				}
			}
		}
		for _, m := range regexp.MustCompile(`format=([^' &]+)`).FindAllStringSubmatch(line, -1) {
			formats++
			if strings.Contains(line, "/export/csv") {
				_, err := vmformat.ParseCSVExportFormat(m[1])
				require.NoError(t, err, line)
			} else if !strings.Contains(line, "--format=") {
				_, err := vmformat.ParseCSVFormat(m[1])
				require.NoError(t, err, line)
			}
		}
	}
	require.Equal(t, 3, imports)
	require.GreaterOrEqual(t, formats, 4)
}
