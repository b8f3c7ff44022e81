package main

import (
	"bufio"
	"bytes"
	"cmp"
	"container/heap"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/aerie-db/aerie/internal/head"
	"github.com/aerie-db/aerie/internal/ingest"
	"github.com/aerie-db/aerie/internal/sensor"
	"github.com/aerie-db/aerie/internal/sensor/pointio"
	"github.com/aerie-db/aerie/internal/tsdb"
	"github.com/aerie-db/aerie/internal/vmformat"
)

// importOptions are the flags of `aerie import`.
type importOptions struct {
	format          string // auto, influx, prometheus, openmetrics, json, csv, sensor-csv, sensor-json, sensor-msgp
	csvFormat       string
	sensorName      string // sensor-* formats: the sensor (metric name) [the file's base name]
	sensorFormat    string // sensor-csv: Peregreen's tsPos-valPos-sep
	sensorType      string // sensor-* formats: int8 … float64
	influxPrecision string
	url             string
	dataDir         string
	tmpDir          string
	runBytes        int64 // sort run size
	batch           int   // samples per Commit or per request
	progress        string
	progressEvery   time.Duration

	stdin          io.Reader
	stdout, stderr io.Writer
	now            time.Time
	client         *http.Client
	retryWait      time.Duration // first wait before re-sending a request
}

// Import formats.
const (
	fmtAuto        = "auto"
	fmtInflux      = "influx"
	fmtPrometheus  = "prometheus"
	fmtOpenMetrics = "openmetrics"
	fmtJSON        = "json"
	fmtCSV         = "csv"
	// Peregreen's upload bodies (internal/sensor/pointio): one sensor's
	// points per file.
	fmtSensorCSV  = "sensor-csv"
	fmtSensorJSON = "sensor-json"
	fmtSensorMsgp = "sensor-msgp"
)

func newImportCmd() *cobra.Command {
	o := importOptions{}
	cmd := &cobra.Command{
		Use:   "import FILE...",
		Short: "Import files of samples into Aerie, directly into a data directory or through a server",
		Long: `import reads files of samples — InfluxDB line protocol, Prometheus text
or OpenMetrics, VictoriaMetrics JSON lines (as /api/v1/export writes them)
or CSV by a column spec — plain, gzip or zstd (found by their first bytes),
sorts them by time in bounded memory (runs of --sort.run-bytes, spilled to
--tmp.dir and merged), and writes them in batches, mostly in time order:

  --data.dir=DIR  opens the engine on DIR (which no running server may hold),
                  appends, and flushes the head into blocks at the end;
  --url=URL       posts JSON lines to a running server's /api/v1/import.

The format is --format, or else the file name's extension (after .gz or
.zst): .lp .influx .line → influx; .prom .txt → prometheus; .om
.openmetrics → openmetrics; .json .jsonl .ndjson → json; .csv → csv
(which needs --csv.format, VictoriaMetrics' column spec such as
1:time:unix_ms,2:label:host,3:metric:cpu). FILE - reads standard input.

Peregreen's sensor files, one sensor per file, as /upload takes them:
--format=sensor-csv with --sensor.format (tsPos-valPos-sep, e.g. 0-1-,),
--format=sensor-json or sensor-msgp (points {"t": ms, "v": value}), each
with --sensor.type (int8 … float64; values are checked against it) and
--sensor (the sensor id, a metric name; default the file's base name).
A bad row stops the import before anything is written, naming the row
and byte offset. With --data.dir the sensor's type is recorded as
/upload records it; through --url it is not.
Samples without a timestamp get the time the import started.

It prints progress (a bar on a terminal, a line every --progress.interval
otherwise) and a summary: samples stored, rejected by reason, and the
first bad line of each reason. It fails if any sample was rejected.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, files []string) error {
			o.stdin = cmd.InOrStdin()
			o.stdout, o.stderr = cmd.OutOrStdout(), cmd.ErrOrStderr()
			if o.progress == "auto" {
				o.progress = "lines"
				if f, ok := o.stderr.(*os.File); ok && isTerminal(f) {
					o.progress = "bar"
				}
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			return runImport(ctx, o, files)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.format, "format", fmtAuto, "auto (by extension), influx, prometheus, openmetrics, json, csv, sensor-csv, sensor-json or sensor-msgp")
	f.StringVar(&o.sensorName, "sensor", "", "sensor-* formats: the sensor id (metric name) [the file's base name]")
	f.StringVar(&o.sensorFormat, "sensor.format", "0-1-,", "sensor-csv: Peregreen's tsPos-valPos-sep")
	f.StringVar(&o.sensorType, "sensor.type", "float64", "sensor-* formats: int8, int16, int32, int64, float32 or float64")
	f.StringVar(&o.csvFormat, "csv.format", "", "CSV column spec, e.g. 1:time:unix_ms,2:label:host,3:metric:cpu")
	f.StringVar(&o.influxPrecision, "influx.precision", "ns", "unit of Influx timestamps: ns, us, ms, s, m or h")
	f.StringVar(&o.url, "url", "", "base URL of a running Aerie server, e.g. http://127.0.0.1:9201")
	f.StringVar(&o.dataDir, "data.dir", "", "data directory to write into directly (not held by a server)")
	f.StringVar(&o.tmpDir, "tmp.dir", "", "directory for sorted runs [the system's temporary directory]")
	f.Int64Var(&o.runBytes, "sort.run-bytes", 256<<20, "bytes of samples sorted in memory before a run is spilled to --tmp.dir")
	f.IntVar(&o.batch, "batch.samples", 50_000, "samples per commit (--data.dir) or per request (--url)")
	f.StringVar(&o.progress, "progress", "auto", "auto, bar, lines or none")
	f.DurationVar(&o.progressEvery, "progress.interval", 10*time.Second, "how often a progress line is printed when not on a terminal")
	return cmd
}

func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// runImport imports files; the summary goes to o.stdout.
func runImport(ctx context.Context, o importOptions, files []string) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if (o.url == "") == (o.dataDir == "") {
		return errors.New("give exactly one of --url and --data.dir")
	}
	if o.batch <= 0 {
		return errors.New("--batch.samples must be positive")
	}
	if o.runBytes < 1<<10 || o.runBytes > maxRunBytes {
		return fmt.Errorf("--sort.run-bytes must be from 1024 to %d", int64(maxRunBytes))
	}
	if o.now.IsZero() {
		o.now = time.Now()
	}
	if o.client == nil {
		o.client = &http.Client{Timeout: 5 * time.Minute}
	}
	if o.retryWait == 0 {
		o.retryWait = time.Second
	}
	if o.stdin == nil {
		o.stdin = os.Stdin
	}
	formats := make([]string, len(files))
	var csvFormat *vmformat.CSVFormat
	var err error
	for i, name := range files {
		f, err := fileFormat(o.format, name)
		if err != nil {
			return err
		}
		if isSensorFormat(f) && o.sensorName == "" && name == "-" {
			return errors.New("a sensor file on standard input needs --sensor")
		}
		formats[i] = f
		if f == fmtCSV && csvFormat == nil {
			if o.csvFormat == "" {
				return fmt.Errorf("%s: CSV needs --csv.format, e.g. 1:time:unix_ms,2:label:host,3:metric:cpu", name)
			}
			if csvFormat, err = vmformat.ParseCSVFormat(o.csvFormat); err != nil {
				return err
			}
		}
	}
	im := &importer{o: o, files: files, formats: formats, csv: csvFormat, sum: newImportSummary(), sensors: map[string]bool{}}
	if slices.ContainsFunc(formats, isSensorFormat) {
		if o.sensorType == "" {
			o.sensorType = "float64"
		}
		if im.sensorType, err = pointio.ParseType(o.sensorType); err != nil {
			return fmt.Errorf("--sensor.type: %w", err)
		}
		if o.sensorFormat == "" {
			im.o.sensorFormat = "0-1-,"
		}
	}
	var total int64
	for _, name := range files {
		if name == "-" {
			total = -1
			break
		}
		fi, err := os.Stat(name)
		if err != nil {
			return err
		}
		total += fi.Size()
	}
	tmp, err := os.MkdirTemp(o.tmpDir, "aerie-import-")
	if err != nil {
		return fmt.Errorf("temporary directory for sorted runs: %w", err)
	}
	defer os.RemoveAll(tmp)
	im.sorter = newRunSorter(tmp, o.runBytes)

	// The destination first, so that a wrong one is known before hours of
	// reading.
	var out sampleSink
	if o.dataDir != "" {
		out, err = newDBSink(im)
	} else {
		out, err = newURLSink(ctx, im)
	}
	if err != nil {
		return err
	}

	// Read and sort.
	im.ctx = ctx
	im.prog = newProgress(o.progress, o.stderr, o.progressEvery)
	im.prog.start("reading", total, true)
	for i := range files {
		if err := im.readFile(i); err != nil {
			im.prog.finish()
			out.abort()
			return err
		}
	}
	im.prog.finish()

	// Write in time order.
	im.prog.start("writing", im.sorter.count, false)
	var prev sortedSample // the sample before, for duplicates
	var prevRec []byte
	err = im.sorter.merge(func(r *sortedSample) error {
		im.written++
		if im.written%4096 == 0 {
			im.prog.update(im.written, im.written)
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if r.t == prev.t && prevRec != nil && bytes.Equal(r.lset, prev.lset) {
			// As in the handlers: the first sample of a series at a time
			// wins; the same value again is a no-op, another is refused.
			if math.Float64bits(r.v) == math.Float64bits(prev.v) {
				im.sum.stored++
				return nil
			}
			im.sum.reject(ingest.ReasonDuplicate, 1, false, r.file, r.line, fmt.Sprintf("%s @%d: %v (first at %s:%d)",
				labelsOf(r.lset, &labels.ScratchBuilder{}), r.t, storage.ErrDuplicateSampleForTimestamp, files[prev.file], prev.line))
			return nil
		}
		prevRec = append(prevRec[:0], r.rec...)
		if err := prev.decode(r.t, prevRec); err != nil {
			return err
		}
		return out.add(r)
	})
	if err == nil {
		im.prog.update(im.written, im.written)
		err = out.finish()
	} else {
		out.abort()
	}
	im.prog.finish()
	im.sum.print(o.stdout, files)
	if err != nil {
		return err
	}
	if o.dataDir != "" && im.sum.failed() == 0 {
		for name := range im.sensors {
			if err := sensor.RecordType(o.dataDir, name, im.sensorType); err != nil {
				return fmt.Errorf("sensor %s: record type: %w", name, err)
			}
		}
	}
	if n := im.sum.failed(); n > 0 {
		return fmt.Errorf("%d samples rejected", n)
	}
	return nil
}

// fileFormat is the format of a file: the flag, or its extension.
func fileFormat(flag, name string) (string, error) {
	switch flag {
	case fmtInflux, fmtPrometheus, fmtOpenMetrics, fmtJSON, fmtCSV, fmtSensorCSV, fmtSensorJSON, fmtSensorMsgp:
		return flag, nil
	case fmtAuto:
	default:
		return "", fmt.Errorf("unknown --format %q: want auto, influx, prometheus, openmetrics, json, csv, sensor-csv, sensor-json or sensor-msgp", flag)
	}
	base := strings.ToLower(filepath.Base(name))
	for _, z := range []string{".gz", ".gzip", ".zst", ".zstd"} {
		base = strings.TrimSuffix(base, z)
	}
	switch filepath.Ext(base) {
	case ".lp", ".influx", ".line":
		return fmtInflux, nil
	case ".prom", ".txt":
		return fmtPrometheus, nil
	case ".om", ".openmetrics":
		return fmtOpenMetrics, nil
	case ".json", ".jsonl", ".ndjson":
		return fmtJSON, nil
	case ".csv":
		return fmtCSV, nil
	}
	return "", fmt.Errorf("%s: cannot tell the format from the name; give --format", name)
}

// importer holds the state of one run of `aerie import`.
type importer struct {
	ctx     context.Context
	o       importOptions
	files   []string
	formats []string
	csv     *vmformat.CSVFormat
	sum     *importSummary
	sorter  *runSorter
	prog    *progress

	sensorType pointio.Type
	sensors    map[string]bool // sensors read from sensor-* files

	read    int64 // bytes of the files read so far (before decompression)
	samples int64 // samples read
	written int64
}

// countingReader counts the bytes read from a file, for the progress, and
// fails once the import is interrupted.
type countingReader struct {
	r  io.Reader
	im *importer
}

func (c *countingReader) Read(p []byte) (int, error) {
	if err := c.im.ctx.Err(); err != nil {
		return 0, err // interrupted: the parser stops at this read error
	}
	n, err := c.r.Read(p)
	c.im.read += int64(n)
	return n, err
}

// decompress returns r decompressed if it starts with gzip's or zstd's
// magic bytes.
func decompress(r *bufio.Reader) (io.Reader, func(), error) {
	magic, _ := r.Peek(4)
	switch {
	case len(magic) >= 2 && magic[0] == 0x1f && magic[1] == 0x8b:
		zr, err := gzip.NewReader(r)
		if err != nil {
			return nil, nil, fmt.Errorf("gzip: %w", err)
		}
		return zr, func() { zr.Close() }, nil
	case len(magic) == 4 && binary.LittleEndian.Uint32(magic) == 0xfd2fb528:
		zr, err := zstd.NewReader(r, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true))
		if err != nil {
			return nil, nil, fmt.Errorf("zstd: %w", err)
		}
		return zr, zr.Close, nil
	}
	return r, func() {}, nil
}

// readFile parses file i into the sorter.
func (im *importer) readFile(i int) error {
	name := im.files[i]
	var in io.Reader
	if name == "-" {
		in = im.o.stdin
	} else {
		f, err := os.Open(name)
		if err != nil {
			return err
		}
		defer f.Close()
		in = f
	}
	r, closeZ, err := decompress(bufio.NewReaderSize(&countingReader{r: in, im: im}, 256<<10))
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	defer closeZ()

	emit := func(l labels.Labels, t int64, v float64, line int64) {
		im.sorter.add(l, t, v, i, line)
		im.samples++
		if im.samples%4096 == 0 {
			im.prog.update(im.read, im.samples)
		}
	}
	reject := func(reason string, n int, line int64, msg string, skipped bool) {
		im.sum.reject(reason, n, skipped, i, line, msg)
	}
	so := ingest.StreamOptions{Now: im.o.now, InfluxPrecision: im.o.influxPrecision, OpenMetrics: im.formats[i] == fmtOpenMetrics}
	emitSample := func(s *ingest.Sample) { emit(s.Labels, s.T, s.V, s.Line) }
	rejectRejection := func(r ingest.Rejection) { reject(r.Reason, r.N, r.Line, r.Msg, r.Skipped) }
	switch im.formats[i] {
	case fmtInflux:
		err = ingest.ReadInflux(r, so, emitSample, rejectRejection)
	case fmtPrometheus, fmtOpenMetrics:
		err = ingest.ReadExposition(r, so, emitSample, rejectRejection)
	case fmtJSON:
		d := vmformat.NewJSONDecoder(r, vmformat.Limits{})
		for d.Next() {
			if lerr := d.LineErr(); lerr != nil {
				reject(ingest.ReasonParse, 1, d.Line(), lerr.Error(), false)
				continue
			}
			s := d.Series()
			for j, t := range s.Timestamps {
				emit(s.Labels, t, s.Values[j], d.Line())
			}
		}
		err = d.Err()
	case fmtSensorCSV, fmtSensorJSON, fmtSensorMsgp:
		err = im.readSensor(i, r, emit)
	case fmtCSV:
		d := vmformat.NewCSVDecoder(r, im.csv, vmformat.Limits{}, im.o.now.UnixMilli())
		for d.Next() {
			if lerr := d.LineErr(); lerr != nil {
				reject(ingest.ReasonParse, 1, d.Line(), lerr.Error(), false)
				continue
			}
			for _, s := range d.Samples() {
				emit(s.Labels, s.T, s.V, d.Line())
			}
		}
		err = d.Err()
	}
	if err == nil {
		err = im.sorter.err
	}
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

func isSensorFormat(f string) bool {
	return f == fmtSensorCSV || f == fmtSensorJSON || f == fmtSensorMsgp
}

// readSensor reads file i, one sensor's points in a Peregreen upload
// format. The first bad row fails the import, before anything is written.
func (im *importer) readSensor(i int, r io.Reader, emit func(labels.Labels, int64, float64, int64)) error {
	name := im.o.sensorName
	if name == "" {
		name = filepath.Base(im.files[i])
		for ext := filepath.Ext(name); ext != ""; ext = filepath.Ext(name) {
			name = strings.TrimSuffix(name, ext)
		}
	}
	if im.o.dataDir != "" {
		have, ok, err := sensor.TypeOf(im.o.dataDir, name)
		if err != nil {
			return err
		}
		if ok && have != im.sensorType {
			return fmt.Errorf("sensor %s holds %s values, --sensor.type says %s (nothing was written)", name, have, im.sensorType)
		}
	}
	reader, format := strings.TrimPrefix(im.formats[i], "sensor-"), "default"
	if im.formats[i] == fmtSensorCSV {
		format = im.o.sensorFormat
	}
	rd, err := pointio.NewReader(reader, format, im.sensorType, r, pointio.Limits{})
	if err != nil {
		return err
	}
	l := labels.FromStrings(labels.MetricName, name)
	for rd.Next() {
		t, v := rd.At()
		emit(l, t, v, int64(rd.Row()))
	}
	if err := rd.Err(); err != nil {
		return fmt.Errorf("sensor %s: %w (nothing was written)", name, err)
	}
	im.sensors[name] = true
	return nil
}

// External sort. A sample is encoded as one record:
//
//	uvarint(#labels) {uvarint(len) name uvarint(len) value}… file(4, BE) line(8, BE) value(8, LE bits)
//
// kept in an arena with an index of (time, offset, length). A full arena
// is sorted by (time, record bytes) and written to a run file as
// varint(time) uvarint(len) record; the runs are merged with a heap,
// at most mergeFanIn at a time. So samples come out by time, then series,
// then place in the input: of two samples of one series at one time, the
// one read first comes first.

const (
	maxRunBytes = 1 << 31 // offsets in the arena are uint32
	mergeFanIn  = 64
)

type sortEntry struct {
	t        int64
	off, len uint32
}

type runSorter struct {
	dir     string
	max     int64
	arena   []byte
	entries []sortEntry
	runs    []string
	count   int64 // samples added
	err     error // sticky: a run could not be written
	scratch []byte
}

func newRunSorter(dir string, max int64) *runSorter {
	return &runSorter{dir: dir, max: max}
}

func (s *runSorter) add(l labels.Labels, t int64, v float64, file int, line int64) {
	if s.err != nil {
		return
	}
	start := len(s.arena)
	s.arena = binary.AppendUvarint(s.arena, uint64(l.Len()))
	l.Range(func(l labels.Label) {
		s.arena = binary.AppendUvarint(s.arena, uint64(len(l.Name)))
		s.arena = append(s.arena, l.Name...)
		s.arena = binary.AppendUvarint(s.arena, uint64(len(l.Value)))
		s.arena = append(s.arena, l.Value...)
	})
	s.arena = binary.BigEndian.AppendUint32(s.arena, uint32(file))
	s.arena = binary.BigEndian.AppendUint64(s.arena, uint64(line))
	s.arena = binary.LittleEndian.AppendUint64(s.arena, math.Float64bits(v))
	s.entries = append(s.entries, sortEntry{t: t, off: uint32(start), len: uint32(len(s.arena) - start)})
	s.count++
	if int64(len(s.arena))+int64(len(s.entries))*16 >= s.max {
		s.err = s.spill()
	}
}

func (s *runSorter) record(e sortEntry) []byte { return s.arena[e.off : e.off+e.len] }

func (s *runSorter) sort() {
	slices.SortFunc(s.entries, func(a, b sortEntry) int {
		if c := cmp.Compare(a.t, b.t); c != 0 {
			return c
		}
		return bytes.Compare(s.record(a), s.record(b))
	})
}

// spill writes the arena as a sorted run file.
func (s *runSorter) spill() error {
	s.sort()
	name := filepath.Join(s.dir, fmt.Sprintf("run-%06d", len(s.runs)))
	w, err := newRunWriter(name)
	if err != nil {
		return err
	}
	for _, e := range s.entries {
		w.write(e.t, s.record(e))
	}
	if err := w.close(); err != nil {
		return err
	}
	s.runs = append(s.runs, name)
	s.arena, s.entries = s.arena[:0], s.entries[:0]
	return nil
}

// sortedSample is one sample in merge order.
type sortedSample struct {
	t    int64
	rec  []byte // record; valid until the next sample
	lset []byte // the labels part of rec
	v    float64
	file int
	line int64
}

func (r *sortedSample) decode(t int64, rec []byte) error {
	r.t, r.rec = t, rec
	p := rec
	n, k := binary.Uvarint(p)
	if k <= 0 {
		return errBadRun
	}
	p = p[k:]
	for range 2 * n {
		m, k := binary.Uvarint(p)
		if k <= 0 || uint64(len(p)-k) < m {
			return errBadRun
		}
		p = p[k+int(m):]
	}
	r.lset = rec[:len(rec)-len(p)]
	if len(p) != 20 {
		return errBadRun
	}
	r.file = int(binary.BigEndian.Uint32(p))
	r.line = int64(binary.BigEndian.Uint64(p[4:]))
	r.v = math.Float64frombits(binary.LittleEndian.Uint64(p[12:]))
	return nil
}

var errBadRun = errors.New("corrupt sorted run")

// labelsOf decodes the labels part of a record.
func labelsOf(b []byte, sb *labels.ScratchBuilder) labels.Labels {
	n, k := binary.Uvarint(b)
	b = b[k:]
	sb.Reset()
	for range n {
		m, k := binary.Uvarint(b)
		name := string(b[k : k+int(m)])
		b = b[k+int(m):]
		m, k = binary.Uvarint(b)
		value := string(b[k : k+int(m)])
		b = b[k+int(m):]
		sb.Add(name, value)
	}
	return sb.Labels() // sorted already: the records were made from labels.Labels
}

// merge calls fn for every sample in (time, record) order, then removes
// the runs.
func (s *runSorter) merge(fn func(*sortedSample) error) error {
	if s.err != nil {
		return s.err
	}
	if len(s.runs) == 0 { // everything fit in memory
		s.sort()
		var r sortedSample
		for _, e := range s.entries {
			if err := r.decode(e.t, s.record(e)); err != nil {
				return err
			}
			if err := fn(&r); err != nil {
				return err
			}
		}
		return nil
	}
	if len(s.entries) > 0 {
		if err := s.spill(); err != nil {
			return err
		}
	}
	s.arena, s.entries = nil, nil
	runs := s.runs
	for len(runs) > mergeFanIn {
		name := filepath.Join(s.dir, fmt.Sprintf("run-%06d", len(s.runs)))
		s.runs = append(s.runs, name)
		w, err := newRunWriter(name)
		if err != nil {
			return err
		}
		if err := mergeRuns(runs[:mergeFanIn], func(r *sortedSample) error { w.write(r.t, r.rec); return nil }); err != nil {
			return err
		}
		if err := w.close(); err != nil {
			return err
		}
		runs = append(runs[mergeFanIn:], name)
	}
	return mergeRuns(runs, fn)
}

type runWriter struct {
	f   *os.File
	bw  *bufio.Writer
	buf []byte
}

func newRunWriter(name string) (*runWriter, error) {
	f, err := os.Create(name)
	if err != nil {
		return nil, fmt.Errorf("sorted run: %w", err)
	}
	return &runWriter{f: f, bw: bufio.NewWriterSize(f, 256<<10)}, nil
}

func (w *runWriter) write(t int64, rec []byte) {
	w.buf = binary.AppendVarint(w.buf[:0], t)
	w.buf = binary.AppendUvarint(w.buf, uint64(len(rec)))
	w.bw.Write(w.buf)
	w.bw.Write(rec) // a write error is sticky in bw and reported by close
}

func (w *runWriter) close() error {
	err := w.bw.Flush()
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sorted run %s: %w", w.f.Name(), err)
	}
	return nil
}

// runReader reads one run file.
type runReader struct {
	f   *os.File
	br  *bufio.Reader
	cur sortedSample
	buf []byte
}

func (r *runReader) next() (bool, error) {
	t, err := binary.ReadVarint(r.br)
	if err == io.EOF {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	n, err := binary.ReadUvarint(r.br)
	if err != nil || n > maxRunBytes {
		return false, errBadRun
	}
	r.buf = slices.Grow(r.buf[:0], int(n))[:n]
	if _, err := io.ReadFull(r.br, r.buf); err != nil {
		return false, errBadRun
	}
	return true, r.cur.decode(t, r.buf)
}

type runHeap []*runReader

func (h runHeap) Len() int { return len(h) }
func (h runHeap) Less(i, j int) bool {
	if h[i].cur.t != h[j].cur.t {
		return h[i].cur.t < h[j].cur.t
	}
	return bytes.Compare(h[i].cur.rec, h[j].cur.rec) < 0
}
func (h runHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *runHeap) Push(x any)   { *h = append(*h, x.(*runReader)) }
func (h *runHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// mergeRuns merges run files into fn and removes them.
func mergeRuns(names []string, fn func(*sortedSample) error) (err error) {
	h := make(runHeap, 0, len(names))
	defer func() {
		for _, r := range h {
			r.f.Close()
		}
		for _, name := range names {
			if rerr := os.Remove(name); err == nil && rerr != nil {
				err = rerr
			}
		}
	}()
	for _, name := range names {
		f, err := os.Open(name)
		if err != nil {
			return err
		}
		r := &runReader{f: f, br: bufio.NewReaderSize(f, 64<<10)}
		ok, err := r.next()
		if err != nil {
			f.Close()
			return fmt.Errorf("%s: %w", name, err)
		}
		if !ok {
			f.Close()
			continue
		}
		h = append(h, r)
	}
	heap.Init(&h)
	for len(h) > 0 {
		r := h[0]
		if err := fn(&r.cur); err != nil {
			return err
		}
		ok, err := r.next()
		if err != nil {
			return fmt.Errorf("%s: %w", r.f.Name(), err)
		}
		if ok {
			heap.Fix(&h, 0)
			continue
		}
		r.f.Close()
		heap.Pop(&h)
	}
	return nil
}

// sampleSink writes sorted samples.
type sampleSink interface {
	add(*sortedSample) error
	finish() error // stores what is pending
	abort()        // after an error: releases what it holds
}

// labelCache maps records' label bytes to labels, so that a series' labels
// are decoded once per cache generation.
type labelCache struct {
	m  map[string]labels.Labels
	sb labels.ScratchBuilder
}

func (c *labelCache) get(b []byte) labels.Labels {
	if l, ok := c.m[string(b)]; ok {
		return l
	}
	if c.m == nil || len(c.m) >= 1<<16 {
		c.m = make(map[string]labels.Labels, 1024)
	}
	l := labelsOf(b, &c.sb)
	c.m[string(b)] = l
	return l
}

// dbSink appends to a data directory opened by the importer. The engine's
// background loop flushes the partitions the import leaves behind, as in
// a server.
type dbSink struct {
	im      *importer
	db      *tsdb.DB
	app     storage.Appender
	pending int
	before  map[string]int64
	labels  labelCache
}

func newDBSink(im *importer) (*dbSink, error) {
	db, err := tsdb.Open(im.o.dataDir, &tsdb.Options{})
	if err != nil {
		return nil, fmt.Errorf("open data directory %s: %w", im.o.dataDir, err)
	}
	return &dbSink{im: im, db: db, before: db.CommitRejections()}, nil
}

func (s *dbSink) add(r *sortedSample) error {
	if s.app == nil {
		s.app = s.db.Appender(context.Background())
	}
	l := s.labels.get(r.lset)
	if _, err := s.app.Append(0, l, r.t, r.v); err != nil {
		s.im.sum.reject(ingest.AppendReason(err), 1, false, r.file, r.line, fmt.Sprintf("%s @%d: %v", l, r.t, err))
		return nil
	}
	s.pending++
	if s.pending >= s.im.o.batch {
		return s.commit()
	}
	return nil
}

func (s *dbSink) commit() error {
	if s.app == nil {
		return nil
	}
	app, n := s.app, s.pending
	s.app, s.pending = nil, 0
	if err := app.Commit(); err != nil {
		return fmt.Errorf("commit of %d samples: %w", n, err)
	}
	s.im.sum.stored += n
	return nil
}

func (s *dbSink) finish() error {
	err := s.commit()
	// Samples the engine drops at Commit are counted there, without lines.
	for reason, n := range s.db.CommitRejections() {
		if d := n - s.before[reason]; d > 0 {
			s.im.sum.stored -= int(d)
			s.im.sum.reject(reason, int(d), false, -1, 0, "refused by the engine at commit")
		}
	}
	// Everything into blocks, as promtool's create-blocks-from does: the
	// samples of any age the backfill took, then the head.
	if err == nil {
		err = s.db.FlushBackfill()
	}
	if err == nil {
		err = s.db.FlushHead()
	}
	if cerr := s.db.Close(); err == nil {
		err = cerr
	}
	return err
}

func (s *dbSink) abort() {
	if s.app != nil {
		_ = s.app.Rollback()
	}
	_ = s.db.Close()
}

// urlSink posts batches of JSON lines to a server's /api/v1/import, one
// line per series of a batch.
type urlSink struct {
	ctx    context.Context
	im     *importer
	url    string
	series map[string]*pendingSeries
	order  []*pendingSeries
	n      int
	body   bytes.Buffer
	line   []byte
	labels labelCache
}

type pendingSeries struct {
	lset  labels.Labels
	ts    []int64
	vs    []float64
	files []int
	lines []int64
}

func newURLSink(ctx context.Context, im *importer) (*urlSink, error) {
	base := strings.TrimRight(im.o.url, "/")
	if !strings.HasPrefix(base, "http://") && !strings.HasPrefix(base, "https://") {
		return nil, fmt.Errorf("--url %q: want http://host:port", im.o.url)
	}
	return &urlSink{ctx: ctx, im: im, url: base + "/api/v1/import", series: map[string]*pendingSeries{}}, nil
}

func (s *urlSink) add(r *sortedSample) error {
	p := s.series[string(r.lset)]
	if p == nil {
		p = &pendingSeries{lset: s.labels.get(r.lset)}
		s.series[string(r.lset)] = p
		s.order = append(s.order, p)
	}
	p.ts = append(p.ts, r.t)
	p.vs = append(p.vs, r.v)
	p.files = append(p.files, r.file)
	p.lines = append(p.lines, r.line)
	s.n++
	if s.n >= s.im.o.batch {
		return s.send()
	}
	return nil
}

func (s *urlSink) finish() error { return s.send() }
func (s *urlSink) abort()        {}

// importAnswer is the error body of Aerie's import handlers.
type importAnswer struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// send posts the pending samples, re-sending after 429, 503 or a network
// error (identical samples sent twice are stored once).
func (s *urlSink) send() error {
	if s.n == 0 {
		return nil
	}
	s.body.Reset()
	zw, _ := gzip.NewWriterLevel(&s.body, gzip.BestSpeed) // the level is valid
	for _, p := range s.order {
		s.line = vmformat.AppendJSONLine(s.line[:0], p.lset, p.ts, p.vs)
		zw.Write(s.line) // into a bytes.Buffer: cannot fail
	}
	zw.Close()
	wait := s.im.o.retryWait
	var status int
	var answer []byte
	for attempt := 1; ; attempt++ {
		req, err := http.NewRequestWithContext(s.ctx, http.MethodPost, s.url, bytes.NewReader(s.body.Bytes()))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Content-Encoding", "gzip")
		resp, err := s.im.o.client.Do(req)
		if err == nil {
			answer, err = io.ReadAll(io.LimitReader(resp.Body, 1<<20))
			resp.Body.Close()
			status = resp.StatusCode
			if err == nil && status != http.StatusTooManyRequests && status != http.StatusServiceUnavailable {
				break
			}
			if ra, perr := strconv.Atoi(resp.Header.Get("Retry-After")); perr == nil && ra > 0 {
				wait = time.Duration(ra) * time.Second
			}
		}
		if attempt == 5 || s.ctx.Err() != nil {
			if err != nil {
				return fmt.Errorf("post %s: %w", s.url, err)
			}
			return fmt.Errorf("post %s: %d %s", s.url, status, bytes.TrimSpace(answer))
		}
		select {
		case <-time.After(wait):
		case <-s.ctx.Done():
		}
		wait *= 2
	}
	switch {
	case status == http.StatusNoContent || status == http.StatusOK:
		s.im.sum.stored += s.n
	case status == http.StatusBadRequest:
		var a importAnswer
		if err := json.Unmarshal(answer, &a); err != nil {
			return fmt.Errorf("post %s: 400 %s", s.url, bytes.TrimSpace(answer))
		}
		if err := s.account(a.Message); err != nil {
			return err
		}
	default:
		return fmt.Errorf("post %s: %d %s (%d samples of this batch not known to be stored)", s.url, status, bytes.TrimSpace(answer), s.n)
	}
	clear(s.series)
	s.order, s.n = s.order[:0], 0
	return nil
}

var (
	countsRe  = regexp.MustCompile(`^stored (\d+) samples, rejected (\d+)(?: \(([^)]*)\))?`)
	exampleRe = regexp.MustCompile(`line (\d+)(?: col \d+ \(byte \d+\))?: `)
	atRe      = regexp.MustCompile(` @(-?\d+): `)
	moreRe    = regexp.MustCompile(`; and \d+ more$`)
)

// account reads the counts and the first bad lines of a 400 answer and
// maps the lines of the body back to lines of the files.
func (s *urlSink) account(msg string) error {
	m := countsRe.FindStringSubmatch(msg)
	if m == nil {
		return fmt.Errorf("post %s: 400 %s", s.url, msg)
	}
	stored, _ := strconv.Atoi(m[1])
	s.im.sum.stored += stored
	var reasons []string
	counts := map[string]int{}
	for _, part := range strings.Split(m[3], ", ") {
		reason, n, ok := strings.Cut(part, ": ")
		if !ok {
			continue
		}
		k, _ := strconv.Atoi(n)
		reasons = append(reasons, reason)
		counts[reason] = k
	}
	// The examples: "line N…: text", separated by "; ".
	locs := exampleRe.FindAllStringSubmatchIndex(msg, -1)
	named := map[string]int{}
	for i, loc := range locs {
		end := len(msg)
		if i+1 < len(locs) {
			end = max(loc[1], locs[i+1][0]-2)
		}
		text := moreRe.ReplaceAllString(msg[loc[1]:end], "")
		bodyLine, _ := strconv.Atoi(msg[loc[2]:loc[3]])
		reason := exampleReason(text, reasons)
		file, line := -1, int64(0)
		if bodyLine >= 1 && bodyLine <= len(s.order) {
			p := s.order[bodyLine-1]
			j := 0
			if at := atRe.FindStringSubmatch(text); at != nil {
				t, _ := strconv.ParseInt(at[1], 10, 64)
				if k := slices.Index(p.ts, t); k >= 0 {
					j = k
				}
			}
			file, line = p.files[j], p.lines[j]
		}
		s.im.sum.reject(reason, 1, false, file, line, text)
		named[reason]++
	}
	total := 0
	for _, reason := range reasons {
		total += counts[reason]
		if d := counts[reason] - named[reason]; d > 0 {
			s.im.sum.reject(reason, d, false, -1, 0, "refused by the server")
		}
	}
	// The server counts a line it cannot parse as one sample; the line
	// held more.
	if lost := s.n - stored; lost > total {
		s.im.sum.reject(ingest.ReasonParse, lost-total, false, -1, 0, "on lines the server refused")
	}
	return nil
}

// exampleReason tells which reason of an answer an example is about.
func exampleReason(text string, reasons []string) string {
	if len(reasons) == 1 {
		return reasons[0]
	}
	for _, c := range []struct {
		reason string
		err    error
	}{
		{ingest.ReasonTooOld, storage.ErrTooOldSample},
		{ingest.ReasonOutOfBounds, storage.ErrOutOfBounds},
		{ingest.ReasonOutOfOrder, storage.ErrOutOfOrderSample},
		{ingest.ReasonDuplicate, storage.ErrDuplicateSampleForTimestamp},
		{ingest.ReasonInvalidLabels, head.ErrInvalidLabels},
		{ingest.ReasonSeriesLimit, head.ErrSeriesLimit},
	} {
		if strings.Contains(text, c.err.Error()) && slices.Contains(reasons, c.reason) {
			return c.reason
		}
	}
	if len(reasons) > 0 {
		return reasons[0]
	}
	return ingest.ReasonOther
}

// importSummary counts what an import stored and refused.
type importSummary struct {
	stored   int
	reasons  []string // in first-seen order
	byReason map[string]*reasonCount
}

type reasonCount struct {
	n       int
	skipped bool
	file    int // of the first bad line: lowest file, then line; -1: none known
	line    int64
	msg     string
}

func newImportSummary() *importSummary {
	return &importSummary{byReason: map[string]*reasonCount{}}
}

// reject counts n samples refused for reason; file -1 if the line is not
// known.
func (s *importSummary) reject(reason string, n int, skipped bool, file int, line int64, msg string) {
	rc := s.byReason[reason]
	if rc == nil {
		rc = &reasonCount{skipped: skipped, file: -1}
		s.byReason[reason] = rc
		s.reasons = append(s.reasons, reason)
	}
	rc.n += n
	if file >= 0 && (rc.file < 0 || file < rc.file || file == rc.file && line < rc.line) {
		rc.file, rc.line, rc.msg = file, line, msg
	}
	if rc.file < 0 && rc.msg == "" {
		rc.msg = msg
	}
}

// failed is the number of samples rejected (not skipped).
func (s *importSummary) failed() int {
	n := 0
	for _, rc := range s.byReason {
		if !rc.skipped {
			n += rc.n
		}
	}
	return n
}

func (s *importSummary) print(w io.Writer, files []string) {
	skipped := 0
	for _, rc := range s.byReason {
		if rc.skipped {
			skipped += rc.n
		}
	}
	fmt.Fprintf(w, "stored %d samples, rejected %d", s.stored, s.failed())
	if skipped > 0 {
		fmt.Fprintf(w, ", skipped %d", skipped)
	}
	fmt.Fprintln(w)
	for _, reason := range s.reasons {
		rc := s.byReason[reason]
		what := "rejected"
		if rc.skipped {
			what = "skipped"
		}
		fmt.Fprintf(w, "  %s %s: %d", what, reason, rc.n)
		if rc.file >= 0 {
			fmt.Fprintf(w, "; first at %s:%d: %s", files[rc.file], rc.line, rc.msg)
		} else if rc.msg != "" {
			fmt.Fprintf(w, " (%s)", rc.msg)
		}
		fmt.Fprintln(w)
	}
}

// progress shows how far an import is: a bar on a terminal, a line every
// interval otherwise, or nothing.
type progress struct {
	mode    string
	w       io.Writer
	every   time.Duration
	bar     *progressbar.ProgressBar
	phase   string
	total   int64 // bytes (reading) or samples (writing); -1: unknown
	bytes   bool
	begin   time.Time
	last    time.Time
	done    int64
	samples int64
	printed int64 // done at the last line
}

func newProgress(mode string, w io.Writer, every time.Duration) *progress {
	return &progress{mode: mode, w: w, every: every}
}

func (p *progress) start(phase string, total int64, bytes bool) {
	p.phase, p.total, p.bytes = phase, total, bytes
	p.begin, p.last, p.done, p.samples, p.printed = time.Now(), time.Now(), 0, 0, -1
	if p.mode != "bar" {
		return
	}
	opts := []progressbar.Option{
		progressbar.OptionSetWriter(p.w),
		progressbar.OptionSetDescription(phase),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionShowCount(),
		progressbar.OptionShowIts(),
		progressbar.OptionThrottle(200 * time.Millisecond),
		progressbar.OptionOnCompletion(func() { fmt.Fprintln(p.w) }),
		progressbar.OptionSetWidth(30),
	}
	if bytes {
		opts = append(opts, progressbar.OptionShowBytes(true))
	} else {
		opts = append(opts, progressbar.OptionSetItsString("samples"))
	}
	p.bar = progressbar.NewOptions64(total, opts...)
}

// update records done bytes or samples, and samples.
func (p *progress) update(done, samples int64) {
	p.done, p.samples = done, samples
	switch p.mode {
	case "bar":
		if p.bytes {
			p.bar.Describe(fmt.Sprintf("%s (%d samples, %.0f/s)", p.phase, samples, p.rate()))
		}
		_ = p.bar.Set64(done)
	case "lines":
		if now := time.Now(); now.Sub(p.last) >= p.every {
			p.last = now
			p.line()
		}
	}
}

func (p *progress) rate() float64 {
	return float64(p.samples) / max(time.Since(p.begin).Seconds(), 1e-3)
}

func (p *progress) line() {
	p.printed = p.done
	el := time.Since(p.begin)
	of, pct := "", ""
	if p.total > 0 {
		frac := float64(p.done) / float64(p.total)
		eta := "?"
		if frac > 0 {
			eta = (time.Duration(float64(el)/frac) - el).Round(time.Second).String()
		}
		of, pct = " of "+p.amount(p.total), fmt.Sprintf(" (%.0f%%, ETA %s)", 100*frac, eta)
	}
	if p.bytes {
		fmt.Fprintf(p.w, "import: %s %s%s%s, %d samples, %.0f samples/s\n", p.phase, p.amount(p.done), of, pct, p.samples, p.rate())
		return
	}
	fmt.Fprintf(p.w, "import: %s %s%s samples%s, %.0f samples/s\n", p.phase, p.amount(p.done), of, pct, p.rate())
}

// amount formats bytes or samples.
func (p *progress) amount(n int64) string {
	if p.bytes {
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return strconv.FormatInt(n, 10)
}

func (p *progress) finish() {
	switch p.mode {
	case "bar":
		if p.bar != nil {
			_ = p.bar.Finish()
			p.bar = nil
		}
	case "lines":
		if p.printed != p.done || p.done == 0 {
			p.line()
		}
	}
}
