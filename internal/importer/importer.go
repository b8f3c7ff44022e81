package importer

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"

	"github.com/aerie-db/aerie/internal/ingest"
	"github.com/aerie-db/aerie/internal/sensor"
	"github.com/aerie-db/aerie/internal/sensor/pointio"
	"github.com/aerie-db/aerie/internal/vmformat"
)

// Options configure an import. They are the flags of `aerie import`, and
// errors about them name the flag (--url, --sort.run-bytes, …).
type Options struct {
	Format          string // FormatAuto (by extension) or the format of every file
	CSVFormat       string // csv: VictoriaMetrics' column spec
	SensorName      string // sensor-* formats: the sensor (metric name) [the file's base name]
	SensorFormat    string // sensor-csv: Peregreen's tsPos-valPos-sep ["0-1-,"]
	SensorType      string // sensor-* formats: int8 … float64 [float64]
	InfluxPrecision string // unit of Influx timestamps: ns, us, ms, s, m or h
	URL             string // base URL of a running server; exactly one of URL and DataDir
	DataDir         string // data directory to write into directly (no server may hold it)
	TmpDir          string // for sorted runs [the system's temporary directory]
	RunBytes        int64  // bytes of samples sorted in memory before a run is spilled
	BatchSamples    int    // samples per Commit (DataDir) or per request (URL)

	Stdin     io.Reader     // the file "-" [os.Stdin]
	Summary   io.Writer     // takes the summary [none]
	Progress  Progress      // [none]
	Now       time.Time     // the time of samples without a timestamp [time.Now()]
	Client    *http.Client  // posts to URL [a 5-minute timeout]
	RetryWait time.Duration // first wait before re-sending a request [1s]
}

// Progress is told how far an import is. A phase starts, is updated and
// finishes: "reading", whose total is the bytes of the files (-1 when one
// is standard input) and whose done counts bytes read, then "writing",
// whose total and done count samples.
type Progress interface {
	Start(phase string, total int64, bytes bool)
	Update(done, samples int64)
	Finish()
}

type noProgress struct{}

func (noProgress) Start(string, int64, bool) {}
func (noProgress) Update(int64, int64)       {}
func (noProgress) Finish()                   {}

// Formats of the files.
const (
	FormatAuto        = "auto"
	FormatInflux      = "influx"
	FormatPrometheus  = "prometheus"
	FormatOpenMetrics = "openmetrics"
	FormatJSON        = "json"
	FormatCSV         = "csv"
	// Peregreen's upload bodies (internal/sensor/pointio): one sensor's
	// points per file.
	FormatSensorCSV  = "sensor-csv"
	FormatSensorJSON = "sensor-json"
	FormatSensorMsgp = "sensor-msgp"
)

// Run imports files ("-" is o.Stdin): it reads and sorts every sample,
// then writes them in time order to o.DataDir or o.URL, and writes the
// summary to o.Summary. It fails if any sample was rejected.
func Run(ctx context.Context, o Options, files []string) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if (o.URL == "") == (o.DataDir == "") {
		return errors.New("give exactly one of --url and --data.dir")
	}
	if o.BatchSamples <= 0 {
		return errors.New("--batch.samples must be positive")
	}
	if o.RunBytes < 1<<10 || o.RunBytes > maxRunBytes {
		return fmt.Errorf("--sort.run-bytes must be from 1024 to %d", int64(maxRunBytes))
	}
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	if o.Client == nil {
		o.Client = &http.Client{Timeout: 5 * time.Minute}
	}
	if o.RetryWait == 0 {
		o.RetryWait = time.Second
	}
	if o.Stdin == nil {
		o.Stdin = os.Stdin
	}
	if o.Summary == nil {
		o.Summary = io.Discard
	}
	if o.Progress == nil {
		o.Progress = noProgress{}
	}
	formats := make([]string, len(files))
	var csvFormat *vmformat.CSVFormat
	var err error
	for i, name := range files {
		f, err := FileFormat(o.Format, name)
		if err != nil {
			return err
		}
		if isSensorFormat(f) && o.SensorName == "" && name == "-" {
			return errors.New("a sensor file on standard input needs --sensor")
		}
		formats[i] = f
		if f == FormatCSV && csvFormat == nil {
			if o.CSVFormat == "" {
				return fmt.Errorf("%s: CSV needs --csv.format, e.g. 1:time:unix_ms,2:label:host,3:metric:cpu", name)
			}
			if csvFormat, err = vmformat.ParseCSVFormat(o.CSVFormat); err != nil {
				return err
			}
		}
	}
	im := &importer{o: o, files: files, formats: formats, csv: csvFormat, sum: newSummary(), sensors: map[string]bool{}}
	if slices.ContainsFunc(formats, isSensorFormat) {
		if o.SensorType == "" {
			o.SensorType = "float64"
		}
		if im.sensorType, err = pointio.ParseType(o.SensorType); err != nil {
			return fmt.Errorf("--sensor.type: %w", err)
		}
		if o.SensorFormat == "" {
			im.o.SensorFormat = "0-1-,"
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
	tmp, err := os.MkdirTemp(o.TmpDir, "aerie-import-")
	if err != nil {
		return fmt.Errorf("temporary directory for sorted runs: %w", err)
	}
	defer os.RemoveAll(tmp)
	// Into a data directory, series after series: history runs.
	im.sorter = newRunSorter(tmp, o.RunBytes, o.DataDir != "")

	// The destination first, so that a wrong one is known before hours of
	// reading.
	im.ctx = ctx
	var out sampleSink
	if o.DataDir != "" {
		out, err = newDBSink(im)
	} else {
		out, err = newURLSink(ctx, im)
	}
	if err != nil {
		return err
	}
	im.db, _ = out.(*dbSink)
	im.sensorFiles = map[string]int{}
	for i := range files {
		if isSensorFormat(formats[i]) {
			im.sensorFiles[im.sensorName(i)]++
		}
	}

	// Read and sort.
	im.ctx = ctx
	prog := o.Progress
	prog.Start("reading", total, true)
	var next chan spooledSensor // sensor file i+1, being read meanwhile
	for i := range files {
		var pre chan spooledSensor
		pre, next = next, nil
		if i+1 < len(files) {
			next = im.prefetchSensor(i + 1)
		}
		if err := im.readFile(i, pre); err != nil {
			if next != nil {
				if r := <-next; r.sp != nil {
					r.sp.Close()
				}
			}
			prog.Finish()
			out.abort()
			return err
		}
	}
	prog.Finish()

	// Write in time order.
	prog.Start("writing", im.sorter.count, false)
	var prev sortedSample // the sample before, for duplicates
	var prevRec []byte
	err = im.sorter.merge(func(r *sortedSample) error {
		im.written++
		if im.written%4096 == 0 {
			prog.Update(im.written, im.written)
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
		prog.Update(im.written, im.written)
		err = out.finish()
	} else {
		out.abort()
	}
	prog.Finish()
	im.sum.print(o.Summary, files)
	if err != nil {
		return err
	}
	if o.DataDir != "" && im.sum.failed() == 0 {
		for name := range im.sensors {
			if err := sensor.RecordType(o.DataDir, name, im.sensorType); err != nil {
				return fmt.Errorf("sensor %s: record type: %w", name, err)
			}
		}
	}
	if n := im.sum.failed(); n > 0 {
		return fmt.Errorf("%d samples rejected", n)
	}
	return nil
}

// FileFormat is the format of a file: flag (Options.Format), or, if that
// is FormatAuto, the one its name's extension says (after .gz or .zst).
func FileFormat(flag, name string) (string, error) {
	switch flag {
	case FormatInflux, FormatPrometheus, FormatOpenMetrics, FormatJSON, FormatCSV, FormatSensorCSV, FormatSensorJSON, FormatSensorMsgp:
		return flag, nil
	case FormatAuto:
	default:
		return "", fmt.Errorf("unknown --format %q: want auto, influx, prometheus, openmetrics, json, csv, sensor-csv, sensor-json or sensor-msgp", flag)
	}
	base := strings.ToLower(filepath.Base(name))
	for _, z := range []string{".gz", ".gzip", ".zst", ".zstd"} {
		base = strings.TrimSuffix(base, z)
	}
	switch filepath.Ext(base) {
	case ".lp", ".influx", ".line":
		return FormatInflux, nil
	case ".prom", ".txt":
		return FormatPrometheus, nil
	case ".om", ".openmetrics":
		return FormatOpenMetrics, nil
	case ".json", ".jsonl", ".ndjson":
		return FormatJSON, nil
	case ".csv":
		return FormatCSV, nil
	}
	return "", fmt.Errorf("%s: cannot tell the format from the name; give --format", name)
}

// importer holds the state of one Run.
type importer struct {
	ctx     context.Context
	o       Options
	files   []string
	formats []string
	csv     *vmformat.CSVFormat
	sum     *summary
	sorter  *runSorter

	sensorType  pointio.Type
	sensors     map[string]bool // sensors read from sensor-* files
	sensorFiles map[string]int  // sensor-* files per sensor
	db          *dbSink         // the sink, into a data directory

	read    atomic.Int64 // bytes of the files read so far (before decompression); a prefetch adds too
	samples int64        // samples read
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
	c.im.read.Add(int64(n))
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

// readFile parses file i into the sorter, with the HTTP handlers' parsers
// (internal/ingest's readers) or Peregreen's (internal/sensor/pointio);
// pre, if set, gives a sensor file already read (prefetchSensor).
func (im *importer) readFile(i int, pre chan spooledSensor) error {
	emit := func(s *ingest.Sample) {
		im.sorter.add(s.Labels, s.T, s.V, i, s.Line)
		im.samples++
		if im.samples%4096 == 0 {
			im.o.Progress.Update(im.read.Load(), im.samples)
		}
	}
	if pre != nil {
		r := <-pre
		if r.openErr != nil {
			return r.openErr // names the file, as openFile's
		}
		err := r.err
		if err == nil {
			err = im.storeSensor(i, r.sp, emit)
		}
		return im.fileDone(i, err)
	}
	r, closeIn, err := im.openFile(i)
	if err != nil {
		return err
	}
	defer closeIn()

	reject := func(r ingest.Rejection) { im.sum.reject(r.Reason, r.N, r.Skipped, i, r.Line, r.Msg) }
	so := ingest.StreamOptions{Now: im.o.Now, InfluxPrecision: im.o.InfluxPrecision, OpenMetrics: im.formats[i] == FormatOpenMetrics}
	switch im.formats[i] {
	case FormatInflux:
		err = ingest.ReadInflux(r, so, emit, reject)
	case FormatPrometheus, FormatOpenMetrics:
		err = ingest.ReadExposition(r, so, emit, reject)
	case FormatJSON:
		err = ingest.ReadJSONLines(r, so, emit, reject)
	case FormatCSV:
		err = ingest.ReadCSV(r, im.csv, so, emit, reject)
	case FormatSensorCSV, FormatSensorJSON, FormatSensorMsgp:
		sp := im.spoolSensor(i, r, true)
		if err = sp.err; err == nil {
			err = im.storeSensor(i, sp.sp, emit)
		}
	}
	return im.fileDone(i, err)
}

// fileDone ends the reading of file i with err, or the sorter's.
func (im *importer) fileDone(i int, err error) error {
	if err == nil {
		err = im.sorter.err
	}
	if err != nil {
		return fmt.Errorf("%s: %w", im.files[i], err)
	}
	return nil
}

// openFile opens file i ("-": standard input), decompressed, counting
// the bytes read; close releases it.
func (im *importer) openFile(i int) (r io.Reader, close func(), err error) {
	name := im.files[i]
	in, f := im.o.Stdin, (*os.File)(nil)
	if name != "-" {
		if f, err = os.Open(name); err != nil {
			return nil, nil, err
		}
		in = f
	}
	r, closeZ, err := decompress(bufio.NewReaderSize(&countingReader{r: in, im: im}, 256<<10))
	if err != nil {
		if f != nil {
			f.Close()
		}
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	return r, func() {
		closeZ()
		if f != nil {
			f.Close()
		}
	}, nil
}
