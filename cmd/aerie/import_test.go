package main

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/rand"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/stretchr/testify/require"

	"github.com/aerie-db/aerie/internal/ingest"
	"github.com/aerie-db/aerie/internal/sensor"
	"github.com/aerie-db/aerie/internal/tsdb"
	"github.com/aerie-db/aerie/internal/vmformat"
)

// importBase is the first timestamp of the generated files.
const importBase = int64(1_700_000_000_000)

// genFiles writes the same kind of data in four formats, each file series
// by series (so unsorted by time) over three hours, and returns the files
// and the samples they hold. zipped: compress the JSON file with gzip and
// the Influx file with zstd.
func genFiles(t *testing.T, dir string, zipped bool) ([]string, int) {
	t.Helper()
	const hosts, steps = 4, 720 // 15 s apart: 3 h
	var js, lp, prom, csv bytes.Buffer
	n := 0
	for h := range hosts {
		host := fmt.Sprintf("h%d", h)
		var ts []int64
		var vs []float64
		for i := range steps {
			t := importBase + int64(i)*15_000
			v := float64(i*h) / 3
			ts, vs = append(ts, t), append(vs, v)
			fmt.Fprintf(&lp, "cpu,host=%s user=%v %d\n", host, v, t*1_000_000)
			fmt.Fprintf(&prom, "mem_bytes{host=%q} %v %d\n", host, v, t)
			fmt.Fprintf(&csv, "%d,%s,%v,%v\n", t, host, v, -v)
			n += 4
			if len(ts) == 100 {
				js.Write(vmformat.AppendJSONLine(nil, labels.FromStrings("__name__", "up", "host", host), ts, vs))
				ts, vs = ts[:0], vs[:0]
			}
		}
		js.Write(vmformat.AppendJSONLine(nil, labels.FromStrings("__name__", "up", "host", host), ts, vs))
	}
	write := func(name string, b []byte, z string) string {
		path := filepath.Join(dir, name)
		var out bytes.Buffer
		switch z {
		case "gz":
			zw := gzip.NewWriter(&out)
			zw.Write(b)
			require.NoError(t, zw.Close())
			path += ".gz"
		case "zst":
			zw, err := zstd.NewWriter(&out)
			require.NoError(t, err)
			zw.Write(b)
			require.NoError(t, zw.Close())
			path += ".zst"
		default:
			out.Write(b)
		}
		require.NoError(t, os.WriteFile(path, out.Bytes(), 0o644))
		return path
	}
	jz, lz := "", ""
	if zipped {
		jz, lz = "gz", "zst"
	}
	return []string{
		write("up.jsonl", js.Bytes(), jz),
		write("cpu.lp", lp.Bytes(), lz),
		write("mem.prom", prom.Bytes(), ""),
		write("disk.csv", csv.Bytes(), ""),
	}, n
}

const genCSVFormat = "1:time:unix_ms,2:label:host,3:metric:disk_read,4:metric:disk_write"

// countDB counts the samples of a data directory by series name.
func countDB(t *testing.T, dir string) map[string]int {
	t.Helper()
	db, err := tsdb.Open(dir, &tsdb.Options{FlushCheckInterval: -1})
	require.NoError(t, err)
	defer db.Close()
	q, err := db.Querier(math.MinInt64, math.MaxInt64)
	require.NoError(t, err)
	defer q.Close()
	ss := q.Select(context.Background(), true, nil, labels.MustNewMatcher(labels.MatchRegexp, labels.MetricName, ".+"))
	out := map[string]int{}
	var it chunkenc.Iterator
	for ss.Next() {
		it = ss.At().Iterator(it)
		for it.Next() == chunkenc.ValFloat {
			out[ss.At().Labels().Get(labels.MetricName)]++
		}
		require.NoError(t, it.Err())
	}
	require.NoError(t, ss.Err())
	return out
}

func testImportOptions(t *testing.T) (importOptions, *bytes.Buffer, *bytes.Buffer) {
	var stdout, stderr bytes.Buffer
	return importOptions{
		format:          fmtAuto,
		csvFormat:       genCSVFormat,
		influxPrecision: "ns",
		tmpDir:          t.TempDir(),
		runBytes:        256 << 20,
		batch:           1000,
		progress:        "none",
		stdout:          &stdout,
		stderr:          &stderr,
		retryWait:       time.Millisecond,
	}, &stdout, &stderr
}

var wantCounts = map[string]int{"up": 2880, "cpu_user": 2880, "mem_bytes": 2880, "disk_read": 2880, "disk_write": 2880}

// Files written series by series over three hours (more than the engine's
// out-of-order window) are sorted by time before they reach the engine,
// here through many spilled runs merged in two passes.
func TestImportDataDir(t *testing.T) {
	files, n := genFiles(t, t.TempDir(), true)
	o, stdout, stderr := testImportOptions(t)
	o.dataDir = t.TempDir()
	o.runBytes = 4 << 10 // > mergeFanIn runs
	o.progress, o.progressEvery = "lines", 0
	require.NoError(t, runImport(context.Background(), o, files))
	require.Equal(t, fmt.Sprintf("stored %d samples, rejected 0\n", n+2880), stdout.String())
	require.Contains(t, stderr.String(), "import: reading ")
	require.Contains(t, stderr.String(), "import: writing ")
	require.Equal(t, wantCounts, countDB(t, o.dataDir))
	entries, err := os.ReadDir(o.tmpDir)
	require.NoError(t, err)
	require.Empty(t, entries, "sorted runs are removed")
}

// The same through a server's /api/v1/import, in batches.
func TestImportURL(t *testing.T) {
	files, n := genFiles(t, t.TempDir(), false)
	db, err := tsdb.Open(t.TempDir(), &tsdb.Options{FlushCheckInterval: -1})
	require.NoError(t, err)
	var requests int
	h := ingest.NewVMImportHandler(db, ingest.Options{}, vmformat.Limits{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/import" {
			http.NotFound(w, r)
			return
		}
		requests++
		if requests == 2 { // once: the client re-sends
			w.Header().Set("Retry-After", "0")
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()
	o, stdout, _ := testImportOptions(t)
	o.url = srv.URL + "/"
	o.batch = 5000
	require.NoError(t, runImport(context.Background(), o, files))
	require.Equal(t, fmt.Sprintf("stored %d samples, rejected 0\n", n+2880), stdout.String())
	require.Equal(t, 1+(n+2880+o.batch-1)/o.batch, requests)
	dir := db.Dir()
	require.NoError(t, db.Close())
	require.Equal(t, wantCounts, countDB(t, dir))
}

// Bad lines of every format are counted by reason, with the first one of
// each named by file and line; duplicates are found across files; the
// samples that are good are stored.
func TestImportRejections(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, []byte(body), 0o644))
		return path
	}
	files := []string{
		write("a.jsonl", `{"metric":{"__name__":"m_value"},"values":[1,2],"timestamps":[1000,2000]}`+"\n"+
			`{"metric":{"__name__":"m_value"},"values":[x],"timestamps":[3000]}`+"\n"),
		write("b.lp", "m value=1 1000000000\nm value=oops 2\nm value=9 2000000000\ns value=\"str\" 3000000000\n"),
		write("c.prom", "n 1 1000\nbad{\nn 2 2000\n"),
		write("d.csv", "1000,x,1\nnot-a-time,x,2\n"),
	}
	for _, url := range []bool{false, true} {
		t.Run(fmt.Sprintf("url=%v", url), func(t *testing.T) {
			o, stdout, _ := testImportOptions(t)
			o.csvFormat = "1:time:unix_ms,2:label:host,3:metric:c"
			if url {
				db, err := tsdb.Open(t.TempDir(), &tsdb.Options{FlushCheckInterval: -1})
				require.NoError(t, err)
				defer db.Close()
				srv := httptest.NewServer(ingest.NewVMImportHandler(db, ingest.Options{}, vmformat.Limits{}))
				defer srv.Close()
				o.url = srv.URL
			} else {
				o.dataDir = t.TempDir()
			}
			err := runImport(context.Background(), o, files)
			require.EqualError(t, err, "5 samples rejected")
			want := "stored 6 samples, rejected 5, skipped 1\n" +
				"  rejected parse_error: 4; first at " + files[0] + `:2: line 2 col 44 (byte 117): values[0]: invalid value "x"` + "\n" +
				"  skipped string_field: 1; first at " + files[1] + ":4: line 4: 1 fields skipped (string_field)\n" +
				"  rejected duplicate: 1; first at " + files[1] + `:3: {__name__="m_value"} @2000: duplicate sample for timestamp (first at ` + files[0] + ":1)\n"
			require.Equal(t, want, stdout.String())
		})
	}
}

// Samples the server refuses are counted, and its body lines are mapped
// back to the lines of the files.
func TestImportURLRejections(t *testing.T) {
	db, err := tsdb.Open(t.TempDir(), &tsdb.Options{FlushCheckInterval: -1})
	require.NoError(t, err)
	defer db.Close()
	srv := httptest.NewServer(ingest.NewVMImportHandler(db, ingest.Options{}, vmformat.Limits{MaxLabelValueBytes: 3}))
	defer srv.Close()
	path := filepath.Join(t.TempDir(), "x.prom")
	require.NoError(t, os.WriteFile(path, []byte("a{h=\"ab\"} 1 1000\nb{h=\"abcdef\"} 2 1000\nb{h=\"abcdef\"} 3 2000\n"), 0o644))
	o, stdout, _ := testImportOptions(t)
	o.url = srv.URL
	require.EqualError(t, runImport(context.Background(), o, []string{path}), "2 samples rejected")
	require.Equal(t, "stored 1 samples, rejected 2\n"+
		"  rejected parse_error: 2; first at "+path+`:2: metric["h"]: label value of 6 bytes is longer than the limit of 3`+"\n", stdout.String())
}

func TestExampleReason(t *testing.T) {
	for _, tc := range []struct {
		text    string
		reasons []string
		want    string
	}{
		{"anything", []string{"too_old"}, "too_old"},
		{`{a="1"} @5: out of bounds`, []string{"too_old", "out_of_bounds"}, "out_of_bounds"},
		{`{a="1"} @5: too old sample`, []string{"out_of_bounds", "too_old"}, "too_old"},
		{"other", []string{"duplicate", "too_old"}, "duplicate"},
		{"other", nil, "other"},
	} {
		require.Equal(t, tc.want, exampleReason(tc.text, tc.reasons), tc.text)
	}
}

func TestFileFormat(t *testing.T) {
	for _, tc := range []struct{ flag, name, want string }{
		{"auto", "x.lp", fmtInflux},
		{"auto", "dir.d/x.influx.gz", fmtInflux},
		{"auto", "X.PROM.ZST", fmtPrometheus},
		{"auto", "x.txt", fmtPrometheus},
		{"auto", "x.om", fmtOpenMetrics},
		{"auto", "export.jsonl.gz", fmtJSON},
		{"auto", "x.ndjson", fmtJSON},
		{"auto", "x.csv", fmtCSV},
		{"auto", "x.dat", "x.dat: cannot tell the format from the name; give --format"},
		{"auto", "-", "-: cannot tell the format from the name; give --format"},
		{"csv", "x.dat", fmtCSV},
		{"xml", "x.dat", `unknown --format "xml": want auto, influx, prometheus, openmetrics, json, csv, sensor-csv, sensor-json or sensor-msgp`},
	} {
		got, err := fileFormat(tc.flag, tc.name)
		if err != nil {
			got = err.Error()
		}
		require.Equal(t, tc.want, got, tc.name)
	}
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
		cmd := newRootCmd()
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		cmd.SetIn(strings.NewReader(""))
		cmd.SetArgs(append([]string{"import", "--progress=none"}, tc.args...))
		require.EqualError(t, cmd.Execute(), tc.err, "%v", tc.args)
	}
}

// Standard input, read through the command; the summary says what was
// stored.
func TestImportStdin(t *testing.T) {
	dir := t.TempDir()
	cmd := newRootCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetIn(strings.NewReader("a 1 1000\nb 2 2000\n"))
	cmd.SetArgs([]string{"import", "--progress=none", "--format=prometheus", "--data.dir=" + dir, "-"})
	require.NoError(t, cmd.Execute())
	require.Equal(t, "stored 2 samples, rejected 0\n", out.String())
	require.Equal(t, map[string]int{"a": 1, "b": 1}, countDB(t, dir))
}

// The sorter gives every sample back once, in (time, series, input place)
// order, from memory or through runs merged in several passes.
func TestRunSorter(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	type in struct {
		t    int64
		l    labels.Labels
		v    float64
		line int64
	}
	var samples []in
	for i := range 5000 {
		samples = append(samples, in{int64(rng.Intn(300)), labels.FromStrings("__name__", fmt.Sprintf("s%d", rng.Intn(20))), rng.NormFloat64(), int64(i + 1)})
	}
	for _, runBytes := range []int64{1 << 30, 1 << 14, 1 << 10} {
		s := newRunSorter(t.TempDir(), runBytes)
		for _, x := range samples {
			s.add(x.l, x.t, x.v, 0, x.line)
		}
		require.NoError(t, s.err)
		if runBytes == 1<<10 {
			require.Greater(t, len(s.runs), mergeFanIn)
		}
		var got []in
		var sb labels.ScratchBuilder
		require.NoError(t, s.merge(func(r *sortedSample) error {
			x := in{r.t, labelsOf(r.lset, &sb), r.v, r.line}
			if n := len(got); n > 0 {
				p := got[n-1]
				require.LessOrEqual(t, p.t, x.t, "by time")
				if p.t == x.t && labels.Equal(p.l, x.l) {
					require.Less(t, p.line, x.line, "of one series at one time, the first read first")
				}
			}
			got = append(got, x)
			return nil
		}))
		key := func(a, b in) int {
			if a.t != b.t {
				return int(a.t - b.t)
			}
			if c := labels.Compare(a.l, b.l); c != 0 {
				return c
			}
			return int(a.line - b.line)
		}
		want := slices.Clone(samples)
		slices.SortFunc(want, key)
		slices.SortFunc(got, key)
		require.Equal(t, fmt.Sprint(want), fmt.Sprint(got), "run bytes %d", runBytes)
	}
}

// An interrupted import stops reading, closes the data directory and
// leaves no runs behind.
func TestImportInterrupted(t *testing.T) {
	files, _ := genFiles(t, t.TempDir(), false)
	o, _, _ := testImportOptions(t)
	o.dataDir = t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := runImport(ctx, o, files)
	require.ErrorIs(t, err, context.Canceled)
	entries, rerr := os.ReadDir(o.tmpDir)
	require.NoError(t, rerr)
	require.Empty(t, entries)
	require.Empty(t, countDB(t, o.dataDir))
}

// The progress bar (what a terminal gets) shows bytes, then samples.
func TestImportProgressBar(t *testing.T) {
	files, _ := genFiles(t, t.TempDir(), false)
	o, _, stderr := testImportOptions(t)
	o.dataDir = t.TempDir()
	o.progress = "bar"
	require.NoError(t, runImport(context.Background(), o, files))
	require.Contains(t, stderr.String(), "reading (")
	require.Contains(t, stderr.String(), "samples/s")
	require.Contains(t, stderr.String(), "writing")
	require.Contains(t, stderr.String(), "100%")
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
				if file != "-" || get("format") != fmtAuto {
					_, err := fileFormat(get("format"), file)
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

// A second import of older data into the same data directory: the engine
// takes samples of any age (backfill), and the import flushes them into
// blocks too.
func TestImportDataDirOlderData(t *testing.T) {
	dir := t.TempDir()
	files, _ := genFiles(t, t.TempDir(), false)
	o, stdout, _ := testImportOptions(t)
	o.dataDir = dir
	require.NoError(t, runImport(context.Background(), o, files[:1]))
	require.Equal(t, "stored 2880 samples, rejected 0\n", stdout.String())

	// The same series two days earlier.
	var older bytes.Buffer
	for h := range 4 {
		for i := range 100 {
			fmt.Fprintf(&older, "up{host=\"h%d\"} %d %d\n", h, i, importBase-2*24*3600_000+int64(i)*15_000)
		}
	}
	path := filepath.Join(t.TempDir(), "older.prom")
	require.NoError(t, os.WriteFile(path, older.Bytes(), 0o644))
	stdout.Reset()
	require.NoError(t, runImport(context.Background(), o, []string{path}))
	require.Equal(t, "stored 400 samples, rejected 0\n", stdout.String())
	require.Equal(t, map[string]int{"up": 2880 + 400}, countDB(t, dir))
}

// TestImportSensor imports Peregreen's sensor files (csv by its
// tsPos-valPos-sep, json and msgp points) into a data directory, records
// their types as /upload does, and stops before writing at a bad row.
func TestImportSensor(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, []byte(body), 0o644))
		return path
	}
	csvFile := write("temp.csv", "v;t\n2.5;1000\n1.5;3000\n-4;2000\n")
	jsonFile := write("hum.json", `[{"t":1000,"v":40},{"t":2000,"v":41}]`)
	o, stdout, _ := testImportOptions(t)
	o.dataDir = t.TempDir()
	o.format, o.sensorFormat, o.sensorType = fmtSensorCSV, "1-0-;", "float32"
	require.NoError(t, runImport(context.Background(), o, []string{csvFile}), stdout.String())
	o.format, o.sensorType = fmtSensorJSON, "int8"
	require.NoError(t, runImport(context.Background(), o, []string{jsonFile}), stdout.String())

	// Another type for the same sensor is refused.
	o.sensorType = "int16"
	require.ErrorContains(t, runImport(context.Background(), o, []string{jsonFile}), "holds int8 values")
	// A bad row: nothing written, the row named.
	o.format, o.sensorType, o.sensorName = fmtSensorJSON, "int8", "bad"
	err := runImport(context.Background(), o, []string{write("bad.json", `{"t":1,"v":1}`+"\n"+`{"t":2,"v":300}`)})
	require.ErrorContains(t, err, "row 2")

	typ, ok, err := sensor.TypeOf(o.dataDir, "temp")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "float32", typ.String())
	db, err := tsdb.Open(o.dataDir, &tsdb.Options{FlushCheckInterval: -1})
	require.NoError(t, err)
	defer db.Close()
	q, err := db.Querier(math.MinInt64, math.MaxInt64)
	require.NoError(t, err)
	defer q.Close()
	got := map[string][]float64{}
	ss := q.Select(context.Background(), true, nil, labels.MustNewMatcher(labels.MatchRegexp, "__name__", ".+"))
	for ss.Next() {
		it := ss.At().Iterator(nil)
		for it.Next() != chunkenc.ValNone {
			_, v := it.At()
			got[ss.At().Labels().Get("__name__")] = append(got[ss.At().Labels().Get("__name__")], v)
		}
	}
	require.NoError(t, ss.Err())
	require.Equal(t, map[string][]float64{"temp": {2.5, -4, 1.5}, "hum": {40, 41}}, got)
}
