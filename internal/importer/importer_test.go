package importer

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/stretchr/testify/require"

	"github.com/aerie-db/aerie/internal/importer/importertest"
	"github.com/aerie-db/aerie/internal/ingest"
	"github.com/aerie-db/aerie/internal/sensor"
	"github.com/aerie-db/aerie/internal/tsdb"
	"github.com/aerie-db/aerie/internal/vmformat"
)

func testImportOptions(t *testing.T) (Options, *bytes.Buffer) {
	var stdout bytes.Buffer
	return Options{
		Format:          FormatAuto,
		CSVFormat:       importertest.CSVFormat,
		InfluxPrecision: "ns",
		TmpDir:          t.TempDir(),
		RunBytes:        256 << 20,
		BatchSamples:    1000,
		Summary:         &stdout,
		RetryWait:       time.Millisecond,
	}, &stdout
}

// writeFile writes body to dir/name and returns its path.
func writeFile(t *testing.T, dir, name, body string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(path, []byte(body), 0o644))
	return path
}

// phases records what a Progress is told.
type phases struct {
	started, finished []string
	totals            []int64
	updates           int
}

func (p *phases) Start(phase string, total int64, inBytes bool) {
	p.started = append(p.started, fmt.Sprintf("%s bytes=%v", phase, inBytes))
	p.totals = append(p.totals, total)
}
func (p *phases) Update(done, samples int64) { p.updates++ }
func (p *phases) Finish()                    { p.finished = append(p.finished, p.started[len(p.started)-1]) }

// Files written series by series over three hours (more than the engine's
// out-of-order window) are sorted by time before they reach the engine,
// here through many spilled runs merged in two passes.
func TestImportDataDir(t *testing.T) {
	files, n := importertest.GenFiles(t, t.TempDir(), true)
	o, stdout := testImportOptions(t)
	o.DataDir = t.TempDir()
	o.RunBytes = 4 << 10 // > mergeFanIn runs
	var prog phases
	o.Progress = &prog
	require.NoError(t, Run(context.Background(), o, files))
	require.Equal(t, fmt.Sprintf("stored %d samples, rejected 0\n", n+2880), stdout.String())
	// What the command shows as progress (its lines are tested in
	// cmd/aerie): bytes read of the files' size, then samples written.
	require.Equal(t, []string{"reading bytes=true", "writing bytes=false"}, prog.started)
	require.Equal(t, prog.started, prog.finished)
	require.Equal(t, int64(n+2880), prog.totals[1])
	require.Positive(t, prog.totals[0])
	require.Positive(t, prog.updates)
	require.Equal(t, importertest.WantCounts, importertest.CountDB(t, o.DataDir))
	entries, err := os.ReadDir(o.TmpDir)
	require.NoError(t, err)
	require.Empty(t, entries, "sorted runs are removed")
}

// The same through a server's /api/v1/import, in batches.
func TestImportURL(t *testing.T) {
	files, n := importertest.GenFiles(t, t.TempDir(), false)
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
	o, stdout := testImportOptions(t)
	o.URL = srv.URL + "/"
	o.BatchSamples = 5000
	require.NoError(t, Run(context.Background(), o, files))
	require.Equal(t, fmt.Sprintf("stored %d samples, rejected 0\n", n+2880), stdout.String())
	require.Equal(t, 1+(n+2880+o.BatchSamples-1)/o.BatchSamples, requests)
	dir := db.Dir()
	require.NoError(t, db.Close())
	require.Equal(t, importertest.WantCounts, importertest.CountDB(t, dir))
}

// Bad lines of every format are counted by reason, with the first one of
// each named by file and line; duplicates are found across files; the
// samples that are good are stored.
func TestImportRejections(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string { return writeFile(t, dir, name, body) }
	files := []string{
		write("a.jsonl", `{"metric":{"__name__":"m_value"},"values":[1,2],"timestamps":[1000,2000]}`+"\n"+
			`{"metric":{"__name__":"m_value"},"values":[x],"timestamps":[3000]}`+"\n"),
		write("b.lp", "m value=1 1000000000\nm value=oops 2\nm value=9 2000000000\ns value=\"str\" 3000000000\n"),
		write("c.prom", "n 1 1000\nbad{\nn 2 2000\n"),
		write("d.csv", "1000,x,1\nnot-a-time,x,2\n"),
	}
	for _, url := range []bool{false, true} {
		t.Run(fmt.Sprintf("url=%v", url), func(t *testing.T) {
			o, stdout := testImportOptions(t)
			o.CSVFormat = "1:time:unix_ms,2:label:host,3:metric:c"
			if url {
				db, err := tsdb.Open(t.TempDir(), &tsdb.Options{FlushCheckInterval: -1})
				require.NoError(t, err)
				defer db.Close()
				srv := httptest.NewServer(ingest.NewVMImportHandler(db, ingest.Options{}, vmformat.Limits{}))
				defer srv.Close()
				o.URL = srv.URL
			} else {
				o.DataDir = t.TempDir()
			}
			err := Run(context.Background(), o, files)
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
	path := writeFile(t, t.TempDir(), "x.prom", "a{h=\"ab\"} 1 1000\nb{h=\"abcdef\"} 2 1000\nb{h=\"abcdef\"} 3 2000\n")
	o, stdout := testImportOptions(t)
	o.URL = srv.URL
	require.EqualError(t, Run(context.Background(), o, []string{path}), "2 samples rejected")
	require.Equal(t, "stored 1 samples, rejected 2\n"+
		"  rejected parse_error: 2; first at "+path+`:2: metric["h"]: label value of 6 bytes is longer than the limit of 3`+"\n", stdout.String())
}

func TestFileFormat(t *testing.T) {
	for _, tc := range []struct{ flag, name, want string }{
		{"auto", "x.lp", FormatInflux},
		{"auto", "dir.d/x.influx.gz", FormatInflux},
		{"auto", "X.PROM.ZST", FormatPrometheus},
		{"auto", "x.txt", FormatPrometheus},
		{"auto", "x.om", FormatOpenMetrics},
		{"auto", "export.jsonl.gz", FormatJSON},
		{"auto", "x.ndjson", FormatJSON},
		{"auto", "x.csv", FormatCSV},
		{"auto", "x.dat", "x.dat: cannot tell the format from the name; give --format"},
		{"auto", "-", "-: cannot tell the format from the name; give --format"},
		{"csv", "x.dat", FormatCSV},
		{"xml", "x.dat", `unknown --format "xml": want auto, influx, prometheus, openmetrics, json, csv, sensor-csv, sensor-json or sensor-msgp`},
	} {
		got, err := FileFormat(tc.flag, tc.name)
		if err != nil {
			got = err.Error()
		}
		require.Equal(t, tc.want, got, tc.name)
	}
}

// An interrupted import stops reading, closes the data directory and
// leaves no runs behind.
func TestImportInterrupted(t *testing.T) {
	files, _ := importertest.GenFiles(t, t.TempDir(), false)
	o, _ := testImportOptions(t)
	o.DataDir = t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := Run(ctx, o, files)
	require.ErrorIs(t, err, context.Canceled)
	entries, rerr := os.ReadDir(o.TmpDir)
	require.NoError(t, rerr)
	require.Empty(t, entries)
	require.Empty(t, importertest.CountDB(t, o.DataDir))
}

// A second import of older data into the same data directory: the engine
// takes samples of any age (backfill), and the import flushes them into
// blocks too.
func TestImportDataDirOlderData(t *testing.T) {
	dir := t.TempDir()
	files, _ := importertest.GenFiles(t, t.TempDir(), false)
	o, stdout := testImportOptions(t)
	o.DataDir = dir
	require.NoError(t, Run(context.Background(), o, files[:1]))
	require.Equal(t, "stored 2880 samples, rejected 0\n", stdout.String())

	// The same series two days earlier.
	var older bytes.Buffer
	for h := range 4 {
		for i := range 100 {
			fmt.Fprintf(&older, "up{host=\"h%d\"} %d %d\n", h, i, importertest.Base-2*24*3600_000+int64(i)*15_000)
		}
	}
	path := writeFile(t, t.TempDir(), "older.prom", older.String())
	stdout.Reset()
	require.NoError(t, Run(context.Background(), o, []string{path}))
	require.Equal(t, "stored 400 samples, rejected 0\n", stdout.String())
	require.Equal(t, map[string]int{"up": 2880 + 400}, importertest.CountDB(t, dir))
}

// TestImportSensor imports Peregreen's sensor files (csv by its
// tsPos-valPos-sep, json and msgp points) into a data directory, records
// their types as /upload does, and stops before writing at a bad row.
func TestImportSensor(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string { return writeFile(t, dir, name, body) }
	csvFile := write("temp.csv", "v;t\n2.5;1000\n1.5;3000\n-4;2000\n")
	jsonFile := write("hum.json", `[{"t":1000,"v":40},{"t":2000,"v":41}]`)
	o, stdout := testImportOptions(t)
	o.DataDir = t.TempDir()
	o.Format, o.SensorFormat, o.SensorType = FormatSensorCSV, "1-0-;", "float32"
	require.NoError(t, Run(context.Background(), o, []string{csvFile}), stdout.String())
	o.Format, o.SensorType = FormatSensorJSON, "int8"
	require.NoError(t, Run(context.Background(), o, []string{jsonFile}), stdout.String())

	// Another type for the same sensor is refused.
	o.SensorType = "int16"
	require.ErrorContains(t, Run(context.Background(), o, []string{jsonFile}), "holds int8 values")
	// A bad row: nothing written, the row named.
	o.Format, o.SensorType, o.SensorName = FormatSensorJSON, "int8", "bad"
	err := Run(context.Background(), o, []string{write("bad.json", `{"t":1,"v":1}`+"\n"+`{"t":2,"v":300}`)})
	require.ErrorContains(t, err, "row 2")

	typ, ok, err := sensor.TypeOf(o.DataDir, "temp")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "float32", typ.String())
	db, err := tsdb.Open(o.DataDir, &tsdb.Options{FlushCheckInterval: -1})
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

// TestImportSensorRuns: a sensor file in time order goes straight into
// blocks as a history run, written while the files are read and kept only
// if the import succeeds; a sensor given by two files goes through the
// sorter, where the first of two values at one time wins and the other is
// refused, naming both places.
func TestImportSensorRuns(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string { return writeFile(t, dir, name, body) }
	var b strings.Builder
	for i := range 5000 {
		fmt.Fprintf(&b, "%d,%d\n", 1_600_000_000_000+int64(i)*1000, i%7)
	}
	sorted := write("run.csv", b.String())
	twiceA := write("two.csv", "1000,1\n2000,2\n")
	require.NoError(t, os.Mkdir(filepath.Join(dir, "b"), 0o755))
	twiceB := write("b/two.csv", "2000,3\n3000,4\n")
	bad := write("bad.csv", "1000,1\n2000,x\n")
	o, stdout := testImportOptions(t)
	o.DataDir = t.TempDir()
	o.Format = FormatSensorCSV

	// A bad row in a later file: the run written for the first is removed.
	err := Run(context.Background(), o, []string{sorted, bad})
	require.ErrorContains(t, err, "row 2")
	require.Empty(t, importertest.CountDB(t, o.DataDir))
	blocks, err := os.ReadDir(filepath.Join(o.DataDir, "blocks"))
	require.NoError(t, err)
	require.Empty(t, blocks)

	stdout.Reset()
	var prog phases
	o.Progress = &prog
	err = Run(context.Background(), o, []string{sorted, twiceA, twiceB})
	require.ErrorContains(t, err, "1 samples rejected")
	require.Contains(t, stdout.String(), "stored 5003 samples, rejected 1")
	require.Contains(t, stdout.String(), "(first at "+twiceA+":2)")
	require.Equal(t, map[string]int{"run": 5000, "two": 3}, importertest.CountDB(t, o.DataDir))
	require.Equal(t, int64(4), prog.totals[1], "only the sensor given twice was sorted")
}
