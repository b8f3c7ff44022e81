package main

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/aerie-db/aerie/internal/importer"
)

func newImportCmd() *cobra.Command {
	var o importer.Options
	var mode string // of the progress: auto, bar, lines or none
	var every time.Duration
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
			o.Stdin, o.Summary = cmd.InOrStdin(), cmd.OutOrStdout()
			stderr := cmd.ErrOrStderr()
			if mode == "auto" {
				mode = "lines"
				if f, ok := stderr.(*os.File); ok && isTerminal(f) {
					mode = "bar"
				}
			}
			o.Progress = newProgress(mode, stderr, every)
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			return importer.Run(ctx, o, files)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Format, "format", importer.FormatAuto, "auto (by extension), influx, prometheus, openmetrics, json, csv, sensor-csv, sensor-json or sensor-msgp")
	f.StringVar(&o.SensorName, "sensor", "", "sensor-* formats: the sensor id (metric name) [the file's base name]")
	f.StringVar(&o.SensorFormat, "sensor.format", "0-1-,", "sensor-csv: Peregreen's tsPos-valPos-sep")
	f.StringVar(&o.SensorType, "sensor.type", "float64", "sensor-* formats: int8, int16, int32, int64, float32 or float64")
	f.StringVar(&o.CSVFormat, "csv.format", "", "CSV column spec, e.g. 1:time:unix_ms,2:label:host,3:metric:cpu")
	f.StringVar(&o.InfluxPrecision, "influx.precision", "ns", "unit of Influx timestamps: ns, us, ms, s, m or h")
	f.StringVar(&o.URL, "url", "", "base URL of a running Aerie server, e.g. http://127.0.0.1:9201")
	f.StringVar(&o.DataDir, "data.dir", "", "data directory to write into directly (not held by a server)")
	f.StringVar(&o.TmpDir, "tmp.dir", "", "directory for sorted runs [the system's temporary directory]")
	f.Int64Var(&o.RunBytes, "sort.run-bytes", 256<<20, "bytes of samples sorted in memory before a run is spilled to --tmp.dir")
	f.IntVar(&o.BatchSamples, "batch.samples", 50_000, "samples per commit (--data.dir) or per request (--url)")
	f.StringVar(&mode, "progress", "auto", "auto, bar, lines or none")
	f.DurationVar(&every, "progress.interval", 10*time.Second, "how often a progress line is printed when not on a terminal")
	return cmd
}

func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// progress shows how far an import is (importer.Progress): a bar on a
// terminal, a line every interval otherwise, or nothing.
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

func (p *progress) Start(phase string, total int64, bytes bool) {
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
func (p *progress) Update(done, samples int64) {
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

func (p *progress) Finish() {
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
