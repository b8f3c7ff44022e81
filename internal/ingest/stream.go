package ingest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/metadata"
	"github.com/prometheus/prometheus/model/textparse"
	"github.com/prometheus/prometheus/storage"

	"github.com/aerie-db/aerie/internal/positive"
	"github.com/aerie-db/aerie/internal/vmformat"
)

// The readers below parse whole files for `aerie import` with the same
// parsers and rules as the HTTP handlers, but hand out samples with the
// line they came from instead of appending them, so that a caller can sort
// them before writing and still name the line of a sample the engine
// refuses later. They need memory for one line (ReadInflux, ReadJSONLines,
// ReadCSV) or one chunk of whole lines (ReadExposition), not for the file.

// Sample is one parsed sample and the line it came from.
type Sample struct {
	Labels labels.Labels
	T      int64 // ms
	V      float64
	Line   int64 // 1-based
}

// Rejection is a problem met while reading: N samples (1 for a line whose
// samples are unknown) refused for Reason, about Line, explained by Msg.
// Skipped ones (Influx string fields) are left out on purpose and are no
// failure, as in the handlers.
type Rejection struct {
	Reason  string
	N       int
	Line    int64
	Msg     string
	Skipped bool
}

// StreamOptions configure ReadInflux, ReadExposition, ReadJSONLines and
// ReadCSV.
type StreamOptions struct {
	// Now is the time of samples without a timestamp [time.Now()].
	Now time.Time
	// InfluxPrecision is the unit of Influx timestamps, as the precision
	// parameter of /write: ns, us, ms, s, n, u, m, h [ns].
	InfluxPrecision string
	// OpenMetrics reads ReadExposition's input as OpenMetrics instead of
	// the Prometheus text format.
	OpenMetrics bool
	// MaxLineBytes bounds one line [16 MiB]; a longer one is rejected.
	MaxLineBytes int
}

const defaultMaxLineBytes = vmformat.DefaultMaxLineBytes

// chunkBytes is how much ReadExposition parses at a time (a variable for
// tests).
var chunkBytes = 1 << 20

func (o StreamOptions) withDefaults() StreamOptions {
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	o.MaxLineBytes = positive.Or(o.MaxLineBytes, defaultMaxLineBytes)
	return o
}

// AppendReason maps an error of storage.Appender.Append to the reason the
// handlers report for it (ReasonTooOld, ReasonOutOfBounds, …).
func AppendReason(err error) string { return appendReason(err) }

func tooLongRejection(line, off int64, max int) Rejection {
	return Rejection{Reason: ReasonParse, N: 1, Line: line,
		Msg: fmt.Sprintf("%s (byte %d): line longer than the limit of %d bytes", where(line, 0, 0), off, max)}
}

// ReadInflux reads InfluxDB line protocol from r, as /write does, and
// calls emit for every sample and reject for every problem, in input
// order. The *Sample passed to emit is reused after it returns. It
// returns the read error that ended r, if any (a *vmformat.ReadError).
func ReadInflux(r io.Reader, o StreamOptions, emit func(*Sample), reject func(Rejection)) error {
	o = o.withDefaults()
	prec, err := parsePrecision(o.InfluxPrecision, false)
	if err != nil {
		return err
	}
	sink := &sinkAppendable{}
	rep := newReport(math.MaxInt)
	p := &influxParser{
		prec:   prec,
		now:    prec.truncate(o.Now.UnixMilli()),
		b:      newBatch(context.Background(), sink, math.MaxInt, rep),
		rep:    rep,
		intern: newInterner(),
	}
	src := vmformat.NewLineReader(r, o.MaxLineBytes)
	var s Sample
	for {
		line, ok := src.Read()
		if !ok {
			return src.Err()
		}
		if src.TooLong() {
			reject(tooLongRejection(src.Line(), src.Offset(), o.MaxLineBytes))
			continue
		}
		p.line(src.Line(), src.Offset(), line)
		_ = p.b.commit() // into the sink; clears the batch's duplicate check
		for _, x := range sink.samples {
			s = Sample{Labels: x.l, T: x.t, V: x.v, Line: src.Line()}
			emit(&s)
		}
		sink.samples = sink.samples[:0]
		rep.drain(src.Line(), reject)
	}
}

// drain hands the problems counted since the last call to reject, about
// line, and clears them.
func (r *report) drain(line int64, reject func(Rejection)) {
	if r.rejected == 0 && len(r.skipped) == 0 {
		return
	}
	texts := make([]string, 0, len(r.examples))
	for _, e := range r.examples {
		texts = append(texts, e.text)
	}
	msg := strings.Join(texts, "; ")
	for _, k := range r.reasons {
		reject(Rejection{Reason: k, N: r.byReason[k], Line: line, Msg: msg})
	}
	for k, n := range r.skipped {
		reject(Rejection{Reason: k, N: n, Line: line, Msg: fmt.Sprintf("%s: %d fields skipped (%s)", where(line, 0, 0), n, k), Skipped: true})
	}
	r.stored, r.rejected, r.omitted = 0, 0, 0
	clear(r.byReason)
	clear(r.skipped)
	r.reasons, r.examples = r.reasons[:0], r.examples[:0]
}

// sinkAppendable collects what a batch appends, for ReadInflux.
type sinkAppendable struct {
	samples []sinkSample
}

type sinkSample struct {
	l labels.Labels
	t int64
	v float64
}

func (s *sinkAppendable) Appender(context.Context) storage.Appender { return sinkAppender{s: s} }

// sinkAppender implements the methods a batch calls; the embedded nil
// interface is never called.
type sinkAppender struct {
	storage.Appender
	s *sinkAppendable
}

var _ storage.Appender = sinkAppender{}

func (a sinkAppender) Append(_ storage.SeriesRef, l labels.Labels, t int64, v float64) (storage.SeriesRef, error) {
	a.s.samples = append(a.s.samples, sinkSample{l, t, v})
	return 0, nil
}
func (sinkAppender) Commit() error                     { return nil }
func (sinkAppender) Rollback() error                   { return nil }
func (sinkAppender) SetOptions(*storage.AppendOptions) {}
func (sinkAppender) UpdateMetadata(storage.SeriesRef, labels.Labels, metadata.Metadata) (storage.SeriesRef, error) {
	return 0, nil
}

// ReadJSONLines reads VictoriaMetrics JSON lines from r, as /api/v1/import
// does (without extra labels), and calls emit for every sample and reject
// for every bad line, in input order. The *Sample passed to emit is reused
// after it returns. It returns the read error that ended r, if any (a
// *vmformat.ReadError).
func ReadJSONLines(r io.Reader, o StreamOptions, emit func(*Sample), reject func(Rejection)) error {
	o = o.withDefaults()
	lines := &vmLines{json: vmformat.NewJSONDecoder(r, vmformat.Limits{MaxLineBytes: o.MaxLineBytes})}
	return lines.stream(emit, reject)
}

// ReadCSV reads CSV records by the column spec f from r, as
// /api/v1/import/csv does (without extra labels); records of a spec
// without a time column get o.Now. Otherwise as ReadJSONLines; it also
// fails if the limits refuse f.
func ReadCSV(r io.Reader, f *vmformat.CSVFormat, o StreamOptions, emit func(*Sample), reject func(Rejection)) error {
	o = o.withDefaults()
	lines := &vmLines{csv: vmformat.NewCSVDecoder(r, f, vmformat.Limits{MaxLineBytes: o.MaxLineBytes}, o.Now.UnixMilli())}
	return lines.stream(emit, reject)
}

// stream reads every line for ReadJSONLines and ReadCSV.
func (v *vmLines) stream(emit func(*Sample), reject func(Rejection)) error {
	var s Sample
	_ = v.read(func(l labels.Labels, t int64, val float64, line int64) {
		s = Sample{Labels: l, T: t, V: val, Line: line}
		emit(&s)
	}, func(line int64, err error) {
		reject(Rejection{Reason: ReasonParse, N: 1, Line: line, Msg: err.Error()})
	}, func() error { return nil })
	return v.Err()
}

// ReadExposition reads the Prometheus text format (or OpenMetrics) from r,
// as /api/v1/import/prometheus does, and calls emit for every sample and
// reject for every problem, in input order. Samples without a timestamp
// get o.Now. The input is parsed in chunks of whole lines; metadata
// (# TYPE, # HELP, # UNIT) is not kept. The *Sample passed to emit is
// reused after it returns. It returns the read error that ended r, if any
// (a *vmformat.ReadError).
func ReadExposition(r io.Reader, o StreamOptions, emit func(*Sample), reject func(Rejection)) error {
	o = o.withDefaults()
	x := &expoReader{emit: emit, reject: reject}
	x.parser = expoParser{ct: ctText, now: o.Now.UnixMilli(), end: "input", sink: x}
	if o.OpenMetrics {
		x.parser.ct = ctOpenMetrics
	}
	src := vmformat.NewLineReader(r, o.MaxLineBytes)
	var chunk []byte
	var first, firstOff int64 // line and offset of chunk[0]
	eof := false              // an OpenMetrics "# EOF" line was read
	afterEOF := false         // and something after it
	sentEOF := false          // a "# EOF" line went to the parser
	for {
		line, ok := src.Read()
		if !ok {
			break
		}
		tooLong := src.TooLong()
		if eof {
			// As textparse: nothing may follow, not even an empty line. The
			// rest is not parsed; as the handler, which checks the whole
			// body for NUL bytes first, its lines holding one are reported.
			if !afterEOF {
				reject(Rejection{Reason: ReasonParse, N: 1, Line: src.Line(), Msg: where(src.Line(), 0, 0) + ": unexpected data after # EOF"})
				afterEOF = true
			}
			if i := bytes.IndexByte(line, 0); i >= 0 && !tooLong {
				reject(Rejection{Reason: ReasonParse, N: 1, Line: src.Line(),
					Msg: fmt.Sprintf("%s: line holds a NUL byte", where(src.Line(), i+1, src.Offset()+int64(i)))})
			}
			continue
		}
		if tooLong {
			if len(chunk) > 0 {
				x.parse(chunk, first, firstOff, false)
				chunk = chunk[:0]
			}
			reject(tooLongRejection(src.Line(), src.Offset(), o.MaxLineBytes))
			continue
		}
		if len(chunk) == 0 {
			first, firstOff = src.Line(), src.Offset()
		}
		chunk = append(chunk, line...)
		if x.parser.ct == ctOpenMetrics && string(bytes.TrimRight(line, "\r\n")) == "# EOF" {
			// The end, unless the parser took the line for the rest of a
			// bad one: then, as the handler, read on.
			end := x.parse(chunk, first, firstOff, true)
			eof, afterEOF = end.eof || end.afterEOF, end.afterEOF
			chunk, sentEOF = chunk[:0], true
			continue
		}
		if len(chunk) >= chunkBytes {
			x.parse(chunk, first, firstOff, false)
			chunk = chunk[:0]
		}
	}
	if !eof && (len(chunk) > 0 || (x.parser.ct == ctOpenMetrics && !sentEOF)) {
		if len(chunk) == 0 {
			first, firstOff = src.Line(), src.End()
		}
		x.parse(chunk, first, firstOff, true) // OpenMetrics: refused for the missing # EOF
	}
	return src.Err()
}

// expoReader parses chunks for ReadExposition.
type expoReader struct {
	parser expoParser
	emit   func(*Sample)
	reject func(Rejection)
	s      Sample
}

// parse reads one chunk whose first line is line first, at byte firstOff,
// and reports whether the parser reached an OpenMetrics "# EOF" as such
// (not as the rest of a bad line, which it skips), and whether it
// reported data after it already (a "# EOF\r\r\n" line, which the reader
// takes for the end and the parser for "# EOF" and more).
// OpenMetrics needs "# EOF" at the end of its input: a chunk other than
// the last gets one; the last has the file's own, or is refused as the
// handler refuses a body without it.
func (r *expoReader) parse(body []byte, first, firstOff int64, last bool) expoEnd {
	clear(r.parser.bad)
	r.parser.blankNUL(body, first, firstOff)
	body = r.parser.normalize(body)
	if r.parser.ct == ctOpenMetrics && !last {
		body = append(body, "# EOF\n"...)
	}
	end, err := r.parser.parse(body, first)
	if err != nil {
		r.reject(Rejection{Reason: ReasonParse, N: 1, Line: first, Msg: err.Error()}) // cannot happen: ct is known
		return expoEnd{}
	}
	return end
}

func (r *expoReader) addSample(lset labels.Labels, t int64, v float64, line int64) {
	r.s = Sample{Labels: lset, T: t, V: v, Line: line}
	r.emit(&r.s)
}

func (r *expoReader) addMeta(textparse.Entry, textparse.Parser) {}

func (r *expoReader) rejectLine(reason string, line int64, msg func() string) {
	r.reject(Rejection{Reason: reason, N: 1, Line: line, Msg: msg()})
}

func (r *expoReader) lineDone() error { return nil }
